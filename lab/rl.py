"""Reinforcement-learning foundations: returns, baselines, GAE, likelihood ratios, the PG surrogate.

Reference chapter "Reinforcement-learning foundations" (ftip-002W): notation ftip-002X, return
ftip-0030 (Sutton & Barto 2018, §3.3), advantage ftip-0032 (Schulman et al. 2016, §2), likelihood
ratio ftip-0035 (Schulman et al. 2017, §2, eq. 3), policy-gradient surrogate ftip-0036 (Schulman et
al. 2017, §2, eqs. 1–2), worked example ftip-0037; GAE ftip-003E (Schulman et al. 2016, §3, eqs. 10 and 16).

Time is the last dimension everywhere: rewards (..., T) hold R_1 … R_T for decisions t = 0 … T−1.
"""

from __future__ import annotations

import torch

from lab._checks import (
    TensorLike,
    active_values,
    as_float,
    as_logprobs,
    as_mask,
    as_tensor,
    broadcast_pair,
    check_active,
    check_closed_unit,
    check_finite,
    check_same_shape,
)


def discounted_returns(rewards: TensorLike, gamma: float) -> torch.Tensor:
    """G_t = Σ_{k=t}^{T−1} γ^{k−t} R_{k+1} for every t [ftip-0030; Sutton & Barto 2018, §3.3].

    ``rewards`` (..., T) → returns (..., T). ``gamma`` must lie in [0, 1].
    Computed backwards, G_t = R_{t+1} + γ G_{t+1}, with G_T = 0 at the end of the episode.
    """
    gamma = check_closed_unit(gamma, "gamma")
    r = as_tensor(rewards, "rewards")
    check_finite(r, "rewards")
    if r.dim() == 0 or r.shape[-1] == 0:
        raise ValueError("rewards must have at least one time step (shape (..., T) with T >= 1)")
    out = torch.zeros_like(r)
    running = torch.zeros_like(r[..., 0])
    for t in range(r.shape[-1] - 1, -1, -1):
        running = r[..., t] + gamma * running
        out[..., t] = running
    return out


def advantage_from_baseline(returns: TensorLike, baseline: TensorLike) -> torch.Tensor:
    """Â_t = G_t − b(H_t): a baseline-relative advantage estimate [ftip-0032, ftip-0033].

    The baseline must not depend on the sampled action (then it changes variance, not the expected
    gradient). ``baseline`` broadcasts against ``returns`` (a scalar, a per-step value, a group mean).
    """
    g, b = broadcast_pair(as_tensor(returns, "returns"), as_tensor(baseline, "baseline"), "returns", "baseline")
    check_finite(g, "returns")
    check_finite(b, "baseline")
    return _advantage_from_baseline(g, b)


def _advantage_from_baseline(g: torch.Tensor, b: torch.Tensor | float) -> torch.Tensor:
    """The unchecked core of :func:`advantage_from_baseline` for finite returns and a finite baseline that
    broadcasts against them (a 0-dim tensor or a float for one baseline per batch)."""
    return g - b


def td_residuals(rewards: TensorLike, values: TensorLike, gamma: float, next_value: float = 0.0) -> torch.Tensor:
    """δ_t = R_{t+1} + γ V(H_{t+1}) − V(H_t) [ftip-003E; Schulman et al. 2016, §3, eq. 10].

    ``rewards`` and ``values`` (..., T); ``next_value`` is V after the last step: 0 at a terminal
    state (the reference's convention), a bootstrap value for a truncated episode.
    """
    gamma = check_closed_unit(gamma, "gamma")
    r = as_tensor(rewards, "rewards")
    v = as_tensor(values, "values")
    check_same_shape(r, v, "rewards", "values")
    check_finite(r, "rewards")
    check_finite(v, "values")
    if r.dim() == 0 or r.shape[-1] == 0:
        raise ValueError("rewards must have at least one time step")
    nv = as_float(next_value, "next_value")
    if nv != nv or abs(nv) == float("inf"):
        raise ValueError(f"next_value must be finite; got {nv}")
    r, v = broadcast_pair(r, v, "rewards", "values")  # a common floating dtype
    v_next = torch.cat([v[..., 1:], torch.full_like(v[..., :1], nv)], dim=-1)  # (..., T)
    return r + gamma * v_next - v


