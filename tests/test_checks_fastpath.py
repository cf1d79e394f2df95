"""The fast paths of lab._checks (issue 14) decide exactly as the original checks did.

Each check in lab/_checks.py first runs a cheap test that is sufficient for the input to pass and
falls back to the original test otherwise. The reference implementations below are the checks as
they were before the fast paths; every input of a generated sweep of near-degenerate values (±0, ±inf,
NaN, subnormals, overflowing sums, 0.5 and 2 in masks, empty tensors, five dtypes) must give the same
result, or a ValueError with the same message.
"""

import itertools
import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import _checks as C

# ------------------------------------------------------------------ reference: the checks before the fast paths


def ref_as_tensor(x, name, dtype=None, allow_nan=False, allow_empty=True):
    t = x
    if t.is_complex():
        raise ValueError(f"{name} must be real; got a complex tensor")
    if not t.is_floating_point():
        t = t.to(torch.float64)
    if dtype is not None:
        t = t.to(dtype)
    if not allow_empty and t.numel() == 0:
        raise ValueError(f"{name} must not be empty; got shape {tuple(t.shape)}")
    if not allow_nan and bool(torch.isnan(t.detach()).any()):
        raise ValueError(f"{name} must not contain NaN")
    return t


def ref_check_finite(t, name):
    t = t.detach()
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite; got {t.tolist() if t.numel() <= 16 else 'a tensor with inf'}")


def ref_check_log_probabilities(logp, name):
    if not bool(torch.isfinite(logp).all()):
        raise ValueError(f"{name} must be finite log-probabilities (probability > 0); got -inf or inf")
    if not bool((logp <= 0).all()):
        bad = logp[logp > 0].flatten()[:4].tolist()
        raise ValueError(f"{name} must be <= 0 (log of a probability in (0, 1]); got {bad}")


def ref_check_active(t, active, name, finite=True, logprob=False):
    vals = t.detach()[active]
    if bool(torch.isnan(vals).any()):
        raise ValueError(f"{name} must not contain NaN at active (unmasked) positions")
    if logprob:
        ref_check_log_probabilities(vals, name)
    elif finite:
        ref_check_finite(vals, name)


def ref_as_mask(mask, like, name="mask", allow_empty=False):
    dt = like.dtype if like.is_floating_point() else torch.float64
    m = ref_as_tensor(mask, name).detach()
    if m.shape != like.shape:
        raise ValueError(f"{name} (shape {tuple(m.shape)}) must have the shape of the values it masks {tuple(like.shape)}")
    if not bool(((m == 0) | (m == 1)).all()):
        raise ValueError(f"{name} must contain only 0 and 1 (or True/False)")
    if not allow_empty and not bool((m != 0).any()):
        raise ValueError(f"{name} selects no element (all zeros); the average over an empty set is undefined")
    return m.to(dt)


def ref_broadcast_pair(a, b, name_a, name_b):
    try:
        shape = torch.broadcast_shapes(a.shape, b.shape)
    except RuntimeError:
        raise ValueError(f"{name_a} (shape {tuple(a.shape)}) and {name_b} (shape {tuple(b.shape)}) do not broadcast") from None
    dtype = torch.promote_types(a.dtype, b.dtype) if a.is_floating_point() or b.is_floating_point() else a.dtype
    return a.to(dtype).expand(shape), b.to(dtype).expand(shape)


# ------------------------------------------------------------------ comparison


def outcome(fn, *args, **kw):
    """('ok', result) or ('error', message); any other exception propagates (it would be a bug in both)."""
    try:
        return "ok", fn(*args, **kw)
    except ValueError as exc:
        return "error", str(exc)


def same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    x, y = a[1], b[1]
    if isinstance(x, tuple):
        return all(same(("ok", u), ("ok", v)) for u, v in zip(x, y))
    if isinstance(x, torch.Tensor):
        return x.dtype == y.dtype and x.shape == y.shape and torch.equal(x.nan_to_num(7.0), y.nan_to_num(7.0))
    return x == y


TINY = 5e-324  # the smallest float64 subnormal
VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.5, TINY, -TINY, 1e308, -1e308, math.inf, -math.inf, math.nan]
DTYPES = [torch.float64, torch.float32, torch.float16, torch.int64, torch.bool]


