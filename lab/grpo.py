"""Group-relative policy optimization and DAPO's four interventions.

Reference chapter "Reinforcement learning with verifiable rewards" (ftip-0042): rollout group
ftip-004B, group statistics ftip-004C and group-relative advantage ftip-004D (Shao et al. 2024,
§4.1.2), outcome- and process-supervision GRPO ftip-004E/004F (§4.1.2–4.1.3), estimator conventions
ftip-004G; DAPO (Yu et al. 2025, §3.1–3.4): clip-higher ftip-004H, dynamic sampling ftip-004I,
token-level loss ftip-004J, overlong shaping ftip-004K; worked example ftip-004M; ftip-004N (group advantages
then clipping; the reference states no numbers, the lab's tests and pages use their own).

Rewards arrive flat, (N,) with N = groups × group_size, group members contiguous (TRL's layout).
Every convention the source leaves open is a parameter: the std divisor (``ddof``), the stabiliser
``eps`` (added to the std, as TRL does), the scaling ``scale`` and the ``zero_std`` policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple, Sequence

import torch

from lab._checks import (
    TensorLike,
    active_values,
    as_float,
    as_mask,
    as_tensor,
    check_active,
    check_choice,
    check_finite,
    check_int,
    check_nonnegative,
    check_positive,
)
from lab.kl import kl_estimate
from lab.ppo import _clip_fractions, _clipped_surrogate, clip_fractions, clipped_surrogate

Scale = Literal["group", "batch", "none"]
LossType = Literal["grpo", "bnpo", "dr_grpo", "dapo", "seq-mean-token-sum", "seq-mean-token-sum-norm"]
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "seq-mean-token-sum", "seq-mean-token-sum-norm")


def _grouped(rewards: TensorLike, group_size: int) -> torch.Tensor:
    r = as_tensor(rewards, "rewards")
    check_finite(r, "rewards")
    if r.dim() != 1:
        raise ValueError(f"rewards must be a flat vector (N,) of group members; got shape {tuple(r.shape)}")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an integer >= 2 (a group needs a comparison); got {group_size!r}")
    if r.numel() == 0 or r.numel() % group_size:
        raise ValueError(f"group_size {group_size} must divide the number of rewards {r.numel()}")
    return r.view(-1, group_size)  # (G, g)


def _zero_spread(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """True where every value is equal: max == min, exactly.

    The one zero-spread test of this module (group_advantages, group_stats, process_advantages and
    dynamic_sampling all use it). ``torch.std`` of equal floats is ~1e-17, not 0, so ``std == 0``
    misses real all-equal groups such as [0.1, 0.1, 0.1].
    """
    if dim is None:
        return x.max() == x.min()
    return x.amax(dim) == x.amin(dim)


def _scaled(x: torch.Tensor, dim: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(c, s)`` with x − min(x) = c·s, ``c`` in [0, 1) and ``s`` a power of two (1 for an all-equal set).

    Subtracting the minimum makes near-equal values subtract exactly (Sterbenz) and turns an all-equal
    set into exact zeros, so its mean deviation and std are exactly 0. Dividing by a power of two is
    exact and keeps the squares inside the std from underflowing (spread 1e-200) or overflowing (1e200).
    """
    low = x.min() if dim is None else x.amin(dim, keepdim=True)
    shifted = x - low
    if not bool(torch.isfinite(shifted).all()):
        raise ValueError("rewards are too far apart: max(rewards) - min(rewards) overflows the dtype")
    top = shifted.max() if dim is None else shifted.amax(dim, keepdim=True)
    s = torch.where(top > 0, torch.ldexp(torch.ones_like(top), torch.frexp(top).exponent), torch.ones_like(top))
    return shifted / s, s


def _std(x: torch.Tensor, ddof: int, dim=None) -> torch.Tensor:
    n = x.shape[dim] if dim is not None else x.numel()
    if isinstance(ddof, bool) or ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population std) or 1 (sample std, Bessel); got {ddof!r}")
    if n - ddof <= 0:
        raise ValueError(f"ddof={ddof} needs more than {ddof} values; got {n}")
    c, s = _scaled(x, dim)
    return torch.std(c, dim=dim, correction=ddof) * (s if dim is None else s.squeeze(dim))


def _standardised(x: torch.Tensor, ddof: int, eps: float, dim: int | None = None,
                  std_of: torch.Tensor | None = None) -> torch.Tensor:
    """(x − mean(x)) / (std + eps), computed in the units of :func:`_scaled`: (c − mean c) / (std_c + eps/s).

    Both sides are divided by the same power of two s, so this equals the direct formula bit for bit wherever that
    neither underflows nor overflows. It stays right where the direct formula does not: a spread near the smallest
    floats (rewards 1e-310 and 3e-310 standardise to 1.41 and −0.71, as 1 and 3 do). ``std_of``: take the std
    (and the unit) from these values instead of ``x`` (batch scaling of group-centred rewards); ``dim`` is then None.
    """
    c, s = _scaled(x, dim)
    cc = c - (c.mean() if dim is None else c.mean(dim, keepdim=True))

    def over(num: float | torch.Tensor, unit: torch.Tensor) -> torch.Tensor:
        # num / unit for a power of two unit, by its exponent: exact, inf on overflow. Not num / unit: torch divides
        # by multiplying with 1/unit, which is inf for a subnormal unit, and 0 · inf is nan
        k = torch.frexp(unit).exponent - 1  # unit = 2^k
        return torch.ldexp(torch.as_tensor(num, dtype=unit.dtype).expand_as(unit), -k)

    if std_of is None:
        _std(x, ddof, dim)  # validates ddof against the count
        sd = torch.std(c, dim=dim, correction=ddof) if dim is None else torch.std(c, dim=dim, correction=ddof, keepdim=True)
        e = over(eps, s)
        out = cc / (sd + e)
        if bool(torch.isinf(e).any()):  # eps dwarfs a spread near the smallest floats: the direct form keeps the tiny result
            out = torch.where(torch.isinf(e), cc * s / (sd * s + eps), out)
        return out
    _std(std_of, ddof)
    cb, sb = _scaled(std_of)
    flat = (c.amax() if dim is None else c.amax(dim, keepdim=True)) == 0  # a zero-spread group: cc is exactly 0
    ratio = torch.ldexp(torch.ones_like(s), torch.frexp(s).exponent - torch.frexp(sb).exponent)  # s / sb, exactly
    ratio = torch.where(flat, torch.zeros_like(ratio), ratio)  # never 0 · inf (its gradient would be nan)
    sdb, e = torch.std(cb, correction=ddof), over(eps, sb)
    if bool(torch.isinf(e)):  # eps dwarfs a batch spread near the smallest floats: the direct form
        return cc * s / (sdb * sb + eps)
    return cc * ratio / (sdb + e)