def gae(
    rewards: TensorLike, values: TensorLike, gamma: float, lam: float, next_value: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation [ftip-003E; Schulman et al. 2016, §3, eq. 16].

    Â_t = Σ_{l=0}^{T−t−1} (γλ)^l δ_{t+l}, with V = ``next_value`` (0: terminal) after the last step.
    Returns ``(advantages, returns)``, both (..., T), where returns = advantages + values are the
    λ-returns used as value targets. λ = 1 gives G_t − V(H_t); λ = 0 gives the one-step δ_t.
    """
    lam = check_closed_unit(lam, "lam")
    delta = td_residuals(rewards, values, gamma, next_value)  # (..., T)
    adv = torch.zeros_like(delta)
    running = torch.zeros_like(delta[..., 0])
    for t in range(delta.shape[-1] - 1, -1, -1):
        running = delta[..., t] + gamma * lam * running
        adv[..., t] = running
    return adv, adv + as_tensor(values, "values").to(adv.dtype)  # values were validated by td_residuals


def likelihood_ratio(logp: TensorLike, behavior_logp: TensorLike) -> torch.Tensor:
    """ρ_t(θ) = π_θ(A_t | H_t) / π_b(A_t | H_t) = exp(log π_θ − log π_b) [ftip-0035; Schulman et al. 2017, eq. 3].

    Both arguments are log-probabilities of the sampled actions (finite, <= 0); the behaviour
    log-probability is treated as a constant (no gradient flows into it).
    """
    lp, blp = broadcast_pair(as_logprobs(logp, "logp"), as_logprobs(behavior_logp, "behavior_logp"), "logp", "behavior_logp")
    rho = _likelihood_ratio(lp, blp)
    if not bool(torch.isfinite(rho.detach()).all()):
        raise ValueError("logp - behavior_logp is so large that the ratio exp(logp - behavior_logp) overflows the dtype")
    return rho


def _likelihood_ratio(lp: torch.Tensor, blp: torch.Tensor) -> torch.Tensor:
    """The unchecked core of :func:`likelihood_ratio`: exp(lp − blp), no gradient into ``blp``.

    For callers that have already validated both inputs (finite, <= 0, same shape and dtype), e.g. a
    trainer that checks once per step what stays fixed and once per epoch what moves. The caller must
    still reject an infinite result (the public function's overflow check).
    """
    return torch.exp(lp - blp.detach())


def policy_gradient_surrogate(logp: TensorLike, advantages: TensorLike, mask: TensorLike | None = None) -> torch.Tensor:
    """L^PG(θ) = Ê_t[log π_θ(A_t | H_t) · Â_t] [ftip-0036; Schulman et al. 2017, §2, eqs. 1–2].

    The objective to *maximise* (negate it for a loss). ``logp`` and ``advantages`` (..., T);
    ``mask`` (..., T, bool or 0/1) selects the sampled decisions entering the empirical average (ftip-006Z).
    Masked positions may hold anything (fillers, ±inf, NaN) and affect neither value nor gradient.
    Advantages are held fixed: their gradient is cut, so the gradient is the score-function estimator.
    """
    lp, adv = broadcast_pair(as_tensor(logp, "logp", allow_nan=True), as_tensor(advantages, "advantages", allow_nan=True),
                             "logp", "advantages")
    m = as_mask(mask, lp, "mask")
    active = m > 0
    check_active(lp, active, "logp", logprob=True)
    check_active(adv, active, "advantages")
    return _policy_gradient_surrogate(lp, adv, active, m.sum())


def _policy_gradient_surrogate(
    lp: torch.Tensor, adv: torch.Tensor, active: torch.Tensor | None, n_active: torch.Tensor
) -> torch.Tensor:
    """The unchecked core of :func:`policy_gradient_surrogate` for validated inputs of one shape (..., T).

    ``active`` (bool, that shape) selects the decisions, ``n_active`` is their number (``mask.sum()``).
    Masked positions are replaced before the product, so they reach neither value nor gradient.
    ``active=None`` declares every position active: selecting everything changes no value and no gradient,
    so the selection is skipped.
    """
    if active is None:
        return (lp * adv.detach()).sum() / n_active
    return (active_values(lp, active) * active_values(adv, active).detach()).sum() / n_active


def explained_variance(
    values: TensorLike, returns: TensorLike, mask: TensorLike | None = None, if_constant: float = float("nan")
) -> float:
    """Explained variance of the value predictions, 1 − Var[Ĝ − V] / Var[Ĝ], over the active positions [ftip-003E].

    The value-function diagnostic of PPO code (CleanRL's ``losses/explained_variance``): 1 means V predicts
    the returns exactly, 0 means no better than their mean, negative means worse than the mean.
    ``values`` V(H_t) and ``returns`` Ĝ_t (the λ-returns that serve as value targets, e.g. from :func:`gae`)
    have the same shape; ``mask`` (same shape, bool or 0/1; default all active) selects the positions.
    Masked positions may hold anything (fillers, ±inf, NaN). Both variances use the same divisor, so the
    ratio does not depend on it. When the active returns have zero spread (max == min, an exact test: equal
    floats need not give a variance of exactly 0) the ratio is undefined and ``if_constant`` is returned
    (default NaN, as CleanRL; pass 0.0 for a plot that must stay finite).
    """
    v = as_tensor(values, "values", allow_nan=True).detach()
    g = as_tensor(returns, "returns", allow_nan=True).detach()
    check_same_shape(v, g, "values", "returns")
    if g.numel() == 0:
        raise ValueError("returns must not be empty")
    if_constant = as_float(if_constant, "if_constant")
    m = as_mask(mask, g, "mask")
    active = m > 0
    check_active(v, active, "values")
    check_active(g, active, "returns")
    v, g = v.to(torch.float64)[active], g.to(torch.float64)[active]  # (N,) active positions, float64 sums
    if bool(g.max() == g.min()):
        return if_constant
    var_g = ((g - g.mean()) ** 2).mean()
    resid = g - v
    var_r = ((resid - resid.mean()) ** 2).mean()
    return float(1.0 - var_r / var_g)
