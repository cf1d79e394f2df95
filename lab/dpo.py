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
    check_same_shape,
)


def _tilted_logits(ref: torch.Tensor, r: torch.Tensor, beta: float) -> torch.Tensor:
    """log π_ref + r/β on the reference's support, −inf off it; the log is taken only of positive
    entries (1 substituted first), so a zero in ``ref_probs`` gives no NaN gradient."""
    check_pmf(ref, "ref_probs")
    check_finite(r, "rewards")
    on = ref > 0
    logits = torch.log(torch.where(on, ref, torch.ones_like(ref))) + r / beta
    if not bool(torch.isfinite(logits.detach()[on]).all()):
        raise ValueError("rewards / beta overflows the dtype; use a larger beta or smaller rewards")
    return torch.where(on, logits, torch.full_like(ref, float("-inf")))


def optimal_policy(ref_probs: TensorLike, rewards: TensorLike, beta: float) -> torch.Tensor:
    """π_r(y) = π_ref(y) exp(r(y)/β) / Z_r [ftip-003O; Rafailov et al. 2023, §4, eq. 4].

    ``ref_probs`` (..., K) a probability vector over K responses (zeros allowed: they stay zero, the
    optimum never leaves the reference's support); ``rewards`` (..., K). Computed as a softmax of
    log π_ref + r/β so that small β does not overflow.
    """
    beta = check_positive(beta, "beta")
    ref, r = broadcast_pair(as_tensor(ref_probs, "ref_probs"), as_tensor(rewards, "rewards"), "ref_probs", "rewards")
    return torch.softmax(_tilted_logits(ref, r, beta), dim=-1)


def log_partition(ref_probs: TensorLike, rewards: TensorLike, beta: float) -> torch.Tensor:
    """log Z_r = log Σ_y π_ref(y) exp(r(y)/β) [ftip-003O], over the last dimension."""
    beta = check_positive(beta, "beta")
    ref, r = broadcast_pair(as_tensor(ref_probs, "ref_probs"), as_tensor(rewards, "rewards"), "ref_probs", "rewards")
    return torch.logsumexp(_tilted_logits(ref, r, beta), dim=-1)


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
    lz = as_tensor(log_partition, "log_partition")
    check_finite(lz, "log_partition")
    out = beta * (torch.log(p) - torch.log(q)) + beta * lz.to(p.dtype)
    if not bool(torch.isfinite(out.detach()).all()):
        raise ValueError("beta * log(policy_probs / ref_probs) overflows the dtype; use a smaller beta")
    return out


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
    if ts[0].numel() == 0:
        raise ValueError("chosen_logps must contain at least one pair")
    dtype = torch.promote_types(torch.promote_types(ts[0].dtype, ts[1].dtype), torch.promote_types(ts[2].dtype, ts[3].dtype))
    ts = [t.to(dtype) for t in ts]
    lc, lr = ts[0] - ts[2], ts[1] - ts[3]
    if not bool(torch.isfinite((lc - lr).detach()).all()):
        raise ValueError("chosen_logps, rejected_logps and their references are so far apart that the margin overflows")
    return lc, lr


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


def dpo_metrics(chosen_rewards: TensorLike, rejected_rewards: TensorLike) -> dict[str, float]:
    """Batch means under TRL's names: ``rewards/chosen``, ``rewards/rejected``, ``rewards/margins``, ``rewards/accuracies``.

    ``chosen_rewards`` and ``rejected_rewards``: (N,) implicit rewards from :func:`dpo_loss`, finite, same shape."""
    chosen_rewards = as_tensor(chosen_rewards, "chosen_rewards", allow_empty=False).detach()
    rejected_rewards = as_tensor(rejected_rewards, "rejected_rewards", allow_empty=False).detach()
    check_same_shape(chosen_rewards, rejected_rewards, "chosen_rewards", "rejected_rewards")
    check_finite(chosen_rewards, "chosen_rewards")
    check_finite(rejected_rewards, "rejected_rewards")
    chosen_rewards, rejected_rewards = broadcast_pair(chosen_rewards, rejected_rewards, "chosen_rewards", "rejected_rewards")
    return {
        "rewards/chosen": float(chosen_rewards.mean()),
        "rewards/rejected": float(rejected_rewards.mean()),
        "rewards/margins": float((chosen_rewards - rejected_rewards).mean()),
        "rewards/accuracies": float((chosen_rewards > rejected_rewards).to(chosen_rewards.dtype).mean()),
    }
