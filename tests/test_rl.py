import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.rl import advantage_from_baseline, discounted_returns, gae, likelihood_ratio, policy_gradient_surrogate, td_residuals

rew = st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=8)


def test_discounted_returns_by_hand():
    G = discounted_returns([0.0, 1.0, 2.0], 0.5)
    assert G.tolist() == pytest.approx([1.0, 2.0, 2.0])
    assert discounted_returns([[1.0, 1.0]], 1.0).tolist() == [[2.0, 1.0]]


def test_gae_by_hand():
    # rewards (1, 0), values (0.5, 0.2), gamma 0.9, lambda 0.5, terminal after step 2
    d0 = 1 + 0.9 * 0.2 - 0.5
    d1 = 0 + 0.9 * 0.0 - 0.2
    adv, ret = gae([1.0, 0.0], [0.5, 0.2], 0.9, 0.5)
    assert adv.tolist() == pytest.approx([d0 + 0.45 * d1, d1])
    assert ret.tolist() == pytest.approx([d0 + 0.45 * d1 + 0.5, d1 + 0.2])
    assert td_residuals([1.0, 0.0], [0.5, 0.2], 0.9).tolist() == pytest.approx([d0, d1])


@settings(max_examples=60, deadline=None)
@given(rew, st.floats(0, 1), st.data())
def test_gae_lambda_one_is_return_minus_value(r, gamma, data):
    v = data.draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=len(r), max_size=len(r)))
    adv, ret = gae(r, v, gamma, 1.0)
    G = discounted_returns(r, gamma)
    assert torch.allclose(adv, G - torch.tensor(v, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(ret, G, atol=1e-9)
    adv0, _ = gae(r, v, gamma, 0.0)
    assert torch.allclose(adv0, td_residuals(r, v, gamma), atol=1e-12)


def test_advantage_and_ratio():
    assert advantage_from_baseline([0.0, 1.0, 1.0], 2 / 3).tolist() == pytest.approx([-2 / 3, 1 / 3, 1 / 3])
    assert likelihood_ratio(math.log(0.5), math.log(0.25)).item() == pytest.approx(2.0)


def test_policy_gradient_surrogate_and_gradient():
    logp = torch.log(torch.tensor([0.5, 0.25, 0.8], dtype=torch.float64)).requires_grad_()
    adv = torch.tensor([1.0, -2.0, 5.0], dtype=torch.float64)
    mask = torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)
    obj = policy_gradient_surrogate(logp, adv, mask)
    assert obj.item() == pytest.approx((math.log(0.5) * 1 + math.log(0.25) * -2) / 2)
    obj.backward()
    assert logp.grad.tolist() == pytest.approx([0.5, -1.0, 0.0])


def test_rl_bad_input():
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns([1.0], 1.5)
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns([1.0], -0.1)
    with pytest.raises(ValueError, match="lam"):
        gae([1.0], [0.0], 0.9, 1.01)
    with pytest.raises(ValueError, match="rewards.*values"):
        gae([1.0, 2.0], [0.0], 0.9, 0.9)
    with pytest.raises(ValueError, match="behavior_logp"):
        likelihood_ratio(-1.0, 0.5)
    with pytest.raises(ValueError, match="logp"):
        likelihood_ratio(float("-inf"), -1.0)
    with pytest.raises(ValueError, match="mask"):
        policy_gradient_surrogate([-1.0, -1.0], [1.0, 1.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="logp.*advantages"):
        policy_gradient_surrogate([-1.0, -1.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="baseline"):
        advantage_from_baseline([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="rewards"):
        discounted_returns([], 0.5)


def test_td_residuals_bad_input():
    with pytest.raises(ValueError, match="gamma"):
        td_residuals([1.0], [0.0], gamma=2.0)
    with pytest.raises(ValueError, match="values"):
        td_residuals([1.0], [float("inf")], gamma=0.5)


# ---- Issue 10 §1: integer, boolean and list inputs; masked fillers ----

def test_integer_inputs_are_not_truncated():
    G = discounted_returns(torch.tensor([1, 1, 1]), 0.9)  # used to give [2, 1, 1] (int arithmetic)
    assert G.dtype == torch.float64 and G.tolist() == pytest.approx([2.71, 1.9, 1.0])
    assert discounted_returns(torch.tensor([True, True, True]), 0.9).tolist() == pytest.approx([2.71, 1.9, 1.0])
    d = td_residuals(torch.tensor([1, 0]), torch.tensor([0, 1]), 0.45)  # used to lose the 0.45
    assert d.tolist() == pytest.approx([1 + 0.45 * 1 - 0, 0 + 0 - 1])
    A, R = gae(torch.tensor([1, 0]), [0, 1], 0.5, 1.0)
    assert A.tolist() == pytest.approx([1.0 + 0.5 * 1 - 0 + 0.5 * (0 - 1), -1.0])


def test_policy_gradient_surrogate_masked_fillers():
    for f in (0.0, -1e4, float("-inf"), float("nan")):
        lp = torch.tensor([-1.0, -2.0, f], requires_grad=True)
        out = policy_gradient_surrogate(lp, [1.0, 3.0, f], [1, 1, 0])
        out.backward()
        assert out.item() == pytest.approx((-1.0 - 6.0) / 2)
        assert lp.grad.tolist() == [0.5, 1.5, 0.0]
    with pytest.raises(ValueError, match="advantages must not contain NaN at active"):
        policy_gradient_surrogate([-1.0], [float("nan")])


def test_likelihood_ratio_overflow_and_bad_next_value():
    with pytest.raises(ValueError, match="overflows"):
        likelihood_ratio(torch.tensor([0.0]), torch.tensor([-200.0]))
    with pytest.raises(ValueError, match="next_value"):
        td_residuals([1.0], [0.0], 0.9, next_value=float("nan"))
    with pytest.raises(ValueError, match="baseline must be finite"):
        advantage_from_baseline([1.0], [float("inf")])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=6), st.floats(0, 1))
def test_integer_tensors_give_the_float_results(ints, gamma):
    """Property: int64 tensors are converted at the boundary, never computed in integer arithmetic."""
    floats = [float(x) for x in ints]
    assert torch.equal(discounted_returns(torch.tensor(ints), gamma), discounted_returns(floats, gamma))
    vals = list(reversed(ints))
    assert torch.equal(td_residuals(torch.tensor(ints), torch.tensor(vals), gamma), td_residuals(floats, [float(v) for v in vals], gamma))
    assert all(torch.equal(a, b) for a, b in zip(gae(torch.tensor(ints), vals, gamma, 0.5), gae(floats, [float(v) for v in vals], gamma, 0.5)))
