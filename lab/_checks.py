"""Input conversion and validation shared by every chapter module.

The lab never repairs bad input silently: each check raises ``ValueError`` whose
message names the argument and the condition it violated, so a learner (or a
page showing the message next to its widget) can see what to change.
"""

from __future__ import annotations

from typing import Sequence, Union

import torch

TensorLike = Union[torch.Tensor, float, int, Sequence[float], Sequence[Sequence[float]]]


def as_tensor(x: TensorLike, name: str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Turn floats and (nested) lists into a float64 tensor; keep tensors as they are.

    Plain Python input becomes float64 so that worked examples are exact to ~1e-15;
    tensors keep their dtype and device (and their autograd graph).
    """
    if isinstance(x, torch.Tensor):
        t = x if dtype is None else x.to(dtype)
    else:
        try:
            t = torch.as_tensor(x, dtype=dtype or torch.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a number, a list of numbers or a tensor; got {x!r}") from exc
    if t.is_floating_point() and bool(torch.isnan(t).any()):
        raise ValueError(f"{name} must not contain NaN")
    return t


def check_finite(t: torch.Tensor, name: str) -> None:
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite; got {t.tolist() if t.numel() <= 16 else 'a tensor with inf'}")


def check_probabilities(p: torch.Tensor, name: str) -> None:
    """Probabilities whose log is taken must lie in (0, 1]."""
    if not bool(((p > 0) & (p <= 1)).all()):
        bad = p[~((p > 0) & (p <= 1))].flatten()[:4].tolist()
        raise ValueError(f"{name} must lie in (0, 1] because its log is taken; got {bad}")


def check_log_probabilities(logp: torch.Tensor, name: str) -> None:
    """Log-probabilities must be finite and <= 0 (a probability in (0, 1])."""
    if not bool(torch.isfinite(logp).all()):
        raise ValueError(f"{name} must be finite log-probabilities (probability > 0); got -inf or inf")
    if not bool((logp <= 0).all()):
        bad = logp[logp > 0].flatten()[:4].tolist()
        raise ValueError(f"{name} must be <= 0 (log of a probability in (0, 1]); got {bad}")


def as_logprobs(x: TensorLike, name: str) -> torch.Tensor:
    """A tensor of log-probabilities (finite, <= 0), validated without touching its autograd graph."""
    t = as_tensor(x, name)
    check_log_probabilities(t.detach(), name)
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


def check_positive(value: float, name: str) -> float:
    value = float(value)
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{name} must be > 0 and finite; got {value}")
    return value


def check_nonnegative(value: float, name: str) -> float:
    value = float(value)
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} must be >= 0 and finite; got {value}")
    return value


def check_closed_unit(value: float, name: str) -> float:
    """gamma, lambda: must lie in [0, 1]."""
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1]; got {value}")
    return value


def check_open_unit(value: float, name: str) -> float:
    """Clipping widths epsilon: must lie in (0, 1)."""
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1); got {value}")
    return value


def check_choice(value: str, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {value!r}")
    return value


def broadcast_pair(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Broadcast two tensors, naming both arguments when their shapes do not fit."""
    try:
        shape = torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise ValueError(
            f"{name_a} (shape {tuple(a.shape)}) and {name_b} (shape {tuple(b.shape)}) do not broadcast"
        ) from None
    dtype = torch.promote_types(a.dtype, b.dtype) if a.is_floating_point() or b.is_floating_point() else a.dtype
    return a.to(dtype).expand(shape), b.to(dtype).expand(shape)


def check_same_shape(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name_a} (shape {tuple(a.shape)}) and {name_b} (shape {tuple(b.shape)}) must have the same shape")


def as_mask(mask: TensorLike | None, like: torch.Tensor, name: str = "mask", allow_empty: bool = False) -> torch.Tensor:
    """A 0/1 mask with the shape of ``like``, in ``like``'s dtype; ``None`` means all ones.

    An all-zero mask raises unless ``allow_empty`` (an average over no tokens is undefined).
    """
    if mask is None:
        return torch.ones_like(like)
    m = as_tensor(mask, name)
    if m.dtype == torch.bool:
        m = m.to(like.dtype)
    if m.shape != like.shape:
        raise ValueError(f"{name} (shape {tuple(m.shape)}) must have the shape of the values it masks {tuple(like.shape)}")
    if not bool(((m == 0) | (m == 1)).all()):
        raise ValueError(f"{name} must contain only 0 and 1")
    if not allow_empty and not bool((m != 0).any()):
        raise ValueError(f"{name} selects no element (all zeros); the average over an empty set is undefined")
    return m.to(like.dtype)
