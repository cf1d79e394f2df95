"""Framework conventions in lab.grpo: GSPO sequence ratios, CISPO, token whitening, REINFORCE++ (issue 17)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import grpo

T64 = dict(dtype=torch.float64)


def test_sequence_log_ratio_hand_value_and_masked_fillers():
    lp = torch.tensor([[-1.0, -2.0, -1e4], [-0.5, -0.5, -0.5]], **T64)
    old = torch.tensor([[-1.5, -2.0, float("-inf")], [-0.25, -0.75, -0.5]], **T64)
    m = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert grpo.sequence_log_ratio(lp, old, m).tolist() == pytest.approx([0.25, 0.0])


def test_gspo_equals_token_grpo_when_token_ratios_are_equal():
    g = torch.Generator().manual_seed(0)
    old = -torch.rand(6, 5, generator=g, **T64) * 3
    shift = (torch.rand(6, 1, generator=g, **T64) - 0.5) * 0.8  # one log-ratio per response, same on every token
    lp = (old + shift).clamp(max=0.0)
    shift = lp - old  # after the clamp, recompute (the clamp never binds for these values)
    assert torch.allclose(shift, shift[:, :1].expand_as(shift))
    adv = torch.randn(6, generator=g, **T64)
    m = torch.ones(6, 5)
    gspo, _ = grpo.gspo_loss(lp, old, adv, m, epsilon=0.2, epsilon_high=0.2)
    token, _ = grpo.grpo_loss(lp, old, adv, m, epsilon=0.2, epsilon_high=0.2, loss_type="grpo")
    assert gspo.item() == pytest.approx(token.item(), rel=1e-12, abs=1e-12)


def test_gspo_hand_value_and_clip_metric():
    # one response, log-ratios 0.5 and 0 → s = e^0.25 = 1.284 > 1 + 4e-4: clipped for A > 0
    loss, metrics = grpo.gspo_loss([[-1.0, -2.0]], [[-1.5, -2.0]], [2.0], [[1, 1]])
    assert loss.item() == pytest.approx(-(1 + 4e-4) * 2.0)
    assert metrics["clip_ratio/region_mean"] == 1.0 and metrics["sequence_ratio/mean"] == pytest.approx(math.exp(0.25))


def test_cispo_hand_value_and_gradient_through_every_token():
    lp = torch.tensor([[-0.5, -1.0]], **T64, requires_grad=True)
    old = torch.tensor([[-0.5 - math.log(2), -1.0]], **T64)  # ratios 2 and 1
    loss, metrics = grpo.cispo_loss(lp, old, [1.0], [[1, 1]], epsilon_max=1.5)
    # −(1.5·1·(−0.5) + 1·1·(−1.0)) / 2 tokens
    assert loss.item() == pytest.approx((0.75 + 1.0) / 2)
    loss.backward()
    assert lp.grad.tolist() == [[pytest.approx(-0.75), pytest.approx(-0.5)]]  # clipped token still gets a gradient
    assert metrics["cispo_clip_ratio"] == 0.5


@given(st.integers(1, 6), st.integers(2, 7), st.integers(0, 10_000))
@settings(max_examples=60, deadline=None)
def test_whitening_gives_zero_mean_unit_variance_over_active_tokens(b, t, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(b, t, generator=g, **T64) * 5 + 3
    m = (torch.rand(b, t, generator=g) > 0.3).long()
    m[0, :2] = 1  # at least two active tokens
    w = grpo.whiten_advantages(a, m, eps=0.0)
    act = w[m.bool()]
    if bool(a[m.bool()].max() == a[m.bool()].min()):
        assert bool((act == 0).all())
        return
    assert act.mean().item() == pytest.approx(0.0, abs=1e-9)
    assert act.var(correction=1).item() == pytest.approx(1.0, rel=1e-9)
    assert bool((w[~m.bool()] == 0).all())


def test_whitening_zero_spread_and_fillers():
    a = torch.tensor([[0.1, 0.1, float("nan")], [0.1, 0.1, -1e4]], **T64)
    m = torch.tensor([[1, 1, 0], [1, 1, 0]])
    assert grpo.whiten_advantages(a, m).abs().max().item() == 0.0
    assert grpo.whiten_advantages(a, m, shift_mean=False)[m.bool()].tolist() == pytest.approx([0.1] * 4)
    x = torch.tensor([[1.0, 2.0, -1e4], [3.0, 4.0, 5.0]], **T64, requires_grad=True)
    grpo.whiten_advantages(x, [[1, 1, 0], [1, 1, 1]]).sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad[0, 2].item() == 0.0


def test_reinforce_pp_hand_values_and_baseline_variant():
    m = torch.ones(2, 2)
    # rewards 1, 0, no KL: token returns (1,1,0,0), mean 0.5, sample std sqrt(1/3) → ±0.866
    adv = grpo.reinforce_pp_advantages([1.0, 0.0], m, eps=0.0)
    assert adv.tolist() == [[pytest.approx(math.sqrt(0.75))] * 2, [pytest.approx(-math.sqrt(0.75))] * 2]
    # KL to go: rewards (1, 1), kl [[0.1, 0.2], [0, 0]], coef 1 → returns [[0.7, 0.8], [1, 1]]
    adv = grpo.reinforce_pp_advantages([1.0, 1.0], m, kl=[[0.1, 0.2], [0.0, 0.0]], kl_coef=1.0, eps=0.0)
    ret = torch.tensor([[0.7, 0.8], [1.0, 1.0]], **T64)
    assert torch.allclose(adv, (ret - ret.mean()) / ret.std())
    # baseline variant: group-centred first; differs from GRPO's per-group std scaling
    r = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    base = grpo.reinforce_pp_advantages(r, torch.ones(8, 3), group_size=4, eps=0.0)
    grp = grpo.group_advantages(r, 4, scale="group")
    assert base[:, 0].sum().item() == pytest.approx(0.0, abs=1e-12)
    assert not torch.allclose(base[:, 0], grp.to(base.dtype))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: grpo.gspo_loss([[-1.0]], [[-1.0]], [[1.0]], [[1]]), "advantages"),
        (lambda: grpo.gspo_loss([[-1.0]], [[-1.0]], [1.0, 2.0], [[1]]), "advantages"),
        (lambda: grpo.gspo_loss([[-1.0, -1.0]], [[-1.0, -1.0]], [1.0], [[1, 0]], epsilon=1.5), "epsilon"),
        (lambda: grpo.sequence_log_ratio([[-1.0], [-1.0]], [[-1.0], [-1.0]], [[1], [0]]), "mask"),
        (lambda: grpo.cispo_loss([[-1.0]], [[-1.0]], [1.0], [[1]], epsilon_max=0), "epsilon_max"),
        (lambda: grpo.cispo_loss([[0.5]], [[-1.0]], [1.0], [[1]]), "logps"),
        (lambda: grpo.whiten_advantages([[1.0, 2.0]], [[1, 0]]), "mask"),
        (lambda: grpo.whiten_advantages([1.0, 2.0], [1, 1]), "advantages"),
        (lambda: grpo.whiten_advantages([[1.0, 2.0]], [[1, 1]], ddof=2), "ddof"),
        (lambda: grpo.reinforce_pp_advantages([1.0, 0.0], [[1, 1]]), "mask"),
        (lambda: grpo.reinforce_pp_advantages([1.0], [[1, 1]], kl_coef=0.1), "kl"),
        (lambda: grpo.reinforce_pp_advantages([1.0], [[1, 1]], kl=[[0.1]], kl_coef=0.1), "kl"),
        (lambda: grpo.reinforce_pp_advantages([float("nan")], [[1, 1]]), "rewards"),
    ],
)
def test_bad_input_names_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("noise", [1e-17, 1e-15, 1e-12])
def test_near_constant_rewards_whiten_to_tiny_or_zero(noise):
    """Rewards equal up to float noise: REINFORCE++'s whitening either sees zero spread (exactly 0) or real
    (tiny but nonzero) spread, which it scales to unit variance as declared; never NaN."""
    r = torch.tensor([0.3, 0.3 + noise, 0.3, 0.3], **T64)
    adv = grpo.reinforce_pp_advantages(r, torch.ones(4, 2))
    assert torch.isfinite(adv).all()
    if bool(r.max() == r.min()):
        assert adv.abs().max().item() == 0.0


def test_aggregations_hand_values_and_the_two_dr_grpo_forms():
    x = [[1.0, 2.0, 3.0], [4.0, -1.0, 0.5]]
    m = [[1, 1, 0], [1, 0, 1]]
    agg = grpo.aggregate_token_loss
    assert agg(x, m, "seq-mean-token-sum").item() == pytest.approx((3.0 + 4.5) / 2)
    assert agg(x, m, "seq-mean-token-sum-norm").item() == pytest.approx(7.5 / 3)  # verl: width only
    assert agg(x, m, "dr_grpo").item() == pytest.approx(7.5 / (2 * 3))  # TRL: batch × width
    assert agg(x, m, "seq-mean-token-sum-norm", max_completion_length=5).item() == pytest.approx(7.5 / 5)


def test_drop_empty_rows_is_explicit():
    x = [[1.0, 2.0, 3.0], [4.0, -1.0, 0.5]]
    m = [[1, 1, 0], [0, 0, 0]]
    with pytest.raises(ValueError, match="drop_empty_rows"):
        grpo.aggregate_token_loss(x, m, "grpo")
    assert grpo.aggregate_token_loss(x, m, "grpo", drop_empty_rows=True).item() == pytest.approx(1.5)
    loss, _ = grpo.grpo_loss([[-1.0, -1.0], [-1.0, -1.0]], [[-1.0, -1.0], [-1.0, -1.0]], [2.0, 5.0], [[1, 1], [0, 0]], drop_empty_rows=True)
    assert loss.item() == pytest.approx(-2.0)  # only the first response: −ρA = −2


def test_grpo_loss_accepts_verl_aggregations():
    lp = torch.log(torch.tensor([[0.5, 0.4, 0.3], [0.2, 0.9, 0.9]], **T64))
    m = [[1, 1, 0], [1, 1, 1]]
    a, _ = grpo.grpo_loss(lp, lp, [1.0, -1.0], m, loss_type="seq-mean-token-sum-norm")
    b, _ = grpo.grpo_loss(lp, lp, [1.0, -1.0], m, loss_type="dr_grpo")
    assert a.item() == pytest.approx(2 * b.item())  # B = 2


@given(st.lists(st.floats(-10, 10), min_size=6, max_size=6), st.sampled_from(["group", "batch", "none"]), st.sampled_from([0, 1]))
@settings(max_examples=100, deadline=None)
def test_uneven_groups_equal_group_advantages_for_equal_contiguous_groups(r, scale, ddof):
    a = grpo.uneven_group_advantages(r, [0, 0, 0, 1, 1, 1], scale, ddof)
    b = grpo.group_advantages(r, 3, scale, ddof)
    assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def test_uneven_groups_hand_values_singletons_and_scattered_members():
    # groups a = {1, 5}, b = {0, 2}, c = {2} (singleton → 0); group std (ddof 1) of two values x, y is |x − y|/√2
    adv = grpo.uneven_group_advantages([1.0, 0.0, 5.0, 2.0, 2.0], ["a", "b", "a", "c", "b"], eps=0.0)
    s = 1 / math.sqrt(2)
    assert adv.tolist() == pytest.approx([-s, -s, s, 0.0, s])
    with pytest.raises(ValueError, match="singleton"):
        grpo.uneven_group_advantages([1.0, 0.0, 5.0], ["a", "b", "a"], singleton="raise")
    with pytest.raises(ValueError, match="group 'a'"):
        grpo.uneven_group_advantages([1.0, 1.0, 5.0, 6.0], ["a", "a", "b", "b"], zero_std="raise")
    for bad, name in [(dict(group_ids=[0, 0]), "group_ids"), (dict(group_ids=[[0], [0], [1]]), "group_ids"), (dict(singleton="x"), "singleton")]:
        with pytest.raises(ValueError, match=name):
            grpo.uneven_group_advantages([1.0, 0.0, 2.0], **{"group_ids": [0, 0, 1], **bad})
