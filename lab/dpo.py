"""Direct Preference Optimization: the optimal KL-regularized policy, the reward–policy identity, the DPO loss.

Reference chapter "Direct Preference Optimization" (ftip-003L): log ratios ftip-003M, optimal policy
ftip-003O (Rafailov et al. 2023, §4, eq. 4), reparameterization ftip-003P (eq. 5), preference
probability ftip-003Q (eq. 6), loss ftip-003R (eq. 7), worked example ftip-003S; the three-outcome
example is the overview's DPO section.

Log-probabilities are sequence log-probabilities log π(y|x) = Σ_t log π(y_t | x, y_<t).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lab._checks import (
    TensorLike,
    as_logprobs,
    as_tensor,
    broadcast_pair,
    check_finite,
    check_pmf,
    check_positive,
    check_probabilities,
)


def optimal_policy(ref_probs: TensorLike, rewards: TensorLike, beta: float) -> torch.Tensor:
    """π_r(y) = π_ref(y) exp(r(y)/β) / Z_r [ftip-003O; Rafailov et al. 2023, §4, eq. 4].

    ``ref_probs`` (..., K) a probability vector over K responses (zeros allowed: they stay zero, the
    optimum never leaves the reference's support); ``rewards`` (..., K). Computed as a softmax of
    log π_ref + r/β so that small β does not overflow.
    """
    beta = check_positive(beta, "beta")
    ref, r = broadcast_pair(as_tensor(ref_probs, "ref_probs"), as_tensor(rewards, "rewards"), "ref_probs", "rewards")
    check_pmf(ref, "ref_probs")
    check_finite(r, "rewards")
    logits = torch.where(ref > 0, torch.log(ref) + r / beta, torch.full_like(ref, float("-inf")))
    return torch.softmax(logits, dim=-1)


def log_partition(ref_probs: TensorLike, rewards: TensorLike, beta: float) -> torch.Tensor:
    """log Z_r = log Σ_y π_ref(y) exp(r(y)/β) [ftip-003O], over the last dimension."""
    beta = check_positive(beta, "beta")
    ref, r = broadcast_pair(as_tensor(ref_probs, "ref_probs"), as_tensor(rewards, "rewards"), "ref_probs", "rewards")
    check_pmf(ref, "ref_probs")
    logits = torch.where(ref > 0, torch.log(ref) + r / beta, torch.full_like(ref, float("-inf")))
    return torch.logsumexp(logits, dim=-1)


def reward_from_policy(policy_probs: TensorLike, ref_probs: TensorLike, beta: float, log_partition: TensorLike = 0.0) -> torch.Tensor:
    """r(y) = β log(π(y)/π_ref(y)) + β log Z [ftip-003P; Rafailov et al. 2023, §4, eq. 5].

    ``policy_probs`` and ``ref_probs`` broadcast; both must lie in (0, 1] since their logs are taken.
    ``log_partition`` is the prompt-only term β log Z(x) divided by β; it cancels in every pairwise
    difference, which is why DPO never needs it (and why Bradley–Terry scores carry a free offset).
    """
    beta = check_positive(beta, "beta")
    p, q = broadcast_pair(as_tensor(policy_probs, "policy_probs"), as_tensor(ref_probs, "ref_probs"), "policy_probs", "ref_probs")
    check_probabilities(p, "policy_probs")
    check_probabilities(q, "ref_probs")
    return beta * (torch.log(p) - torch.log(q)) + beta * as_tensor(log_partition, "log_partition").to(p.dtype)


def _logratio_margin(
    chosen_logps: TensorLike, rejected_logps: TensorLike, ref_chosen_logps: TensorLike, ref_rejected_logps: TensorLike
) -> tuple[torch.Tensor, torch.Tensor]:
    """ℓ(y⁺) and ℓ(y⁻), the reference-relative log likelihoods of Notation ftip-003M, (N,) each."""
    names = ("chosen_logps", "rejected_logps", "ref_chosen_logps", "ref_rejected_logps")
    ts = [as_logprobs(x, n) for x, n in zip((chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps), names)]
    shape = ts[0].shape
    for t, n in zip(ts[1:], names[1:]):
        if t.shape != shape:
            raise ValueError(f"{n} (shape {tuple(t.shape)}) must have the shape of chosen_logps {tuple(shape)}")
    return ts[0] - ts[2], ts[1] - ts[3]


def preference_probability(
    chosen_logps: TensorLike, rejected_logps: TensorLike, ref_chosen_logps: TensorLike, ref_rejected_logps: TensorLike, beta: float = 0.1
) -> torch.Tensor:
    """Pr_θ(y⁺ ≻ y⁻) = σ(β Δ_θ), Δ_θ = ℓ(y⁺) − ℓ(y⁻) [ftip-003Q; Rafailov et al. 2023, §4, eq. 6]."""
    beta = check_positive(beta, "beta")
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    return torch.sigmoid(beta * (lc - lr))


def dpo_loss(
    chosen_logps: TensorLike,
    rejected_logps: TensorLike,
    ref_chosen_logps: TensorLike,
    ref_rejected_logps: TensorLike,
    beta: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """DPO loss −log σ(β[ℓ(y⁺) − ℓ(y⁻)]) per pair [ftip-003R; Rafailov et al. 2023, §4, eq. 7].

    Inputs (N,) sequence log-probs of the chosen/rejected responses under the policy and the frozen
    reference. Returns ``(losses, chosen_rewards, rejected_rewards)``, each (N,): the per-pair
    sigmoid losses (take ``.mean()`` for the batch loss) and the implicit rewards β·ℓ, detached,
    which TRL logs as ``rewards/chosen`` and ``rewards/rejected`` (see :func:`dpo_metrics`).
    Uses ``logsigmoid``, finite for any margin.
    """
    beta = check_positive(beta, "beta")
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    losses = -F.logsigmoid(beta * (lc - lr))  # (N,)
    return losses, beta * lc.detach(), beta * lr.detach()


def dpo_gradient_weight(
    chosen_logps: TensorLike, rejected_logps: TensorLike, ref_chosen_logps: TensorLike, ref_rejected_logps: TensorLike, beta: float = 0.1
) -> torch.Tensor:
    """σ(−βΔ_θ): how strongly a pair still pushes the gradient (Rafailov et al. 2023, §4, the gradient
    below eq. 7). Near 1 for a pair the implicit reward orders wrongly, near 0 once it is ordered confidently."""
    beta = check_positive(beta, "beta")
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    return torch.sigmoid(-beta * (lc - lr))


def dpo_metrics(chosen_rewards: torch.Tensor, rejected_rewards: torch.Tensor) -> dict[str, float]:
    """Batch means under TRL's names: ``rewards/chosen``, ``rewards/rejected``, ``rewards/margins``, ``rewards/accuracies``."""
    return {
        "rewards/chosen": float(chosen_rewards.mean()),
        "rewards/rejected": float(rejected_rewards.mean()),
        "rewards/margins": float((chosen_rewards - rejected_rewards).mean()),
        "rewards/accuracies": float((chosen_rewards > rejected_rewards).float().mean()),
    }


# ---------------------------------------------------------------------------------------------------------------
# Functions the pages and notebooks call instead of computing formulas inline.


def log_ratio(logps: TensorLike, ref_logps: TensorLike) -> torch.Tensor:
    """ℓ(y) = log π_θ(y|x) − log π_ref(y|x), the per-response log-ratio DPO compares [ftip-003R; Rafailov et al. 2023, §4, eq. 7].

    ``logps`` and ``ref_logps`` are sequence log-probabilities (finite, <= 0) and broadcast. The
    implicit reward TRL logs as ``rewards/chosen`` is β·ℓ(y⁺).
    """
    lp, rlp = broadcast_pair(as_logprobs(logps, "logps"), as_logprobs(ref_logps, "ref_logps"), "logps", "ref_logps")
    return lp - rlp
