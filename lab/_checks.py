"""Input conversion and validation shared by every chapter module.

The lab never repairs bad input silently: each check raises ``ValueError`` whose
message names the argument and the condition it violated, so a learner (or a
page showing the message next to its widget) can see what to change.
"""

from __future__ import annotations

import math
from typing import Sequence, Union

import torch

TensorLike = Union[torch.Tensor, float, int, Sequence[float], Sequence[Sequence[float]]]


def as_tensor(
    x: TensorLike, name: str, dtype: torch.dtype | None = None, allow_nan: bool = False, allow_empty: bool = True
) -> torch.Tensor:
    """Turn numbers, bools, (nested) lists and tensors into a floating tensor, at the boundary.

    Conventions (declared, so that a learner gets the same number whatever container they type):

    - plain Python input (numbers, bools, lists) becomes float64, so worked examples are exact to ~1e-15;
    - integer and boolean tensors become float64 (exact for integers below 2**53), never truncated later;
    - floating tensors keep their dtype, device and autograd graph;
    - complex input, ragged lists and strings raise ``ValueError`` naming the argument.

    ``allow_nan=False`` (default) refuses NaN anywhere; functions with a mask pass ``allow_nan=True``
    and check only the active positions (a masked position may hold anything). ``allow_empty=False``
    refuses a tensor with no element.
    """
    if isinstance(x, torch.Tensor):
        t = x
        if t.is_complex():
            raise ValueError(f"{name} must be real; got a complex tensor")
        if not t.is_floating_point():
            t = t.to(torch.float64)  # ints and bools: convert, never compute in integer arithmetic
        if dtype is not None:
            t = t.to(dtype)
    else:
        if isinstance(x, (str, bytes)):
            raise ValueError(f"{name} must be a number, a list of numbers or a tensor; got {x!r}")
        try:
            t = torch.as_tensor(x, dtype=dtype or torch.float64)
        except (TypeError, ValueError, RuntimeError, OverflowError) as exc:
            raise ValueError(f"{name} must be a number, a list of numbers or a tensor (lists not ragged); got {x!r}") from exc
    if not allow_empty and t.numel() == 0:
        raise ValueError(f"{name} must not be empty; got shape {tuple(t.shape)}")
    if not allow_nan and not _no_nan(t):
        raise ValueError(f"{name} must not contain NaN")
    return t


# Fast paths. The playground calls these checks on tiny tensors hundreds of times per run, where each
# torch op costs microseconds. Each fast test below is *sufficient* for its check to pass (a NaN or an
# inf always reaches a sum or a min/max); when it fails, the original check runs and decides, so values
# and error messages stay exactly those of the slow path.
_FAST_DTYPES = (torch.float64, torch.float32)


def _no_nan(t: torch.Tensor) -> bool:
    """True iff ``t`` holds no NaN. A sum is NaN when any term is; a NaN sum may also come from inf − inf."""
    d = t.detach() if t.requires_grad else t  # a reduction on a graph tensor would record a node
    if d.dtype in _FAST_DTYPES:
        s = float(d.sum())
        if s == s:
            return True
    return not bool(torch.isnan(d).any())


def _range_ok(d: torch.Tensor, upper_inclusive_zero: bool) -> bool:
    """Sufficient test: every entry finite (and <= 0 when ``upper_inclusive_zero``). NaN fails both comparisons."""
    if d.dtype not in _FAST_DTYPES or d.numel() == 0:
        return False
    lo, hi = torch.aminmax(d)
    lo, hi = float(lo), float(hi)
    return lo > -math.inf and (hi <= 0.0 if upper_inclusive_zero else hi < math.inf)


