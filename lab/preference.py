"""Preference data and reward models: comparison records, Bradley–Terry, reward-model loss, cycles.

Reference chapter "Preference acquisition and reward modeling" (ftip-002J): comparison queries
ftip-002K, observations ftip-002L, Bradley–Terry law ftip-002Q (Bradley & Terry 1952, p. 325, eq. 1),
pairwise reward-model loss ftip-002R (Ouyang et al. 2022, §3.5, eq. 1), non-identifiability
ftip-002S, worked examples ftip-002T and ftip-002V (cycles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, Literal, Sequence

import torch
import torch.nn.functional as F

from lab._checks import TensorLike, as_tensor, broadcast_pair, check_choice, check_finite, check_int, check_nonnegative, check_positive

Outcome = Literal["a", "b", "tie", "abstain", "invalid"]
OUTCOMES = ("a", "b", "tie", "abstain", "invalid")


@dataclass(frozen=True)
class Comparison:
    """One comparison query and what the judge returned [ftip-002K].

    ``outcome`` lives in an enlarged label space: ``"a"`` or ``"b"`` (that response was selected),
    ``"tie"``, ``"abstain"`` or ``"invalid"``. Ties and abstentions are kept as such, never forced
    into a winner.
    """

    prompt: str
    response_a: Hashable
    response_b: Hashable
    judge: str
    outcome: str

    def __post_init__(self) -> None:
        check_choice(self.outcome, "outcome", OUTCOMES)


@dataclass(frozen=True)
class Observation:
    """A winner–loser observation o = (x, y⁺, y⁻, j) [ftip-002L], with a declared record weight."""

    prompt: str
    chosen: Hashable
    rejected: Hashable
    judge: str
    weight: float = 1.0


def to_observations(
    comparisons: Iterable[Comparison],
    ties: Literal["raise", "drop", "split"] = "raise",
    abstentions: Literal["raise", "drop"] = "raise",
    invalid: Literal["raise", "drop"] = "raise",
) -> list[Observation]:
    """Turn comparison records into winner–loser observations [ftip-002K, ftip-002L].

    A binary objective needs an explicit policy for everything that is not a strict choice:
    by default ties, abstentions and invalid records raise ``ValueError``. ``"drop"`` removes them;
    ``ties="split"`` keeps a tie as two half-weight observations, one in each direction.
    """
    check_choice(ties, "ties", ("raise", "drop", "split"))
    check_choice(abstentions, "abstentions", ("raise", "drop"))
    check_choice(invalid, "invalid", ("raise", "drop"))
    out: list[Observation] = []
    for i, c in enumerate(comparisons):
        if c.outcome == "a":
            out.append(Observation(c.prompt, c.response_a, c.response_b, c.judge))
        elif c.outcome == "b":
            out.append(Observation(c.prompt, c.response_b, c.response_a, c.judge))
        elif c.outcome == "tie":
            if ties == "raise":
                raise ValueError(f"comparisons[{i}] is a tie; pass ties='drop' or ties='split' to declare a policy")
            if ties == "split":
                out.append(Observation(c.prompt, c.response_a, c.response_b, c.judge, 0.5))
                out.append(Observation(c.prompt, c.response_b, c.response_a, c.judge, 0.5))
        elif c.outcome == "abstain":
            if abstentions == "raise":
                raise ValueError(f"comparisons[{i}] is an abstention; pass abstentions='drop' to declare a policy")
        else:
            if invalid == "raise":
                raise ValueError(f"comparisons[{i}] is invalid; pass invalid='drop' to declare a policy")
    return out


def bradley_terry_probability(r_chosen: TensorLike, r_rejected: TensorLike) -> torch.Tensor:
    """Pr(y⁺ ≻ y⁻) = exp r⁺ / (exp r⁺ + exp r⁻) = σ(r⁺ − r⁻) [ftip-002Q; Bradley & Terry 1952, eq. 1].

    Only the difference of scores matters: adding one constant to both leaves it unchanged (ftip-002S).
    """
    rc, rr = broadcast_pair(as_tensor(r_chosen, "r_chosen"), as_tensor(r_rejected, "r_rejected"), "r_chosen", "r_rejected")
    check_finite(rc, "r_chosen")
    check_finite(rr, "r_rejected")
    return torch.sigmoid(rc - rr)


def reward_model_loss(
    r_chosen: TensorLike, r_rejected: TensorLike, margin: TensorLike | None = None, weights: TensorLike | None = None
) -> torch.Tensor:
    """Pairwise reward-model loss Σ w·[−log σ(r⁺ − r⁻ − margin)] / Σ w [ftip-002R; Ouyang et al. 2022, §3.5, eq. 1].

    ``r_chosen``, ``r_rejected``: (N,) scores of the selected and the other response.
    ``margin`` (N,) or scalar, optional: the Llama-2-style margin TRL's ``RewardTrainer`` accepts.
    ``weights`` (N,), optional: observation weights (``Observation.weight``; a split tie is two
    half-weight observations). Default ``None`` = every observation weighs 1, i.e. the plain mean.
    Weights must be finite, ``>= 0``, of the same shape as the score difference and not all zero;
    the loss is then the weighted mean, the same quantity :func:`fit_bradley_terry` maximises (up to
    sign and the normaliser Σ w), so fitted scores minimise it.
    Uses ``logsigmoid`` so that extreme score gaps stay finite. With ``weights=None`` it is the same
    value as TRL's ``RewardTrainer`` loss (TRL has no observation weights).
    """
    rc, rr = broadcast_pair(as_tensor(r_chosen, "r_chosen"), as_tensor(r_rejected, "r_rejected"), "r_chosen", "r_rejected")
    check_finite(rc, "r_chosen")  # inf − inf would be a silent NaN
    check_finite(rr, "r_rejected")
    if rc.numel() == 0:
        raise ValueError("r_chosen must contain at least one score")
    diff = rc - rr  # (N,)
    if margin is not None:
        diff, m = broadcast_pair(diff, as_tensor(margin, "margin"), "r_chosen - r_rejected", "margin")
        check_finite(m, "margin")
        diff = diff - m
    losses = -F.logsigmoid(diff)  # (N,)
    if weights is None:
        return losses.mean()
    w = as_tensor(weights, "weights")
    if w.shape != losses.shape:
        raise ValueError(f"weights must have the same shape as the scores {tuple(losses.shape)}; got {tuple(w.shape)}")
    if not w.is_floating_point():
        w = w.to(losses.dtype if losses.is_floating_point() else torch.float64)
    if not bool(torch.isfinite(w).all()):
        raise ValueError("weights must be finite")
    if bool((w < 0).any()):
        raise ValueError(f"weights must be >= 0; got {w[w < 0].flatten()[:4].tolist()}")
    total = w.sum()
    if not bool(total > 0):
        raise ValueError("weights must not all be zero (the weighted mean would be undefined)")
    return (w * losses).sum() / total  # weighted mean over observations


def _items_in_order(observations: Sequence[Observation]) -> list[Hashable]:
    seen: dict[Hashable, None] = {}
    for o in observations:
        seen.setdefault(o.chosen)
        seen.setdefault(o.rejected)
    return list(seen)


def _strongly_connected(items: list[Hashable], edges: set[tuple[Hashable, Hashable]]) -> bool:
    """Every item reaches every other along winner→loser edges (Zermelo's existence condition)."""
    def reach(start: Hashable, forward: bool) -> set:
        seen, stack = {start}, [start]
        while stack:
            u = stack.pop()
            for a, b in edges:
                nxt = b if forward and a == u else a if not forward and b == u else None
                if nxt is not None and nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    return len(reach(items[0], True)) == len(items) and len(reach(items[0], False)) == len(items)


def fit_bradley_terry(
    comparisons: Iterable[Comparison | Observation],
    normalization: Literal["mean_zero", "anchor"] = "mean_zero",
    anchor: Hashable | None = None,
    l2: float = 0.0,
    ties: Literal["raise", "drop", "split"] = "raise",
    abstentions: Literal["raise", "drop"] = "raise",
    invalid: Literal["raise", "drop"] = "raise",
    tol: float = 1e-10,
    max_iter: int = 100,
) -> dict[Hashable, float]:
    """Maximum-likelihood Bradley–Terry scores, one per item [ftip-002Q, ftip-002S].

    Maximises Σ_o w_o log σ(r(y⁺) − r(y⁻)) − (l2/2)·Σ r² by Newton's method (the problem is concave).

    Scores are identified only up to a common offset (ftip-002S), so the offset is fixed by the declared
    ``normalization``: ``"mean_zero"`` (scores average to 0) or ``"anchor"`` (``anchor`` item scores 0).
    With ``l2 = 0`` the maximum exists only when the winner→loser graph is strongly connected (every
    item beats and is beaten by some path); otherwise a perfect separator drives scores to ±∞ and a
    ``ValueError`` says so: declare ``l2 > 0`` (a Gaussian prior) to get finite scores.
    Comparison records are converted with :func:`to_observations` and its tie/abstention policies.
    """
    check_choice(normalization, "normalization", ("mean_zero", "anchor"))
    l2 = check_nonnegative(l2, "l2")
    tol = check_positive(tol, "tol")
    check_int(max_iter, "max_iter", 1)
    records = list(comparisons)
    obs = [r for r in records if isinstance(r, Observation)]
    obs += to_observations([r for r in records if isinstance(r, Comparison)], ties, abstentions, invalid)
    if not obs:
        raise ValueError("comparisons contain no strict choice to fit")
    for k, o in enumerate(obs):
        if not (isinstance(o.weight, (int, float)) and 0 < o.weight < float("inf")):
            raise ValueError(f"comparisons: observation {k} has weight {o.weight!r}; weights must be > 0 and finite")
    items = _items_in_order(obs)
    if normalization == "anchor" and anchor not in items:
        raise ValueError(f"anchor must be one of the compared items {items}; got {anchor!r}")
    if l2 == 0.0 and not _strongly_connected(items, {(o.chosen, o.rejected) for o in obs}):
        raise ValueError(
            "comparisons: the maximum-likelihood scores do not exist (some group of items is never beaten by the rest, "
            "so its scores diverge); pass l2 > 0 to regularise"
        )
    idx = {it: k for k, it in enumerate(items)}
    n = len(items)
    win = torch.tensor([idx[o.chosen] for o in obs])
    lose = torch.tensor([idx[o.rejected] for o in obs])
    w = torch.tensor([o.weight for o in obs], dtype=torch.float64)
    D = torch.zeros(len(obs), n, dtype=torch.float64)  # (N, n): +1 winner, −1 loser
    D[torch.arange(len(obs)), win] += 1.0
    D[torch.arange(len(obs)), lose] -= 1.0
    r = torch.zeros(n, dtype=torch.float64)
    ones = torch.ones(n, n, dtype=torch.float64) / n  # pins the free offset direction in each Newton step

    def objective(r: torch.Tensor) -> float:
        return float((w * F.logsigmoid(D @ r)).sum() - 0.5 * l2 * (r * r).sum())

    for _ in range(max_iter):
        p = torch.sigmoid(D @ r)  # (N,)
        grad = D.T @ (w * (1 - p)) - l2 * r  # (n,)
        hess = (D.T * (w * p * (1 - p))) @ D + l2 * torch.eye(n, dtype=torch.float64)  # (n, n)
        step = torch.linalg.solve(hess + ones, grad)
        f0, t = objective(r), 1.0
        while objective(r + t * step) < f0 - 1e-15 and t > 1e-8:  # backtrack: never decrease the likelihood
            t /= 2
        r = r + t * step
        if float((t * step).abs().max()) < tol:
            break
    r = r - (r.mean() if normalization == "mean_zero" else r[idx[anchor]])
    return {it: float(r[idx[it]]) for it in items}


def find_preference_cycle(comparisons: Iterable[Comparison | Observation]) -> list[Hashable] | None:
    """A strict preference cycle [y₁ ≻ y₂ ≻ … ≻ y_k ≻ y₁] among the items, or ``None`` [ftip-002V].

    Comparisons are aggregated per pair by majority (weights summed; an exact tie makes no edge),
    so disagreement between judges alone is not a cycle. Ties, abstentions and invalid records carry
    no direction and are skipped. If a cycle exists, no scalar score can order every majority
    preference by strict inequality.
    """
    net: dict[tuple, float] = {}
    for c in comparisons:
        if isinstance(c, Comparison):
            if c.outcome not in ("a", "b"):
                continue
            c = to_observations([c])[0]
        key = (c.chosen, c.rejected)
        net[key] = net.get(key, 0.0) + c.weight
    edges: dict[Hashable, list[Hashable]] = {}
    nodes: dict[Hashable, None] = {}
    for (a, b), wab in net.items():
        nodes.setdefault(a)
        nodes.setdefault(b)
        if wab > net.get((b, a), 0.0):
            edges.setdefault(a, []).append(b)
    # Depth-first search with colours; a back edge closes a cycle.
    colour = {v: 0 for v in nodes}
    parent: dict[Hashable, Hashable] = {}
    for root in nodes:
        if colour[root]:
            continue
        stack = [(root, iter(edges.get(root, [])))]
        colour[root] = 1
        while stack:
            u, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[u] = 2
                stack.pop()
            elif colour[nxt] == 0:
                colour[nxt] = 1
                parent[nxt] = u
                stack.append((nxt, iter(edges.get(nxt, []))))
            elif colour[nxt] == 1:
                cycle = [u]
                while cycle[-1] != nxt:
                    cycle.append(parent[cycle[-1]])
                return cycle[::-1]
    return None


# ---------------------------------------------------------------------------------------------------------------
# Functions the pages and notebooks call instead of computing formulas inline.


def majority_edges(comparisons: Iterable[Comparison | Observation]) -> list[tuple[Hashable, Hashable]]:
    """The strict majority edges (winner, loser) of a comparison set [ftip-002V].

    Record weights are summed per ordered pair (a split tie adds 0.5 each way); an edge a → b exists
    when the weight of a ≻ b strictly exceeds that of b ≻ a, so equal counts give no edge. This is the
    graph in which :func:`find_preference_cycle` looks for a cycle. Edges are listed in order of first
    appearance. Ties, abstentions and invalid records carry no direction and are skipped.
    """
    net: dict[tuple, float] = {}
    for i, c in enumerate(comparisons):
        if isinstance(c, Comparison):
            if c.outcome not in ("a", "b"):
                continue
            c = to_observations([c])[0]
        elif not isinstance(c, Observation):
            raise ValueError(f"comparisons[{i}] must be a Comparison or an Observation; got {type(c).__name__}")
        w = float(c.weight)
        if not (w >= 0 and w != float("inf")):
            raise ValueError(f"comparisons[{i}].weight must be finite and >= 0; got {c.weight}")
        key = (c.chosen, c.rejected)
        net[key] = net.get(key, 0.0) + w
    return [(a, b) for (a, b), w in net.items() if w > net.get((b, a), 0.0)]
