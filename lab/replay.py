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
import numbers
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

import torch

from lab._checks import as_tensor, check_finite, check_open_unit, check_positive

# ----------------------------------------------------------------------------- policy stamp (ftip-004Z)


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _int_arg(x: object, name: str, low: int | None = None) -> int:
    """An integer argument (bool refused: True is not a count)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {type(x).__name__} {x!r:.40}")
    if low is not None and int(x) < low:
        raise ValueError(f"{name} must be >= {low}; got {x}")
    return int(x)


def _real_arg(x: object, name: str) -> float:
    """A finite real number (int, float and one-element real tensors convert; bool, NaN, ±inf refused)."""
    if isinstance(x, torch.Tensor) and x.numel() == 1 and not x.is_complex() and x.dtype != torch.bool:
        x = x.item()
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"{name} must be a real number; got {type(x).__name__} {x!r:.40}")
    try:
        v = float(x)
    except OverflowError:
        raise ValueError(f"{name} is too large to be a float") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite; got {v}")
    return v


def weights_hash(model: torch.nn.Module) -> str:
    """SHA-256 over every tensor of the state dict (names, dtypes, shapes and bytes)."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(name.encode())
        h.update(str(t.dtype).encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


# Per-call state the transformers wrapper writes into the backend tokenizer (tokenizer(..., padding=True)
# sets it): not part of how text is tokenized, so it is left out of the hash.
_PER_CALL_KEYS = ("truncation", "padding")


def tokenizer_hash(tokenizer) -> str:
    """Hash of the tokenizer's behaviour [ftip-004Z]: two tokenizers with the same hash tokenize alike.

    For a fast (🤗 ``tokenizers``-backed) tokenizer it hashes the canonical JSON of
    ``backend_tokenizer.to_str()``: model with vocabulary and merges, normalizer, pre-tokenizer,
    post-processor, decoder and added tokens (minus the per-call truncation/padding state), together
    with the special-token map and the wrapper settings that change encoded ids or decoded text
    (padding and truncation side, model_max_length, chat template, clean-up of spaces). A slow tokenizer
    is hashed from its class, vocabulary, special tokens and those settings. So two tokenizers that
    share a vocabulary but normalize or split text differently get different hashes, and the same
    tokenizer built twice gets the same one.
    """
    if not hasattr(tokenizer, "get_vocab") or not hasattr(tokenizer, "special_tokens_map"):
        raise ValueError(f"tokenizer must be a transformers tokenizer (with get_vocab and special_tokens_map); got {type(tokenizer).__name__}")
    wrapper = {k: getattr(tokenizer, k, None) for k in ("padding_side", "truncation_side", "model_max_length", "chat_template", "clean_up_tokenization_spaces")}
    special = {"map": tokenizer.special_tokens_map, "all": sorted(getattr(tokenizer, "all_special_tokens", []))}
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        for k in _PER_CALL_KEYS:
            spec.pop(k, None)
        return _sha({"kind": "fast", "backend": spec, "special": special, "wrapper": wrapper})
    return _sha({"kind": "slow", "class": type(tokenizer).__qualname__, "vocab": sorted(tokenizer.get_vocab().items()),
                 "special": special, "wrapper": wrapper})


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

    def __post_init__(self) -> None:
        for name in ("weights", "tokenizer", "serializer", "code_revision"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise ValueError(f"{name} must be a non-empty string (a content hash or id); got {v!r:.60}")
        object.__setattr__(self, "decoding", _decoding_items(self.decoding))

    @property
    def digest(self) -> str:
        return _sha([self.weights, self.tokenizer, self.serializer, list(self.decoding), self.code_revision])

    @classmethod
    def from_parts(cls, model: torch.nn.Module, tokenizer, serializer: dict | str, decoding: dict, code_revision: str) -> "PolicyStamp":
        if not isinstance(serializer, (dict, str)):
            raise ValueError(f"serializer must be a dict (e.g. ActionSerializer.describe()) or a string id; got {type(serializer).__name__}")
        if not isinstance(decoding, dict):
            raise ValueError(f"decoding must be a dict of settings (e.g. {{'temperature': 1.0}}); got {type(decoding).__name__}")
        if not isinstance(code_revision, str) or not code_revision:
            raise ValueError(f"code_revision must be a non-empty string; got {code_revision!r:.60}")
        if isinstance(serializer, dict):
            _check_jsonable(serializer, "serializer")
        ser = serializer if isinstance(serializer, str) else _sha(serializer)
        return cls(weights_hash(model), tokenizer_hash(tokenizer), ser, tuple(decoding.items()), code_revision)


def _check_jsonable(obj: Any, name: str) -> None:
    """Hashed settings must be plain JSON: strings, finite numbers, bools, None, lists and string-keyed dicts."""
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ValueError(f"{name} must not contain NaN or inf (a stamp component must be reproducible)")
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise ValueError(f"{name} must have string keys")
        for v in obj.values():
            _check_jsonable(v, name)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _check_jsonable(v, name)
    elif not isinstance(obj, (str, int, float, bool, type(None))):
        raise ValueError(f"{name} must hold only strings, numbers, bools, None, lists and dicts; got {type(obj).__name__}")


def _decoding_items(decoding: Any) -> tuple:
    """Decoding settings as sorted (name, value) pairs with JSON values."""
    if not isinstance(decoding, tuple) or not all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in decoding):
        raise ValueError("decoding must be a tuple of (setting name, value) pairs")
    _check_jsonable([v for _, v in decoding], "decoding")
    return tuple(sorted(decoding))


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

    def __post_init__(self) -> None:
        # checked once, at collection: each logp is a finite log-probability (the action was sampled, so p > 0)
        if isinstance(self.behavior_logps, (str, bytes)) or not hasattr(self.behavior_logps, "__iter__"):
            raise ValueError(f"behavior_logps must be a sequence of log-probabilities; got {type(self.behavior_logps).__name__}")
        logps = tuple(_real_arg(x, "behavior_logps") for x in self.behavior_logps)
        if any(x > 0 for x in logps):
            raise ValueError(f"behavior_logps must be <= 0 (logs of probabilities); got {max(logps)}")
        object.__setattr__(self, "behavior_logps", logps)
        object.__setattr__(self, "collected_at", _int_arg(self.collected_at, "collected_at", 0))


@dataclass(frozen=True)
class ReplayAnnotation:
    """a_n(R) = (ν_n, ρ, κ, m, u) [ftip-0057]: computed for one attempt, discarded after it."""

    current_stamp: str
    ratios: tuple[float, ...]
    clipped: tuple[bool, ...]
    age: int
    prior_uses: int
    log_ratios: tuple[float, ...] = ()  # log ρ = log π_current − log π_behaviour, exact where ρ overflows


class CurrentPolicy:
    """What ``annotate`` needs from the current policy: its stamp and a log-probability for each recorded action."""

    def __init__(self, stamp: str, logprobs: Callable[[RolloutRecord], Sequence[float]]) -> None:
        if not isinstance(stamp, str) or not stamp:
            raise ValueError(f"stamp must be a non-empty string; got {stamp!r:.60}")
        if not callable(logprobs):
            raise ValueError(f"logprobs must be callable (record -> log-probabilities); got {type(logprobs).__name__}")
        self.stamp, self.logprobs = stamp, logprobs


# exp(x) overflows float64 above log(max float) ≈ 709.78: such a ratio is reported as +inf
_LOG_FLOAT_MAX = math.log(torch.finfo(torch.float64).max)


def annotate(record: RolloutRecord, current_policy: CurrentPolicy, update_index: int, prior_uses: int, epsilon: float = 0.2) -> ReplayAnnotation:
    """Annotate a stored rollout for this update attempt [ftip-0057, ftip-0059].

    ratios ρ = π_current/π_behaviour per recorded action, computed in log space as exp(log π_current −
    log π_behaviour) (``log_ratios`` keeps the exact log). A ratio above the float64 range (log ratio
    > ≈709.78, e.g. behaviour log-prob −1000 and current 0) is ``+inf``, and a current log-prob of −inf
    gives ρ = 0. Clip status |ρ − 1| > ε, age = update_index − collected_at, and the prior reuse count.
    The record itself is never touched. Current log-probs must be <= 0 and not NaN (``ValueError`` naming
    ``current_policy`` otherwise).
    """
    if not isinstance(record, RolloutRecord):
        raise ValueError(f"record must be a RolloutRecord; got {type(record).__name__}")
    if not isinstance(current_policy, CurrentPolicy):
        raise ValueError(f"current_policy must be a CurrentPolicy; got {type(current_policy).__name__}")
    epsilon = check_open_unit(_real_arg(epsilon, "epsilon"), "epsilon")
    update_index = _int_arg(update_index, "update_index", 0)
    prior_uses = _int_arg(prior_uses, "prior_uses", 0)
    raw = current_policy.logprobs(record)
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__iter__"):
        raise ValueError(f"current_policy must return a sequence of log-probabilities; got {type(raw).__name__}")
    cur = []
    for x in (raw.tolist() if hasattr(raw, "tolist") else raw):
        if isinstance(x, torch.Tensor) and x.numel() == 1 and x.is_floating_point():
            x = x.item()
        ok = not isinstance(x, bool) and isinstance(x, numbers.Real) and (not isinstance(x, numbers.Integral) or -2**1000 < x <= 0)
        if not ok or math.isnan(float(x)) or float(x) > 0:
            raise ValueError(f"current_policy must give log-probabilities (real, <= 0, not NaN); got {x!r:.40}")
        cur.append(float(x))
    if len(cur) != len(record.behavior_logps):
        raise ValueError(f"current_policy gave {len(cur)} log-probs for a record with {len(record.behavior_logps)} actions")
    if update_index < record.collected_at:
        raise ValueError(f"update_index ({update_index}) must be >= the record's collected_at ({record.collected_at})")
    log_ratios = tuple(c - b for c, b in zip(cur, record.behavior_logps))  # b is finite: c − b is never NaN
    ratios = tuple(math.inf if lr > _LOG_FLOAT_MAX else math.exp(lr) for lr in log_ratios)
    return ReplayAnnotation(current_policy.stamp, ratios, tuple(abs(r - 1) > epsilon for r in ratios), update_index - record.collected_at,
                            prior_uses, log_ratios)


class ReplayPool:
    """A finite multiset of immutable records with a declared management rule [ftip-0056].

    ``insertion``: ``"all"`` or ``"nonzero_advantage"`` (skip records whose group had no reward spread);
    ``eviction``: ``"fifo"`` (oldest inserted first) or ``"max_uses"`` (evict a record once used
    ``max_uses`` times, then fifo when full). Reuse counts are the pool's bookkeeping, not record fields.
    """

    def __init__(self, capacity: int, insertion: Literal["all", "nonzero_advantage"] = "all",
                 eviction: Literal["fifo", "max_uses"] = "fifo", max_uses: int | None = None) -> None:
        capacity = _int_arg(capacity, "capacity", 1)
        if insertion not in ("all", "nonzero_advantage"):
            raise ValueError(f"insertion must be 'all' or 'nonzero_advantage'; got {insertion!r}")
        if eviction not in ("fifo", "max_uses"):
            raise ValueError(f"eviction must be 'fifo' or 'max_uses'; got {eviction!r}")
        if eviction == "max_uses" and max_uses is None:
            raise ValueError("max_uses must be >= 1 when eviction='max_uses'")
        if max_uses is not None:
            max_uses = _int_arg(max_uses, "max_uses", 1)
        self.capacity, self.insertion, self.eviction, self.max_uses = capacity, insertion, eviction, max_uses
        self._records: deque[RolloutRecord] = deque()
        self.uses: dict[str, int] = {}
        self.evicted: list[str] = []

    def __len__(self) -> int:
        return len(self._records)

    def records(self) -> list[RolloutRecord]:
        return list(self._records)

    def insert(self, record: RolloutRecord, advantage_spread: float | None = None) -> bool:
        """Insert ``record`` (evicting the oldest when full); returns False when the insertion rule skips it.

        ``advantage_spread``: max − min of the rewards of the record's group (exactly 0 when they are all
        equal); required by ``insertion="nonzero_advantage"``, which skips a record whose spread is 0.
        """
        if not isinstance(record, RolloutRecord):
            raise ValueError(f"record must be a RolloutRecord; got {type(record).__name__}")
        if advantage_spread is not None:
            advantage_spread = _real_arg(advantage_spread, "advantage_spread")
            if advantage_spread < 0:
                raise ValueError(f"advantage_spread must be >= 0 (max − min of the group's rewards); got {advantage_spread}")
        if self.insertion == "nonzero_advantage":
            if advantage_spread is None:
                raise ValueError("advantage_spread is required when insertion='nonzero_advantage'")
            if advantage_spread == 0:
                return False
        if len(self._records) >= self.capacity:
            old = self._records.popleft()
            self.evicted.append(old.record_id)
        self._records.append(record)
        self.uses.setdefault(record.record_id, 0)
        return True

    def select(self, k: int, generator: torch.Generator | None = None) -> list[RolloutRecord]:
        """Draw ``k`` records uniformly without replacement; increments their use counts (after reading them)."""
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 < k <= len(self._records):
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
    if not isinstance(param, torch.Tensor):
        raise ValueError(f"param must be a tensor (a parameter with .grad); got {type(param).__name__}")
    if param.grad is None:
        raise ValueError("param has no gradient: call backward() before gating")
    g = param.grad.detach().double()  # float64: increments are differences of large sums
    if not bool(torch.isfinite(g).all()):
        raise ValueError("param.grad must be finite (it holds NaN or inf)")
    return float(g.pow(2).sum())  # +inf only if the squared norm exceeds float64's range


def gate_zscore(increment: float, mu: float, s: float) -> float:
    """Z = (increment − μ)/s, the trailing-window score of one proposal [ftip-005B]."""
    increment, mu = _real_arg(increment, "increment"), _real_arg(mu, "mu")
    s = check_positive(_real_arg(s, "s"), "s")
    return (increment - mu) / s  # ±inf only when the exact score exceeds float64's range


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
        self.z_threshold = _real_arg(z_threshold, "z_threshold")
        window = _int_arg(window, "window", 2)
        if window > 1_000_000:
            raise ValueError(f"window must be <= 1_000_000 increments; got {window}")
        min_history = _int_arg(min_history, "min_history", 2)
        if min_history > window:
            raise ValueError(f"min_history must be in [2, window]; got {min_history}")
        ddof = _int_arg(ddof, "ddof", 0)
        if ddof >= min_history:
            raise ValueError(f"ddof must be < min_history (the std needs more increments than ddof); got {ddof}")
        self.window, self.min_history, self.ddof = window, min_history, ddof
        self.increments: deque[float] = deque(maxlen=window)
        self.last_energy: float | None = None
        self.cost = GateCost()
        self.history: list[GateDecision] = []

    def decide(self, energy: float) -> GateDecision:
        """Accept or reject one proposal with gradient energy ``energy`` (finite, >= 0)."""
        energy = _real_arg(energy, "energy")
        if energy < 0:
            raise ValueError(f"energy must be >= 0 (a squared norm); got {energy}")
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
        seconds = _real_arg(seconds, "seconds")
        if seconds < 0:
            raise ValueError(f"seconds must be >= 0; got {seconds}")
        d = self.decide(gradient_energy(head))
        self.cost.seconds += seconds
        if d.accepted:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return d


# ----------------------------------------------------------------------------- checkpoint forecast (ftip-0069, 006B)


def rank_one_projectors(u: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """P_u = uuᵀ, P_v = vvᵀ for unit vectors: unchanged by (u, v) → (−u, −v) [ftip-006B]."""
    u, v = _unit(u, "u"), _unit(v, "v")
    return torch.outer(u, u), torch.outer(v, v)


def _unit(x, name: str) -> torch.Tensor:
    """x/‖x‖ for a finite, non-zero vector; scaled by max|x| first so that ‖x‖ cannot overflow."""
    try:
        t = as_tensor(x, name)
    except (OverflowError, RuntimeError):
        raise ValueError(f"{name} must be a vector of float64-representable numbers") from None
    if not t.is_floating_point():
        t = t.double()
    if t.dim() != 1 or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty vector; got shape {tuple(t.shape)}")
    check_finite(t, name)
    m = t.abs().max()
    if not bool(m > 0):
        raise ValueError(f"{name} must be non-zero (a zero vector has no direction)")
    t = t / m
    return t / t.norm()


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
    if isinstance(deltas, (str, bytes, torch.Tensor)) or not isinstance(deltas, Sequence):
        raise ValueError(f"deltas must be a list of matrices; got {type(deltas).__name__}")
    if len(deltas) < 2:
        raise ValueError(f"deltas must hold at least 2 checkpoint differences to extrapolate; got {len(deltas)}")
    mats = [as_tensor(d, "deltas") for d in deltas]
    mats = [d.double() for d in mats]
    shape = mats[0].shape
    if len(shape) != 2 or any(d.shape != shape for d in mats) or 0 in shape:
        raise ValueError("deltas must be non-empty matrices of one common shape")
    for d in mats:
        check_finite(d, "deltas")
    rank = _int_arg(rank, "rank")
    if not 1 <= rank <= min(shape):
        raise ValueError(f"rank must be in [1, {min(shape)}]; got {rank}")
    projs, lows, expl = [], [], []
    for d in mats:
        U, S, Vh = torch.linalg.svd(d, full_matrices=False)
        Ur, Sr, Vr = U[:, :rank], S[:rank], Vh[:rank].T
        projs.append((Ur @ Ur.T, Vr @ Vr.T))
        lows.append(Ur @ torch.diag(Sr) @ Vr.T)
        top = float(S[0])
        # share of ‖Δ‖²_F captured by rank r, from S/S_max so that squaring cannot overflow
        expl.append(float(((Sr / top) ** 2).sum()) / float(((S / top) ** 2).sum()) if top > 0 else 1.0)
    pred = lows[-1] + (lows[-1] - lows[-2])
    return Forecast(projs, lows, pred, expl)
