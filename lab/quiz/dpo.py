"""Predictions for the DPO chapter [ftip-003R, ftip-003S]; answers from lab.dpo.dpo_loss."""

import math

import torch

from lab.dpo import dpo_loss
from lab.quiz import Question


def _one_step_chosen_change(ref: tuple[float, ...], beta: float, lr: float) -> float:
    """One gradient step on the DPO loss of a softmax policy (one free logit per response), starting at the
    reference; response 0 is chosen, response 1 rejected. Returns π_after(chosen) − π_before(chosen)."""
    ref_logp = torch.tensor(ref, dtype=torch.float64).log()
    logits = ref_logp.clone().requires_grad_(True)  # policy starts at the reference
    logp = torch.log_softmax(logits, dim=0)
    loss, _, _ = dpo_loss(logp[0:1], logp[1:2], ref_logp[0:1], ref_logp[1:2], beta=beta)
    loss.sum().backward()
    after = torch.softmax(logits.detach() - lr * logits.grad, dim=0)
    return float(after[0] - ref[0])


def _chosen_rises() -> str:
    return "yes" if _one_step_chosen_change((0.5, 0.3, 0.2), beta=1.0, lr=1.0) > 0 else "no"


def _loss_after() -> float:
    # overview, DPO section: π_ref = (0.4, 0.4, 0.2) → π = (0.3, 0.2, 0.5); chosen = first, rejected = second
    lp = [math.log(x) for x in (0.3, 0.2, 0.4, 0.4)]  # policy chosen, policy rejected, ref chosen, ref rejected
    return float(dpo_loss(*lp, beta=1.0)[0])


QUESTIONS = [
    Question(
        "dpo-step-chosen-up", "dpo",
        "A softmax policy over three responses (one free logit each) starts at the reference π_ref = (0.5, 0.3, 0.2). "
        "Response 1 is chosen, response 2 rejected, β = 1. After one gradient step on the DPO loss (learning rate 1), "
        "does the chosen response's probability go up?",
        _chosen_rises, choices=("yes", "no"),
        explanation="Here yes: the gradient of log π(y⁺) − log π(y⁻) with respect to the logits is +1 on the chosen logit and "
                    "−1 on the rejected one (the normaliser cancels), so the chosen logit rises and the rejected one falls. "
                    "With separate logits the chosen probability cannot fall; in a real network the responses share "
                    "parameters, and then it can (next question, and the section at the bottom of the page).",
    ),
    Question(
        "dpo-loss-after-shift", "dpo",
        "π_ref = (0.4, 0.4, 0.2) over three responses; after training π = (0.3, 0.2, 0.5). Response 1 is chosen, "
        "response 2 rejected, β = 1. The chosen probability fell from 0.4 to 0.3. What is the DPO loss now "
        "(it was log 2 ≈ 0.693 at π = π_ref)?",
        _loss_after, tolerance=0.01,
        explanation="ℓ(y⁺) = log(0.3/0.4) and ℓ(y⁻) = log(0.2/0.4), so the margin is log 1.5 > 0 and the loss is "
                    "−log σ(log 1.5) = −log 0.6 ≈ 0.511, below log 2: the loss fell while the chosen probability fell. "
                    "DPO only rewards the chosen response gaining on the rejected one (answers within 0.01 count).",
    ),
]