def active_values(t: torch.Tensor, active: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
    """``t`` at active positions and ``fill`` elsewhere, chosen BEFORE any exp/log/multiply.

    ``torch.where`` sends no gradient to the unselected branch, so a masked filler (0, −1e4, ±inf, NaN)
    changes neither the value nor the gradient of what is computed from the result.
    """
    return torch.where(active, t, torch.full_like(t, fill))


def check_active(t: torch.Tensor, active: torch.Tensor, name: str, finite: bool = True, logprob: bool = False) -> None:
    """Validate only the active positions of ``t``: no NaN (always), finite (``finite``), <= 0 (``logprob``)."""
    d = t.detach() if t.requires_grad else t
    if (logprob or finite) and active.dtype == torch.bool and active.shape == d.shape:
        # fast: all of t passes (masked fillers included), or its active values with 0 (which passes) elsewhere;
        # for finiteness alone one sum suffices (finite only when every term is)
        if not logprob and d.dtype in _FAST_DTYPES and math.isfinite(float(d.sum())):
            return
        if _range_ok(d, logprob) or _range_ok(torch.where(active, d, d.new_zeros(())), logprob):
            return
    if not (logprob or finite) and _no_nan(d):  # no NaN anywhere, so none at active positions
        return
    vals = d[active]
    if bool(torch.isnan(vals).any()):
        raise ValueError(f"{name} must not contain NaN at active (unmasked) positions")
    if logprob:
        check_log_probabilities(vals, name)
    elif finite:
        check_finite(vals, name)


def check_finite(t: torch.Tensor, name: str) -> None:
    t = t.detach() if t.requires_grad else t
    if t.dtype in _FAST_DTYPES and math.isfinite(float(t.sum())):
        return  # a sum is finite only when every term is
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite; got {t.tolist() if t.numel() <= 16 else 'a tensor with inf'}")


def check_probabilities(p: torch.Tensor, name: str) -> None:
    """Probabilities whose log is taken must lie in (0, 1]."""
    if not bool(((p > 0) & (p <= 1)).all()):
        bad = p[~((p > 0) & (p <= 1))].flatten()[:4].tolist()
        raise ValueError(f"{name} must lie in (0, 1] because its log is taken; got {bad}")


def check_log_probabilities(logp: torch.Tensor, name: str) -> None:
    """Log-probabilities must be finite and <= 0 (a probability in (0, 1])."""
    if _range_ok(logp.detach() if logp.requires_grad else logp, True):
        return
    if not bool(torch.isfinite(logp).all()):
        raise ValueError(f"{name} must be finite log-probabilities (probability > 0); got -inf or inf")
    if not bool((logp <= 0).all()):
        bad = logp[logp > 0].flatten()[:4].tolist()
        raise ValueError(f"{name} must be <= 0 (log of a probability in (0, 1]); got {bad}")


def as_logprobs(x: TensorLike, name: str) -> torch.Tensor:
    """A tensor of log-probabilities (finite, <= 0), validated without touching its autograd graph."""
    t = as_tensor(x, name)
    check_log_probabilities(t.detach() if t.requires_grad else t, name)
    return t


def check_pmf(p: torch.Tensor, name: str, atol: float = 1e-6) -> None:
    """A probability vector along the last dimension: entries in [0, 1] summing to 1."""
    if p.dim() == 0:
        raise ValueError(f"{name} must be a probability vector, not a scalar")
    if not bool(((p >= 0) & (p <= 1)).all()):
        raise ValueError(f"{name} must have entries in [0, 1]; got {p.tolist() if p.numel() <= 16 else '...'}")
    sums = p.sum(-1)
    if not bool(torch.allclose(sums, torch.ones_like(sums), atol=atol, rtol=0)):
        raise ValueError(f"{name} must sum to 1 along its last dimension; sums are {sums.tolist()}")


def as_float(value: float, name: str) -> float:
    """A Python float from a number (or a one-element tensor); anything else is a ValueError naming ``name``."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a number; got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError, OverflowError):
        raise ValueError(f"{name} must be a number; got {value!r}") from None


def check_int(value: int, name: str, minimum: int) -> int:
    """An integer (not a bool, not a float) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return value


def check_positive(value: float, name: str) -> float:
    value = as_float(value, name)
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{name} must be > 0 and finite; got {value}")
    return value


def check_nonnegative(value: float, name: str) -> float:
    value = as_float(value, name)
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} must be >= 0 and finite; got {value}")
    return value


