"""Credit assignment: which tokens of a trajectory deserve its final score?

The chapter's question (``credit-assignment-question-bank.txt``, 37 papers): one outcome reward arrives at
the end, and something has to decide how much of it each token receives. Uniform outcome credit gives every
token the same advantage, so a correct answer reached through a wrong step reinforces the wrong step too.
Every mechanism here answers the question differently and says what evidence it needs.

One representation for all of them:

* :class:`Trajectory` — tokens grouped into steps (segments, turns) by a per-token ``step_ids`` (T,), a
  ``mask`` (T,) of generated tokens (0 = padding or a tool observation), the outcome reward, and optional
  evidence: step labels, continuation outcomes, per-token entropies and log-probs cached at sampling time,
  a teacher's log-probs, reward components, progress values, distances, knowledge sets, a group id.
* Every mechanism takes one trajectory (→ credit (T,)) or a group (→ credit (G, T), T = longest) and returns a
  :class:`CreditResult`: the per-token credit (float64) and metrics that say what it did —
  ``masked_tokens``, ``credit_moved``, ``total_before``, ``total_after``, ``conserved``.

Conventions (declared, with defaults): group advantages are GRPO's (r − mean)/(std + eps) with
``ddof=1`` (TRL's sample std, as :func:`lab.grpo.group_advantages`); a group whose rewards have zero spread
(max == min, detected exactly, so a std of 1e-17 is never divided by) gets advantage 0; padding positions
(mask 0) never influence any value and always receive credit exactly 0, whatever filler they hold
(0, -1e4, -inf). Credit is a constant for the policy loss: it is returned detached.

The bank carries no ftip tags; code and pages cite the paper and the bank's section ("背景与主要改动",
"核心公式") instead and are tagged ``credit-bank``. Examples that are not the bank's are the lab's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

import torch

from lab import grpo as lab_grpo

from lab._checks import as_tensor, check_choice, check_closed_unit, check_nonnegative

TAG = "credit-bank"
Baseline = Literal["group", "mean", "none"]

# ---------------------------------------------------------------------------------------------- representation


def _vector(x: Any, name: str, length: int | None = None, dtype=torch.float64) -> torch.Tensor:
    """A 1-D float64 (or int64) copy: lists, ints and bools accepted; a copy, so later edits of x change nothing."""
    if isinstance(x, torch.Tensor):
        t = x.detach().to(dtype).clone()
    else:
        try:
            t = torch.as_tensor(x, dtype=dtype)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{name} must be a list of numbers or a tensor; got {x!r}") from exc
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D; got shape {tuple(t.shape)}")
    if length is not None and t.numel() != length:
        raise ValueError(f"{name} must have length {length}; got {t.numel()}")
    return t


@dataclass(frozen=True, eq=False)
class Trajectory:
    """One sampled response (or agent episode) with the evidence credit mechanisms may use.

    Tensors are copied at construction: entropies and log-probs are those cached at sampling time, and
    recomputing them under a later policy cannot change this record (the MGE-PO trap).
    """

    step_ids: Any
    """(T,) int: the step (segment, turn) each token belongs to, 0 … S−1, non-decreasing over valid tokens."""
    outcome: float
    """The outcome reward of the whole trajectory (bools and ints become floats)."""
    mask: Any = None
    """(T,) 0/1: 1 = a token the policy generated; 0 = padding or a tool observation. Default: all ones."""
    tokens: Sequence[str] | None = None
    """(T,) token strings, for display only."""
    step_labels: Any = None
    """(S,) in [0, 1]: 1 = the step is correct, 0 = wrong (process supervision), soft values allowed."""
    continuations: Sequence[Sequence[float]] | None = None
    """S lists of 0/1 outcomes of continuations sampled from the prefix ending at each step (Math-Shepherd)."""
    entropies: Any = None
    """(T,) per-token policy entropy cached at sampling time."""
    logprobs: Any = None
    """(T,) log-probs of the sampled tokens under the sampling policy, cached at sampling time."""
    teacher_logprobs: Any = None
    """(T,) log-probs of the same tokens under a teacher (e.g. the policy given a successful peer as context)."""
    risk: Any = None
    """(T,) in [0, 1]: a tail-risk score per token from some predictor (TACO)."""
    reward_components: Mapping[str, float] | None = None
    """Several named rewards (correctness, length, rubric criteria …) for multi-reward mechanisms."""
    step_values: Any = None
    """(S+1,) potentials / progress Φ(s_0) … Φ(s_S): before the first step and after each step."""
    distances: Any = None
    """(S+1,) predicted remaining steps to success d_0 … d_S (T2SPO)."""
    knowledge: Sequence[frozenset] | None = None
    """S+1 sets of verified facts known before each step and after the last one (KnowGPO)."""
    terminal: bool = True
    """True: the episode ended in a real terminal state; False: it was cut by a time or length limit."""
    group_id: Any = None
    """The prompt group this trajectory belongs to (group-relative mechanisms compare within it)."""

    def __post_init__(self) -> None:
        sid = _vector(self.step_ids, "step_ids", dtype=torch.float64)
        if sid.numel() == 0:
            raise ValueError("step_ids must list at least one token")
        if not bool(torch.isfinite(sid).all()) or not bool((sid == sid.round()).all()):
            raise ValueError("step_ids must be integers")
        sid = sid.to(torch.int64)
        T = sid.numel()
        mask = torch.ones(T, dtype=torch.float64) if self.mask is None else _vector(self.mask, "mask", T)
        if not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError("mask must contain only 0 and 1 (or False/True)")
        if not bool((mask != 0).any()):
            raise ValueError("mask selects no token; a trajectory needs at least one generated token")
        valid = mask.bool()
        v = sid[valid]
        if bool((v < 0).any()) or bool((v[1:] < v[:-1]).any()):
            raise ValueError("step_ids must be >= 0 and non-decreasing over the generated tokens (mask 1)")
        n_steps = int(v.max()) + 1
        present = {x for x in sid.tolist() if 0 <= x < n_steps}  # an observation step may have no generated token
        if present != set(range(n_steps)):
            raise ValueError(f"step_ids must use every step 0 … {n_steps - 1}; missing {sorted(set(range(n_steps)) - present)}")
        try:
            outcome = float(self.outcome)
        except (TypeError, ValueError):
            raise ValueError(f"outcome must be a number; got {self.outcome!r}") from None
        if not math.isfinite(outcome):
            raise ValueError(f"outcome must be finite; got {outcome}")
        set_ = lambda k, val: object.__setattr__(self, k, val)  # noqa: E731  (frozen dataclass)
        set_("step_ids", sid)
        set_("mask", mask)
        set_("outcome", outcome)
        set_("terminal", bool(self.terminal))
        if self.tokens is not None:
            if len(self.tokens) != T:
                raise ValueError(f"tokens must have length {T} (one per step_ids entry); got {len(self.tokens)}")
            set_("tokens", tuple(str(t) for t in self.tokens))
        for name in ("entropies", "logprobs", "teacher_logprobs", "risk"):
            val = getattr(self, name)
            if val is None:
                continue
            t = _vector(val, name, T)
            if not bool(torch.isfinite(t[valid]).all()):
                raise ValueError(f"{name} must be finite on generated tokens (mask 1); padding may hold any filler")
            if name == "entropies" and bool((t[valid] < 0).any()):
                raise ValueError("entropies must be >= 0 on generated tokens")
            if name in ("logprobs", "teacher_logprobs") and bool((t[valid] > 0).any()):
                raise ValueError(f"{name} must be <= 0 on generated tokens (log of a probability)")
            if name == "risk" and bool(((t[valid] < 0) | (t[valid] > 1)).any()):
                raise ValueError("risk must lie in [0, 1] on generated tokens")
            set_(name, torch.where(valid, t, torch.zeros_like(t)))  # fillers are dropped here, once
        if self.step_labels is not None:
            lab = _vector(self.step_labels, "step_labels", n_steps)
            if not bool(((lab >= 0) & (lab <= 1)).all()):
                raise ValueError(f"step_labels must lie in [0, 1] (1 = correct step); got {lab.tolist()}")
            set_("step_labels", lab)
        for name in ("step_values", "distances"):
            val = getattr(self, name)
            if val is not None:
                t = _vector(val, name, n_steps + 1)
                if not bool(torch.isfinite(t).all()):
                    raise ValueError(f"{name} must be finite")
                if name == "distances" and bool((t < 0).any()):
                    raise ValueError("distances must be >= 0 (remaining steps to success)")
                set_(name, t)
        if self.continuations is not None:
            if len(self.continuations) != n_steps:
                raise ValueError(f"continuations must list one set of outcomes per step ({n_steps}); got {len(self.continuations)}")
            set_("continuations", tuple(tuple(float(c) for c in cs) for cs in self.continuations))
        if self.reward_components is not None:
            comps = {}
            for k, val in dict(self.reward_components).items():
                try:
                    fv = float(val)
                except (TypeError, ValueError):
                    raise ValueError(f"reward_components[{k!r}] must be a number; got {val!r}") from None
                if not math.isfinite(fv):
                    raise ValueError(f"reward_components[{k!r}] must be finite; got {fv}")
                comps[str(k)] = fv
            set_("reward_components", comps)
        if self.knowledge is not None:
            if len(self.knowledge) != n_steps + 1:
                raise ValueError(f"knowledge must list S+1 = {n_steps + 1} fact sets (before each step and after the last)")
            set_("knowledge", tuple(frozenset(k) for k in self.knowledge))

    @property
    def n_tokens(self) -> int:
        return int(self.step_ids.numel())

    @property
    def n_steps(self) -> int:
        return int(self.step_ids[self.mask.bool()].max()) + 1

    def step_slices(self) -> list[torch.Tensor]:
        """For each step, a bool (T,) selecting its generated tokens."""
        valid = self.mask.bool()
        return [(self.step_ids == j) & valid for j in range(self.n_steps)]

    def last_token_of_steps(self) -> list[int]:
        """Index of each step's last generated token; -1 for a step with none (a tool observation)."""
        return [int(torch.nonzero(s).max()) if bool(s.any()) else -1 for s in self.step_slices()]

    @classmethod
    def from_steps(cls, steps: Sequence[str | Sequence[str]], outcome: float, observation_steps: Sequence[int] = (), **evidence) -> "Trajectory":
        """Build from step texts (split into words = tokens); steps listed in ``observation_steps`` are tool
        observations: they keep their step id but get mask 0 (not generated by the policy)."""
        tokens, sid, mask = [], [], []
        for j, s in enumerate(steps):
            words = s.split() if isinstance(s, str) else list(s)
            if not words:
                raise ValueError(f"steps[{j}] must contain at least one token")
            tokens += words
            sid += [j] * len(words)
            mask += [0.0 if j in observation_steps else 1.0] * len(words)
        return cls(step_ids=sid, outcome=outcome, mask=mask, tokens=tokens, **evidence)


