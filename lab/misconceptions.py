"""Misconception cards: recognise puzzling patterns in training metrics and explain them.

Learners and practitioners keep asking about the same few patterns ("my GRPO loss is 0", "DPO's chosen
reward goes down"). Each rule here looks at a metric history, the per-step values under TRL's metric
names, and returns a :class:`Card` when its pattern is present: a title, a short explanation in the
lab's own words, and the page that shows why. Pages and the small-run monitor call :func:`diagnose`.

A history is ``{metric name: [value at step 1, value at step 2, ...]}``; missing metrics simply mean
a rule cannot fire. The context says what produced it (``algorithm``, ``num_iterations`` μ, the KL
estimator ``kl_estimator``). Trends compare the mean of the first and the last ``window`` values, so a
single noisy step never triggers a card.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence


@dataclass(frozen=True)
class Card:
    """One misconception card."""

    key: str  # stable id of the rule
    title: str
    explanation: str  # two to four sentences
    page: str  # url path of the page that shows why, e.g. "grpo"
    evidence: str  # the numbers that triggered it


History = Mapping[str, Sequence[float]]
Context = Mapping[str, object]


def _series(history: History, name: str) -> list[float] | None:
    """The finite values of one metric, or None when it is absent or too short to judge."""
    if name not in history:
        return None
    values = history[name]
    try:
        out = [float(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"history[{name!r}] must be a list of numbers") from None
    out = [v for v in out if math.isfinite(v)]
    return out or None


def _trend(values: list[float], window: int) -> float | None:
    """mean(last window) − mean(first window); None with fewer than 2·window values."""
    if len(values) < 2 * window:
        return None
    return sum(values[-window:]) / window - sum(values[:window]) / window


def _grpo_loss_near_zero(h: History, ctx: Context, window: int) -> Card | None:
    loss, reward = _series(h, "loss"), _series(h, "reward")
    if ctx.get("algorithm") != "grpo" or not loss or not reward:
        return None
    rise = _trend(reward, window)
    scale = max(1e-8, max(abs(r) for r in reward))
    early = loss[:window]
    if rise is None or rise <= 0.05 * scale or max(abs(x) for x in early) > 1e-3 + 0.02 * scale:
        return None
    return Card(
        "grpo_loss_near_zero", "GRPO loss near 0 while the reward rises",
        "With one update per batch (μ = 1) the probability ratio is exactly 1, and group-relative advantages sum to zero "
        "within each group, so the loss value is about 0 (plus β·KL) whatever the policy learns. Its gradient is not zero: "
        "it raises the log-probability of above-average completions. Watch the reward and held-out accuracy, not the loss.",
        "grpo", f"|loss| ≤ {max(abs(x) for x in early):.2g} over the first {window} steps; reward rose by {rise:+.3f}",
    )


def _all_groups_zero_spread(h: History, ctx: Context, window: int) -> Card | None:
    frac = _series(h, "frac_reward_zero_std")
    if not frac or len(frac) < window or min(frac[-window:]) < 1.0:
        return None
    return Card(
        "all_groups_zero_spread", "Every group has zero reward spread: no learning signal",
        "In each group all completions got the same reward (all right or all wrong), so every group-relative advantage is 0 "
        "and the policy gradient vanishes; a reward of 0 with a loss of 0 is the usual sight. Make the task easier or the "
        "model stronger (e.g. more SFT first), sample more per group, or filter such groups as DAPO's dynamic sampling does.",
        "grpo", f"frac_reward_zero_std = 1 for the last {window} steps",
    )


def _dpo_chosen_falls(h: History, ctx: Context, window: int) -> Card | None:
    chosen, margins = _series(h, "rewards/chosen"), _series(h, "rewards/margins")
    if not chosen or not margins:
        return None
    dc, dm = _trend(chosen, window), _trend(margins, window)
    if dc is None or dm is None or not (dc < 0 and dm > 0 and chosen[-1] < 0):
        return None
    return Card(
        "dpo_chosen_falls", "DPO's chosen reward falls while the margin rises",
        "DPO only asks that the chosen response gain on the rejected one relative to the reference. Both can lose "
        "probability, the rejected one faster, with the freed mass moving to responses in neither pair; the loss still "
        "falls. A falling chosen reward is expected, not a bug, but a large fall means the policy is drifting elsewhere.",
        "dpo", f"rewards/chosen {dc:+.3f}, rewards/margins {dm:+.3f} (last vs first {window} steps)",
    )


def _clip_zero_on_policy(h: History, ctx: Context, window: int) -> Card | None:
    mu = ctx.get("num_iterations", 1)
    clip = None
    for name in ("clip_ratio/region_mean", "clip_ratio", "clipfrac"):
        clip = _series(h, name)
        if clip:
            break
    if mu != 1 or not clip or len(clip) < window or max(clip) != 0.0:
        return None
    return Card(
        "clip_zero_on_policy", "Clip fraction exactly 0 with μ = 1",
        "With a single optimization step per batch, the policy that is updated is the one that sampled, so every ratio "
        "π/π_old is exactly 1 when the loss is computed and nothing can be clipped. Clipping only acts from the second "
        "step on the same batch (μ > 1) or with stale rollouts; 0 here is correct, not a broken metric.",
        "ppo", f"clip fraction 0 at all {len(clip)} steps with num_iterations = 1",
    )


def _negative_k1(h: History, ctx: Context, window: int) -> Card | None:
    kl = _series(h, "kl")
    if not kl or ctx.get("kl_estimator", "k1") != "k1" or min(kl) >= 0:
        return None
    return Card(
        "negative_k1_kl", "A negative KL estimate",
        "A true KL divergence is never negative, but the k1 estimator log π(y)/π_ref(y) on sampled tokens is only right on "
        "average: single samples, and small batches, can come out negative. k3 = (r − 1) − log r with r = π_ref/π is "
        "non-negative for every sample and still unbiased; use it, or average more samples, before reading the sign.",
        "kl_optimal", f"min kl = {min(kl):.3g} with the k1 estimator",
    )


def _reward_up_heldout_down(h: History, ctx: Context, window: int) -> Card | None:
    reward, acc = _series(h, "reward"), _series(h, "eval/accuracy")
    if not reward or not acc:
        return None
    w_eval = max(1, min(window, len(acc) // 2))
    dr, da = _trend(reward, window), _trend(acc, w_eval)
    if dr is None or da is None or not (dr > 0 and da < -0.02):
        return None
    return Card(
        "reward_up_heldout_down", "Training reward rises while held-out accuracy falls",
        "The quantity being optimized is improving, but the thing it stands for is not. Typical causes: a reward model or "
        "checker with exploitable errors (over-optimization, reward hacking), or overfitting the training prompts. Inspect "
        "samples, compare against an independent check, and stop at the held-out peak.",
        "proxies", f"reward {dr:+.3f}, eval/accuracy {da:+.3f}",
    )


RULES: dict[str, Callable[[History, Context, int], Card | None]] = {
    "grpo_loss_near_zero": _grpo_loss_near_zero,
    "all_groups_zero_spread": _all_groups_zero_spread,
    "dpo_chosen_falls": _dpo_chosen_falls,
    "clip_zero_on_policy": _clip_zero_on_policy,
    "negative_k1_kl": _negative_k1,
    "reward_up_heldout_down": _reward_up_heldout_down,
}


def diagnose(history: History, context: Context | None = None, window: int = 5) -> list[Card]:
    """Every card whose pattern appears in ``history``, in the order of :data:`RULES`."""
    if not isinstance(history, Mapping):
        raise ValueError("history must map metric names to lists of values")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be an integer >= 1; got {window!r}")
    ctx = dict(context or {})
    return [card for rule in RULES.values() if (card := rule(history, ctx, window)) is not None]


def history_from_events(events: list[dict]) -> dict[str, list[float]]:
    """A metric history for :func:`diagnose` from a small run's step and eval events (TRL's names as keys).

    Training steps give every numeric metric; evaluation events give ``eval/*``. Base-stage events (a ``phase``)
    are left out: they belong to the SFT run before the algorithm started.
    """
    if not isinstance(events, list):
        raise ValueError("events must be a list of event dicts")
    out: dict[str, list[float]] = {}
    for e in events:
        if not isinstance(e, dict) or e.get("phase") is not None or e.get("type") not in ("step", "eval"):
            continue
        for k, v in e.items():
            if k in ("type", "step", "total_steps", "phase") or isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if e["type"] == "eval" and not k.startswith("eval/"):
                continue
            out.setdefault(k, []).append(float(v))
    return out