def check_closed_unit(value: float, name: str) -> float:
    """gamma, lambda: must lie in [0, 1]."""
    value = as_float(value, name)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1]; got {value}")
    return value


def check_open_unit(value: float, name: str) -> float:
    """Clipping widths epsilon: must lie in (0, 1)."""
    value = as_float(value, name)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1); got {value}")
    return value


def check_choice(value: str, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return value


def _broadcast_shapes(sa: torch.Size, sb: torch.Size) -> torch.Size | None:
    """torch.broadcast_shapes for two shapes (None where they do not broadcast), without its slow Python path."""
    out = []
    for i in range(1, max(len(sa), len(sb)) + 1):
        x = sa[-i] if i <= len(sa) else 1
        y = sb[-i] if i <= len(sb) else 1
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return torch.Size(out[::-1])


def broadcast_pair(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Broadcast two tensors, naming both arguments when their shapes do not fit."""
    shape = a.shape if a.shape == b.shape else _broadcast_shapes(a.shape, b.shape)
    if shape is None:
        raise ValueError(f"{name_a} (shape {tuple(a.shape)}) and {name_b} (shape {tuple(b.shape)}) do not broadcast")
    dtype = torch.promote_types(a.dtype, b.dtype) if a.is_floating_point() or b.is_floating_point() else a.dtype
    a, b = a.to(dtype), b.to(dtype)
    if shape == a.shape == b.shape:  # expanding to its own shape changes nothing but the autograd graph: keep the
        # view only where a graph exists, so that gradients accumulate in the same order as before
        return (a.expand(shape) if a.requires_grad else a), (b.expand(shape) if b.requires_grad else b)
    return a.expand(shape), b.expand(shape)


def check_same_shape(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name_a} (shape {tuple(a.shape)}) and {name_b} (shape {tuple(b.shape)}) must have the same shape")


def as_mask(mask: TensorLike | None, like: torch.Tensor, name: str = "mask", allow_empty: bool = False) -> torch.Tensor:
    """A 0/1 mask with the shape of ``like``, in ``like``'s floating dtype; ``None`` means all ones.

    Accepts bool, int and float tensors and lists. An all-zero mask raises unless ``allow_empty``
    (an average over no tokens is undefined). Use ``mask > 0`` for the boolean active set.
    """
    dt = like.dtype if like.is_floating_point() else torch.float64
    if mask is None:
        return torch.ones(like.shape, dtype=dt, device=like.device)
    m = as_tensor(mask, name, allow_nan=True)
    m = m.detach() if m.requires_grad else m
    # fast: max propagates NaN, so a number as max means no NaN; for floats, m·m == m only at 0, 1 and +inf,
    # and max <= 1 rules out +inf. When a sufficient test fails, the original test decides (same message)
    top = float(m.max()) if m.numel() > 0 and m.dtype in _FAST_DTYPES else math.nan
    if top != top and bool(torch.isnan(m).any()):
        raise ValueError(f"{name} must not contain NaN")  # as_tensor's own test and message
    if m.shape != like.shape:
        raise ValueError(f"{name} (shape {tuple(m.shape)}) must have the shape of the values it masks {tuple(like.shape)}")
    binary = top <= 1.0 and torch.equal(m * m, m)
    if not binary and not bool(((m == 0) | (m == 1)).all()):
        raise ValueError(f"{name} must contain only 0 and 1 (or True/False)")
    if not allow_empty and not (binary and top > 0) and not bool((m != 0).any()):
        raise ValueError(f"{name} selects no element (all zeros); the average over an empty set is undefined")
    return m.to(dt)