@dataclass
class CreditResult:
    """Per-token credit and what the mechanism did.

    ``credit``: (T,) for one trajectory, (G, T) for a group (T = longest; positions past a trajectory's end
    and padding hold exactly 0). ``baseline``: the uniform outcome credit with the same advantage
    settings, for comparison. ``metrics``: ``masked_tokens`` (positions whose non-zero baseline credit the
    mechanism set to 0; ints for one trajectory, (i, t) pairs for a group), ``n_masked``, ``credit_moved``
    (Σ |credit − baseline| over generated tokens), ``total_before`` / ``total_after`` (sums over generated
    tokens), ``conserved`` (the totals agree to 1e-9 relative), plus mechanism-specific entries.
    """

    key: str
    credit: torch.Tensor
    baseline: torch.Tensor
    mask: torch.Tensor
    metrics: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------- shared helpers


def _group(trajs: Trajectory | Sequence[Trajectory], name: str = "trajectories") -> tuple[list[Trajectory], bool]:
    if isinstance(trajs, Trajectory):
        return [trajs], True
    if isinstance(trajs, (str, bytes)) or not isinstance(trajs, Sequence) or len(trajs) == 0:
        raise ValueError(f"{name} must be a Trajectory or a non-empty list of Trajectory")
    for i, t in enumerate(trajs):
        if not isinstance(t, Trajectory):
            raise ValueError(f"{name}[{i}] must be a Trajectory; got {type(t).__name__}")
    return list(trajs), False


def group_advantages(rewards: Any, baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> torch.Tensor:
    """Outcome advantages of one group (G,): ``"group"`` (r − mean)/(std + eps) as GRPO [Shao et al. 2024,
    §4.1.2]; ``"mean"`` r − mean; ``"none"`` r itself (no baseline).

    Zero spread (max == min, exact) gives 0 for ``"group"`` and ``"mean"``: a std of ~1e-17 from rounding is
    never divided by; a real but tiny spread (1e-175) is scaled exactly. ``ddof`` 1 (sample std, TRL) or
    0 (population std); a group of one with ddof 1 has
    zero spread by definition. ``eps`` >= 0 is added to the std. Computed by :func:`lab.grpo.group_advantages`.
    """
    check_choice(baseline, "baseline", ("group", "mean", "none"))
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population std) or 1 (sample std); got {ddof!r}")
    eps = check_nonnegative(eps, "eps")
    r = _vector(rewards, "rewards")
    if r.numel() == 0 or not bool(torch.isfinite(r).all()):
        raise ValueError("rewards must be a non-empty list of finite numbers")
    if baseline == "none":
        return r.clone()
    if r.numel() == 1 or bool(r.max() == r.min()):
        return torch.zeros_like(r)  # zero spread: no comparison, no signal
    # one implementation of group-relative credit: lab.grpo's (exact for near-equal, subnormal and huge spreads)
    return lab_grpo.group_advantages(r, r.numel(), "group" if baseline == "group" else "none", ddof, eps)


