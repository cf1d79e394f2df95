"""RLHF with PPO: the clipped surrogate, the value-and-entropy objective and the KL-shaped reward.

Reference chapter "Reinforcement learning from human feedback and proximal policy optimization"
(ftip-0039): clipped surrogate ftip-003F (Schulman et al. 2017, §3, eq. 7), value-and-entropy
objective ftip-003G (Schulman et al. 2017, §5, eq. 9), KL-shaped reward ftip-003D (Ouyang et al. 2022,
§3.5, eq. 2), worked examples ftip-003I (clipping cases) and ftip-003J (shaped reward).

Everything here is an *objective* to maximise, as in the papers; a trainer minimises its negative.
Diagnostics use TRL's metric names (``clip_ratio/low_mean`` …) and CleanRL's ``approx_kl``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from lab._checks import (
    TensorLike,
    active_values,
    as_mask,
    as_tensor,
    broadcast_pair,
    check_active,
    check_finite,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_same_shape,
)
from lab.rl import gae


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
    Both inputs must be finite (an infinite ratio times A = 0 has no value).
    """
    low, high = _clip_bounds(epsilon, epsilon_high)
    # Fast sufficient tests first (finite and >= 0 implies no NaN); where one fails, the original checks run in
    # their original order and decide, with their own messages.
    rho = as_tensor(ratio, "ratio", allow_nan=True)
    if not _nonnegative_finite(rho):
        as_tensor(rho, "ratio")  # NaN
        check_finite(rho, "ratio")
        if not bool((rho.detach() >= 0).all()):
            raise ValueError("ratio must be >= 0 (a ratio of probabilities)")
    adv = as_tensor(advantages, "advantages", allow_nan=True)
    if not _all_finite(adv):
        as_tensor(adv, "advantages")  # NaN
        check_finite(adv, "advantages")
    rho, adv = broadcast_pair(rho, adv, "ratio", "advantages")
    return _clipped_surrogate(rho, adv, low, high)


def _nonnegative_finite(t: torch.Tensor) -> bool:
    """Sufficient test that ``t`` is finite and >= 0 everywhere (NaN fails both comparisons)."""
    d = t.detach() if t.requires_grad else t
    if d.dtype not in (torch.float64, torch.float32) or d.numel() == 0:
        return False
    lo, hi = torch.aminmax(d)
    return float(lo) >= 0.0 and float(hi) < float("inf")


def _all_finite(t: torch.Tensor) -> bool:
    """Sufficient test that a floating ``t`` is finite everywhere (a sum is finite only when every term is)."""
    d = t.detach() if t.requires_grad else t
    return d.dtype in (torch.float64, torch.float32) and math.isfinite(float(d.sum()))


