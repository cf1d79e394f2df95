import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.ppo import clipped_surrogate, kl_shaped_reward, ppo_objective


def test_clipping_cases_by_hand():
    assert clipped_surrogate(1.4, 2.0).item() == pytest.approx(2.4)
    assert clipped_surrogate(0.6, -2.0).item() == pytest.approx(-1.6)
    assert clipped_surrogate(1.4, -2.0).item() == pytest.approx(-2.8)
    assert clipped_surrogate(0.6, 2.0).item() == pytest.approx(1.2)
    # clip-higher: the upper band widens only
    assert clipped_surrogate(1.4, 2.0, 0.2, 0.28).item() == pytest.approx(2.56)
    assert clipped_surrogate(0.6, -2.0, 0.2, 0.28).item() == pytest.approx(-1.6)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 5), st.floats(-10, 10), st.floats(0.01, 0.99))
def test_clipped_never_exceeds_unclipped(rho, adv, eps):
    assert clipped_surrogate(rho, adv, eps).item() <= rho * adv + 1e-9


def test_ppo_objective_diagnostics():
    logp = torch.log(torch.tensor([[0.7, 0.3, 0.5, 0.5]], dtype=torch.float64))
    old = torch.log(torch.tensor([[0.5, 0.5, 0.5, 0.5]], dtype=torch.float64))
    adv = torch.tensor([[1.0, -1.0, 1.0, 1.0]], dtype=torch.float64)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]], dtype=torch.float64)
    obj, m = ppo_objective(logp, old, adv, mask, epsilon=0.2)
    # ratios 1.4 (A>0 → 1.2), 0.6 (A<0 → -0.8 vs -0.6 → min -0.8), 1.0 → 1
    assert obj.item() == pytest.approx((1.2 - 0.8 + 1.0) / 3)
    assert m["clip_ratio/high_mean"] == pytest.approx(1 / 3)
    assert m["clip_ratio/low_mean"] == pytest.approx(1 / 3)
    assert m["clip_ratio/region_mean"] == pytest.approx(2 / 3)
    ratio = torch.tensor([1.4, 0.6, 1.0])
    assert m["approx_kl"] == pytest.approx(((ratio - 1) - ratio.log()).mean().item(), rel=1e-5)
    v = torch.tensor([[0.0, 1.0, 2.0, 9.0]], dtype=torch.float64)
    g = torch.tensor([[1.0, 1.0, 1.0, 0.0]], dtype=torch.float64)
    h = torch.tensor([[0.3, 0.3, 0.3, 9.0]], dtype=torch.float64)
    obj2, m2 = ppo_objective(logp, old, adv, mask, values=v, value_targets=g, c1=0.5, entropy=h, c2=0.1)
    assert m2["loss/value"] == pytest.approx(2 / 3)
    assert obj2.item() == pytest.approx(obj.item() - 0.5 * 2 / 3 + 0.1 * 0.3)


