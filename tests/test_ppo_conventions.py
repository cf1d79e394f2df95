"""PPO framework conventions in lab.ppo.ppo_objective: dual-clip, value clipping, log-ratio clamp (issue 17)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.ppo import ppo_objective


def test_dual_clip_hand_value():
    # A = −1, ρ = e² ≈ 7.39: plain PPO counts −7.39; dual-clip with c = 3 bounds it at −3
    plain, _ = ppo_objective([[-1.0]], [[-3.0]], [[-1.0]])
    dual, m = ppo_objective([[-1.0]], [[-3.0]], [[-1.0]], clip_ratio_c=3.0)
    assert plain.item() == pytest.approx(-math.exp(2)) and dual.item() == pytest.approx(-3.0)
    assert m["pg_clipfrac_lower"] == 1.0


@given(st.floats(-20, 20), st.floats(-5, 5).filter(lambda a: abs(a) > 1e-6), st.floats(1.01, 10))
@settings(max_examples=200, deadline=None)
def test_dual_clip_bounds_the_objective_for_negative_advantages(log_ratio, a, c):
    obj, _ = ppo_objective([[min(0.0, log_ratio)]], [[min(0.0, log_ratio) - log_ratio]], [[a]], clip_ratio_c=c)
    plain, _ = ppo_objective([[min(0.0, log_ratio)]], [[min(0.0, log_ratio) - log_ratio]], [[a]])
    if a < 0:
        assert obj.item() >= c * a - 1e-9  # never below c·A
    else:
        assert obj.item() == pytest.approx(plain.item())  # A > 0 untouched


def test_value_clipping_hand_values():
    # V = 2, V_old = 1, clip 0.2 → V_clipped = 1.2; target 0: max(4, 1.44) = 4 (unclipped counts)
    _, m = ppo_objective([[-1.0]], [[-1.0]], [[1.0]], values=[[2.0]], value_targets=[[0.0]], old_values=[[1.0]], value_clip=0.2)
    assert m["loss/value"] == pytest.approx(4.0) and m["vf_clipfrac"] == 0.0
    # target 3: unclipped (2−3)² = 1, clipped (1.2−3)² = 3.24: the clipped error counts, no gradient to V beyond the clip
    _, m = ppo_objective([[-1.0]], [[-1.0]], [[1.0]], values=[[2.0]], value_targets=[[3.0]], old_values=[[1.0]], value_clip=0.2)
    assert m["loss/value"] == pytest.approx(3.24) and m["vf_clipfrac"] == 1.0


def test_log_ratio_clamp_changes_only_extreme_ratios():
    a, _ = ppo_objective([[-1.0, -0.5]], [[-1.1, -0.4]], [[1.0, -1.0]])
    b, _ = ppo_objective([[-1.0, -0.5]], [[-1.1, -0.4]], [[1.0, -1.0]], log_ratio_clamp=20.0)
    assert a.item() == b.item()
    with pytest.raises(ValueError, match="overflows"):
        ppo_objective([[0.0]], [[-1e4]], [[-1.0]])
    obj, _ = ppo_objective([[0.0]], [[-1e4]], [[-1.0]], log_ratio_clamp=20.0)
    assert obj.item() == pytest.approx(-math.exp(20.0))


@pytest.mark.parametrize(
    "kwargs, name",
    [(dict(clip_ratio_c=1.0), "clip_ratio_c"), (dict(clip_ratio_c=float("inf")), "clip_ratio_c"), (dict(value_clip=0.2), "value_clip"),
     (dict(old_values=[[0.0]]), "old_values"), (dict(log_ratio_clamp=0.0), "log_ratio_clamp"),
     (dict(values=[[0.0]], value_targets=[[1.0]], old_values=[[0.0]], value_clip=-1.0), "value_clip")],
)
def test_bad_input_names_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ppo_objective([[-1.0]], [[-1.0]], [[1.0]], **kwargs)