def _clipped_surrogate(rho: torch.Tensor, adv: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """The unchecked core of :func:`clipped_surrogate`: min(ρA, clip(ρ, low, high)A) elementwise.

    For validated inputs of one shape (ρ finite and >= 0, A finite) and bounds from :func:`_clip_bounds`.
    """
    return torch.minimum(rho * adv, torch.clamp(rho, low, high) * adv)


def clip_fractions(
    ratio: TensorLike,
    advantages: TensorLike,
    mask: TensorLike | None = None,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
) -> dict[str, float]:
    """Fractions of active tokens whose clipped term is the binding one, split by the sign of A.

    ``clip_ratio/low_mean``: A < 0 and ρ < 1−ε; ``clip_ratio/high_mean``: A > 0 and ρ > 1+ε_high;
    ``clip_ratio/region_mean``: either (TRL's names and definitions). The bounds are exactly those of
    :func:`clipped_surrogate` with the same ``epsilon``/``epsilon_high``. ``mask`` (bool or 0/1, the
    broadcast shape; default all active): masked positions may hold anything and are not counted.
    """
    low, high = _clip_bounds(epsilon, epsilon_high)
    rho, adv = broadcast_pair(as_tensor(ratio, "ratio", allow_nan=True).detach(),
                              as_tensor(advantages, "advantages", allow_nan=True).detach(), "ratio", "advantages")
    m = as_mask(mask, rho, "mask")
    active = m > 0
    check_active(rho, active, "ratio")
    check_active(adv, active, "advantages")
    return _clip_fractions(rho, adv, active, m.sum(), low, high)


def _clip_fractions(
    rho: torch.Tensor, adv: torch.Tensor, active: torch.Tensor | None, n_active: torch.Tensor, low: float, high: float
) -> dict[str, float]:
    """The unchecked core of :func:`clip_fractions`: ρ and A finite at the ``active`` (bool) positions, shapes
    broadcastable, ``n_active`` the number of active positions, bounds from :func:`_clip_bounds`.
    ``active=None`` declares every position active (the selection is skipped)."""
    is_low = (rho < low) & (adv < 0)
    is_high = (rho > high) & (adv > 0)
    if active is not None:
        is_low, is_high = is_low & active, is_high & active
    # one division and one read-out for the three counts (each entry is the same count / n as three divisions give)
    low_mean, high_mean, region_mean = (torch.stack([is_low.sum(), is_high.sum(), (is_low | is_high).sum()]) / n_active).tolist()
    return {"clip_ratio/low_mean": low_mean, "clip_ratio/high_mean": high_mean, "clip_ratio/region_mean": region_mean}


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
    clip_ratio_c: float | None = None,
    old_values: TensorLike | None = None,
    value_clip: float | None = None,
    log_ratio_clamp: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's combined objective Ê_t[L^CLIP_t − c1 (V(H_t) − Ĝ_t)² + c2 H(π(·|H_t))] [ftip-003G; Schulman et al. 2017, eq. 9].

    ``logp`` (B, T) current log-probs of the sampled tokens; ``old_logp`` (B, T) the behaviour policy's;
    ``advantages`` (B, T) or (B, 1); ``mask`` (B, T) the active tokens (Ê_t averages over them).
    ``values``/``value_targets`` (B, T) enter the value loss when given (weight ``c1`` >= 0);
    ``entropy`` (B, T) per-token policy entropy enters the bonus (weight ``c2`` >= 0).

    Masked positions may hold anything (padding fillers 0, −1e4, ±inf, NaN) in every input: each input
    is replaced by a safe value there before any exp or product, so they change neither the objective,
    its gradient nor the metrics. Active log-probs must be finite and <= 0; other active inputs finite.

    Framework conventions, all off by default (the paper's PPO):

    - ``clip_ratio_c`` (> 1): dual-clip (Ye et al. 2020, §3.2, eq. 4): for A < 0 the term is also
      bounded below by c·A, so one token with a huge ratio cannot dominate (verl: on, c = 3).
    - ``value_clip`` with ``old_values``: PPO2's value clipping (as in OpenAI baselines and CleanRL's
      ``clip_vloss``): V is kept within ``old_values`` ± ``value_clip`` and the larger squared error counts.
    - ``log_ratio_clamp``: clamp log ρ to ±c before exp (verl clamps at 20), a guard against overflow that
      changes the value only where |log ρ| > c.

    Returns ``(objective, metrics)``; metrics: ``objective/clipped_surrogate``, ``loss/value``,
    ``entropy``, clip fractions split by the sign of A (``clip_ratio/low_mean``, ``clip_ratio/high_mean``,
    ``clip_ratio/region_mean``), ``clipfrac`` (ρ outside [1−ε, 1+ε_high], CleanRL's |ρ−1| > ε when
    ``epsilon_high`` is None; the same bounds as the objective) and ``approx_kl`` (mean of
    (ρ−1) − log ρ, the k3 estimate of KL(π_old ‖ π_θ), CleanRL).
    """
    c1 = check_nonnegative(c1, "c1")
    c2 = check_nonnegative(c2, "c2")
    low, high = _clip_bounds(epsilon, epsilon_high)
    if clip_ratio_c is not None:
        clip_ratio_c = check_positive(clip_ratio_c, "clip_ratio_c")
        if clip_ratio_c <= 1.0:
            raise ValueError(f"clip_ratio_c must be > 1 (a lower bound c·A below A for A < 0); got {clip_ratio_c}")
    if log_ratio_clamp is not None:
        log_ratio_clamp = check_positive(log_ratio_clamp, "log_ratio_clamp")
    if (value_clip is None) != (old_values is None):
        raise ValueError("old_values and value_clip must be given together (value clipping needs both)")
    if value_clip is not None:
        value_clip = check_positive(value_clip, "value_clip")
    lp, olp = broadcast_pair(as_tensor(logp, "logp", allow_nan=True), as_tensor(old_logp, "old_logp", allow_nan=True), "logp", "old_logp")
    m = as_mask(mask, lp, "mask")
    active = m > 0
    check_active(lp, active, "logp", logprob=True)
    check_active(olp, active, "old_logp", logprob=True)

    def masked_input(x: TensorLike, name: str) -> torch.Tensor:
        t = as_tensor(x, name, allow_nan=True).to(lp.dtype)
        try:
            t = t.expand_as(lp)
        except RuntimeError:
            raise ValueError(f"{name} (shape {tuple(t.shape)}) must broadcast to logp's shape {tuple(lp.shape)}") from None
        check_active(t, active, name)
        return active_values(t, active)

    adv = masked_input(advantages, "advantages").detach()  # (B, T), 0 where masked
    # the log-ratio exists only at active positions: 0 elsewhere BEFORE exp, so fillers cannot overflow
    log_ratio = active_values(lp, active) - active_values(olp, active).detach()  # (B, T)
    if log_ratio_clamp is not None:
        log_ratio = torch.clamp(log_ratio, -log_ratio_clamp, log_ratio_clamp)
    ratio = torch.exp(log_ratio)  # (B, T), 1 where masked
    if not bool(torch.isfinite(ratio.detach()).all()):
        raise ValueError("logp - old_logp is so large at an active position that the ratio exp(logp - old_logp) overflows")
    surrogate = clipped_surrogate(ratio, adv, epsilon, epsilon_high)  # (B, T), 0 where masked
    dual = torch.zeros_like(active)
    if clip_ratio_c is not None:  # dual-clip: for A < 0, never below c·A
        floor = clip_ratio_c * adv
        dual = (adv < 0) & (surrogate.detach() < floor) & active
        surrogate = torch.where(adv < 0, torch.maximum(surrogate, floor), surrogate)
    n = m.sum()
    objective = surrogate.sum() / n
    metrics: dict[str, float] = {"objective/clipped_surrogate": float(objective.detach())}
    if (values is None) != (value_targets is None):
        raise ValueError("values and value_targets must be given together")
    if values is not None:
        v, g = masked_input(values, "values"), masked_input(value_targets, "value_targets").detach()
        sq = (v - g) ** 2  # (B, T), masked: 0 − 0
        if value_clip is not None:
            v_old = masked_input(old_values, "old_values").detach()
            v_clipped = v_old + torch.clamp(v - v_old, -value_clip, value_clip)
            sq_clipped = (v_clipped - g) ** 2
            metrics["vf_clipfrac"] = float(((sq_clipped > sq).detach() & active).sum() / n)
            sq = torch.maximum(sq, sq_clipped)
        value_loss = sq.sum() / n
        objective = objective - c1 * value_loss
        metrics["loss/value"] = float(value_loss.detach())
    if entropy is not None:
        mean_h = masked_input(entropy, "entropy").sum() / n
        objective = objective + c2 * mean_h
        metrics["entropy"] = float(mean_h.detach())
    rho = ratio.detach()
    metrics.update(clip_fractions(rho, adv, m, epsilon, epsilon_high))
    metrics["clipfrac"] = float((((rho < low) | (rho > high)) & active).sum() / n)
    if clip_ratio_c is not None:
        metrics["pg_clipfrac_lower"] = float(dual.sum() / n)  # verl's name: tokens held at c·A
    # samples come from the old policy, so this estimates KL(π_old ‖ π_θ): k3 of d = log π_θ − log π_old
    metrics["approx_kl"] = float((torch.expm1(log_ratio.detach()) - log_ratio.detach()).sum() / n)
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
    lp, rlp = broadcast_pair(as_tensor(logp, "logp", allow_nan=True), as_tensor(ref_logp, "ref_logp", allow_nan=True), "logp", "ref_logp")
    s = as_tensor(score, "score").to(lp.dtype)
    check_finite(s, "score")
    if lp.dim() <= 1 and not per_token:  # already sequence log-probs: no mask
        if mask is not None:
            raise ValueError("mask applies to token log-probs (B, T); logp here are sequence log-probs (B,)")
        check_active(lp, torch.ones_like(lp, dtype=torch.bool), "logp", logprob=True)
        check_active(rlp, torch.ones_like(lp, dtype=torch.bool), "ref_logp", logprob=True)
        log_ratio = (lp - rlp).detach()
        _, s = broadcast_pair(log_ratio, s, "logp", "score")
        return s - beta * log_ratio
    m = as_mask(mask, lp, "mask", allow_empty=not per_token)
    active = m > 0
    check_active(lp, active, "logp", logprob=True)
    check_active(rlp, active, "ref_logp", logprob=True)
    log_ratio = (active_values(lp, active) - active_values(rlp, active)).detach()  # (B, T), 0 where masked
    if s.shape != lp.shape[:-1]:
        raise ValueError(f"score (shape {tuple(s.shape)}) must have one entry per sequence {tuple(lp.shape[:-1])}")
    if not per_token:
        return s - beta * (log_ratio * m).sum(-1)
    if bool((m.sum(-1) == 0).any()):
        raise ValueError("mask has a sequence with no active token; its score has no token to attach to")
    rewards = -beta * log_ratio  # (B, T), 0 where masked
    T = m.shape[-1]
    last = T - 1 - torch.flip(m, dims=[-1]).argmax(-1)  # (B,) index of the last active token
    return rewards.scatter_add(-1, last.unsqueeze(-1), s.unsqueeze(-1))


class TokenAdvantages(NamedTuple):
    """Per-token quantities of one PPO rollout batch, all (B, T) and exactly 0 at masked positions."""

    rewards: torch.Tensor  # KL-shaped rewards: −β·(log π − log π_ref) per token, plus the score at the last token
    advantages: torch.Tensor  # GAE advantages (whitened over active tokens when ``whiten``)
    returns: torch.Tensor  # λ-returns = raw GAE advantages + values: the value targets


def ppo_advantages(
    scores: TensorLike,
    logp: TensorLike,
    ref_logp: TensorLike,
    values: TensorLike,
    mask: TensorLike,
    kl_coef: float = 0.05,
    gamma: float = 1.0,
    lam: float = 0.95,
    whiten: bool = True,
    ddof: int = 1,
    eps: float = 1e-8,
) -> TokenAdvantages:
    """The advantage pipeline of PPO for language models [ftip-003D, ftip-003E; Ouyang et al. 2022, §3.5, eq. 2;
    Schulman et al. 2016, §3, eq. 16].

    1. per-token KL-shaped rewards (:func:`kl_shaped_reward` with ``per_token=True``): every completion
       token gets −``kl_coef``·(log π − log π_ref), the last one also the sequence ``score``;
    2. values are set to 0 after the last active token, so the state after eos is terminal (V = 0) and
       nothing past the completion leaks into its advantages;
    3. GAE (:func:`lab.rl.gae`) with ``gamma`` and ``lam``; returns = advantages + values (value targets);
    4. when ``whiten`` (default, as TRL's PPO trainer), the advantages are whitened over the batch's active
       tokens (:func:`lab.grpo.whiten_advantages` with ``ddof`` and ``eps``; returns are not whitened).

    ``scores`` (B,) sequence scores; ``logp``, ``ref_logp`` (B, T) log-probs of the sampled tokens under the
    behaviour policy and the frozen reference; ``values`` (B, T) V(H_t) before each token; ``mask`` (B, T) the
    completion tokens, a prefix of each row (right padding; at least one token per row). Masked positions of
    ``logp``, ``ref_logp`` and ``values`` may hold anything. ``kl_coef`` >= 0 (0: the score alone). Everything
    returned is detached: these are targets, not part of the graph.
    """
    kl_coef = check_nonnegative(kl_coef, "kl_coef")
    if not isinstance(whiten, bool):
        raise ValueError(f"whiten must be True or False; got {whiten!r}")
    lp = as_tensor(logp, "logp", allow_nan=True).detach()
    if lp.dim() != 2:
        raise ValueError(f"logp must have shape (B, T); got {tuple(lp.shape)}")
    s = as_tensor(scores, "scores").detach()
    check_finite(s, "scores")
    if s.shape != lp.shape[:1]:
        raise ValueError(f"scores (shape {tuple(s.shape)}) must hold one score per row of logp {tuple(lp.shape[:1])}")
    m = as_mask(mask, lp, "mask")
    if bool((m[:, 1:] > m[:, :-1]).any()):
        raise ValueError("mask must mark a prefix of each row (a right-padded completion): an active token after a masked one")
    active = m > 0
    v = as_tensor(values, "values", allow_nan=True).detach()
    check_same_shape(v, lp, "values", "logp")
    check_active(v, active, "values")
    if kl_coef > 0:
        rewards = kl_shaped_reward(s, lp, as_tensor(ref_logp, "ref_logp", allow_nan=True).detach(), kl_coef, m, per_token=True)
    else:  # no KL penalty: the log ratio's value is irrelevant; reuse the shaping with a zero log ratio to place the score
        check_active(as_tensor(ref_logp, "ref_logp", allow_nan=True), active, "ref_logp", logprob=True)
        rewards = kl_shaped_reward(s, lp, lp, 1.0, m, per_token=True)
    rewards = rewards.to(torch.promote_types(rewards.dtype, v.dtype))
    v = active_values(v.to(rewards.dtype), active)  # (B, T), 0 after eos: the terminal value
    adv, _ = gae(rewards, v, gamma, lam)  # (B, T); 0 at masked positions (zero reward, zero value)
    adv = active_values(adv, active)
    returns = active_values(adv + v, active)
    if whiten:
        from lab.grpo import whiten_advantages  # lab.grpo imports this module: import at call time

        adv = whiten_advantages(adv, m, ddof=ddof, eps=eps)
    return TokenAdvantages(rewards, adv, returns)


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
