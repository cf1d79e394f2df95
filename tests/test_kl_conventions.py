"""KL estimator conventions (issue 17): abs, straight-through k3, clamps, float32 computation."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.kl import kl_estimate


@given(st.floats(-30, 0), st.floats(-30, 0))
@settings(max_examples=200, deadline=None)
def test_straight_through_k3_has_k3_value_and_k2_gradient(lp, rlp):
    x = torch.tensor([lp], dtype=torch.float64, requires_grad=True)
    out = kl_estimate(x, [rlp], "k3+")
    assert out.item() == pytest.approx(kl_estimate([lp], [rlp], "k3").item(), rel=1e-12, abs=1e-12)
    out.sum().backward()
    assert x.grad.item() == pytest.approx(-(rlp - lp), rel=1e-12, abs=1e-12)  # d(d²/2)/d logp = −d


def test_abs_and_clamp_hand_values():
    assert kl_estimate([-1.0, -3.0], [-2.0, -0.5], "abs").tolist() == [1.0, 2.5]
    # d = 19.5: k3 = e^19.5 − 20.5 ≈ 2.9e8, clamped at 10; k1 = −19.5 clamped at −10
    assert kl_estimate([-20.0], [-0.5], "k3", clamp=10.0).item() == 10.0
    assert kl_estimate([-20.0], [-0.5], "k1", clamp=10.0).item() == -10.0
    assert kl_estimate([-1.0], [-1.5], "k3", clamp=10.0).item() == pytest.approx(math.expm1(-0.5) + 0.5)


def test_float32_upcasts_bfloat16():
    lp = torch.tensor([-1.0, -2.0], dtype=torch.bfloat16)
    out = kl_estimate(lp, torch.tensor([-1.5, -2.5], dtype=torch.bfloat16), float32=True)
    assert out.dtype == torch.float32
    assert kl_estimate(lp, torch.tensor([-1.5, -2.5], dtype=torch.bfloat16)).dtype == torch.bfloat16


@pytest.mark.parametrize("kwargs, name", [(dict(kind="k5"), "kind"), (dict(clamp=-1.0), "clamp"), (dict(clamp=float("nan")), "clamp"),
                                          (dict(float32=1), "float32")])
def test_bad_input_names_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        kl_estimate([-1.0], [-2.0], **kwargs)