def test_ppo_bad_input():
    with pytest.raises(ValueError, match="epsilon"):
        clipped_surrogate(1.0, 1.0, epsilon=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        clipped_surrogate(1.0, 1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon_high"):
        clipped_surrogate(1.0, 1.0, epsilon_high=-0.1)
    with pytest.raises(ValueError, match="ratio"):
        clipped_surrogate(-1.0, 1.0)
    with pytest.raises(ValueError, match="ratio.*advantages"):
        clipped_surrogate([1.0, 1.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="c1"):
        ppo_objective([-1.0], [-1.0], [1.0], c1=-1)
    with pytest.raises(ValueError, match="value_targets"):
        ppo_objective([-1.0], [-1.0], [1.0], values=[0.0])
    with pytest.raises(ValueError, match="beta"):
        kl_shaped_reward(0.8, -1.0, -1.0, beta=0.0)
    with pytest.raises(ValueError, match="logp"):
        kl_shaped_reward(0.8, 0.1, -1.0, beta=0.1)


def test_kl_shaped_reward_sequence_and_per_token():
    assert kl_shaped_reward(0.8, math.log(0.2), math.log(0.1), 0.1).item() == pytest.approx(0.8 - 0.1 * math.log(2))
    logp = torch.log(torch.tensor([[0.5, 0.5, 0.9], [0.2, 0.4, 0.9]], dtype=torch.float64))
    ref = torch.log(torch.tensor([[0.25, 0.5, 0.1], [0.4, 0.4, 0.1]], dtype=torch.float64))
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
    score = torch.tensor([1.0, 2.0], dtype=torch.float64)
    seq = kl_shaped_reward(score, logp, ref, 0.5, mask)
    tok = kl_shaped_reward(score, logp, ref, 0.5, mask, per_token=True)
    assert seq.tolist() == pytest.approx([1.0 - 0.5 * math.log(2), 2.0 - 0.5 * (math.log(0.5) + math.log(9))])
    assert tok.sum(-1).tolist() == pytest.approx(seq.tolist())
    assert tok[0, 1].item() == pytest.approx(1.0)  # score on the last active token, log ratio 0 there
    assert tok[0, 2].item() == 0.0


# ---- Issue 10 §1: diagnostics with asymmetric bounds, masked fillers, ints ----

def test_clip_fraction_uses_asymmetric_bounds():
    # ρ = 1.2, ε = 0.1, ε_high = 0.3, A > 0: inside [0.9, 1.3], so the objective is ρA unclipped and nothing is clipped
    lp, old = torch.tensor([[math.log(1.2) - 1.0]], dtype=torch.float64), torch.tensor([[-1.0]], dtype=torch.float64)
    obj, m = ppo_objective(lp, old, torch.tensor([[1.0]]), epsilon=0.1, epsilon_high=0.3)
    assert obj.item() == pytest.approx(1.2)
    assert m["clipfrac"] == 0.0 and m["clip_ratio/high_mean"] == 0.0 and m["clip_ratio/region_mean"] == 0.0
    # ρ = 1.4 is outside the same band: both diagnostics agree
    obj, m = ppo_objective(lp - math.log(1.2) + math.log(1.4), old, torch.tensor([[1.0]]), epsilon=0.1, epsilon_high=0.3)
    assert obj.item() == pytest.approx(1.3) and m["clipfrac"] == 1.0 and m["clip_ratio/high_mean"] == 1.0
    # the lower bound likewise: ρ = 0.85 < 0.9 with A < 0
    obj, m = ppo_objective(old + math.log(0.85), old, torch.tensor([[-1.0]]), epsilon=0.1, epsilon_high=0.3)
    assert m["clipfrac"] == 1.0 and m["clip_ratio/low_mean"] == 1.0


@pytest.mark.parametrize("filler", [0.0, -1e4, -100.0, float("-inf"), float("inf"), float("nan")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ppo_objective_masked_fillers_change_nothing(filler, dtype):
    lp = torch.tensor([[-1.0, -0.5, -2.0], [-0.3, -0.7, -1.1]], dtype=dtype)
    old = torch.tensor([[-1.2, -0.4, -2.0], [-0.3, -0.9, -1.0]], dtype=dtype)
    adv = torch.tensor([[1.0, -2.0, 0.5], [0.3, -0.1, 2.0]], dtype=dtype)
    v = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], dtype=dtype)
    g = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]], dtype=dtype)
    h = torch.tensor([[0.5, 0.6, 0.7], [0.8, 0.9, 1.0]], dtype=dtype)
    mask = [[1, 1, 0], [1, 1, 1]]

    def run(f):
        x = lp.clone()
        x[0, 2] = f
        x.requires_grad_(True)
        ins = [t.clone() for t in (old, adv, v, g, h)]
        for t in ins:
            t[0, 2] = f
        obj, m = ppo_objective(x, ins[0], ins[1], mask, 0.2, 0.28, ins[2], ins[3], 0.5, ins[4], 0.01)
        obj.backward()
        return obj.detach(), x.grad, m

    b, g0, m0 = run(-3.0)
    o, gr, m = run(filler)
    assert torch.isfinite(o) and o.item() == b.item() and torch.equal(gr, g0) and gr[0, 2].item() == 0.0
    assert m == m0