def _broadcast(group: list[Trajectory], per_response: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(G,) values → (G, T) on generated tokens, 0 elsewhere; and the (G, T) mask."""
    T = max(t.n_tokens for t in group)
    out = torch.zeros(len(group), T, dtype=torch.float64)
    mask = torch.zeros(len(group), T, dtype=torch.float64)
    for i, t in enumerate(group):
        mask[i, : t.n_tokens] = t.mask
        out[i, : t.n_tokens] = per_response[i] * t.mask
    return out, mask


def _per_token(group: list[Trajectory], rows: list[torch.Tensor]) -> torch.Tensor:
    """Pad per-trajectory (T_i,) credits to (G, T); padding and observations get exactly 0."""
    T = max(t.n_tokens for t in group)
    out = torch.zeros(len(group), T, dtype=torch.float64)
    for i, (t, row) in enumerate(zip(group, rows)):
        out[i, : t.n_tokens] = torch.where(t.mask.bool(), row, torch.zeros_like(row))
    return out


def _result(key: str, group: list[Trajectory], single: bool, credit: torch.Tensor, baseline: torch.Tensor, **extra) -> CreditResult:
    mask = _broadcast(group, torch.zeros(len(group)))[1]
    credit = (credit * mask).detach()  # exactly 0 off the generated tokens; never a gradient path
    baseline = (baseline * mask).detach()
    before, after = float(baseline.sum()), float(credit.sum())
    masked = torch.nonzero((mask == 1) & (baseline != 0) & (credit == 0)).tolist()
    if single:
        masked = [t for _, t in masked]
    else:
        masked = [tuple(p) for p in masked]
    metrics = {
        "masked_tokens": masked,
        "n_masked": len(masked),
        "credit_moved": float((credit - baseline).abs().sum()),
        "total_before": before,
        "total_after": after,
        "conserved": math.isclose(before, after, rel_tol=1e-9, abs_tol=1e-9),
        "denominator": float(mask.sum()),  # generated tokens; no mechanism here renormalizes after a mask
        **extra,
    }
    if single:
        return CreditResult(key, credit[0], baseline[0], mask[0], metrics)
    return CreditResult(key, credit, baseline, mask, metrics)


def _advantages(group: list[Trajectory], baseline: Baseline, ddof: int, eps: float, rewards: Sequence[float] | None = None) -> torch.Tensor:
    r = [t.outcome for t in group] if rewards is None else rewards
    check_choice(baseline, "baseline", ("group", "mean", "none"))
    if ddof not in (0, 1):
        raise ValueError(f"ddof must be 0 (population std) or 1 (sample std); got {ddof!r}")
    check_nonnegative(eps, "eps")
    if baseline != "none" and ddof == 1 and len(group) == 1:
        return torch.zeros(1, dtype=torch.float64)  # one response: nothing to compare with
    return group_advantages(r, baseline, ddof, eps)


def _need(t: Trajectory, name: str, i: int, why: str):
    val = getattr(t, name)
    if val is None:
        raise ValueError(f"trajectories[{i}].{name} is required: {why}")
    return val


# ---------------------------------------------------------------------------------------------- the four named functions


def shapley_credit(value_fn: Callable[[tuple[int, ...]], float] | Mapping[tuple[int, ...], float], n_segments: int) -> torch.Tensor:
    """Exact Shapley values of ``n_segments`` segments under a coalition value function [SCAR; Shapley 1953].

    φ_i = Σ_{S ⊆ N∖{i}} |S|! (n − |S| − 1)! / n! · (v(S ∪ {i}) − v(S)). ``value_fn`` maps a sorted tuple of
    included segment indices to a number (or is a dict with all 2^n such keys). Negative values are kept:
    clipping them would break efficiency, Σ φ_i = v(all) − v(none). Exact enumeration, so n_segments <= 12.
    Returns (n_segments,) float64.
    """
    if isinstance(n_segments, bool) or not isinstance(n_segments, int) or not 1 <= n_segments <= 12:
        raise ValueError(f"n_segments must be an integer in [1, 12] (exact enumeration is 2^n); got {n_segments!r}")
    if not callable(value_fn) and not isinstance(value_fn, Mapping):
        raise ValueError("value_fn must be a callable on coalitions or a dict {coalition tuple: value}")
    n = n_segments
    table: dict[int, float] = {}
    for bits in range(1 << n):
        coalition = tuple(i for i in range(n) if bits >> i & 1)
        try:
            val = value_fn(coalition) if callable(value_fn) else value_fn[coalition]
        except KeyError:
            raise ValueError(f"value_fn has no value for coalition {coalition}; all 2^{n} coalitions are needed") from None
        try:
            val = float(val)
        except (TypeError, ValueError):
            raise ValueError(f"value_fn{coalition} must be a number; got {val!r}") from None
        if not math.isfinite(val):
            raise ValueError(f"value_fn{coalition} must be finite; got {val}")
        table[bits] = val
    fact = [math.factorial(k) for k in range(n + 1)]
    phi = torch.zeros(n, dtype=torch.float64)
    for i in range(n):
        total = 0.0
        for bits in range(1 << n):
            if bits >> i & 1:
                continue
            s = bin(bits).count("1")
            total += fact[s] * fact[n - s - 1] / fact[n] * (table[bits | 1 << i] - table[bits])
        phi[i] = total
    return phi


def math_shepherd_labels(continuation_outcomes: Sequence[Sequence[float]] | torch.Tensor, kind: Literal["hard", "soft"] = "hard") -> torch.Tensor:
    """Step labels from sampled continuations [Wang et al. 2024, Math-Shepherd, §3].

    ``continuation_outcomes[j]`` holds the 0/1 outcomes of k_j continuations sampled from the prefix ending
    at step j (k may differ per step). ``"hard"``: 1 if any continuation reaches the right answer;
    ``"soft"``: the fraction that do. So hard >= soft always. The label estimates reachability under this
    policy and sampling budget, not the step's correctness. Returns (S,) float64.
    """
    check_choice(kind, "kind", ("hard", "soft"))
    if isinstance(continuation_outcomes, torch.Tensor):
        if continuation_outcomes.dim() != 2:
            raise ValueError(f"continuation_outcomes must be 2-D (steps, continuations); got shape {tuple(continuation_outcomes.shape)}")
        rows = [r for r in continuation_outcomes.to(torch.float64)]
    else:
        if isinstance(continuation_outcomes, (str, bytes)) or not isinstance(continuation_outcomes, Sequence):
            raise ValueError("continuation_outcomes must be a list (one per step) of lists of 0/1 outcomes")
        rows = [_vector(r, f"continuation_outcomes[{j}]") for j, r in enumerate(continuation_outcomes)]
    if not rows:
        raise ValueError("continuation_outcomes must list at least one step")
    out = []
    for j, r in enumerate(rows):
        if r.numel() == 0:
            raise ValueError(f"continuation_outcomes[{j}] is empty: a label needs at least one continuation")
        if not bool(((r == 0) | (r == 1)).all()):
            raise ValueError(f"continuation_outcomes[{j}] must hold 0/1 outcomes; got {r.tolist()}")
        out.append(r.max() if kind == "hard" else r.mean())
    return torch.stack(out).to(torch.float64)


def pava(values: Any, weights: Any = None) -> torch.Tensor:
    """Pool-adjacent-violators: the weighted least-squares non-decreasing fit [CONCUR, 核心公式].

    Minimizes Σ w_i (f_i − y_i)² subject to f_1 <= f_2 <= … <= f_n. Adjacent blocks that violate the order
    are merged into their weighted mean, so the weighted sum Σ w_i f_i equals Σ w_i y_i. ``weights`` > 0,
    default all ones. Returns (n,) float64.
    """
    y = _vector(values, "values")
    if y.numel() == 0:
        raise ValueError("values must not be empty")
    if not bool(torch.isfinite(y).all()):
        raise ValueError("values must be finite")
    w = torch.ones_like(y) if weights is None else _vector(weights, "weights", y.numel())
    if not bool(torch.isfinite(w).all()) or not bool((w > 0).all()):
        raise ValueError(f"weights must be finite and > 0; got {w.tolist()}")
    blocks: list[list[float]] = []  # [weighted mean, total weight, count]
    for yi, wi in zip(y.tolist(), w.tolist()):
        blocks.append([yi, wi, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:  # a violation: pool the two blocks
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return torch.tensor([m for m, _, c in blocks for _ in range(c)], dtype=torch.float64)


def potential_shaping(rewards: Any, potentials: Any, gamma: float, terminal: bool) -> torch.Tensor:
    """Potential-based shaping r'_t = r_t + γ Φ(s_{t+1}) − Φ(s_t) [Ng, Harada & Russell 1999; PRM4RL, 核心公式].

    ``rewards`` (N,) per transition; ``potentials`` (N+1,) Φ(s_0) … Φ(s_N). If ``terminal`` the last state
    is absorbing and its potential counts as 0; a timeout (``terminal=False``) is not a terminal state, so
    Φ(s_N) is kept: the task could have continued. The discounted shaped return telescopes:
    Σ γ^t r'_t = Σ γ^t r_t + γ^N Φ(s_N)·[not terminal] − Φ(s_0). Returns (N,) float64.
    """
    r = _vector(rewards, "rewards")
    if r.numel() == 0 or not bool(torch.isfinite(r).all()):
        raise ValueError("rewards must be a non-empty list of finite numbers")
    phi = _vector(potentials, "potentials")
    if phi.numel() != r.numel() + 1:
        raise ValueError(f"potentials must have one more entry than rewards (Φ(s_0) … Φ(s_N)): {r.numel() + 1}; got {phi.numel()}")
    if not bool(torch.isfinite(phi).all()):
        raise ValueError("potentials must be finite")
    gamma = check_closed_unit(gamma, "gamma")
    if not isinstance(terminal, (bool, int)) or isinstance(terminal, int) and terminal not in (0, 1):
        raise ValueError(f"terminal must be True or False; got {terminal!r}")
    nxt = phi[1:].clone()
    if terminal:
        nxt[-1] = 0.0  # absorbing terminal state: no future, potential 0
    return r + gamma * nxt - phi[:-1]


# ---------------------------------------------------------------------------------------------- mechanisms


def outcome_credit(trajectories, baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """Uniform outcome credit: every generated token gets its response's outcome advantage (GRPO's broadcast,
    Shao et al. 2024, §4.1.2). The baseline every other mechanism is compared against."""
    group, single = _group(trajectories)
    A = _advantages(group, baseline, ddof, eps)
    base, _ = _broadcast(group, A)
    return _result("outcome", group, single, base, base, advantages=A.tolist())


def process_label_credit(trajectories, baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4, label_scale: float = 1.0) -> CreditResult:
    """Process supervision [Lightman et al. 2023, §2]: each step's tokens get 2ℓ_j − 1 (ℓ = 1 correct → +1,
    ℓ = 0 wrong → −1), scaled by ``label_scale``; the outcome does not enter. Steps judged, not outcomes."""
    group, single = _group(trajectories)
    rows = []
    for i, t in enumerate(group):
        lab = _need(t, "step_labels", i, "process supervision labels each step")
        rows.append(label_scale * (2 * lab[t.step_ids.clamp(min=0, max=t.n_steps - 1)] - 1))
    base, _ = _broadcast(group, _advantages(group, baseline, ddof, eps))
    return _result("process_labels", group, single, _per_token(group, rows), base)


def math_shepherd_credit(trajectories, kind: Literal["hard", "soft"] = "soft", baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """Math-Shepherd [Wang et al. 2024, §3]: step labels from continuations (:func:`math_shepherd_labels`)
    used as process rewards, each step's tokens get 2ℓ_j − 1. A hard label is 1 once any continuation
    recovers, so an error that the policy can repair is labelled correct."""
    group, single = _group(trajectories)
    rows, labels = [], []
    for i, t in enumerate(group):
        cont = _need(t, "continuations", i, "Math-Shepherd samples continuations from each step's prefix")
        lab = math_shepherd_labels(cont, kind)
        labels.append(lab.tolist())
        rows.append(2 * lab[t.step_ids.clamp(min=0, max=t.n_steps - 1)] - 1)
    base, _ = _broadcast(group, _advantages(group, baseline, ddof, eps))
    return _result("math_shepherd", group, single, _per_token(group, rows), base, step_labels=labels)


def potential_shaping_credit(trajectories, gamma: float = 1.0, credit_kind: Literal["reward", "return_to_go"] = "reward",
                             baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """Progress shaping [PRM4RL; Ng et al. 1999]: step rewards are the outcome on the last step (0 before);
    potentials are ``step_values``; each step's tokens get its shaped reward r'_j (``"reward"``) or its
    discounted shaped return-to-go (``"return_to_go"``). A trajectory with ``terminal=False`` (a timeout)
    keeps its last potential."""
    check_choice(credit_kind, "credit_kind", ("reward", "return_to_go"))
    group, single = _group(trajectories)
    rows, shaped_all = [], []
    for i, t in enumerate(group):
        phi = _need(t, "step_values", i, "potential shaping needs a progress value after each step")
        S = t.n_steps
        r = torch.zeros(S, dtype=torch.float64)
        r[-1] = t.outcome
        shaped = potential_shaping(r, phi, gamma, t.terminal)
        if credit_kind == "return_to_go":
            g = torch.zeros(S, dtype=torch.float64)
            acc = 0.0
            for j in range(S - 1, -1, -1):
                acc = float(shaped[j]) + gamma * acc
                g[j] = acc
            shaped = g
        shaped_all.append(shaped.tolist())
        rows.append(shaped[t.step_ids.clamp(min=0, max=S - 1)])
    base, _ = _broadcast(group, _advantages(group, baseline, ddof, eps))
    return _result("potential_shaping", group, single, _per_token(group, rows), base, shaped_step_rewards=shaped_all)


def label_value_fn(traj: Trajectory, penalty: float = 0.5) -> Callable[[tuple[int, ...]], float]:
    """The lab's own illustrative coalition value (not SCAR's reward model): a text made of the steps in S
    scores v(S) = outcome · |S ∩ correct| / |correct| · (1 − penalty)^{|S ∩ wrong|}; v(∅) = 0. Correct and
    wrong steps come from ``step_labels`` (ℓ >= 0.5 is correct)."""
    if traj.step_labels is None:
        raise ValueError("step_labels are required to build the lab's illustrative coalition value")
    penalty = check_closed_unit(penalty, "penalty")
    good = {j for j, ell in enumerate(traj.step_labels.tolist()) if ell >= 0.5}
    n_good = max(1, len(good))

    def v(coalition: tuple[int, ...]) -> float:
        s = set(coalition)
        return traj.outcome * len(s & good) / n_good * (1 - penalty) ** len(s - good)

    return v


def shapley_segment_credit(trajectories, value_fns: Sequence[Any] | None = None, penalty: float = 0.5,
                           baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """SCAR [Shapley credit assignment]: each step (segment) gets its exact Shapley value under a coalition
    value, placed on the segment's last generated token (others 0); negatives kept. ``value_fns[i]``: a
    callable or full table for trajectory i; default :func:`label_value_fn` (the lab's illustration). The
    credits of a trajectory sum to v(all) − v(none)."""
    group, single = _group(trajectories)
    if value_fns is not None and len(value_fns) != len(group):
        raise ValueError(f"value_fns must give one value function per trajectory ({len(group)}); got {len(value_fns)}")
    rows, phis = [], []
    for i, t in enumerate(group):
        fn = value_fns[i] if value_fns is not None else label_value_fn(t, penalty)
        phi = shapley_credit(fn, t.n_steps)
        phis.append(phi.tolist())
        row = torch.zeros(t.n_tokens, dtype=torch.float64)
        for j, last in enumerate(t.last_token_of_steps()):
            if last >= 0:  # an observation segment has no generated token to carry its value
                row[last] = phi[j]
        rows.append(row)
    base, _ = _broadcast(group, _advantages(group, baseline, ddof, eps))
    # concentrating a segment's value on its last token is not masking: report no masked tokens
    return _result("shapley", group, single, _per_token(group, rows), base, shapley_values=phis, masked_tokens=[], n_masked=0,
                   placed_on_last_token=True)


def concur_credit(trajectories, primary: str = "correct", auxiliary: str = "length", aux_weight: float = 1.0,
                  ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """CONCUR [核心公式]: standardize the primary and auxiliary rewards separately over the group, add them
    (A = A_primary + w·A_aux), sort responses by (primary, auxiliary), and project the combined advantages
    onto a non-decreasing sequence with :func:`pava`. A response with a lower primary reward can then never
    out-credit one with a higher primary reward; ties in the primary are ordered by the auxiliary, so PAVA
    only repairs violations across primary levels. PAVA keeps the group's total advantage."""
    group, single = _group(trajectories)
    aux_weight = check_nonnegative(aux_weight, "aux_weight")
    p, a = [], []
    for i, t in enumerate(group):
        comps = _need(t, "reward_components", i, f"CONCUR needs the {primary!r} and {auxiliary!r} rewards")
        for k in (primary, auxiliary):
            if k not in comps:
                raise ValueError(f"trajectories[{i}].reward_components has no {k!r}; it has {sorted(comps)}")
        p.append(comps[primary])
        a.append(comps[auxiliary])
    combined = _advantages(group, "group", ddof, eps, p) + aux_weight * _advantages(group, "group", ddof, eps, a)
    order = sorted(range(len(group)), key=lambda i: (p[i], a[i]))
    fit = pava(combined[order])
    projected = torch.empty_like(combined)
    projected[order] = fit
    credit, _ = _broadcast(group, projected)
    base, _ = _broadcast(group, combined)
    return _result("pava", group, single, credit, base, combined=combined.tolist(), projected=projected.tolist(),
                   order=order, sum_preserved=math.isclose(float(fit.sum()), float(combined.sum()), abs_tol=1e-9))


def mart_credit(trajectories, boundary_steps: Sequence[int | None] | None = None, baseline: Baseline = "group",
                ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """MART-GRPO [核心公式]: in a trajectory with negative advantage, negative credit after the last
    unrecovered error is masked; the error step itself (the interval's upper end) keeps its penalty. The
    original group advantages and the original token denominator are kept: nothing is recomputed or
    renormalized after the mask. The boundary is the last step labelled wrong (``step_labels``) unless
    ``boundary_steps[i]`` gives it; a failure with no located error is left unmasked."""
    group, single = _group(trajectories)
    if boundary_steps is not None and len(boundary_steps) != len(group):
        raise ValueError(f"boundary_steps must give one entry per trajectory ({len(group)}); got {len(boundary_steps)}")
    A = _advantages(group, baseline, ddof, eps)
    base, _ = _broadcast(group, A)
    credit = base.clone()
    boundaries = []
    for i, t in enumerate(group):
        b = boundary_steps[i] if boundary_steps is not None else None
        if b is None and t.step_labels is not None:
            wrong = [j for j, ell in enumerate(t.step_labels.tolist()) if ell < 0.5]
            b = wrong[-1] if wrong else None
        if b is not None and (isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < t.n_steps):
            raise ValueError(f"boundary_steps[{i}] must be a step index in [0, {t.n_steps}); got {b!r}")
        boundaries.append(b)
        if b is None or float(A[i]) >= 0:
            continue  # only failure credit after the boundary is masked
        after = torch.zeros(credit.shape[1], dtype=torch.bool)
        after[: t.n_tokens] = (t.step_ids > b) & t.mask.bool()
        credit[i, after] = 0.0
    return _result("mart", group, single, credit, base, boundary_steps=boundaries)


def mgepo_credit(trajectories, beta: float = 0.5, entropy_threshold: float | None = None, recentre: bool = True,
                 baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """MGE-PO-style outcome × entropy quadrants. Outcome (success: advantage > 0) and uncertainty (response
    mean of the entropies *cached at sampling*, high if above ``entropy_threshold``, default the group mean)
    are separate axes. The lab's own quadrant corrections (parameters, not the paper's constants): a
    success under high entropy gets +β (an uncertain success is informative), a confident failure (low
    entropy) gets −β, the other two 0; a truncated response (``terminal=False``) gets no direct correction.
    With ``recentre`` the corrected advantages are recentred over the group, which moves every response —
    including a truncated one whose own correction was 0."""
    group, single = _group(trajectories)
    beta = check_nonnegative(beta, "beta")
    A = _advantages(group, baseline, ddof, eps)
    H = torch.tensor([float((_need(t, "entropies", i, "MGE-PO uses the entropies cached at sampling time") * t.mask).sum() / t.mask.sum())
                      for i, t in enumerate(group)], dtype=torch.float64)
    thr = float(H.mean()) if entropy_threshold is None else float(entropy_threshold)
    high = H > thr
    if entropy_threshold is None and bool(H.max() == H.min()):
        high = torch.zeros_like(high)  # equal entropies: no response is more uncertain than another
    delta = torch.zeros_like(A)
    quadrants = []
    for i, t in enumerate(group):
        success = bool(A[i] > 0) if baseline != "none" else t.outcome > 0
        quadrants.append(("success" if success else "failure") + ("/high" if bool(high[i]) else "/low"))
        if not t.terminal:
            continue
        if success and bool(high[i]):
            delta[i] = beta
        elif not success and not bool(high[i]):
            delta[i] = -beta
    new = A + delta
    if recentre:
        new = new - new.mean()
    credit, _ = _broadcast(group, new)
    base, _ = _broadcast(group, A)
    return _result("mgepo", group, single, credit, base, mean_entropy=H.tolist(), quadrants=quadrants, correction=delta.tolist())


def carm_credit(trajectories, current_logprobs: Sequence[Any], threshold: float = 0.2, baseline: Baseline = "group",
                ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """CARM [核心公式]: per response, the mean *absolute* token log-ratio d_i = mean_t |log π_θ − log π_old|
    over generated tokens; a response with d_i > ``threshold`` is masked whole. Signed shifts cancel in a
    plain mean; absolute ones cannot. The gate is computed without gradient and the denominator is kept."""
    group, single = _group(trajectories)
    threshold = check_nonnegative(threshold, "threshold")
    if current_logprobs is None or len(current_logprobs) != len(group):
        raise ValueError(f"current_logprobs must give (T,) log-probs under the current policy for each of the {len(group)} trajectories")
    A = _advantages(group, baseline, ddof, eps)
    base, _ = _broadcast(group, A)
    credit = base.clone()
    d_abs, d_signed, gated = [], [], []
    for i, t in enumerate(group):
        old = _need(t, "logprobs", i, "CARM compares current log-probs with those cached at sampling")
        cur = _vector(current_logprobs[i], f"current_logprobs[{i}]", t.n_tokens)
        v = t.mask.bool()
        if not bool(torch.isfinite(cur[v]).all()) or bool((cur[v] > 0).any()):
            raise ValueError(f"current_logprobs[{i}] must be finite and <= 0 on generated tokens")
        diff = torch.where(v, cur - old, torch.zeros_like(cur))
        d_abs.append(float(diff.abs().sum() / t.mask.sum()))
        d_signed.append(float(diff.sum() / t.mask.sum()))
        gated.append(d_abs[-1] > threshold)
        if gated[-1]:
            credit[i] = 0.0
    return _result("carm", group, single, credit, base, mean_abs_log_ratio=d_abs, mean_log_ratio=d_signed, masked_responses=gated)


def taco_credit(trajectories, strength: float = 1.0, baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """TACO-style: in responses with positive advantage, each token's credit is scaled by a smooth weight
    w_t = 1 − strength·risk_t ∈ [0, 1] (``risk`` from a tail-risk predictor); non-positive advantages are
    left unchanged, so failures keep their full penalty."""
    group, single = _group(trajectories)
    strength = check_closed_unit(strength, "strength")
    A = _advantages(group, baseline, ddof, eps)
    base, _ = _broadcast(group, A)
    rows = []
    for i, t in enumerate(group):
        risk = _need(t, "risk", i, "TACO scales positive credit by a per-token tail-risk score")
        w = 1 - strength * risk if float(A[i]) > 0 else torch.ones_like(risk)
        rows.append(float(A[i]) * w)
    return _result("taco", group, single, _per_token(group, rows), base)


def rubric_dropout_credit(trajectories, keep_prob: float = 0.5, seed: int = 0, weights: Mapping[str, float] | None = None,
                          subset: Sequence[str] | None = None, baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """Rubric Dropout: one random subset of rubric criteria per group (seeded, logged in the metrics), shared
    by every response of the group; reward = weighted mean of the visible criteria's scores. Responses
    scored on different criteria would not be comparable. An empty subset gives every response reward 0.
    ``subset`` replays a logged subset instead of drawing one (it must be chosen before seeing the scores)."""
    group, single = _group(trajectories)
    keep_prob = check_closed_unit(keep_prob, "keep_prob")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    crits = None
    for i, t in enumerate(group):
        comps = _need(t, "reward_components", i, "Rubric Dropout scores rubric criteria")
        if crits is None:
            crits = sorted(comps)
        elif sorted(comps) != crits:
            raise ValueError(f"trajectories[{i}].reward_components must name the same criteria as the rest of the group {crits}")
    w = {c: 1.0 for c in crits} if weights is None else {c: check_nonnegative(weights.get(c, 0.0), f"weights[{c!r}]") for c in crits}
    if subset is None:
        gen = torch.Generator().manual_seed(seed)
        keep = (torch.rand(len(crits), generator=gen, dtype=torch.float64) < keep_prob).tolist()  # one draw per group
        visible = [c for c, k in zip(crits, keep) if k]
    else:
        unknown = [c for c in subset if c not in crits]
        if unknown:
            raise ValueError(f"subset names criteria the group does not have: {unknown}; criteria are {crits}")
        visible = [c for c in crits if c in set(subset)]
    wsum = sum(w[c] for c in visible)
    rewards = [sum(w[c] * t.reward_components[c] for c in visible) / wsum if wsum > 0 else 0.0 for t in group]
    A = _advantages(group, baseline, ddof, eps, rewards)
    credit, _ = _broadcast(group, A)
    base, _ = _broadcast(group, _advantages(group, baseline, ddof, eps, [sum(w[c] * t.reward_components[c] for c in crits) / max(sum(w.values()), 1e-300) for t in group]))
    return _result("rubric_dropout", group, single, credit, base, visible_criteria=visible, seed=seed, rewards=rewards)


def tag_credit(trajectories, anchor: str = "correct", anchor_threshold: float = 1.0, aux_weights: Mapping[str, float] | None = None,
               baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """TAG's trust-anchor gate: reward = anchor + [anchor >= threshold] · Σ_k w_k aux_k. Auxiliary rewards
    count only when the anchor is met, so brevity cannot raise the credit of a wrong answer (a gate, not a
    smaller coefficient). The baseline here is the ungated sum anchor + Σ w_k aux_k."""
    group, single = _group(trajectories)
    gated, ungated = [], []
    for i, t in enumerate(group):
        comps = _need(t, "reward_components", i, "TAG gates auxiliary rewards by the anchor reward")
        if anchor not in comps:
            raise ValueError(f"trajectories[{i}].reward_components has no anchor {anchor!r}; it has {sorted(comps)}")
        ws = {k: 1.0 for k in comps if k != anchor} if aux_weights is None else dict(aux_weights)
        aux = sum(float(ws.get(k, 0.0)) * v for k, v in comps.items() if k != anchor)
        passed = comps[anchor] >= anchor_threshold
        gated.append(comps[anchor] + (aux if passed else 0.0))
        ungated.append(comps[anchor] + aux)
    credit, _ = _broadcast(group, _advantages(group, baseline, ddof, eps, gated))
    base, _ = _broadcast(group, _advantages(group, baseline, ddof, eps, ungated))
    return _result("tag", group, single, credit, base, gated_rewards=gated, ungated_rewards=ungated)


def sharpo_credit(trajectories, kappa: float = 1.0, baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """SHARPO [核心公式]: for each segment, g_j = mean over its generated tokens of (teacher log-prob −
    student log-prob), the teacher being the policy rescoring the same tokens with a successful peer as
    context; the segment's credit is A_i · 2σ(κ g_j sign(A_i)): a segment the teacher supports receives more
    of a positive advantage and less of a negative one (the sign convention is the lab's reading). The
    factor lies in (0, 2): the sign of the GRPO advantage is kept and a zero advantage stays zero.
    Observation tokens do not enter the mean."""
    group, single = _group(trajectories)
    kappa = check_nonnegative(kappa, "kappa")
    A = _advantages(group, baseline, ddof, eps)
    base, _ = _broadcast(group, A)
    rows, factors = [], []
    for i, t in enumerate(group):
        s = _need(t, "logprobs", i, "SHARPO compares student and teacher log-probs")
        te = _need(t, "teacher_logprobs", i, "SHARPO rescoring needs the teacher's log-probs")
        row = torch.zeros(t.n_tokens, dtype=torch.float64)
        f = []
        for sl in t.step_slices():
            if not bool(sl.any()):
                f.append(1.0)  # an observation segment: nothing generated, nothing to scale
                continue
            g = float((te[sl] - s[sl]).mean())
            # supported segments (g > 0) get more of a positive advantage and less of a negative one
            fj = 2 * torch.sigmoid(torch.tensor(kappa * g * (1.0 if float(A[i]) >= 0 else -1.0), dtype=torch.float64))
            row[sl] = float(A[i]) * fj
            f.append(float(fj))
        rows.append(row)
        factors.append(f)
    return _result("sharpo", group, single, _per_token(group, rows), base, segment_factors=factors)


def residual_advantage_credit(trajectories, student_probs: Sequence[Any], teacher_probs: Sequence[Any], token_ids: Sequence[Any],
                              alpha: float = 1.0, bound: float = 1.0, baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """Residual Advantage [核心公式]: per token, the teacher–student log-ratio of the sampled token minus its
    expectation under the student, δ_t = ρ_t(y_t) − Σ_v π_S(v) ρ_t(v), ρ = log π_T − log π_S; bounded to
    [−bound, bound], centred per response (so its sum over the response is 0), and added to the verifier
    advantage: credit_t = A_i + α·δ̃_t. It adds to the outcome signal, never replaces it."""
    group, single = _group(trajectories)
    alpha = check_nonnegative(alpha, "alpha")
    bound = check_nonnegative(bound, "bound")
    for name, val in (("student_probs", student_probs), ("teacher_probs", teacher_probs), ("token_ids", token_ids)):
        if val is None or len(val) != len(group):
            raise ValueError(f"{name} must give one entry per trajectory ({len(group)})")
    A = _advantages(group, baseline, ddof, eps)
    base, _ = _broadcast(group, A)
    rows, resid = [], []
    for i, t in enumerate(group):
        ps = as_tensor(student_probs[i], f"student_probs[{i}]").to(torch.float64)
        pt = as_tensor(teacher_probs[i], f"teacher_probs[{i}]").to(torch.float64)
        ids = _vector(token_ids[i], f"token_ids[{i}]", t.n_tokens, dtype=torch.int64)
        for name, p in ((f"student_probs[{i}]", ps), (f"teacher_probs[{i}]", pt)):
            if p.dim() != 2 or p.shape[0] != t.n_tokens:
                raise ValueError(f"{name} must have shape (T={t.n_tokens}, V); got {tuple(p.shape)}")
        if ps.shape != pt.shape:
            raise ValueError(f"student_probs[{i}] and teacher_probs[{i}] must have the same shape")
        v = t.mask.bool()
        psv, ptv = ps[v], pt[v]
        if not bool(((psv > 0) & (psv <= 1)).all()) or not bool(((ptv > 0) & (ptv <= 1)).all()):
            raise ValueError(f"student_probs[{i}] and teacher_probs[{i}] must lie in (0, 1] on generated tokens (logs are taken)")
        if not torch.allclose(psv.sum(-1), torch.ones(psv.shape[0], dtype=torch.float64), atol=1e-6) or not torch.allclose(ptv.sum(-1), torch.ones(ptv.shape[0], dtype=torch.float64), atol=1e-6):
            raise ValueError(f"student_probs[{i}] and teacher_probs[{i}] rows must sum to 1 on generated tokens")
        if bool((ids[v] < 0).any()) or bool((ids[v] >= ps.shape[1]).any()):
            raise ValueError(f"token_ids[{i}] must index the vocabulary [0, {ps.shape[1]})")
        safe_s = torch.where(v.unsqueeze(-1), ps, torch.ones_like(ps))  # padding rows: any filler, never logged
        safe_t = torch.where(v.unsqueeze(-1), pt, torch.ones_like(pt))
        rho = safe_t.log() - safe_s.log()  # (T, V)
        delta = rho.gather(1, ids.clamp(min=0, max=ps.shape[1] - 1).unsqueeze(1)).squeeze(1) - (safe_s * rho).sum(-1)  # (T,)
        delta = delta.clamp(-bound, bound) * t.mask
        delta = (delta - delta.sum() / t.mask.sum()) * t.mask  # centred per response over generated tokens
        resid.append(delta.tolist())
        rows.append(float(A[i]) + alpha * delta)
    return _result("residual_advantage", group, single, _per_token(group, rows), base, residuals=resid)


def t2spo_credit(trajectories, progress_weight: float = 0.5, success_threshold: float = 0.5,
                 truncation: Literal["grpo", "ppo"] = "grpo", baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """T2SPO [核心公式]: step progress = d_{j−1} − d_j, the drop in predicted remaining steps to success
    (``distances``), added to the outcome advantage: credit = A_i + w·progress_j. At the boundary a success
    has successor distance 0, but a failure's last step gets progress 0 (stopping is not reaching the goal).
    A truncated trajectory (``terminal=False``): ``"grpo"`` gives its last step 0, ``"ppo"`` uses the
    predicted successor distance d_S."""
    check_choice(truncation, "truncation", ("grpo", "ppo"))
    progress_weight = check_nonnegative(progress_weight, "progress_weight")
    group, single = _group(trajectories)
    A = _advantages(group, baseline, ddof, eps)
    base, _ = _broadcast(group, A)
    rows, progs = [], []
    for i, t in enumerate(group):
        d = _need(t, "distances", i, "T2SPO needs predicted remaining steps to success").clone()
        S = t.n_steps
        prog = d[:-1] - d[1:]
        if t.terminal:
            prog[-1] = d[S - 1] if t.outcome >= success_threshold else 0.0
        elif truncation == "grpo":
            prog[-1] = 0.0
        progs.append(prog.tolist())
        rows.append(float(A[i]) + progress_weight * prog[t.step_ids.clamp(min=0, max=S - 1)])
    return _result("t2spo", group, single, _per_token(group, rows), base, progress=progs)


def knowgpo_credit(trajectories, process_weight: float = 0.5, baseline: Baseline = "group", ddof: int = 1, eps: float = 1e-4) -> CreditResult:
    """KnowGPO [核心公式]: every non-answer step is grouped with the steps (of any trajectory in the group)
    that start from the same verified knowledge set — the pre-action state, never the state after the
    action; its process reward is the number of new facts the action adds; the process advantage is that
    reward minus the mean of its knowledge group (a singleton gets 0). Credit = A_i + w·process advantage on
    generated tokens; the answer step (the last) keeps only the terminal term; observations get 0."""
    process_weight = check_nonnegative(process_weight, "process_weight")
    group, single = _group(trajectories)
    A = _advantages(group, baseline, ddof, eps)
    base, _ = _broadcast(group, A)
    buckets: dict[frozenset, list[tuple[int, int, float]]] = {}
    for i, t in enumerate(group):
        K = _need(t, "knowledge", i, "KnowGPO groups steps by the facts known before them")
        for j in range(t.n_steps - 1):  # the answer step skips process grouping
            if not K[j] <= K[j + 1]:
                raise ValueError(f"trajectories[{i}].knowledge must only grow (verified facts accumulate); step {j} loses facts")
            buckets.setdefault(K[j], []).append((i, j, float(len(K[j + 1] - K[j]))))
    proc = [torch.zeros(t.n_steps, dtype=torch.float64) for t in group]
    sizes = {}
    for key, items in buckets.items():
        r = [x for _, _, x in items]
        mean = sum(r) / len(r)
        for i, j, x in items:
            proc[i][j] = 0.0 if len(items) == 1 or max(r) == min(r) else x - mean
            sizes[(i, j)] = len(items)
    rows = [float(A[i]) + process_weight * proc[i][t.step_ids.clamp(min=0, max=t.n_steps - 1)] for i, t in enumerate(group)]
    return _result("knowgpo", group, single, _per_token(group, rows), base, process_advantages=[p.tolist() for p in proc],
                   knowledge_group_sizes={f"{i},{j}": n for (i, j), n in sizes.items()})


# ---------------------------------------------------------------------------------------------- registry


FAMILIES = ("process supervision", "continuations", "shaping", "masks", "entropy and confidence", "multi-reward and rubrics",
            "agentic segments and turns", "shapley", "teacher-relative")


@dataclass(frozen=True)
class MechanismInfo:
    key: str
    name: str
    family: str
    paper: str
    needs: list[str]
    conserves: str
    cannot_tell: str
    fn: Callable[..., CreditResult]
    bank_papers: tuple[str, ...] = ()
    """Paper keys of the question bank (lab.credit_bank.PAPERS) whose questions discuss this mechanism."""


MECHANISMS: dict[str, MechanismInfo] = {m.key: m for m in [
    MechanismInfo("outcome", "Uniform outcome credit", "process supervision",
                  "Shao et al. 2024, DeepSeekMath (GRPO outcome supervision, §4.1.2)",
                  ["the outcome reward", "group peers (for the baseline)"],
                  "the outcome advantage, spread evenly over every generated token",
                  "which step earned the outcome: a wrong step inside a correct answer is reinforced like the rest",
                  outcome_credit, ("process_supervision",)),
    MechanismInfo("process_labels", "Process labels (PRM)", "process supervision",
                  "Lightman et al. 2023, Let's Verify Step by Step (§2)",
                  ["a label for every step (human or a process judge)"],
                  "nothing of the outcome: each step is judged on its own",
                  "whether the labeller is right; a judge's agreement is not ground truth, and a correct step may still be useless",
                  process_label_credit, ("process_supervision",)),
    MechanismInfo("math_shepherd", "Math-Shepherd continuations", "continuations",
                  "Wang et al. 2024, Math-Shepherd: Verify and Reinforce LLMs Step-by-step without Human Annotations (§3)",
                  ["k sampled continuations from every step's prefix", "a final-answer checker"],
                  "nothing: labels estimate reachability of a right answer",
                  "a failed continuation may reflect weak sampling, not a wrong prefix; a repairable error looks correct under the hard label",
                  math_shepherd_credit, ("math_shepherd",)),
    MechanismInfo("potential_shaping", "Progress (potential) shaping", "shaping",
                  "PRM4RL: Progress Reward Model for Reinforcement Learning via Large Language Models; Ng, Harada & Russell 1999",
                  ["a progress value after every step", "whether the episode ended or timed out"],
                  "the optimal policy: shaped returns telescope to the return plus boundary potentials",
                  "whether the progress estimate is right; a timeout is not a terminal state",
                  potential_shaping_credit, ("prm4rl",)),
    MechanismInfo("shapley", "Shapley segment credit (SCAR)", "shapley",
                  "SCAR: Shapley Credit Assignment for More Efficient RLHF",
                  ["a reward model that scores any subset of the segments"],
                  "v(all) − v(none): the Shapley values add up exactly (efficiency), negatives included",
                  "causal correctness: it splits a reward model's score, and the reward model may be wrong",
                  shapley_segment_credit, ("scar",)),
    MechanismInfo("pava", "Concordant projection (CONCUR)", "multi-reward and rubrics",
                  "CONCUR: Concordant Auxiliary Rewards for Multi-Task, Multi-Reward Reinforcement Learning",
                  ["a primary reward and an auxiliary reward per response", "group peers"],
                  "the group's total advantage (PAVA keeps block sums)",
                  "whether the auxiliary reward is reliable at the primary ceiling; a step inside the response",
                  concur_credit, ("concur",)),
    MechanismInfo("mart", "Mask after the last unrecovered error (MART)", "masks",
                  "When to Stop Penalizing Actions? Martingale GRPO for VLA Reinforcement Learning",
                  ["the step of the last unrecovered error (e.g. a VLM's hindsight judgment)", "group peers"],
                  "the original advantages and the token denominator; only failure credit after the boundary is removed",
                  "anything about successful trajectories; a boundary chosen in hindsight is not a stopping time",
                  mart_credit, ("mart",)),
    MechanismInfo("mgepo", "Outcome × entropy quadrants (MGE-PO)", "entropy and confidence",
                  "MGE-PO: Entropy-Aware Credit Assignment for Mathematical Reasoning",
                  ["per-token entropies cached at sampling time", "verified outcomes", "group peers"],
                  "the group mean advantage (after recentring)",
                  "correctness from confidence: low entropy can be a confident error",
                  mgepo_credit, ("mgepo",)),
    MechanismInfo("carm", "Absolute log-ratio response mask (CARM)", "masks",
                  "CARM: Cancellation-Aware Response Masking for LLM Reinforcement Learning",
                  ["log-probs cached at sampling", "log-probs under the current policy"],
                  "the advantages of unmasked responses and the denominator",
                  "answer quality: it measures policy drift, not whether a step is right",
                  carm_credit, ("carm",)),
    MechanismInfo("taco", "Tail-risk damping of positive credit (TACO)", "masks",
                  "TACO (tail-risk credit damping; the bank gives no title)",
                  ["a per-token tail-risk score from a predictor", "group peers"],
                  "every non-positive advantage (failures keep their full penalty)",
                  "whether a risky token is wrong: a rare token is not necessarily an error",
                  taco_credit, ("taco",)),
    MechanismInfo("rubric_dropout", "Rubric Dropout", "multi-reward and rubrics",
                  "Rubric Dropout: A Simple Way to Mitigate Reward Hacking in Rubric-as-Reward RL",
                  ["scores on several rubric criteria", "a seed (one subset per group)"],
                  "comparability within a group: all peers are scored on the same criteria",
                  "whether the visible criteria are valid; a hidden criterion is not unimportant",
                  rubric_dropout_credit, ("rubric_dropout",)),
    MechanismInfo("tag", "Trust-anchor gate (TAG)", "multi-reward and rubrics",
                  "Multi-Reward Hacking: From Aggregation-Induced Drift to Trust-Anchored Defense (TAG)",
                  ["an anchor reward (e.g. correctness) and auxiliary rewards"],
                  "the anchor's ordering: a response failing the anchor cannot gain from auxiliaries",
                  "whether the anchor itself is right; the probe-based anchor selection is not modelled here",
                  tag_credit, ("tag",)),
    MechanismInfo("sharpo", "Bounded segment scaling (SHARPO)", "agentic segments and turns",
                  "SHARPO: Segment-Level Credit Assignment for Agentic Reinforcement Learning",
                  ["a successful peer used as teacher context", "student and teacher log-probs per token", "segments"],
                  "the sign of every advantage (factors lie in (0, 2)); zero stays zero",
                  "whether the teacher's preference is right; a failed segment is penalized less, never rewarded",
                  sharpo_credit, ("sharpo",)),
    MechanismInfo("residual_advantage", "Student-relative teacher residual", "teacher-relative",
                  "Residual Advantage: Student-Relative Teacher Guidance for RL with Verifiable Rewards",
                  ["teacher and student next-token distributions", "verifier outcome"],
                  "each response's outcome total (the residual is centred to sum 0 per response)",
                  "whether the teacher is right; a positive residual means little if alternatives have similar ones",
                  residual_advantage_credit, ("residual_advantage", "srpo")),
    MechanismInfo("t2spo", "Distance-to-success progress (T2SPO)", "agentic segments and turns",
                  "T2SPO: Trajectory-to-Step Policy Optimization for Agentic Reinforcement Learning",
                  ["predicted remaining steps to success after each step", "whether the episode ended or was truncated"],
                  "the outcome advantage (progress is added on top)",
                  "whether the distance predictor is right; stopping is not reaching the goal",
                  t2spo_credit, ("t2spo",)),
    MechanismInfo("knowgpo", "Knowledge-grouped process advantage (KnowGPO)", "agentic segments and turns",
                  "KnowGPO: Knowledge-Grouped Policy Optimization for Search Agents",
                  ["verified fact sets before and after each action", "group peers"],
                  "the terminal advantage; process advantages sum to 0 within each knowledge group",
                  "which fact matters for the answer; a singleton pre-state has nothing to compare with",
                  knowgpo_credit, ("knowgpo",)),
]}


# ---------------------------------------------------------------------------------------------- the guiding example

# Compute 3 × 4 + 5 + 2: two good steps, a wrong third step, and still the right final answer.
GUIDING_PROBLEM = "Compute 3 × 4 + 5 + 2."
GUIDING_STEPS = ("3 × 4 = 12", "12 + 5 = 17", "17 + 2 = 18", "correction: 17 + 2 = 19, so the answer is 19")
PEER_STEPS = (
    ("3 × 4 = 12", "12 + 5 = 17", "17 + 2 = 19", "so the answer is 19"),  # a clean correct peer
    ("3 × 4 = 12", "12 + 5 = 18", "18 + 2 = 20", "so the answer is 20"),  # wrong at step 2
    ("3 × 4 = 7", "7 + 5 = 12", "12 + 2 = 14", "so the answer is 14"),  # wrong from step 1
)


def guiding_example(step_correct: Sequence[bool] = (True, True, False, True), outcome: float = 1.0,
                    step_entropy: Sequence[float] = (0.3, 0.4, 1.6, 0.9), peer_outcomes: Sequence[float] = (1.0, 0.0, 0.0),
                    terminal: bool = True) -> tuple[list[Trajectory], dict[str, dict]]:
    """The chapter's example as a group: response 0 is the editable guiding trajectory, the rest its peers.

    Returns ``(group, evidence)``: ``evidence[key]`` holds the extra keyword arguments that mechanism needs
    (current log-probs for CARM, next-token distributions for Residual Advantage). All evidence values are
    the lab's own illustration, derived from the step correctness so that the page stays free of math:
    wrong steps get fewer successful continuations, a higher tail risk, lower progress, a teacher that
    disagrees, and no new verified fact.
    """
    if len(step_correct) != 4 or len(step_entropy) != 4:
        raise ValueError("step_correct and step_entropy must have 4 entries (one per step)")
    for j, h in enumerate(step_entropy):
        if not float(h) >= 0:
            raise ValueError(f"step_entropy[{j}] must be >= 0; got {h}")
    if len(peer_outcomes) != 3:
        raise ValueError("peer_outcomes must have 3 entries")
    labels_all = [[1.0 if c else 0.0 for c in step_correct], [1, 1, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]]
    outcomes = [outcome, *peer_outcomes]
    texts = [GUIDING_STEPS, *PEER_STEPS]
    entropies = [list(step_entropy), [0.3, 0.3, 0.4, 0.3], [0.5, 0.4, 0.5, 0.6], [1.2, 1.0, 0.9, 1.1]]
    group, evidence = [], {"carm": {"current_logprobs": []}, "residual_advantage": {"student_probs": [], "teacher_probs": [], "token_ids": []}}
    for g, (steps, out, lab, ent) in enumerate(zip(texts, outcomes, labels_all, entropies)):
        sizes = [len(s.split()) for s in steps]
        sid = [j for j, n in enumerate(sizes) for _ in range(n)]
        good = [ell >= 0.5 for ell in lab]
        cont = [[1, 1, 1, 0] if ok else [0, 1, 0, 0] for ok in good]  # 3/4 after a good prefix, 1/4 after a bad one
        cont[-1] = [float(out >= 0.5)] * 4  # after the final answer every "continuation" is the answer itself
        phi, d, facts, known = [0.5], [4.0], [frozenset()], set()
        for j, ok in enumerate(good):
            phi.append(min(1.0, phi[-1] + 0.25) if ok else max(0.0, phi[-1] - 0.5))
            d.append(max(0.0, d[-1] - 1) if ok else d[-1] + 1)
            if ok:
                known.add(f"fact{j}")
            facts.append(frozenset(known))
        lp = [(-0.2 if good[j] else -1.5) for j in sid]
        tlp = [(-0.1 if good[j] else -3.0) for j in sid]
        group.append(Trajectory.from_steps(
            steps, out, step_labels=lab, continuations=cont, entropies=[float(ent[j]) for j in sid], logprobs=lp,
            teacher_logprobs=tlp, risk=[0.1 if good[j] else 0.8 for j in sid],
            reward_components={"correct": float(out >= 0.5), "length": [0.2, 0.9, 0.8, 0.1][g], "format": [1.0, 1.0, 0.0, 1.0][g]},
            step_values=phi, distances=d, knowledge=facts, terminal=terminal if g == 0 else True, group_id="guiding"))
        # CARM: the current policy moves the bad step up and a good step down; the signed shifts nearly cancel
        shift = [(+0.6 if not good[j] else (-0.6 if j == 0 and g == 0 else 0.0)) for j in sid]
        evidence["carm"]["current_logprobs"].append([min(0.0, a + b) for a, b in zip(lp, shift)])
        ps = [[math.exp(a), 1 - math.exp(a)] for a in lp]
        pt = [[math.exp(a), 1 - math.exp(a)] for a in tlp]
        evidence["residual_advantage"]["student_probs"].append(ps)
        evidence["residual_advantage"]["teacher_probs"].append(pt)
        evidence["residual_advantage"]["token_ids"].append([0] * len(sid))
    return group, evidence


def run(key: str, group: Trajectory | Sequence[Trajectory], evidence: Mapping[str, Mapping] | None = None, **params) -> CreditResult:
    """Run mechanism ``key`` on a group with its evidence (as :func:`guiding_example` returns)."""
    if key not in MECHANISMS:
        raise ValueError(f"key must be one of {list(MECHANISMS)}; got {key!r}")
    kwargs = dict((evidence or {}).get(key, {}))
    kwargs.update(params)
    return MECHANISMS[key].fn(group, **kwargs)


def step_credit(credit: torch.Tensor, traj: Trajectory) -> list[float]:
    """Mean credit over each step's generated tokens (``credit`` (T,) for this trajectory); nan for a step with
    no generated token (a tool observation). For tables: the heatmap shows the tokens themselves."""
    c = _vector(credit, "credit")
    if c.numel() < traj.n_tokens:
        raise ValueError(f"credit must have at least {traj.n_tokens} entries (one per token); got {c.numel()}")
    return [float(c[: traj.n_tokens][s].mean()) if bool(s.any()) else math.nan for s in traj.step_slices()]


def padded_tokens(group: Sequence[Trajectory], width: int) -> list[list[str]]:
    """Each trajectory's tokens padded with "" to ``width`` (labels for a (G, T) figure)."""
    if isinstance(width, bool) or not isinstance(width, int) or width < max((t.n_tokens for t in group), default=0):
        raise ValueError(f"width must be an integer >= the longest trajectory; got {width!r}")
    return [list(t.tokens) + [""] * (width - t.n_tokens) for t in group]


def wrong_step_spans(traj: Trajectory) -> list[tuple[int, int]]:
    """(first, last) token index of every step labelled wrong (ℓ < 0.5), for marking the error on a figure."""
    if traj.step_labels is None:
        return []
    spans = []
    for j, ell in enumerate(traj.step_labels.tolist()):
        idx = torch.nonzero(traj.step_ids == j).flatten()
        if ell < 0.5 and idx.numel():
            spans.append((int(idx.min()), int(idx.max())))
    return spans


def _traj(steps, outcome, **kw) -> Trajectory:
    return Trajectory.from_steps(steps, outcome, **kw)


def _examples() -> dict[str, tuple[list[Trajectory], dict]]:
    """The small inputs of each mechanism's ``credit-`` worked example (the lab's own illustrations unless the
    worked example's SOURCE says the bank states them). ``ddof=0, eps=0`` keeps the hand arithmetic exact."""
    exact = {"ddof": 0, "eps": 0.0}
    g, _ = guiding_example()
    guide = [Trajectory(step_ids=t.step_ids, outcome=t.outcome, mask=t.mask, tokens=t.tokens, step_labels=t.step_labels,
                        continuations=t.continuations, step_values=t.step_values) for t in g]
    two = ["a b", "c d", "e f", "g h"]
    K = frozenset
    mk_d = lambda out, term: Trajectory(step_ids=[0, 1, 2], outcome=out, distances=[3, 2, 2, 1], terminal=term)  # noqa: E731
    ex: dict[str, tuple[list[Trajectory], dict]] = {
        "outcome": (guide, exact),
        "process_labels": (guide, exact),
        "math_shepherd": (guide, {"kind": "soft", **exact}),
        "potential_shaping": (guide[:1], {"gamma": 1.0, "baseline": "none"}),
        "shapley": (guide[:1], {"baseline": "none"}),
        "pava": ([Trajectory(step_ids=[0], outcome=p, reward_components={"correct": p, "length": a})
                  for p, a in ((1.0, 2.0), (1.0, 1.0), (0.0, 3.0), (0.0, 2.0))], {"aux_weight": 1.0, **exact}),
        "mart": ([_traj(two, 0.0, step_labels=[1, 0, 1, 1]), _traj(two, 1.0, step_labels=[1, 1, 1, 1])], exact),
        "mgepo": ([Trajectory(step_ids=[0, 0], outcome=o, entropies=[h, h], terminal=term)
                   for o, h, term in ((1.0, 2.0, True), (1.0, 0.2, True), (0.0, 0.2, False), (0.0, 2.0, True))], {"beta": 0.5, **exact}),
        "carm": ([Trajectory(step_ids=[0, 0, 1, 1], outcome=o, logprobs=[-1.0] * 4) for o in (1.0, 0.0)],
                 {"current_logprobs": [[-0.5, -0.5, -1.5, -1.5], [-1.0] * 4], "threshold": 0.2, **exact}),
        "taco": ([Trajectory(step_ids=[0, 1, 2], outcome=1.0, risk=[0.0, 0.5, 1.0]),
                  Trajectory(step_ids=[0, 1, 2], outcome=0.0, risk=[1.0, 1.0, 1.0])], exact),
        "rubric_dropout": ([Trajectory(step_ids=[0], outcome=0.0, reward_components=c) for c in (
            {"correct": 1.0, "format": 1.0, "brevity": 0.0}, {"correct": 0.0, "format": 1.0, "brevity": 1.0},
            {"correct": 1.0, "format": 0.0, "brevity": 1.0})], {"subset": ["correct", "brevity"], **exact}),
        "tag": ([Trajectory(step_ids=[0], outcome=c["correct"], reward_components=c) for c in (
            {"correct": 0.0, "brevity": 1.0}, {"correct": 1.0, "brevity": 0.0}, {"correct": 1.0, "brevity": 1.0})], exact),
        "sharpo": ([Trajectory(step_ids=[0, 0, 1, 1], outcome=0.0, logprobs=[-1.0] * 4, teacher_logprobs=[0.0, 0.0, -2.0, -2.0]),
                    Trajectory(step_ids=[0, 0, 1, 1], outcome=1.0, logprobs=[-1.0] * 4, teacher_logprobs=[-1.0] * 4)], exact),
        "residual_advantage": ([Trajectory(step_ids=[0, 1], outcome=o) for o in (1.0, 0.0)],
                               {"student_probs": [[[0.5, 0.5], [0.5, 0.5]]] * 2, "teacher_probs": [[[0.8, 0.2], [0.5, 0.5]]] * 2,
                                "token_ids": [[0, 0], [0, 0]], "alpha": 1.0, "bound": 1.0, **exact}),
        "t2spo": ([mk_d(1.0, True), mk_d(0.0, True), mk_d(0.0, False)], {"progress_weight": 1.0, "baseline": "none"}),
        "knowgpo": ([Trajectory(step_ids=[0, 1], outcome=1.0, knowledge=[K(), K({"year"}), K({"year"})]),
                     Trajectory(step_ids=[0, 1], outcome=0.0, knowledge=[K(), K(), K()]),
                     Trajectory(step_ids=[0, 1], outcome=0.0, knowledge=[K({"person"}), K({"person"}), K({"person"})])],
                    {"process_weight": 1.0, "baseline": "none"}),
    }
    return ex


def example_inputs(key: str) -> tuple[list[Trajectory], dict]:
    """``(group, keyword arguments)`` of mechanism ``key``'s small example (its ``credit-`` worked example)."""
    if key not in MECHANISMS:
        raise ValueError(f"key must be one of {list(MECHANISMS)}; got {key!r}")
    return _examples()[key]


def demo(key: str) -> CreditResult:
    """Run mechanism ``key`` on its small example, the inputs of its ``credit-`` worked example (for the quiz's
    reveal). The chapter's guiding example is :func:`guiding_example`, run with :func:`run`."""
    group, kwargs = example_inputs(key)
    return MECHANISMS[key].fn(group, **kwargs)
