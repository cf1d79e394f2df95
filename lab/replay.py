"""Feedback, replay and update control: policy stamps, immutable rollouts, replay pools, gradient gating.

Reference chapter "Feedback, replay, and update control" (ftip-004Y): policy stamp ftip-004Z,
immutable rollout record ftip-0051, replay pool ftip-0056, attempt-local annotation ftip-0057 with
example ftip-0059, update proposal ftip-006C, dynamic gradient gate ftip-005A (Miao et al. 2026, §5 and
Alg. 1) with rejected-cost remark ftip-006D and example ftip-005B, checkpoint-trajectory extrapolation
ftip-0069 (Chen et al. 2026, §4 and §5.1) with the sign-invariance example ftip-006B.

The rule throughout: what happened during a rollout is frozen; what an update attempt computes about
it (ratios, clipping, age, reuse) lives in a separate annotation and never rewrites the record.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

import torch

from lab._checks import check_open_unit, check_positive

# ----------------------------------------------------------------------------- policy stamp (ftip-004Z)


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def weights_hash(model: torch.nn.Module) -> str:
    """SHA-256 over every tensor of the state dict (names, dtypes, shapes and bytes)."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(name.encode())
        h.update(str(t.dtype).encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def tokenizer_hash(tokenizer) -> str:
    """Hash of the vocabulary and special tokens: two tokenizers with the same hash tokenize alike."""
    return _sha({"vocab": sorted(tokenizer.get_vocab().items()), "special": tokenizer.special_tokens_map})


@dataclass(frozen=True)
class PolicyStamp:
    """A content-addressed executable policy [ftip-004Z]: equal only when every component is equal.

    A display name or a checkpoint step is not enough: the stamp hashes the weights, the tokenizer,
    the action serializer, the decoding settings and the code revision.
    """

    weights: str
    tokenizer: str
    serializer: str
    decoding: tuple
    code_revision: str

    @property
    def digest(self) -> str:
        return _sha([self.weights, self.tokenizer, self.serializer, list(self.decoding), self.code_revision])

    @classmethod
    def from_parts(cls, model: torch.nn.Module, tokenizer, serializer: dict | str, decoding: dict, code_revision: str) -> "PolicyStamp":
        ser = serializer if isinstance(serializer, str) else _sha(serializer)
        return cls(weights_hash(model), tokenizer_hash(tokenizer), ser, tuple(sorted(decoding.items())), code_revision)


# ----------------------------------------------------------------------------- records and replay (ftip-0051, 0056, 0057)


@dataclass(frozen=True)
class RolloutRecord:
    """R = (q, ν_b, τ, e) [ftip-0051]: task, behaviour stamp, trajectory, verifier evidence — plus the
    behaviour log-probabilities of the sampled actions and the update index at which it was collected.
    Frozen: nothing computed by a later attempt is stored here."""

    record_id: str
    task: str
    behavior_stamp: str
    trajectory: tuple
    behavior_logps: tuple[float, ...]
    evidence: tuple
    collected_at: int


@dataclass(frozen=True)
class ReplayAnnotation:
    """a_n(R) = (ν_n, ρ, κ, m, u) [ftip-0057]: computed for one attempt, discarded after it."""

    current_stamp: str
    ratios: tuple[float, ...]
    clipped: tuple[bool, ...]
    age: int
    prior_uses: int


class CurrentPolicy:
    """What ``annotate`` needs from the current policy: its stamp and a log-probability for each recorded action."""

    def __init__(self, stamp: str, logprobs: Callable[[RolloutRecord], Sequence[float]]) -> None:
        self.stamp, self.logprobs = stamp, logprobs


def annotate(record: RolloutRecord, current_policy: CurrentPolicy, update_index: int, prior_uses: int, epsilon: float = 0.2) -> ReplayAnnotation:
    """Annotate a stored rollout for this update attempt [ftip-0057, ftip-0059].

    ratios ρ = π_current/π_behaviour per recorded action, clip status |ρ − 1| > ε, age = update_index −
    collected_at, and the prior reuse count. The record itself is never touched.
    """
    epsilon = check_open_unit(epsilon, "epsilon")
    cur = [float(x) for x in current_policy.logprobs(record)]
    if len(cur) != len(record.behavior_logps):
        raise ValueError(f"current_policy gave {len(cur)} log-probs for a record with {len(record.behavior_logps)} actions")
    if update_index < record.collected_at:
        raise ValueError(f"update_index ({update_index}) must be >= the record's collected_at ({record.collected_at})")
    if prior_uses < 0:
        raise ValueError(f"prior_uses must be >= 0; got {prior_uses}")
    ratios = tuple(math.exp(c - b) for c, b in zip(cur, record.behavior_logps))
    return ReplayAnnotation(current_policy.stamp, ratios, tuple(abs(r - 1) > epsilon for r in ratios), update_index - record.collected_at, prior_uses)


class ReplayPool:
    """A finite multiset of immutable records with a declared management rule [ftip-0056].

    ``insertion``: ``"all"`` or ``"nonzero_advantage"`` (skip records whose group had no reward spread);
    ``eviction``: ``"fifo"`` (oldest inserted first) or ``"max_uses"`` (evict a record once used
    ``max_uses`` times, then fifo when full). Reuse counts are the pool's bookkeeping, not record fields.
    """

    def __init__(self, capacity: int, insertion: Literal["all", "nonzero_advantage"] = "all",
                 eviction: Literal["fifo", "max_uses"] = "fifo", max_uses: int | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1; got {capacity}")
        if insertion not in ("all", "nonzero_advantage"):
            raise ValueError(f"insertion must be 'all' or 'nonzero_advantage'; got {insertion!r}")
        if eviction not in ("fifo", "max_uses"):
            raise ValueError(f"eviction must be 'fifo' or 'max_uses'; got {eviction!r}")
        if eviction == "max_uses" and (max_uses is None or max_uses < 1):
            raise ValueError("max_uses must be >= 1 when eviction='max_uses'")
        self.capacity, self.insertion, self.eviction, self.max_uses = capacity, insertion, eviction, max_uses
        self._records: deque[RolloutRecord] = deque()
        self.uses: dict[str, int] = {}
        self.evicted: list[str] = []

    def __len__(self) -> int:
        return len(self._records)

    def records(self) -> list[RolloutRecord]:
        return list(self._records)

    def insert(self, record: RolloutRecord, advantage_spread: float | None = None) -> bool:
        if self.insertion == "nonzero_advantage" and not advantage_spread:
            return False
        if len(self._records) >= self.capacity:
            old = self._records.popleft()
            self.evicted.append(old.record_id)
        self._records.append(record)
        self.uses.setdefault(record.record_id, 0)
        return True

    def select(self, k: int, generator: torch.Generator | None = None) -> list[RolloutRecord]:
        """Draw ``k`` records uniformly without replacement; increments their use counts (after reading them)."""
        if not 0 < k <= len(self._records):
            raise ValueError(f"k must be in [1, {len(self._records)}]; got {k}")
        idx = torch.randperm(len(self._records), generator=generator)[:k].tolist()
        chosen = [self._records[i] for i in idx]
        for r in chosen:
            self.uses[r.record_id] += 1
        if self.eviction == "max_uses":
            spent = {r.record_id for r in chosen if self.uses[r.record_id] >= self.max_uses}
            for r in list(self._records):
                if r.record_id in spent:
                    self._records.remove(r)
                    self.evicted.append(r.record_id)
        return chosen


# ----------------------------------------------------------------------------- dynamic gradient gate (ftip-005A, 006C, 006D)


def gradient_energy(param: torch.Tensor) -> float:
    """Squared Frobenius norm ‖∇W‖²_F of a parameter's current gradient (DGG monitors the LM head)."""
    if param.grad is None:
        raise ValueError("param has no gradient: call backward() before gating")
    return float(param.grad.detach().double().pow(2).sum())  # float64: increments are differences of large sums


def gate_zscore(increment: float, mu: float, s: float) -> float:
    """Z = (increment − μ)/s, the trailing-window score of one proposal [ftip-005B]."""
    s = check_positive(s, "s")
    return (increment - mu) / s


@dataclass(frozen=True)
class GateDecision:
    energy: float
    increment: float | None
    z: float | None
    mu: float | None
    s: float | None
    accepted: bool


@dataclass
class GateCost:
    """Rejected proposals still cost a forward and backward pass [ftip-006D]."""

    proposals: int = 0
    accepted: int = 0
    rejected: int = 0
    seconds: float = 0.0


class DynamicGradientGate:
    """Accept or reject an update proposal *before* the optimizer step [ftip-005A; Miao et al. 2026, §5, Alg. 1].

    For each proposal: E_n = ‖∇W_head‖²_F, increment Δ_n = E_n − E_{n−1}; with μ, s the mean and std
    (``ddof``) of the last ``window`` accepted increments, Z = (Δ_n − μ)/s. Reject when Z > ``z_threshold``
    (after ``min_history`` increments; before that every proposal is accepted). An accepted proposal runs
    ``optimizer.step()``; a rejected one zeroes the gradients and leaves parameters and optimizer state
    bit-identical, but is still counted in :attr:`cost`.
    """

    def __init__(self, z_threshold: float = 2.0, window: int = 8, min_history: int = 3, ddof: int = 1) -> None:
        self.z_threshold = float(z_threshold)
        if window < 2:
            raise ValueError(f"window must be >= 2; got {window}")
        if min_history < 2 or min_history > window:
            raise ValueError(f"min_history must be in [2, window]; got {min_history}")
        self.window, self.min_history, self.ddof = window, min_history, ddof
        self.increments: deque[float] = deque(maxlen=window)
        self.last_energy: float | None = None
        self.cost = GateCost()
        self.history: list[GateDecision] = []

    def decide(self, energy: float) -> GateDecision:
        inc = None if self.last_energy is None else energy - self.last_energy
        z = mu = s = None
        accepted = True
        if inc is not None and len(self.increments) >= self.min_history:
            t = torch.tensor(list(self.increments), dtype=torch.float64)
            mu, s = float(t.mean()), float(t.std(correction=self.ddof))
            if s > 0:
                z = (inc - mu) / s
                accepted = z <= self.z_threshold
            else:
                z = 0.0 if inc == mu else math.inf * (1 if inc > mu else -1)
                accepted = z <= self.z_threshold
        d = GateDecision(energy, inc, z, mu, s, accepted)
        self.history.append(d)
        self.cost.proposals += 1
        if accepted:
            self.cost.accepted += 1
            if inc is not None:
                self.increments.append(inc)
            self.last_energy = energy
        else:
            self.cost.rejected += 1
        return d

    def step(self, optimizer: torch.optim.Optimizer, head: torch.Tensor, seconds: float = 0.0) -> GateDecision:
        """Gate one proposal whose gradients are already in ``.grad``: step or discard."""
        d = self.decide(gradient_energy(head))
        self.cost.seconds += seconds
        if d.accepted:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return d


# ----------------------------------------------------------------------------- checkpoint forecast (ftip-0069, 006B)


def rank_one_projectors(u: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """P_u = uuᵀ, P_v = vvᵀ for unit vectors: unchanged by (u, v) → (−u, −v) [ftip-006B]."""
    u = u / u.norm()
    v = v / v.norm()
    return torch.outer(u, u), torch.outer(v, v)


@dataclass(frozen=True)
class Forecast:
    projectors: list[tuple[torch.Tensor, torch.Tensor]]  # (P_u, P_v) of each delta's leading subspace
    low_rank_deltas: list[torch.Tensor]  # U_r Σ_r V_rᵀ of each delta: sign-invariant
    predicted_delta: torch.Tensor  # the extrapolated next delta
    explained: list[float]  # share of each delta's squared norm captured by rank r


def forecast_checkpoint(deltas: Sequence[torch.Tensor], rank: int = 1) -> Forecast:
    """Linear extrapolation of low-rank checkpoint differences [ftip-0069; Chen et al. 2026, §4, §5.1].

    ``deltas``: K >= 2 matrices ΔW_k = W_k − W_{k−1} (same shape). Each is reduced to its rank-``rank``
    SVD truncation D_k = U Σ Vᵀ, a representation independent of the arbitrary signs of singular vectors
    (the projectors UUᵀ, VVᵀ are returned too). The next delta is forecast as D_K + (D_K − D_{K−1}).
    This is the simplest NExt-style predictor (NExt trains a learned one); add the forecast to the last
    checkpoint, then correct it with real updates.
    """
    if len(deltas) < 2:
        raise ValueError(f"deltas must hold at least 2 checkpoint differences to extrapolate; got {len(deltas)}")
    shape = deltas[0].shape
    if len(shape) != 2 or any(d.shape != shape for d in deltas):
        raise ValueError("deltas must be matrices of one common shape")
    if not 1 <= rank <= min(shape):
        raise ValueError(f"rank must be in [1, {min(shape)}]; got {rank}")
    projs, lows, expl = [], [], []
    for d in deltas:
        U, S, Vh = torch.linalg.svd(d.double(), full_matrices=False)
        Ur, Sr, Vr = U[:, :rank], S[:rank], Vh[:rank].T
        projs.append((Ur @ Ur.T, Vr @ Vr.T))
        lows.append(Ur @ torch.diag(Sr) @ Vr.T)
        total = float((S**2).sum())
        expl.append(float((Sr**2).sum()) / total if total > 0 else 1.0)
    pred = lows[-1] + (lows[-1] - lows[-2])
    return Forecast(projs, lows, pred, expl)
