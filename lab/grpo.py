"""Group-relative policy optimization and DAPO's four interventions.

Reference chapter "Reinforcement learning with verifiable rewards" (ftip-0042): rollout group
ftip-004B, group statistics ftip-004C and group-relative advantage ftip-004D (Shao et al. 2024,
§4.1.2), outcome- and process-supervision GRPO ftip-004E/004F (§4.1.2–4.1.3), estimator conventions
ftip-004G; DAPO (Yu et al. 2025, §3.1–3.4): clip-higher ftip-004H, dynamic sampling ftip-004I,
token-level loss ftip-004J, overlong shaping ftip-004K; worked examples ftip-004M and ftip-004N.

Rewards arrive flat, (N,) with N = groups × group_size, group members contiguous (TRL's layout).
Every convention the source leaves open is a parameter: the std divisor (``ddof``), the stabiliser
``eps`` (added to the std, as TRL does), the scaling ``scale`` and the ``zero_std`` policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import torch

from lab._checks import (
    TensorLike,
    as_mask,
    as_tensor,
    check_choice,
    check_finite,
    check_log_probabilities,
    check_nonnegative,
    check_positive,
)
from lab.kl import kl_estimate
from lab.ppo import clip_fractions, clipped_surrogate

Scale = Literal["group", "batch", "none"]
LossType = Literal["grpo", "bnpo", "dr_grpo", "dapo"]


def _grouped(rewards: TensorLike, group_size: int) -> torch.Tensor:
    r = as_tensor(rewards, "rewards")
    check_finite(r, "rewards")
    if r.dim() != 1:
        raise ValueError(f"rewards must be a flat vector (N,) of group members; got shape {tuple(r.shape)}")
    if not isinstance(group_size, int) or group_size < 2:
        raise ValueError(f"group_size must be an integer >= 2 (a group needs a comparison); got {group_size!r}")
    if r.numel() == 0 or r.numel() % group_size:
        raise ValueError(f"group_size {group_size} must divide the number of rewards {r.numel()}")
    return r.view(-1, group_size)  # (G, g)


def _std(x: torch.Tensor, ddof: int, dim=None) -> torch.Tensor:
    n = x.shape[dim] if dim is not None else x.numel()
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population std) or 1 (sample std, Bessel); got {ddof}")
    if n - ddof <= 0:
        raise ValueError(f"ddof={ddof} needs more than {ddof} values; got {n}")
    return torch.std(x, dim=dim, correction=ddof)


def group_stats(rewards: TensorLike, group_size: int, ddof: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Group mean R̄ and standard deviation S_R per prompt group [ftip-004C; Shao et al. 2024, §4.1.2].

    ``rewards`` (N,) → ``(mean, std)``, each (G,). ``ddof=1`` divides by g−1 (TRL's ``nanstd``),
    ``ddof=0`` by g (population std, the reference's ftip-004N example).
    """
    r = _grouped(rewards, group_size)
    return r.mean(-1), _std(r, ddof, dim=-1)


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
      by the std of the whole batch (Hu et al.'s REINFORCE++-style, TRL ``scale_rewards="batch"``);
      ``"none"``: centred credit R_i − R̄ only (Dr. GRPO; the reference's ftip-004M).
    - ``eps`` is added to the std (TRL: 1e-4). With ``eps = 0`` the written formula is undefined for a
      zero-spread group, so the policy below decides.
    - ``zero_std``: a group whose rewards are all equal has no relative signal. ``"zero"`` gives its
      members advantage 0 (what TRL's eps produces); ``"raise"`` raises ``ValueError`` naming the group.
      Applies whenever a std divides (scale "group", or "batch" with a zero-spread batch).

    With the defaults this equals TRL 1.16's GRPO advantages.
    """
    check_choice(scale, "scale", ("group", "batch", "none"))
    check_choice(zero_std, "zero_std", ("zero", "raise"))
    eps = check_nonnegative(eps, "eps")
    r = _grouped(rewards, group_size)  # (G, g)
    centred = r - r.mean(-1, keepdim=True)  # (G, g)
    if scale == "none":
        return centred.flatten()
    std = _std(r, ddof, dim=-1).unsqueeze(-1) if scale == "group" else _std(r, ddof).expand(r.shape[0], 1)  # (G, 1)
    zero = (std == 0).squeeze(-1)  # (G,) spread exactly zero: every member equals the mean
    if bool(zero.any()) and zero_std == "raise":
        which = zero.nonzero().flatten().tolist()
        raise ValueError(f"rewards: groups {which} have zero spread, so std scaling is undefined (zero_std='raise')")
    adv = torch.where(zero.unsqueeze(-1), torch.zeros_like(centred), centred / (std + eps))
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
    spread = (r.max(-1).values - r.min(-1).values) > 0  # (G,)
    kept = spread.nonzero().flatten().tolist()
    dropped = (~spread).nonzero().flatten().tolist()
    if target_groups is not None:
        if target_groups < 1:
            raise ValueError(f"target_groups must be >= 1; got {target_groups}")
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
    if not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be a positive integer; got {max_length!r}")
    if not isinstance(buffer, int) or not 0 < buffer <= max_length:
        raise ValueError(f"buffer must be an integer in (0, max_length]; got {buffer!r}")
    penalty = check_positive(penalty, "penalty")
    L = as_tensor(lengths, "lengths")
    if bool((L < 0).any()):
        raise ValueError("lengths must be >= 0")
    start = max_length - buffer
    ramp = (start - L) / buffer * penalty
    return torch.where(L <= start, torch.zeros_like(ramp), torch.where(L <= max_length, ramp, torch.full_like(ramp, -penalty)))


def aggregate_token_loss(
    per_token_loss: torch.Tensor,
    mask: torch.Tensor,
    loss_type: LossType = "grpo",
    max_completion_length: int | None = None,
    num_items_in_batch: float | None = None,
) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar: the aggregation choice of ftip-004G/004J.

    - ``"grpo"``: mean over each response's tokens, then over responses (every response weighs the same);
    - ``"bnpo"``: sum over the batch's active tokens / their number (every token weighs the same);
    - ``"dr_grpo"``: sum / (B · max_completion_length), a constant normaliser (Liu et al. 2025);
    - ``"dapo"``: sum / active tokens of the whole generation batch (``num_items_in_batch``; equal to
      bnpo's count within one batch) (Yu et al. 2025, §3.3).
    """
    check_choice(loss_type, "loss_type", ("grpo", "bnpo", "dr_grpo", "dapo"))
    m = mask.to(per_token_loss.dtype)
    if loss_type == "grpo":
        per_seq = m.sum(-1)
        if bool((per_seq == 0).any()):
            empty = (per_seq == 0).nonzero().flatten().tolist()
            raise ValueError(f"mask has no active token in responses {empty}; their per-response mean (loss_type='grpo') is undefined")
        return ((per_token_loss * m).sum(-1) / per_seq).mean()
    if loss_type == "bnpo":
        return (per_token_loss * m).sum() / m.sum()
    if loss_type == "dr_grpo":
        L = per_token_loss.shape[-1] if max_completion_length is None else max_completion_length
        if L < per_token_loss.shape[-1]:
            raise ValueError(f"max_completion_length ({L}) must be >= the completion width {per_token_loss.shape[-1]}")
        return (per_token_loss * m).sum() / (per_token_loss.shape[0] * L)
    n = m.sum() if num_items_in_batch is None else torch.as_tensor(float(num_items_in_batch))
    if float(n) <= 0:
        raise ValueError(f"num_items_in_batch must be > 0; got {float(n)}")
    return (per_token_loss * m).sum() / n


def grpo_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    ref_logps: torch.Tensor | None = None,
    beta: float = 0.0,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    loss_type: LossType = "grpo",
    max_completion_length: int | None = None,
    kl_bias_correction: bool = False,
    num_items_in_batch: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO / DAPO policy loss [ftip-004E, ftip-004H, ftip-004J; Shao et al. 2024, §4.1.2, eq. 3].

    Per token: −min(ρA, clip(ρ, 1−ε, 1+ε_high)A) + β·k3(π_θ, π_ref), with ρ = exp(logps − old_logps).
    ``logps``, ``old_logps``, ``ref_logps``, ``mask``: (B, T); ``advantages`` (B,) (one per response,
    repeated over its tokens) or (B, T) (token-level credit, e.g. process supervision).
    ``kl_bias_correction`` multiplies the k3 term by ρ (TRL ``use_bias_correction_kl``, which TRL 1.16 turns on
    by default; here it is off unless declared).
    Aggregation by ``loss_type``: see :func:`aggregate_token_loss`.

    Returns ``(loss, metrics)`` with TRL's names: ``clip_ratio/low_mean``, ``clip_ratio/high_mean``,
    ``clip_ratio/region_mean`` and ``kl`` (mean k3 over active tokens, when ``ref_logps`` is given).
    Loss and gradient match TRL 1.16 for all four loss types.
    """
    check_choice(loss_type, "loss_type", ("grpo", "bnpo", "dr_grpo", "dapo"))
    beta = check_nonnegative(beta, "beta")
    if logps.dim() != 2:
        raise ValueError(f"logps must have shape (B, T); got {tuple(logps.shape)}")
    for t, n in ((old_logps, "old_logps"), (mask, "mask")) + (((ref_logps, "ref_logps"),) if ref_logps is not None else ()):
        if t.shape != logps.shape:
            raise ValueError(f"{n} (shape {tuple(t.shape)}) must have the shape of logps {tuple(logps.shape)}")
    m = as_mask(mask, logps, "mask")
    active = m > 0
    check_log_probabilities(logps.detach()[active], "logps")
    check_log_probabilities(old_logps.detach()[active], "old_logps")
    adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(-1)  # (B, T) or (B, 1)
    if adv.shape[0] != logps.shape[0] or adv.shape[1] not in (1, logps.shape[1]):
        raise ValueError(f"advantages (shape {tuple(advantages.shape)}) must be (B,) or (B, T) for logps {tuple(logps.shape)}")
    adv = adv.detach().to(logps.dtype)
    ratio = torch.exp(logps - old_logps.detach())  # (B, T)
    per_token = -clipped_surrogate(ratio, adv, epsilon, epsilon_high)  # (B, T)
    metrics: dict[str, float] = {}
    if beta > 0 and ref_logps is None:
        raise ValueError("ref_logps must be given when beta > 0 (the KL term needs the reference policy)")
    if ref_logps is not None:
        check_log_probabilities(ref_logps.detach()[active], "ref_logps")
        kl = kl_estimate(logps, ref_logps.detach(), "k3")  # (B, T)
        if kl_bias_correction:
            kl = kl * ratio
        if beta > 0:
            per_token = per_token + beta * kl
        metrics["kl"] = float((kl.detach() * m).sum() / m.sum())
    loss = aggregate_token_loss(per_token, m, loss_type, max_completion_length, num_items_in_batch)
    metrics.update(clip_fractions(ratio, adv.expand_as(ratio), m, epsilon, epsilon_high))
    return loss, metrics


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
    ``zero_std`` as in :func:`group_advantages`.
    """
    check_choice(zero_std, "zero_std", ("zero", "raise"))
    eps = check_nonnegative(eps, "eps")
    if len(step_rewards) != len(step_ends) or len(step_rewards) == 0:
        raise ValueError("step_rewards and step_ends must list the same (non-zero) number of responses")
    flat = []
    for i, (rs, es) in enumerate(zip(step_rewards, step_ends)):
        if len(rs) != len(es) or len(rs) == 0:
            raise ValueError(f"step_rewards[{i}] and step_ends[{i}] must have the same, non-zero length")
        if list(es) != sorted(set(es)) or es[0] < 0 or es[-1] >= length:
            raise ValueError(f"step_ends[{i}] must be strictly increasing token indices in [0, {length})")
        flat += list(rs)
    allr = as_tensor(flat, "step_rewards")
    mean, std = allr.mean(), _std(allr, ddof)
    if float(std) == 0:
        if zero_std == "raise":
            raise ValueError("step_rewards have zero spread, so std scaling is undefined (zero_std='raise')")
        norm_all = torch.zeros_like(allr)
    else:
        norm_all = (allr - mean) / (std + eps)
    out = torch.zeros(len(step_rewards), length, dtype=allr.dtype)  # (G, T)
    k = 0
    for i, es in enumerate(step_ends):
        for j, end in enumerate(es):
            out[i, : end + 1] += norm_all[k + j]  # step j's reward credits every token at or before its end
        k += len(es)
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