def _centred(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """x − mean(x), computed from the exact shift-and-scale of :func:`_scaled` (exactly 0 for equal values)."""
    c, s = _scaled(x, dim)
    return (c - (c.mean() if dim is None else c.mean(dim, keepdim=True))) * s


def group_stats(rewards: TensorLike, group_size: int, ddof: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Group mean R̄ and standard deviation S_R per prompt group [ftip-004C; Shao et al. 2024, §4.1.2].

    ``rewards`` (N,) → ``(mean, std)``, each (G,). ``ddof=1`` divides by g−1 (TRL's ``nanstd``),
    ``ddof=0`` by g (population std, used by the lab's own illustration of ftip-004N).
    A group whose rewards are all equal has std exactly 0 and mean exactly its common value.
    """
    r = _grouped(rewards, group_size)
    c, s = _scaled(r, -1)  # (G, g), (G, 1)
    mean = r.amin(-1) + (c.mean(-1, keepdim=True) * s).squeeze(-1)  # (G,)
    return mean, _std(r, ddof, dim=-1)


def group_advantages(
    rewards: TensorLike,
    group_size: int,
    scale: Scale = "group",
    ddof: int = 1,
    eps: float = 1e-4,
    zero_std: Literal["zero", "raise"] = "zero",
) -> torch.Tensor:
    """Group-relative advantages Â_i = (R_i − R̄)/(S + eps) [ftip-004D; Shao et al. 2024, §4.1.2].

    ``rewards`` (N,) → advantages (N,). Conventions:

    - ``scale="group"``: divide by the group's own std (GRPO); ``"batch"``: centre per group but divide
      by the std of the whole batch's rewards (TRL ``scale_rewards="batch"``). This is not REINFORCE++, which
      whitens group-centred returns over the batch's *tokens*: see :func:`reinforce_pp_advantages`;
      ``"none"``: centred credit R_i − R̄ only (Dr. GRPO; the reference's ftip-004M).
    - ``eps`` is added to the std (TRL: 1e-4). With ``eps = 0`` the written formula is undefined for a
      zero-spread group, so the policy below decides.
    - Zero spread means max == min exactly (not ``std == 0``: the std of equal floats is ~1e-17).
      Such a group has no relative signal: its members get advantage exactly 0 under every scale.
      ``zero_std`` decides what happens when a zero spread would *divide*: ``"zero"`` gives 0,
      ``"raise"`` raises ``ValueError`` naming the groups (scale "group"), or the batch (scale "batch"
      with all rewards equal). Scale "none" never divides, so it never raises.

    With the defaults this equals TRL 1.16's GRPO advantages wherever a group has spread; for an
    all-equal group TRL returns (R − R̄)/(~1e-17 + 1e-4) ≈ 1e-13, the lab exactly 0 (deliberate).
    Rewards are centred as (R − min) − mean(R − min) (scaled by a power of two), so near-equal rewards
    lose no digits and tiny or huge spreads neither underflow nor overflow.
    """
    check_choice(scale, "scale", ("group", "batch", "none"))
    check_choice(zero_std, "zero_std", ("zero", "raise"))
    eps = check_nonnegative(eps, "eps")
    r = _grouped(rewards, group_size)  # (G, g)
    zero = _zero_spread(r, -1)  # (G,)
    centred = _centred(r, -1)  # (G, g), exactly 0 in zero-spread groups
    if scale == "none":
        return centred.flatten()
    if scale == "group":
        undefined = zero  # (G,)
        if bool(undefined.any()) and zero_std == "raise":
            which = undefined.nonzero().flatten().tolist()
            raise ValueError(f"rewards: groups {which} have zero spread (all rewards equal), so std scaling is undefined (zero_std='raise')")
        safe = torch.where(undefined.unsqueeze(-1), torch.arange(r.shape[1], dtype=r.dtype).expand_as(r), r)  # never 0/0
        scaled = _standardised(safe, ddof, eps, dim=-1)  # (G, g), in each group's own units: no underflow
    else:
        undefined = _zero_spread(r).expand(r.shape[0]) | zero  # zero-spread groups have centred == 0 anyway
        if bool(_zero_spread(r)) and zero_std == "raise":
            raise ValueError("rewards: the whole batch has zero spread (all rewards equal), so batch std scaling is undefined (zero_std='raise')")
        scaled = _standardised(r, ddof, eps, dim=-1, std_of=r) if not bool(_zero_spread(r)) else torch.zeros_like(r)
    adv = torch.where(undefined.unsqueeze(-1), torch.zeros_like(centred), scaled)
    return adv.flatten()


@dataclass(frozen=True)
class DynamicSamplingResult:
    """Which groups survive DAPO's filter [ftip-004I]."""

    kept_groups: list[int]
    dropped_groups: list[int]
    keep_mask: torch.Tensor  # (N,) 1 for members of kept groups

    @property
    def num_dropped(self) -> int:
        return len(self.dropped_groups)

    @property
    def frac_reward_zero_std(self) -> float:
        """TRL's metric name for the fraction of groups with zero reward spread."""
        total = len(self.kept_groups) + len(self.dropped_groups)
        return len(self.dropped_groups) / total


def dynamic_sampling(rewards: TensorLike, group_size: int, target_groups: int | None = None) -> DynamicSamplingResult:
    """DAPO dynamic sampling: keep only groups whose rewards are not all equal [ftip-004I; Yu et al. 2025, §3.2].

    ``target_groups``: how many groups the batch needs. If fewer survive, ``ValueError`` says how many
    more must be sampled (the caller samples again, as DAPO does); if more, the first ones are kept.
    """
    r = _grouped(rewards, group_size)
    spread = ~_zero_spread(r, -1)  # (G,) the same test as group_advantages' zero_std policy
    kept = spread.nonzero().flatten().tolist()
    dropped = (~spread).nonzero().flatten().tolist()
    if target_groups is not None:
        check_int(target_groups, "target_groups", 1)
        if len(kept) < target_groups:
            raise ValueError(f"target_groups={target_groups} but only {len(kept)} groups have reward spread; sample more groups")
        dropped = sorted(dropped + kept[target_groups:])
        kept = kept[:target_groups]
    keep = torch.zeros(r.shape, dtype=torch.float64)
    keep[kept] = 1.0
    return DynamicSamplingResult(kept, dropped, keep.flatten())


def overlong_penalty(lengths: TensorLike, max_length: int, buffer: int, penalty: float = 1.0) -> torch.Tensor:
    """DAPO's soft overlong punishment [ftip-004K; Yu et al. 2025, §3.4, eq. 13].

    For a response of length L: 0 when L <= max_length − buffer; a linear ramp
    ((max_length − buffer) − L)/buffer · penalty inside the buffer; −penalty beyond max_length.
    Added to the task reward. ``lengths`` (N,) → (N,). Same values as TRL's
    ``get_soft_overlong_punishment`` (which has penalty 1).
    """
    check_int(max_length, "max_length", 1)
    if isinstance(buffer, bool) or not isinstance(buffer, int) or not 0 < buffer <= max_length:
        raise ValueError(f"buffer must be an integer in (0, max_length]; got {buffer!r}")
    penalty = check_positive(penalty, "penalty")
    L = as_tensor(lengths, "lengths")
    check_finite(L, "lengths")
    if bool((L < 0).any()):
        raise ValueError("lengths must be >= 0")
    start = max_length - buffer
    ramp = (start - L) / buffer * penalty
    return torch.where(L <= start, torch.zeros_like(ramp), torch.where(L <= max_length, ramp, torch.full_like(ramp, -penalty)))


def aggregate_token_loss(
    per_token_loss: TensorLike,
    mask: TensorLike,
    loss_type: LossType = "grpo",
    max_completion_length: int | None = None,
    num_items_in_batch: float | None = None,
    drop_empty_rows: bool = False,
) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar: the aggregation choice of ftip-004G/004J.

    - ``"grpo"``: mean over each response's tokens, then over responses (every response weighs the same);
    - ``"bnpo"``: sum over the batch's active tokens / their number (every token weighs the same);
    - ``"dr_grpo"``: sum / (B · max_completion_length), a constant normaliser (Liu et al. 2025);
    - ``"dapo"``: sum / active tokens of the whole generation batch (``num_items_in_batch``; equal to
      bnpo's count within one batch) (Yu et al. 2025, §3.3);
    - ``"seq-mean-token-sum"``: each response's token *sum*, averaged over responses (verl's name);
    - ``"seq-mean-token-sum-norm"``: sum / max_completion_length, verl's Dr. GRPO form, which divides by the
      width only, where TRL's ``"dr_grpo"`` also divides by the number of responses B.

    ``drop_empty_rows``: for the per-response modes (``"grpo"``, ``"seq-mean-token-sum"``) a response with no
    active token has no mean; by default that raises, with ``True`` such rows are left out of the average
    over responses (an explicit choice, never a silent one).

    ``mask`` (B, T), bool or 0/1. A masked position never affects value or gradient, whatever it holds
    (0, −1e4, ±inf, NaN): it is replaced by 0 before the sum. Active positions must be finite.
    An all-zero mask raises except for ``"dr_grpo"`` and ``"dapo"`` with ``num_items_in_batch``,
    whose normaliser does not depend on this batch's mask (their loss is then 0).
    """
    check_choice(loss_type, "loss_type", LOSS_TYPES)
    if not isinstance(drop_empty_rows, bool):
        raise ValueError(f"drop_empty_rows must be True or False; got {drop_empty_rows!r}")
    x = as_tensor(per_token_loss, "per_token_loss", allow_nan=True)
    if x.dim() != 2:
        raise ValueError(f"per_token_loss must have shape (B, T); got {tuple(x.shape)}")
    fixed_norm = loss_type in ("dr_grpo", "seq-mean-token-sum-norm") or (loss_type == "dapo" and num_items_in_batch is not None)
    m = as_mask(mask, x, "mask", allow_empty=fixed_norm)
    active = m > 0
    check_active(x, active, "per_token_loss")
    total = active_values(x, active).sum(-1)  # (B,) masked fillers never reach the sum
    if loss_type in ("grpo", "seq-mean-token-sum"):
        per_seq = m.sum(-1)  # (B,)
        keep = per_seq > 0
        if not bool(keep.all()) and not drop_empty_rows:
            empty = (~keep).nonzero().flatten().tolist()
            raise ValueError(f"mask has no active token in responses {empty}; their per-response term (loss_type={loss_type!r}) "
                             "is undefined (pass drop_empty_rows=True to leave them out)")
        if not bool(keep.any()):
            raise ValueError("mask selects no token in any response; there is nothing to average")
        per_resp = total / torch.where(keep, per_seq, torch.ones_like(per_seq)) if loss_type == "grpo" else total  # (B,)
        return per_resp[keep].mean()
    if loss_type == "bnpo":
        return total.sum() / m.sum()
    if loss_type in ("dr_grpo", "seq-mean-token-sum-norm"):
        L = x.shape[-1] if max_completion_length is None else check_int(max_completion_length, "max_completion_length", 1)
        if L < x.shape[-1]:
            raise ValueError(f"max_completion_length ({L}) must be >= the completion width {x.shape[-1]}")
        return total.sum() / (x.shape[0] * L) if loss_type == "dr_grpo" else total.sum() / L
    if num_items_in_batch is None:
        return total.sum() / m.sum()
    n = as_float(num_items_in_batch, "num_items_in_batch")
    if not 0 < n < float("inf"):
        raise ValueError(f"num_items_in_batch must be > 0 and finite; got {n}")
    return total.sum() / n


def _policy_inputs(logps, old_logps, advantages, mask, ref_logps=None):
    """Validate a token-level policy-loss batch; the log-ratio exists only at active positions.

    Returns ``(logps, ref_logps, advantages (B, T), mask, active, log_ratio (B, T))``. Masked positions may
    hold anything: they are replaced by 0 BEFORE any exp, so fillers reach neither value nor gradient.
    """
    lp = as_tensor(logps, "logps", allow_nan=True)
    if lp.dim() != 2:
        raise ValueError(f"logps must have shape (B, T); got {tuple(lp.shape)}")
    olp = as_tensor(old_logps, "old_logps", allow_nan=True)
    rlp = as_tensor(ref_logps, "ref_logps", allow_nan=True) if ref_logps is not None else None
    for t, n in ((olp, "old_logps"),) + (((rlp, "ref_logps"),) if rlp is not None else ()):
        if t.shape != lp.shape:
            raise ValueError(f"{n} (shape {tuple(t.shape)}) must have the shape of logps {tuple(lp.shape)}")
    m = as_mask(mask, lp, "mask")  # (B, T)
    active = m > 0
    check_active(lp, active, "logps", logprob=True)
    check_active(olp, active, "old_logps", logprob=True)
    a = as_tensor(advantages, "advantages", allow_nan=True)
    if a.dim() == 0:
        a = a.expand(lp.shape[0])
    adv = a if a.dim() == 2 else a.unsqueeze(-1) if a.dim() == 1 else a.reshape(-1, 1, 1)  # (B, T) or (B, 1)
    if adv.dim() != 2 or adv.shape[0] != lp.shape[0] or adv.shape[1] not in (1, lp.shape[1]):
        raise ValueError(f"advantages (shape {tuple(a.shape)}) must be (B,) or (B, T) for logps {tuple(lp.shape)}")
    adv = adv.detach().to(lp.dtype).expand_as(lp)  # (B, T)
    check_active(adv, active, "advantages")
    adv = active_values(adv, active)
    log_ratio = active_values(lp, active) - active_values(olp, active).detach()  # (B, T)
    return lp, rlp, adv, m, active, log_ratio


def _ratio(log_ratio: torch.Tensor, what: str) -> torch.Tensor:
    ratio = torch.exp(log_ratio)
    if not bool(torch.isfinite(ratio.detach()).all()):
        raise ValueError(f"{what} is so large at an active position that its exp overflows")
    return ratio


def grpo_loss(
    logps: TensorLike,
    old_logps: TensorLike,
    advantages: TensorLike,
    mask: TensorLike,
    ref_logps: TensorLike | None = None,
    beta: float = 0.0,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    loss_type: LossType = "grpo",
    max_completion_length: int | None = None,
    kl_bias_correction: bool = False,
    num_items_in_batch: float | None = None,
    drop_empty_rows: bool = False,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO / DAPO policy loss [ftip-004E, ftip-004H, ftip-004J; Shao et al. 2024, §4.1.2, eq. 3].

    Per token: −min(ρA, clip(ρ, 1−ε, 1+ε_high)A) + β·k3(π_θ, π_ref), with ρ = exp(logps − old_logps).
    ``logps``, ``old_logps``, ``ref_logps``, ``mask``: (B, T); ``advantages`` (B,) (one per response,
    repeated over its tokens) or (B, T) (token-level credit, e.g. process supervision).
    ``kl_bias_correction`` multiplies the k3 term by ρ (TRL ``use_bias_correction_kl``, which TRL 1.16 turns on
    by default; here it is off unless declared).
    Aggregation by ``loss_type``: see :func:`aggregate_token_loss`.

    Masked positions (``mask`` 0/False) may hold anything (padding fillers 0, −1e4, −100, ±inf, NaN):
    the log-ratio is formed only at active positions (0 elsewhere, chosen before exp), so they change
    neither the loss nor the gradient. Active log-probs must be finite and <= 0, and ρ must not overflow.

    Returns ``(loss, metrics)`` with TRL's names: ``clip_ratio/low_mean``, ``clip_ratio/high_mean``,
    ``clip_ratio/region_mean`` (with the same ε, ε_high as the loss) and ``kl`` (mean k3 over active
    tokens, when ``ref_logps`` is given). Loss and gradient match TRL 1.16 for all four loss types.
    """
    check_choice(loss_type, "loss_type", LOSS_TYPES)
    beta = check_nonnegative(beta, "beta")
    lp, rlp, adv, m, active, log_ratio = _policy_inputs(logps, old_logps, advantages, mask, ref_logps)
    ratio = _ratio(log_ratio, "logps - old_logps")  # (B, T), 1 at masked positions
    per_token = -clipped_surrogate(ratio, adv, epsilon, epsilon_high)  # (B, T)
    metrics: dict[str, float] = {}
    if beta > 0 and rlp is None:
        raise ValueError("ref_logps must be given when beta > 0 (the KL term needs the reference policy)")
    if rlp is not None:
        check_active(rlp, active, "ref_logps", logprob=True)
        kl = kl_estimate(lp, rlp.detach(), "k3", mask=m)  # (B, T), 0 at masked positions
        if kl_bias_correction:
            kl = kl * ratio
        if beta > 0:
            per_token = per_token + beta * kl
        metrics["kl"] = float(kl.detach().sum() / m.sum())
    loss = aggregate_token_loss(per_token, m, loss_type, max_completion_length, num_items_in_batch, drop_empty_rows)
    metrics.update(clip_fractions(ratio, adv, m, epsilon, epsilon_high))
    return loss, metrics


def _grpo_loss_validated(
    lp: torch.Tensor,
    old: torch.Tensor,
    adv: torch.Tensor,
    m: torch.Tensor,
    active: torch.Tensor | None,
    low: float,
    high: float,
    loss_type: str,
    max_completion_length: int,
    ref: torch.Tensor | None = None,
    beta: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float], torch.Tensor]:
    """:func:`grpo_loss` for inputs its caller has already validated; returns ``(loss, metrics, ratio)``.

    For a trainer that checks once per step what stays fixed and once per epoch what moves (lab.playground).
    The caller guarantees: ``lp``, ``old`` (B, T) finite and <= 0 at active positions; ``adv`` (B, T) finite there;
    ``m`` a float 0/1 mask with at least one active token in every row, ``active`` = ``m > 0`` (or None when every
    position is active: the selection is then skipped, which changes no value and no gradient); bounds from
    ``lab.ppo._clip_bounds``; ``loss_type`` one of grpo, bnpo, dr_grpo, dapo (dapo within one batch);
    ``max_completion_length`` >= T; ``ref`` checked like ``lp`` when given. It must still reject a non-finite
    ``ratio``. The operations are grpo_loss's, in its order, so values, gradients and metrics are the same to the
    bit (tests/test_playground_fastpath.py compares them).
    """
    sel = (lambda t: t) if active is None else (lambda t: active_values(t, active))
    adv = sel(adv.detach())
    log_ratio = sel(lp) - sel(old).detach()  # (B, T)
    ratio = torch.exp(log_ratio)
    per_token = -_clipped_surrogate(ratio, adv, low, high)  # (B, T)
    metrics: dict[str, float] = {}
    if ref is not None:
        kl = kl_estimate(lp, ref.detach(), "k3", mask=m)  # (B, T), 0 at masked positions
        if beta > 0:
            per_token = per_token + beta * kl
        metrics["kl"] = float(kl.detach().sum() / m.sum())
    total = sel(per_token).sum(-1)  # (B,)
    if loss_type == "grpo":  # every row has a token, so grpo_loss's selection of non-empty rows keeps them all
        loss = (total / m.sum(-1)).mean()
    elif loss_type == "dr_grpo":
        loss = total.sum() / (per_token.shape[0] * max_completion_length)
    else:  # bnpo; dapo without num_items_in_batch
        loss = total.sum() / m.sum()
    metrics.update(_clip_fractions(ratio.detach(), adv, active, m.sum(), low, high))
    return loss, metrics, ratio


def process_advantages(
    step_rewards: Sequence[Sequence[float]],
    step_ends: Sequence[Sequence[int]],
    length: int,
    ddof: int = 1,
    eps: float = 0.0,
    zero_std: Literal["zero", "raise"] = "zero",
) -> torch.Tensor:
    """Process-supervision GRPO advantages [ftip-004F; Shao et al. 2024, §4.1.3].

    ``step_rewards[i][j]``: reward of step j of response i in one group; ``step_ends[i][j]``: the token
    index at which that step ends (inclusive, increasing). All step rewards of the group are normalised
    together, r̃ = (r − mean)/(std + eps); token t of response i gets Â_{i,t} = Σ_{j: end_j >= t} r̃_{i,j}, the
    sum over the steps at or after it. Tokens after the last step end get 0. Returns (G, length).
    Zero spread (all step rewards equal, max == min) gives exactly 0 under ``zero_std="zero"`` and raises
    under ``"raise"``, the same test as :func:`group_advantages`.
    """
    check_choice(zero_std, "zero_std", ("zero", "raise"))
    eps = check_nonnegative(eps, "eps")
    check_int(length, "length", 1)
    if isinstance(step_rewards, torch.Tensor):
        step_rewards = [list(row) for row in step_rewards]
    if isinstance(step_ends, torch.Tensor):
        step_ends = step_ends.tolist()
    try:
        n_resp, n_ends = len(step_rewards), len(step_ends)
    except TypeError:
        raise ValueError("step_rewards and step_ends must be lists (one list per response)") from None
    if n_resp != n_ends or n_resp == 0:
        raise ValueError("step_rewards and step_ends must list the same (non-zero) number of responses")
    flat, ends = [], []
    for i, (rs, es) in enumerate(zip(step_rewards, step_ends)):
        try:
            rs, es = list(rs), list(es)
        except TypeError:
            raise ValueError(f"step_rewards[{i}] and step_ends[{i}] must be lists") from None
        if len(rs) != len(es) or len(rs) == 0:
            raise ValueError(f"step_rewards[{i}] and step_ends[{i}] must have the same, non-zero length")
        es = [int(e) if isinstance(e, torch.Tensor) and e.numel() == 1 and not e.is_floating_point() else e for e in es]
        if any(isinstance(e, bool) or not isinstance(e, int) for e in es):
            raise ValueError(f"step_ends[{i}] must hold integer token indices; got {es!r}")
        if es != sorted(set(es)) or es[0] < 0 or es[-1] >= length:
            raise ValueError(f"step_ends[{i}] must be strictly increasing token indices in [0, {length})")
        flat += [float(x) if isinstance(x, torch.Tensor) and x.numel() == 1 else x for x in rs]
        ends.append(es)
    allr = as_tensor(flat, "step_rewards")
    check_finite(allr, "step_rewards")
    if _zero_spread(allr):
        if zero_std == "raise":
            raise ValueError("step_rewards have zero spread (all equal), so std scaling is undefined (zero_std='raise')")
        norm_all = torch.zeros_like(allr)
    else:
        norm_all = _standardised(allr, ddof, eps)  # exact differences for near-equal step rewards, no underflow
    out = torch.zeros(len(ends), length, dtype=allr.dtype)  # (G, T)
    k = 0
    for i, es in enumerate(ends):
        for j, end in enumerate(es):
            out[i, : end + 1] += norm_all[k + j]  # step j's reward credits every token at or before its end
        k += len(es)
    return out


# ---- Sequence-level ratios and framework conventions (issue: "what your framework computes") ------------


def sequence_log_ratio(logps: TensorLike, old_logps: TensorLike, mask: TensorLike) -> torch.Tensor:
    """Per-response mean of the token log-ratios over active tokens, (B,): log s_i with
    s_i = (∏_t π(y_t)/π_old(y_t))^{1/|y_i|}, the geometric mean of the token ratios (Zheng et al. 2025, GSPO, §4.1, eq. 7)."""
    _, _, _, m, _, log_ratio = _policy_inputs(logps, old_logps, 0.0, mask)  # no advantages needed: a scalar 0
    n = m.sum(-1)  # (B,)
    if bool((n == 0).any()):
        empty = (n == 0).nonzero().flatten().tolist()
        raise ValueError(f"mask has no active token in responses {empty}; their sequence ratio is undefined")
    return log_ratio.sum(-1) / n


def gspo_loss(
    logps: TensorLike,
    old_logps: TensorLike,
    advantages: TensorLike,
    mask: TensorLike,
    epsilon: float = 3e-4,
    epsilon_high: float | None = 4e-4,
) -> tuple[torch.Tensor, dict[str, float]]:
    """GSPO: the clipped objective on one *sequence* ratio per response (Zheng et al. 2025, §4.1, eqs. 5–7).

    loss = −mean_i min(s_i Â_i, clip(s_i, 1−ε, 1+ε_high) Â_i), s_i the geometric mean of response i's token
    ratios (:func:`sequence_log_ratio`); ``advantages`` (B,). The paper's ranges are far narrower than
    token-level PPO's (3e-4 / 4e-4 by default), because s_i averages many tokens. Equals TRL 1.16's
    ``importance_sampling_level="sequence"`` with ``loss_type="grpo"`` at β = 0. When every token ratio of a
    response is the same, s_i is that ratio and GSPO equals token-level GRPO.
    Metric: ``clip_ratio/region_mean`` over responses (the fraction of responses whose term is clipped).
    """
    a = as_tensor(advantages, "advantages")
    if a.dim() != 1:
        raise ValueError(f"advantages must be one per response, shape (B,); got {tuple(a.shape)}")
    check_finite(a, "advantages")
    log_s = sequence_log_ratio(logps, old_logps, mask)  # (B,)
    if a.shape != log_s.shape:
        raise ValueError(f"advantages (shape {tuple(a.shape)}) must have one entry per response of logps ({log_s.shape[0]})")
    s = _ratio(log_s, "the sequence log-ratio")  # (B,)
    adv = a.detach().to(s.dtype)
    per_seq = -clipped_surrogate(s, adv, epsilon, epsilon_high)  # (B,)
    fr = clip_fractions(s.unsqueeze(-1), adv.unsqueeze(-1), torch.ones_like(s).unsqueeze(-1), epsilon, epsilon_high)
    return per_seq.mean(), {"clip_ratio/region_mean": fr["clip_ratio/region_mean"], "sequence_ratio/mean": float(s.detach().mean())}


def cispo_loss(
    logps: TensorLike,
    old_logps: TensorLike,
    advantages: TensorLike,
    mask: TensorLike,
    epsilon_max: float = 5.0,
    num_items_in_batch: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """CISPO: clip the importance *weight*, not the update (MiniMax 2025, MiniMax-M1, §3.1, eq. 4).

    Per token −sg(min(ρ, ε_max)) · Â · log π(y_t): the weight is truncated and detached, so every token keeps
    a gradient through log π (PPO's clip would zero it), only its size is capped. Aggregated as DAPO's
    token sum over the generation batch's active tokens (``num_items_in_batch``; this batch's count by
    default). ``epsilon_max`` is the absolute cap on ρ (TRL 1.16 ``loss_type="cispo"`` reads it from
    ``epsilon_high``). Metric ``cispo_clip_ratio``: active tokens with ρ > ε_max and Â > 0, as TRL logs it.
    """
    cap = check_positive(epsilon_max, "epsilon_max")
    lp, _, adv, m, active, log_ratio = _policy_inputs(logps, old_logps, advantages, mask)
    ratio = _ratio(log_ratio, "logps - old_logps")
    weight = torch.clamp(ratio, max=cap).detach()  # (B, T)
    per_token = -weight * adv * active_values(lp, active)
    loss = aggregate_token_loss(per_token, m, "dapo", num_items_in_batch=num_items_in_batch)
    clipped = ((ratio.detach() > cap) & (adv > 0) & active).sum() / m.sum()
    return loss, {"cispo_clip_ratio": float(clipped)}


def whiten_advantages(advantages: TensorLike, mask: TensorLike, shift_mean: bool = True, ddof: int = 1, eps: float = 1e-8) -> torch.Tensor:
    """Whiten token advantages over the batch's *active* tokens: (A − μ)/√(σ² + eps), 0 at masked positions.

    μ and σ² are the masked mean and variance (``ddof=1``: Bessel-corrected, as verl's ``masked_whiten``;
    ``ddof=0``: population). ``shift_mean=False`` rescales without centring (verl's option for GAE returns).
    The eps sits inside the square root, as verl and OpenRLHF write it. ``advantages``, ``mask``: (B, T).
    A batch whose active advantages are all equal (max == min) has zero spread: the result is exactly 0
    (centred) or the unscaled advantages (``shift_mean=False``), never noise divided by ~1e-17.
    """
    check_choice(ddof, "ddof", (0, 1))
    eps = check_nonnegative(eps, "eps")
    a = as_tensor(advantages, "advantages", allow_nan=True)
    if a.dim() != 2:
        raise ValueError(f"advantages must have shape (B, T); got {tuple(a.shape)}")
    m = as_mask(mask, a, "mask")
    active = m > 0
    check_active(a, active, "advantages")
    x = active_values(a, active)
    n = m.sum()
    if ddof == 1 and n < 2:
        raise ValueError("mask must select at least two tokens for a Bessel-corrected variance (ddof=1)")
    mean = x.sum() / n
    dev = active_values(x - mean, active)
    var = (dev * dev).sum() / (n - ddof)
    vals = a.detach()[active]
    if bool(vals.max() == vals.min()):  # zero spread: nothing to scale by (see the docstring)
        return torch.zeros_like(x) if shift_mean else x
    out = (dev if shift_mean else x) / torch.sqrt(var + eps)
    return active_values(out, active)


def reinforce_pp_advantages(
    rewards: TensorLike,
    mask: TensorLike,
    kl: TensorLike | None = None,
    kl_coef: float = 0.0,
    group_size: int | None = None,
    ddof: int = 1,
    eps: float = 1e-8,
) -> torch.Tensor:
    """REINFORCE++ token advantages (Hu et al. 2025, REINFORCE++, §3, eqs. 6–9), (B, T).

    Each token's return is the response reward minus the KL penalty still to come,
    G_t = r − kl_coef · Σ_{t'≥t} kl_{t'} (γ = 1, the reward at the last token), then the returns are whitened
    over all active tokens of the batch (:func:`whiten_advantages`), with no critic and no group.
    With ``group_size`` (REINFORCE++-baseline) each reward is first centred on its group mean, then whitened
    over the batch's tokens: different numbers from GRPO's per-group std (``group_advantages``), which is
    why ``scale="batch"`` there is not REINFORCE++.
    """
    r = as_tensor(rewards, "rewards")
    check_finite(r, "rewards")
    if r.dim() != 1:
        raise ValueError(f"rewards must be one per response, shape (B,); got {tuple(r.shape)}")
    mk = as_tensor(mask, "mask")
    if mk.dim() != 2 or mk.shape[0] != r.shape[0]:
        raise ValueError(f"mask must have shape (B, T) with B = {r.shape[0]} responses; got {tuple(mk.shape)}")
    m = as_mask(mk, torch.zeros(mk.shape, dtype=r.dtype), "mask")
    active = m > 0
    if group_size is not None:
        r = group_advantages(r, group_size, scale="none")
    returns = r.to(m.dtype).unsqueeze(-1).expand_as(m)  # (B, T)
    coef = check_nonnegative(kl_coef, "kl_coef")
    if kl is not None:
        k = as_tensor(kl, "kl", allow_nan=True)
        if k.shape != m.shape:
            raise ValueError(f"kl (shape {tuple(k.shape)}) must have the shape of mask {tuple(m.shape)}")
        check_active(k, active, "kl")
        k = active_values(k.to(m.dtype), active)
        to_go = torch.flip(torch.cumsum(torch.flip(k, [-1]), -1), [-1])  # (B, T) Σ_{t'≥t} kl_t'
        returns = returns - coef * to_go
    elif coef > 0:
        raise ValueError("kl must be given when kl_coef > 0")
    return whiten_advantages(returns, m, ddof=ddof, eps=eps)


def uneven_group_advantages(
    rewards: TensorLike,
    group_ids: Sequence[object],
    scale: Scale = "group",
    ddof: int = 1,
    eps: float = 1e-4,
    zero_std: Literal["zero", "raise"] = "zero",
    singleton: Literal["zero", "raw", "raise"] = "zero",
) -> torch.Tensor:
    """:func:`group_advantages` for groups of different sizes, members anywhere in the batch.

    ``group_ids`` (N,): any hashable label per reward (e.g. the prompt id); members need not be contiguous.
    Each group is centred on its own mean; ``scale``, ``ddof``, ``eps`` and ``zero_std`` mean what they
    mean in :func:`group_advantages` ("batch" divides by the std of all N rewards). A group of one has
    nothing to compare with, and frameworks disagree on what it gets: ``singleton="zero"`` gives it
    advantage 0 (no gradient); ``"raw"`` is verl's rule (``compute_grpo_outcome_advantage`` takes mean 0
    and std 1 for a lone sample, so its advantage is its reward / (1 + eps), or the reward itself with
    scale "none"); ``"raise"`` refuses it.
    With equal-size contiguous groups the result equals :func:`group_advantages`.
    """
    check_choice(scale, "scale", ("group", "batch", "none"))
    check_choice(zero_std, "zero_std", ("zero", "raise"))
    check_choice(singleton, "singleton", ("zero", "raw", "raise"))
    eps = check_nonnegative(eps, "eps")
    r = as_tensor(rewards, "rewards")
    check_finite(r, "rewards")
    if r.dim() != 1 or r.numel() == 0:
        raise ValueError(f"rewards must be a non-empty flat vector (N,); got shape {tuple(r.shape)}")
    ids = list(group_ids)
    if len(ids) != r.numel():
        raise ValueError(f"group_ids must give one label per reward ({r.numel()}); got {len(ids)}")
    members: dict[object, list[int]] = {}
    for i, g in enumerate(ids):
        try:
            members.setdefault(g, []).append(i)
        except TypeError:
            raise ValueError(f"group_ids must be hashable labels; got {g!r}") from None
    lonely = [g for g, idx in members.items() if len(idx) == 1]
    if lonely and singleton == "raise":
        raise ValueError(f"group_ids: groups {lonely} have a single member, so they have no relative signal (singleton='raise')")
    out = torch.zeros_like(r)
    if scale == "batch":
        if bool(_zero_spread(r)) and zero_std == "raise":
            raise ValueError("rewards: the whole batch has zero spread (all rewards equal), so batch std scaling is undefined (zero_std='raise')")
        batch_std = not bool(_zero_spread(r)) or None  # batch scaling is defined
        if batch_std:
            _std(r, ddof)  # ddof checked against the batch up front, whichever groups follow
    for g, idx in members.items():
        sel = torch.tensor(idx)
        if len(idx) == 1:
            if singleton == "raw":  # verl: mean 0, std 1
                out[sel] = r[sel] / (1 + eps) if scale != "none" else r[sel]
            continue  # otherwise advantage 0 (singleton="zero")
        x = r[sel]
        if scale == "group":
            try:
                adv = group_advantages(x, len(idx), "group", ddof, eps, zero_std)
            except ValueError as exc:
                raise ValueError(f"rewards of group {g!r}: {exc}") from None
        elif scale == "none" or batch_std is None or bool(_zero_spread(x)):
            adv = _centred(x)
        else:
            adv = _standardised(x, ddof, eps, std_of=r)  # group-centred, divided by the batch's std + eps
        out[sel] = adv.to(out.dtype)
    return out


def rloo_advantages(rewards: TensorLike, group_size: int) -> torch.Tensor:
    """REINFORCE leave-one-out advantages A_i = r_i − b_i, b_i = (Σ_j r_j − r_i)/(k − 1)
    [Ahmadian et al. 2024, "Back to Basics: Revisiting REINFORCE Style Optimization for Learning from
    Human Feedback in LLMs", §3.2 (RLOO); the group layout of ftip-004B].

    ``rewards`` (N,) with N = groups × ``group_size`` (k >= 2), group members contiguous → advantages (N,).
    Each sample's baseline is the mean reward of the *other* k − 1 members, so it never depends on the
    sample itself (the estimator stays unbiased) and the advantages of a group sum to 0. No std scaling
    (TRL's ``RLOOTrainer`` with ``normalize_advantages=False``, its default, gives the same values).

    Computed as A_i = Σ_{j≠i} (r_i − r_j)/(k − 1), algebraically the same: every difference of equal
    rewards is exactly 0, so a group of equal rewards gets advantages exactly 0 (the written form
    r_i − (Σ_j r_j − r_i)/(k − 1) leaves rounding residue ~1e-17 for rewards such as 0.1).
    """
    r = _grouped(rewards, group_size)  # (G, k)
    if not r.is_floating_point():  # int or bool tensors (pass/fail verifiers): convert at the boundary
        r = r.to(torch.float64)
    diffs = r.unsqueeze(-1) - r.unsqueeze(-2)  # (G, k, k): r_i − r_j, zero on the diagonal
    return (diffs.sum(-1) / (group_size - 1)).flatten()


# ---------------------------------------------------------------------------------------------------------------
# Functions the pages and notebooks call instead of computing formulas inline.


def length_mask(lengths: Sequence[int], max_length: int | None = None) -> torch.Tensor:
    """Completion mask from response lengths: row i has ``lengths[i]`` ones, then zeros. Returns (G, T) float64.

    ``lengths`` are integers >= 0 (floats must be whole numbers: 3.0 is 3, 2.5 is refused); ``T`` is
    ``max_length`` (>= every length) or, by default, the longest length.
    """
    vals = list(lengths) if not isinstance(lengths, torch.Tensor) else lengths.tolist()
    if not vals:
        raise ValueError("lengths must list at least one response")
    out = []
    for i, n in enumerate(vals):
        if isinstance(n, bool) or not isinstance(n, (int, float)) or n != n or n in (float("inf"), float("-inf")) or n != int(n):
            raise ValueError(f"lengths[{i}] must be a whole number of tokens; got {n!r}")
        if n < 0:
            raise ValueError(f"lengths[{i}] must be >= 0; got {n!r}")
        out.append(int(n))
    T = max(out) if max_length is None else int(max_length)
    if max_length is not None and (isinstance(max_length, bool) or max_length != int(max_length) or T < max(out)):
        raise ValueError(f"max_length must be a whole number >= every length ({max(out)}); got {max_length!r}")
    return (torch.arange(T).unsqueeze(0) < torch.tensor(out).unsqueeze(1)).to(torch.float64)  # (G, T)


def token_advantages(advantages: TensorLike, mask: TensorLike) -> torch.Tensor:
    """Outcome credit spread over tokens: Â_{i,t} = Â_i at every active token of response i, exactly 0 elsewhere [ftip-004E].

    ``advantages`` (G,) finite, one per response; ``mask`` (G, T) of 0/1. This is what
    :func:`grpo_loss` does with a (G,) advantage ("every token shares its response's advantage").
    """
    a = as_tensor(advantages, "advantages")
    if not a.is_floating_point():
        a = a.to(torch.float64)
    check_finite(a.detach(), "advantages")
    if a.dim() != 1:
        raise ValueError(f"advantages must have shape (G,); got {tuple(a.shape)}")
    m = as_tensor(mask, "mask")
    if m.dim() != 2 or m.shape[0] != a.shape[0]:
        raise ValueError(f"mask must have shape (G, T) with G = {a.shape[0]} (one row per advantage); got {tuple(m.shape)}")
    m = as_mask(m.to(a.dtype), m.to(a.dtype), "mask", allow_empty=True)
    return torch.where(m > 0, a.unsqueeze(-1).expand_as(m), torch.zeros_like(m))  # (G, T)


class GroupSurrogate(NamedTuple):
    """The pointwise clipped terms ℓ_i of one rollout group and their mean, the group's contribution [ftip-004N]."""

    terms: torch.Tensor  # (G,) min(ρ_i Â_i, clip(ρ_i, 1−ε, 1+ε_high) Â_i)
    mean: torch.Tensor  # () mean over the group


def group_surrogate(ratios: TensorLike, advantages: TensorLike, epsilon: float = 0.2, epsilon_high: float | None = None) -> GroupSurrogate:
    """ℓ_i = min(ρ_i Â_i, clip(ρ_i, 1−ε, 1+ε_high) Â_i) and their mean over the group [ftip-004N; Shao et al. 2024, §4.1; Schulman et al. 2017, §3].

    ``ratios`` and ``advantages`` are (G,) with one entry per group member (same length; a
    ``ValueError`` names both otherwise). The mean is the group's contribution to the objective
    (not negated); its sign alone says nothing about held-out improvement.
    """
    r = as_tensor(ratios, "ratios")
    a = as_tensor(advantages, "advantages")
    if r.dim() != 1 or a.dim() != 1 or r.shape != a.shape or r.numel() == 0:
        raise ValueError(f"ratios (shape {tuple(r.shape)}) and advantages (shape {tuple(a.shape)}) must both be (G,) with G >= 1")
    check_finite(r.detach() if r.is_floating_point() else r.double(), "ratios")
    terms = clipped_surrogate(r, a, epsilon, epsilon_high)  # (G,)
    return GroupSurrogate(terms, terms.mean())


def loss_types_from_ratios(
    ratios: TensorLike,
    advantages: TensorLike,
    lengths: Sequence[int],
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
) -> dict[str, tuple[torch.Tensor, dict[str, float]]]:
    """The four GRPO loss types on one group whose response i has the same ratio ρ_i on each of its ``lengths[i]`` tokens [ftip-004J].

    A teaching construction: the behaviour log-prob of every token is set to a common constant c and
    the current one to c + log ρ_i (c is chosen so both stay <= 0); then :func:`grpo_loss` is called
    with ``loss_type`` in ``grpo``, ``bnpo``, ``dr_grpo``, ``dapo`` and ``max_completion_length`` = the
    longest length. ``ratios`` (G,) finite and > 0, ``advantages`` (G,), ``lengths`` G integers >= 1.
    Returns ``{loss_type: (loss, metrics)}``.
    """
    r = as_tensor(ratios, "ratios")
    if not r.is_floating_point():
        r = r.to(torch.float64)
    a = as_tensor(advantages, "advantages")
    if not a.is_floating_point():
        a = a.to(r.dtype)
    if r.dim() != 1 or r.numel() == 0 or a.shape != r.shape:
        raise ValueError(f"ratios (shape {tuple(r.shape)}) and advantages (shape {tuple(a.shape)}) must both be (G,) with G >= 1")
    check_finite(r.detach(), "ratios")
    if not bool((r.detach() > 0).all()):
        raise ValueError(f"ratios must be > 0 (their log is taken); got {r[r <= 0].tolist()[:4]}")
    mask = length_mask(lengths).to(r.dtype)  # (G, T)
    if mask.shape[0] != r.shape[0]:
        raise ValueError(f"lengths must give one length per ratio ({r.shape[0]}); got {mask.shape[0]}")
    if bool((mask.sum(-1) == 0).any()):
        raise ValueError("lengths must all be >= 1 (a response with no token has no per-token loss)")
    log_r = torch.log(r.detach())  # (G,)
    c = -1.0 - float(log_r.clamp(min=0).max())  # behaviour log-prob: keeps c + log ρ <= −1
    old = torch.full(mask.shape, c, dtype=r.dtype)  # (G, T)
    logps = old + log_r.unsqueeze(-1)  # (G, T): ratio ρ_i on every token of response i
    T = mask.shape[1]
    return {lt: grpo_loss(logps, old, a, mask, epsilon=epsilon, epsilon_high=epsilon_high, loss_type=lt, max_completion_length=T)
            for lt in ("grpo", "bnpo", "dr_grpo", "dapo")}


def step_end_positions(step_lengths: Sequence[int]) -> list[int]:
    """Token index at which each step ends (inclusive) when steps of ``step_lengths`` tokens follow each other.

    The ``step_ends`` argument of :func:`process_advantages`: lengths 3, 4, 2 end at 2, 6, 8. Each length
    must be a whole number >= 1 (a step with no token would end where the previous one did).
    """
    ends, k = [], -1
    vals = list(step_lengths)
    if not vals:
        raise ValueError("step_lengths must list at least one step")
    for i, n in enumerate(vals):
        if isinstance(n, bool) or not isinstance(n, (int, float)) or n != n or abs(n) == float("inf") or n != int(n) or n < 1:
            raise ValueError(f"step_lengths[{i}] must be a whole number >= 1; got {n!r}")
        k += int(n)
        ends.append(k)
    return ends
