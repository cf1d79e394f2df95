"""RLHF with PPO: the clipped surrogate, the value-and-entropy objective and the KL-shaped reward.

Reference chapter "Reinforcement learning from human feedback and proximal policy optimization"
(ftip-0039): clipped surrogate ftip-003F (Schulman et al. 2017, §3, eq. 7), value-and-entropy
objective ftip-003G (Schulman et al. 2017, §5, eq. 9), KL-shaped reward ftip-003D (Ouyang et al. 2022,
§3.5, eq. 2), worked examples ftip-003I (clipping cases) and ftip-003J (shaped reward).

Everything here is an *objective* to maximise, as in the papers; a trainer minimises its negative.
Diagnostics use TRL's metric names (``clip_ratio/low_mean`` …) and CleanRL's ``approx_kl``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from lab._checks import (
    TensorLike,
    as_logprobs,
    as_mask,
    as_tensor,
    broadcast_pair,
    check_finite,
    check_nonnegative,
    check_open_unit,
    check_positive,
)
from lab.kl import kl_estimate
from lab.rl import likelihood_ratio


def _clip_bounds(epsilon: float, epsilon_high: float | None) -> tuple[float, float]:
    eps_low = check_open_unit(epsilon, "epsilon")
    eps_high = eps_low if epsilon_high is None else check_positive(epsilon_high, "epsilon_high")
    return 1.0 - eps_low, 1.0 + eps_high


def clipped_surrogate(
    ratio: TensorLike, advantages: TensorLike, epsilon: float = 0.2, epsilon_high: float | None = None
) -> torch.Tensor:
    """Elementwise min(ρ·A, clip(ρ, 1−ε, 1+ε_high)·A) [ftip-003F; Schulman et al. 2017, §3, eq. 7].

    ``ratio`` and ``advantages`` broadcast to (..., T). ``epsilon`` ∈ (0, 1) is the lower width;
    ``epsilon_high`` (> 0, default ``epsilon``) the upper one: DAPO's clip-higher when larger
    (ftip-004H). The minimum makes the objective pessimistic: a favourable move beyond the band earns
    nothing more, an unfavourable one is always counted. Returns the objective (not negated).
    """
    low, high = _clip_bounds(epsilon, epsilon_high)
    rho = as_tensor(ratio, "ratio")
    if not bool((rho.detach() >= 0).all()):
        raise ValueError("ratio must be >= 0 (a ratio of probabilities)")
    rho, adv = broadcast_pair(rho, as_tensor(advantages, "advantages"), "ratio", "advantages")
    return torch.minimum(rho * adv, torch.clamp(rho, low, high) * adv)


def clip_fractions(
    ratio: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, epsilon: float = 0.2, epsilon_high: float | None = None
) -> dict[str, float]:
    """Fractions of active tokens whose clipped term is the binding one, split by the sign of A.

    ``clip_ratio/low_mean``: A < 0 and ρ < 1−ε; ``clip_ratio/high_mean``: A > 0 and ρ > 1+ε_high;
    ``clip_ratio/region_mean``: either (TRL's names and definitions).
    """
    low, high = _clip_bounds(epsilon, epsilon_high)
    rho, adv = broadcast_pair(ratio.detach(), advantages.detach(), "ratio", "advantages")
    m = mask.to(rho.dtype).expand_as(rho)
    is_low = ((rho < low) & (adv < 0)).to(rho.dtype)
    is_high = ((rho > high) & (adv > 0)).to(rho.dtype)
    n = m.sum().clamp(min=1.0)
    return {
        "clip_ratio/low_mean": float((is_low * m).sum() / n),
        "clip_ratio/high_mean": float((is_high * m).sum() / n),
        "clip_ratio/region_mean": float((torch.maximum(is_low, is_high) * m).sum() / n),
    }


def ppo_objective(
    logp: TensorLike,
    old_logp: TensorLike,
    advantages: TensorLike,
    mask: TensorLike | None = None,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    values: TensorLike | None = None,
    value_targets: TensorLike | None = None,
    c1: float = 0.5,
    entropy: TensorLike | None = None,
    c2: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's combined objective Ê_t[L^CLIP_t − c1 (V(H_t) − Ĝ_t)² + c2 H(π(·|H_t))] [ftip-003G; Schulman et al. 2017, eq. 9].

    ``logp`` (B, T) current log-probs of the sampled tokens; ``old_logp`` (B, T) the behaviour policy's;
    ``advantages`` (B, T) or (B, 1); ``mask`` (B, T) the active tokens (Ê_t averages over them).
    ``values``/``value_targets`` (B, T) enter the value loss when given (weight ``c1`` >= 0);
    ``entropy`` (B, T) per-token policy entropy enters the bonus (weight ``c2`` >= 0).

    Returns ``(objective, metrics)``; metrics: ``objective/clipped_surrogate``, ``loss/value``,
    ``entropy``, clip fractions split by the sign of A (``clip_ratio/low_mean``, ``clip_ratio/high_mean``,
    ``clip_ratio/region_mean``), ``clipfrac`` (|ρ−1| > ε, CleanRL) and ``approx_kl`` (mean of
    (ρ−1) − log ρ, the k3 estimate of KL(π_old ‖ π_θ), CleanRL).
    """
    c1 = check_nonnegative(c1, "c1")
    c2 = check_nonnegative(c2, "c2")
    lp, olp = broadcast_pair(as_logprobs(logp, "logp"), as_logprobs(old_logp, "old_logp"), "logp", "old_logp")
    m = as_mask(mask, lp, "mask")
    ratio = likelihood_ratio(lp, olp)  # (B, T)
    adv = as_tensor(advantages, "advantages").detach()
    surrogate = clipped_surrogate(ratio, adv, epsilon, epsilon_high)  # (B, T)
    n = m.sum()
    objective = (surrogate * m).sum() / n
    metrics: dict[str, float] = {"objective/clipped_surrogate": float(objective.detach())}
    if (values is None) != (value_targets is None):
        raise ValueError("values and value_targets must be given together")
    if values is not None:
        v, g = broadcast_pair(as_tensor(values, "values"), as_tensor(value_targets, "value_targets"), "values", "value_targets")
        check_finite(v.detach(), "values")
        value_loss = (((v - g.detach()) ** 2) * m).sum() / n
        objective = objective - c1 * value_loss
        metrics["loss/value"] = float(value_loss.detach())
    if entropy is not None:
        h = as_tensor(entropy, "entropy")
        mean_h = (h * m).sum() / n
        objective = objective + c2 * mean_h
        metrics["entropy"] = float(mean_h.detach())
    rho = ratio.detach()
    _, adv_b = broadcast_pair(rho, adv, "ratio", "advantages")
    metrics.update(clip_fractions(rho, adv_b, m, epsilon, epsilon_high))
    metrics["clipfrac"] = float((((rho - 1).abs() > epsilon).to(m.dtype) * m).sum() / n)
    # samples come from the old policy, so this estimates KL(π_old ‖ π_θ): k3 with the roles swapped
    metrics["approx_kl"] = float((kl_estimate(olp.detach(), lp.detach(), "k3") * m).sum() / n)
    return objective, metrics


def kl_shaped_reward(
    score: TensorLike,
    logp: TensorLike,
    ref_logp: TensorLike,
    beta: float,
    mask: TensorLike | None = None,
    per_token: bool = False,
) -> torch.Tensor:
    """KL-shaped reward R = r_φ(x, y) − β log(π_θ(y|x)/π_ref(y|x)) [ftip-003D; Ouyang et al. 2022, §3.5, eq. 2].

    Sequence form (``per_token=False``): ``logp`` and ``ref_logp`` are token log-probs (B, T) (or
    sequence log-probs (B,)); the log ratio is summed over the active tokens and ``score`` (B,) is
    shaped once → (B,).

    Per-token form (``per_token=True``): the autoregressive split used by PPO-for-LMs code: every
    active token t gets −β(log π_θ − log π_ref)_t and the last active token also gets the score → (B, T).
    Both forms sum to the same total per sequence.
    """
    beta = check_positive(beta, "beta")
    lp, rlp = broadcast_pair(as_logprobs(logp, "logp"), as_logprobs(ref_logp, "ref_logp"), "logp", "ref_logp")
    s = as_tensor(score, "score").to(lp.dtype)
    check_finite(s, "score")
    log_ratio = (lp - rlp).detach()
    if lp.dim() <= 1 and not per_token:  # already sequence log-probs
        _, s = broadcast_pair(log_ratio, s, "logp", "score")
        return s - beta * log_ratio
    m = as_mask(mask, lp, "mask")
    if s.shape != lp.shape[:-1]:
        raise ValueError(f"score (shape {tuple(s.shape)}) must have one entry per sequence {tuple(lp.shape[:-1])}")
    if not per_token:
        return s - beta * (log_ratio * m).sum(-1)
    if bool((m.sum(-1) == 0).any()):
        raise ValueError("mask has a sequence with no active token; its score has no token to attach to")
    rewards = -beta * log_ratio * m  # (B, T)
    T = m.shape[-1]
    last = T - 1 - torch.flip(m, dims=[-1]).argmax(-1)  # (B,) index of the last active token
    return rewards.scatter_add(-1, last.unsqueeze(-1), s.unsqueeze(-1))


# ---------------------------------------------------------------------------------------------------------------
# Functions the pages and notebooks call instead of computing formulas inline.


class ClippingEffect(NamedTuple):
    """What the clipped minimum does to one term: ``removed = unclipped − clipped`` (>= 0)."""

    unclipped: torch.Tensor  # ρ·A
    clipped: torch.Tensor  # min(ρA, clip(ρ, 1−ε, 1+ε_high)A)
    removed: torch.Tensor  # incentive the clip takes away; exactly 0 where the clip does not bind


def clipping_effect(
    ratio: TensorLike, advantages: TensorLike, epsilon: float = 0.2, epsilon_high: float | None = None
) -> ClippingEffect:
    """The plain term ρA, the clipped term of :func:`clipped_surrogate` and their gap [ftip-003F; Schulman et al. 2017, §3, eq. 7].

    Same arguments and broadcasting as :func:`clipped_surrogate`. ``removed`` is >= 0 everywhere (the
    minimum never exceeds ρA) and is exactly 0 where the unclipped term is the binding one, so
    ``removed > 0`` marks the flat (clipped) region.
    """
    clipped = clipped_surrogate(ratio, advantages, epsilon, epsilon_high)
    rho, adv = broadcast_pair(as_tensor(ratio, "ratio"), as_tensor(advantages, "advantages"), "ratio", "advantages")
    check_finite(rho.detach(), "ratio")
    check_finite(adv.detach(), "advantages")
    unclipped = rho * adv
    return ClippingEffect(unclipped, clipped, unclipped - clipped)


def kl_shaped_reward_from_ratio(score: TensorLike, ratio: TensorLike, beta: float) -> torch.Tensor:
    """R = r_φ − β log(π_θ(y|x)/π_ref(y|x)) given the probability ratio itself [ftip-003D; Ouyang et al. 2022, §3.5, eq. 2].

    ``ratio`` = π_θ/π_ref must be finite and > 0; ``score`` finite; ``beta`` > 0, as in
    :func:`kl_shaped_reward` (which takes the two log-probabilities instead). Broadcasts.
    """
    beta = check_positive(beta, "beta")
    rho = as_tensor(ratio, "ratio")
    if not rho.is_floating_point():
        rho = rho.to(torch.float64)
    check_finite(rho.detach(), "ratio")
    if not bool((rho.detach() > 0).all()):
        raise ValueError(f"ratio must be > 0 (a ratio of probabilities whose log is taken); got {rho[rho <= 0].flatten()[:4].tolist()}")
    s = as_tensor(score, "score")
    if not s.is_floating_point():
        s = s.to(rho.dtype)
    check_finite(s.detach(), "score")
    s, rho = broadcast_pair(s, rho, "score", "ratio")
    return s - beta * torch.log(rho)