def sweep(n: int, width: int = 3):
    """Deterministic near-degenerate tensors: every pair of special values, plus constant and empty ones."""
    yield torch.zeros(0, dtype=torch.float64)
    for v in VALUES:
        yield torch.full((width,), v, dtype=torch.float64)
    for a, b in itertools.product(VALUES, repeat=2):
        yield torch.tensor([a, b, -1.0], dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        idx = torch.randint(len(VALUES), (2, width), generator=g)
        yield torch.tensor(VALUES, dtype=torch.float64)[idx]


def typed(t: torch.Tensor):
    for dt in DTYPES:
        if dt in (torch.int64, torch.bool) and not bool(torch.isfinite(t).all()):
            continue
        yield t.to(dt)


def test_value_checks_match_reference_on_the_sweep():
    n = 0
    for base in sweep(200):
        for t in typed(base):
            for allow_nan, allow_empty in itertools.product((False, True), repeat=2):
                assert same(outcome(C.as_tensor, t, "x", allow_nan=allow_nan, allow_empty=allow_empty),
                            outcome(ref_as_tensor, t, "x", allow_nan=allow_nan, allow_empty=allow_empty)), (t, allow_nan)
            assert same(outcome(C.check_finite, t, "x"), outcome(ref_check_finite, t, "x")), t
            if t.is_floating_point():
                assert same(outcome(C.check_log_probabilities, t, "lp"), outcome(ref_check_log_probabilities, t, "lp")), t
            n += 1
    assert n > 500


def test_check_active_matches_reference_on_the_sweep():
    g = torch.Generator().manual_seed(1)
    for base in sweep(150):
        for t in typed(base):
            if not t.is_floating_point():
                continue
            for active in (torch.ones_like(t, dtype=torch.bool), torch.zeros_like(t, dtype=torch.bool),
                           torch.rand(t.shape, generator=g) > 0.5):
                for finite, logprob in itertools.product((False, True), repeat=2):
                    assert same(outcome(C.check_active, t, active, "v", finite, logprob),
                                outcome(ref_check_active, t, active, "v", finite, logprob)), (t, active, finite, logprob)


def test_as_mask_matches_reference_on_the_sweep():
    for base in sweep(150):
        for m in typed(base):
            like = torch.zeros(m.shape, dtype=torch.float32)
            for allow_empty in (False, True):
                assert same(outcome(C.as_mask, m, like, "mask", allow_empty), outcome(ref_as_mask, m, like, "mask", allow_empty)), m
    binary = [torch.tensor(v, dtype=torch.float64) for v in itertools.product((0.0, 1.0, -0.0), repeat=3)]
    for m in binary:
        for like in (torch.zeros(3), torch.zeros(3, dtype=torch.int64)):
            assert same(outcome(C.as_mask, m, like), outcome(ref_as_mask, m, like)), m


def test_broadcast_pair_matches_reference_on_all_small_shapes():
    dims = (0, 1, 2, 3)
    shapes = [s for r in range(4) for s in itertools.product(dims, repeat=r)]
    for sa, sb in itertools.product(shapes, repeat=2):
        a, b = torch.zeros(sa, dtype=torch.float32), torch.ones(sb, dtype=torch.float64)
        assert same(outcome(C.broadcast_pair, a, b, "a", "b"), outcome(ref_broadcast_pair, a, b, "a", "b")), (sa, sb)


def test_broadcast_pair_keeps_the_autograd_graph():
    """The same views as before, so that gradients accumulate in the same order (bit-identical runs)."""
    a = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    x, y = C.broadcast_pair(a, torch.ones(2, dtype=torch.float64), "a", "b")
    assert type(x.grad_fn).__name__ == "ExpandBackward0"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, TINY])), min_size=0, max_size=6),
       st.sampled_from([torch.float64, torch.float32]))
def test_checks_match_reference_on_any_floats(values, dtype):
    t = torch.tensor(values, dtype=torch.float64).to(dtype)
    assert same(outcome(C.as_tensor, t, "x"), outcome(ref_as_tensor, t, "x"))
    assert same(outcome(C.check_finite, t, "x"), outcome(ref_check_finite, t, "x"))
    assert same(outcome(C.check_log_probabilities, t, "x"), outcome(ref_check_log_probabilities, t, "x"))
    act = torch.arange(t.numel()) % 2 == 0
    for finite, logprob in itertools.product((False, True), repeat=2):
        assert same(outcome(C.check_active, t, act, "x", finite, logprob), outcome(ref_check_active, t, act, "x", finite, logprob))
    assert same(outcome(C.as_mask, t, torch.zeros(t.shape)), outcome(ref_as_mask, t, torch.zeros(t.shape)))


def test_errors_name_the_argument():
    for fn, args in ((C.check_finite, (torch.tensor([1.0, math.inf]), "rewards")),
                     (C.check_log_probabilities, (torch.tensor([0.5]), "rewards")),
                     (C.as_mask, (torch.tensor([0.5, 1.0]), torch.zeros(2), "rewards"))):
        try:
            fn(*args)
        except ValueError as exc:
            assert "rewards" in str(exc)
        else:
            raise AssertionError(f"{fn.__name__} accepted bad input")