def test_ppo_objective_ints_lists_and_active_nan():
    obj_f, m_f = ppo_objective(torch.tensor([[-1.0, -2.0]]), torch.tensor([[-1.0, -2.0]]), torch.tensor([[1.0, 2.0]]))
    obj_i, m_i = ppo_objective(torch.tensor([[-1, -2]]), [[-1, -2]], torch.tensor([[1, 2]]), [[True, True]])
    assert obj_i.item() == obj_f.item() == 1.5 and m_i == m_f
    with pytest.raises(ValueError, match="logp must not contain NaN at active"):
        ppo_objective([[float("nan")]], [[-1.0]], [[1.0]])
    with pytest.raises(ValueError, match="overflows"):
        ppo_objective([[0.0]], [[-1e4]], [[-1.0]])
    with pytest.raises(ValueError, match="ratio must be finite"):
        clipped_surrogate(float("inf"), 0.0)


def test_kl_shaped_reward_masked_fillers():
    lp = torch.tensor([[-1.0, -2.0, float("-inf")]])
    ref = torch.tensor([[-1.5, -1.0, float("nan")]])
    r = kl_shaped_reward([1.0], lp, ref, beta=0.1, mask=[[1, 1, 0]])
    assert r.tolist() == pytest.approx([1.0 - 0.1 * (0.5 - 1.0)])
    r = kl_shaped_reward([1.0], lp, ref, beta=0.1, mask=[[1, 1, 0]], per_token=True)
    assert r[0].tolist() == pytest.approx([-0.05, 1.1, 0.0])


@settings(max_examples=150, deadline=None)
@given(st.floats(0.0, 3.0), st.floats(-3, 3).filter(lambda a: a != 0), st.floats(0.05, 0.5), st.floats(0.05, 0.6))
def test_clip_fraction_counts_exactly_where_the_objective_clips(rho, adv, eps, eps_high):
    """Property: the region clip fraction is 1 exactly when the objective's clipped term binds (min differs from ρA)."""
    lp = torch.tensor([[math.log(rho) - 2.0 if rho > 0 else -60.0]], dtype=torch.float64)
    old = torch.tensor([[-2.0]], dtype=torch.float64)
    obj, m = ppo_objective(lp, old, torch.tensor([[adv]], dtype=torch.float64), epsilon=eps, epsilon_high=eps_high)
    r = torch.exp(lp - old).item()  # the ratio exactly as the objective forms it
    binds = obj.item() != r * adv
    assert (m["clip_ratio/region_mean"] == 1.0) == binds
    assert m["clipfrac"] == (1.0 if not 1 - eps <= r <= 1 + eps_high else 0.0)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.data())
def test_ppo_objective_ignores_whatever_masked_positions_hold(B, T, data):
    """Property: fillers at masked positions of every input change neither objective, gradient nor metrics."""
    draw = lambda lo, hi: torch.tensor(data.draw(st.lists(st.lists(st.floats(lo, hi), min_size=T, max_size=T), min_size=B, max_size=B)),
                                       dtype=torch.float64)
    lp, old, adv, v, g, h = draw(-5, 0), draw(-5, 0), draw(-3, 3), draw(-3, 3), draw(-3, 3), draw(0, 2)
    mask = torch.tensor(data.draw(st.lists(st.lists(st.booleans(), min_size=T, max_size=T), min_size=B, max_size=B)))
    mask[0, 0] = True
    fill = torch.tensor(data.draw(st.lists(st.lists(st.sampled_from([0.0, -1e4, float("-inf"), float("inf"), float("nan")]),
                                                    min_size=T, max_size=T), min_size=B, max_size=B)), dtype=torch.float64)

    def run(f):
        x = f(lp).clone().requires_grad_(True)
        obj, m = ppo_objective(x, f(old), f(adv), mask, 0.2, 0.3, f(v), f(g), 0.5, f(h), 0.01)
        obj.backward()
        return obj.detach(), x.grad, m

    a = run(lambda t: t)
    b = run(lambda t: torch.where(mask, t, fill))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and a[2] == b[2]
