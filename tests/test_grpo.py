import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.grpo import (
    uneven_group_advantages,
    aggregate_token_loss,
    dynamic_sampling,
    group_advantages,
    group_stats,
    grpo_loss,
    overlong_penalty,
    process_advantages,
)
from lab.ppo import clipped_surrogate


def test_group_stats_and_advantages_by_hand():
    mean, std = group_stats([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 6.0], 4)
    assert mean.tolist() == [0.5, 3.0]
    assert std[0].item() == pytest.approx(math.sqrt(1 / 3))  # ddof = 1
    assert group_stats([1.0, 0.0, 0.0, 1.0], 4, ddof=0)[1].item() == 0.5
    A = group_advantages([1.0, 0.0, 0.0, 1.0], 4, ddof=0, eps=0.0)
    assert A.tolist() == [1.0, -1.0, -1.0, 1.0]
    A = group_advantages([1.0, 0.0, 1.0], 3, scale="none")
    assert A.tolist() == pytest.approx([1 / 3, -2 / 3, 1 / 3])
    # batch scale: centre per group, divide by the whole batch's std
    r = [0.0, 1.0, 5.0, 7.0]
    A = group_advantages(r, 2, scale="batch", eps=0.0)
    s = torch.tensor(r).std().item()
    assert A.tolist() == pytest.approx([-0.5 / s, 0.5 / s, -1 / s, 1 / s])


def test_zero_std_policies():
    r = [1.0, 1.0, 0.0, 1.0]
    assert group_advantages(r, 2)[:2].tolist() == [0.0, 0.0]
    assert group_advantages(r, 2, eps=0.0)[:2].tolist() == [0.0, 0.0]  # explicit policy, not 0/0
    with pytest.raises(ValueError, match=r"groups \[0\].*zero_std"):
        group_advantages(r, 2, zero_std="raise")
    assert group_advantages(r, 2, scale="none", zero_std="raise")[:2].tolist() == [0.0, 0.0]


def test_grpo_bad_input():
    with pytest.raises(ValueError, match="group_size"):
        group_advantages([1.0, 0.0, 1.0], 2)
    with pytest.raises(ValueError, match="group_size"):
        group_advantages([1.0, 0.0], 1)
    with pytest.raises(ValueError, match="scale"):
        group_advantages([1.0, 0.0], 2, scale="global")
    with pytest.raises(ValueError, match="eps"):
        group_advantages([1.0, 0.0], 2, eps=-1)
    with pytest.raises(ValueError, match="ddof"):
        group_stats([1.0, 0.0], 2, ddof=2)
    lp = torch.full((2, 3), -1.0)
    with pytest.raises(ValueError, match="mask"):
        grpo_loss(lp, lp, torch.ones(2), torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"mask.*responses \[1\]"):
        grpo_loss(lp, lp, torch.ones(2), torch.tensor([[1.0, 1, 1], [0, 0, 0]]))
    with pytest.raises(ValueError, match="loss_type"):
        grpo_loss(lp, lp, torch.ones(2), torch.ones(2, 3), loss_type="ppo")
    with pytest.raises(ValueError, match="ref_logps"):
        grpo_loss(lp, lp, torch.ones(2), torch.ones(2, 3), beta=0.1)
    with pytest.raises(ValueError, match="old_logps"):
        grpo_loss(lp, torch.full((2, 4), -1.0), torch.ones(2), torch.ones(2, 3))
    with pytest.raises(ValueError, match="epsilon"):
        grpo_loss(lp, lp, torch.ones(2), torch.ones(2, 3), epsilon=1.5)


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 6), st.integers(1, 4), st.sampled_from(["group", "batch", "none"]), st.data())
def test_group_advantages_sum_to_zero_per_group(g, G, scale, data):
    r = data.draw(st.lists(st.floats(-10, 10, allow_nan=False), min_size=g * G, max_size=g * G))
    A = group_advantages(r, g, scale=scale).view(G, g)
    assert torch.allclose(A.sum(-1), torch.zeros(G, dtype=A.dtype), atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 3), st.floats(-5, 5), st.floats(0.05, 0.5), st.floats(0.0, 0.5))
def test_clip_higher_only_changes_positive_advantage_terms(rho, adv, eps, extra):
    sym = clipped_surrogate(rho, adv, eps).item()
    higher = clipped_surrogate(rho, adv, eps, eps + extra).item()
    if adv <= 0:
        assert higher == pytest.approx(sym)
    else:
        assert higher >= sym - 1e-12


def test_loss_types_by_hand():
    # ratios 1 everywhere: per-token term is -A; two responses of lengths 2 and 1
    lp = torch.full((2, 3), -1.0, requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    A = torch.tensor([1.0, -2.0])
    expect = {"grpo": ((-1 - 1) / 2 + 2 / 1) / 2, "bnpo": (-1 - 1 + 2) / 3, "dr_grpo": (-1 - 1 + 2) / (2 * 4), "dapo": 0.0}
    for lt, want in expect.items():
        loss, m = grpo_loss(lp, lp.detach(), A, mask, loss_type=lt, max_completion_length=4)
        assert loss.item() == pytest.approx(want), lt
        assert m["clip_ratio/region_mean"] == 0.0
    # token-level aggregation weights the long response more than per-response aggregation
    per_token = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    assert aggregate_token_loss(per_token, mask, "bnpo").item() == pytest.approx(2 / 3)  # 2 of 3 tokens
    assert aggregate_token_loss(per_token, mask, "grpo").item() == pytest.approx(1 / 2)  # 1 of 2 responses


def test_grpo_kl_term_and_metric():
    lp = torch.log(torch.tensor([[0.5, 0.5]]))
    ref = torch.log(torch.tensor([[0.25, 0.5]]))
    loss, m = grpo_loss(lp, lp, torch.tensor([0.0]), torch.ones(1, 2), ref_logps=ref, beta=0.5)
    k3 = math.exp(math.log(0.5)) - math.log(0.5) - 1
    assert m["kl"] == pytest.approx(k3 / 2)
    assert loss.item() == pytest.approx(0.5 * k3 / 2)


def test_dynamic_sampling():
    r = [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    res = dynamic_sampling(r, 2)
    assert res.kept_groups == [1, 3] and res.dropped_groups == [0, 2] and res.num_dropped == 2
    assert res.keep_mask.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert res.frac_reward_zero_std == 0.5
    assert dynamic_sampling(r, 2, target_groups=1).kept_groups == [1]
    with pytest.raises(ValueError, match="target_groups"):
        dynamic_sampling(r, 2, target_groups=3)


def test_overlong_penalty_by_hand():
    p = overlong_penalty([10, 80, 90, 100, 101], max_length=100, buffer=20)
    assert p.tolist() == pytest.approx([0.0, 0.0, -0.5, -1.0, -1.0])
    assert overlong_penalty([90], 100, 20, penalty=2.0).item() == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="buffer"):
        overlong_penalty([1], 10, 0)
    with pytest.raises(ValueError, match="penalty"):
        overlong_penalty([1], 10, 2, penalty=0)


def test_overlong_penalty_matches_trl():
    from trl.rewards import get_soft_overlong_punishment

    f = get_soft_overlong_punishment(max_completion_len=30, soft_punish_cache=8)
    lengths = list(range(0, 40))
    theirs = f([[1] * n for n in lengths])
    assert overlong_penalty(lengths, 30, 8).tolist() == pytest.approx(theirs)


def test_process_advantages():
    # two responses, step rewards normalised over all four: mean 0.5, sample std
    A = process_advantages([[1.0, 0.0], [1.0, 0.0]], [[1, 3], [0, 2]], length=5, ddof=0)
    r1, r0 = 1.0, -1.0  # normalised rewards (population std 0.5)
    assert A[0].tolist() == pytest.approx([r1 + r0, r1 + r0, r0, r0, 0.0])
    assert A[1].tolist() == pytest.approx([r1 + r0, r0, r0, 0.0, 0.0])
    with pytest.raises(ValueError, match="step_ends"):
        process_advantages([[1.0]], [[7]], length=5)
    with pytest.raises(ValueError, match="zero spread"):
        process_advantages([[1.0, 1.0]], [[0, 1]], length=2, zero_std="raise")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=2, max_size=5))
def test_process_advantages_are_sums_over_later_steps(rs):
    ends = [2 * j + 1 for j in range(len(rs))]
    A = process_advantages([rs, [0.0] * len(rs)], [ends, ends], length=2 * len(rs) + 1)[0]
    # within a step the advantage is constant; from one step to the next it drops by that step's normalised reward
    allr = rs + [0.0] * len(rs)
    # independent reference in exact rational arithmetic, scaled before the sqrt: statistics.stdev rounds to a float
    # first, which for subnormal rewards ([5e-324, 5e-324]) underflows (it gave 2.0 where the exact sum is 1.732)
    norm = exact_standardise(allr, 1) if max(allr) > min(allr) else [0.0] * len(allr)
    for j, e in enumerate(ends):
        assert A[e].item() == pytest.approx(sum(norm[j:len(rs)]), rel=1e-9, abs=1e-9)
    assert A[-1].item() == 0.0


def exact_standardise(xs, ddof):
    """(x − mean)/std in exact rational arithmetic; only the final sqrt and division are rounded."""
    fx = [Fraction(x) for x in xs]
    mu = sum(fx) / len(fx)
    dev = [x - mu for x in fx]
    scale = max(abs(d) for d in dev)
    var = sum((d / scale) ** 2 for d in dev) / (len(fx) - ddof)
    return [float(d / scale) / math.sqrt(float(var)) for d in dev]


# ---- Issue 10 §1: zero-spread groups, masked fillers, int inputs (hand-computed) ----

def test_zero_spread_is_max_equals_min_not_std_equals_zero():
    # torch.std([0.1]*3) is ~1e-17, so the old `std == 0` test gave -0.8165 / +1 / -0.913 here
    assert group_advantages([0.1, 0.1, 0.1], 3, eps=0.0).tolist() == [0.0, 0.0, 0.0]
    assert group_advantages([0.1] * 7, 7, eps=0.0).tolist() == [0.0] * 7
    assert group_advantages([0.1] * 6, 3, scale="batch", eps=0.0).tolist() == [0.0] * 6
    assert group_advantages([0.1] * 3, 3).tolist() == [0.0] * 3  # default eps: exactly 0, as documented
    with pytest.raises(ValueError, match=r"rewards: groups \[0\]"):
        group_advantages([0.1, 0.1, 0.1], 3, zero_std="raise")
    with pytest.raises(ValueError, match="rewards: the whole batch"):
        group_advantages([0.1] * 6, 3, scale="batch", zero_std="raise")
    # batch scale with spread: a zero-spread group still gets exactly 0, no raise
    A = group_advantages([0.1, 0.1, 0.1, 0.0, 1.0, 2.0], 3, scale="batch", zero_std="raise")
    assert A[:3].tolist() == [0.0, 0.0, 0.0]
    assert group_stats([0.1] * 3, 3)[1].tolist() == [0.0]
    assert group_stats([0.1] * 3, 3)[0].tolist() == [0.1]
    # process supervision: default eps 0 used to divide ~1e-17 spread
    assert process_advantages([[0.1, 0.1], [0.1]], [[0, 1], [1]], length=2).abs().max().item() == 0.0
    with pytest.raises(ValueError, match="step_rewards have zero spread"):
        process_advantages([[0.1, 0.1], [0.1]], [[0, 1], [1]], length=2, zero_std="raise")
    # dynamic sampling agrees with the zero-std policy, group by group
    r = [0.1, 0.1, 0.1, 0.1, 0.2, 0.1]
    ds = dynamic_sampling(r, 3)
    assert ds.kept_groups == [1] and ds.dropped_groups == [0]
    A = group_advantages(r, 3, eps=0.0).view(2, 3)
    assert A[0].tolist() == [0.0, 0.0, 0.0] and A[1].abs().min().item() > 0.5


def test_real_but_tiny_spread_is_kept():
    # 1e-16 above 0.1 is a real (if tiny) spread: eps = 0 scales it to unit std, exactly as the formula says
    A = group_advantages([0.1, 0.1 + 1e-16, 0.1], 3, eps=0.0)
    assert A.tolist() == pytest.approx([-1 / math.sqrt(3), 2 / math.sqrt(3), -1 / math.sqrt(3)], rel=1e-12)
    # spreads whose squares underflow or overflow still normalise
    assert group_advantages([0.0, 2e-252], 2, eps=0.0).tolist() == pytest.approx([-math.sqrt(0.5), math.sqrt(0.5)])
    assert group_advantages([-1e300, 1e300], 2, eps=0.0).tolist() == pytest.approx([-math.sqrt(0.5), math.sqrt(0.5)])


def test_int_bool_list_rewards():
    A = group_advantages(torch.tensor([1, 0, 1, 0]), 2)  # torch used to raise RuntimeError (std of ints)
    assert A.dtype == torch.float64
    assert A.tolist() == pytest.approx([0.5 / (math.sqrt(0.5) + 1e-4), -0.5 / (math.sqrt(0.5) + 1e-4)] * 2)
    assert group_advantages(torch.tensor([True, False]), 2).tolist() == A[:2].tolist()
    assert group_advantages([1, 0], 2).tolist() == A[:2].tolist()


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize("filler", [0.0, -1e4, -100.0, float("-inf"), float("inf"), float("nan")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_grpo_loss_masked_fillers_change_nothing(loss_type, filler, dtype):
    lp = torch.tensor([[-1.0, -0.5, -2.0], [-0.3, -0.7, -1.1]], dtype=dtype)
    old = torch.tensor([[-1.2, -0.4, -2.0], [-0.3, -0.9, -1.0]], dtype=dtype)
    ref = torch.tensor([[-1.1, -0.6, -1.0], [-0.2, -0.8, -1.0]], dtype=dtype)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    adv = torch.tensor([1.0, -0.5], dtype=dtype)
    kw = dict(ref_logps=ref, beta=0.04, epsilon=0.2, epsilon_high=0.28, loss_type=loss_type)

    def run(fill_lp, fill_old, fill_ref):
        x = lp.clone()
        x[0, 2] = fill_lp
        x.requires_grad_(True)
        o, r = old.clone(), ref.clone()
        o[0, 2], r[0, 2] = fill_old, fill_ref
        loss, metrics = grpo_loss(x, o, adv, mask, ref_logps=r, **{k: v for k, v in kw.items() if k != "ref_logps"})
        loss.backward()
        return loss.detach(), x.grad, metrics

    base, g0, m0 = run(-3.0, -3.0, -3.0)
    for args in [(filler, -1.0, -1.0), (-1.0, filler, -1.0), (-1.0, -1.0, filler), (filler, filler, filler)]:
        loss, g, m = run(*args)
        assert torch.isfinite(loss) and torch.isfinite(g).all()
        assert loss.item() == base.item()
        assert torch.equal(g, g0) and g[0, 2].item() == 0.0
        assert m == m0


def test_grpo_loss_active_nan_and_overflow_raise():
    lp = torch.full((1, 2), -1.0)
    with pytest.raises(ValueError, match="logps must not contain NaN at active"):
        grpo_loss(torch.tensor([[-1.0, float("nan")]]), lp, torch.ones(1), torch.ones(1, 2))
    with pytest.raises(ValueError, match="overflows"):
        grpo_loss(torch.tensor([[0.0, -1.0]]), torch.tensor([[-200.0, -1.0]]), torch.ones(1), torch.ones(1, 2))
    with pytest.raises(ValueError, match="advantages"):
        grpo_loss(lp, lp, torch.tensor([float("inf")]), torch.ones(1, 2))


def test_grpo_loss_accepts_lists_ints_and_bool_masks():
    lp = torch.tensor([[-1.0, -0.5], [-0.3, -0.7]])
    loss_t, m_t = grpo_loss(lp, lp, torch.tensor([1.0, -1.0]), torch.ones(2, 2))
    loss_l, m_l = grpo_loss(lp.tolist(), lp.tolist(), [1, -1], [[True, True], [True, True]])
    assert loss_l.item() == pytest.approx(loss_t.item()) and m_l == m_t


def test_grpo_clip_metrics_use_asymmetric_bounds():
    # ρ = 1.2 inside [1 − 0.1, 1 + 0.3]: not clipped, whatever the symmetric ε says
    lp = torch.tensor([[math.log(1.2)]], dtype=torch.float64)
    _, m = grpo_loss(lp - 1.0, torch.tensor([[-1.0]], dtype=torch.float64), torch.tensor([1.0]), torch.ones(1, 1),
                     epsilon=0.1, epsilon_high=0.3)
    assert m["clip_ratio/high_mean"] == 0.0 and m["clip_ratio/region_mean"] == 0.0


def test_aggregate_token_loss_masked_fillers_and_bad_input():
    x = torch.tensor([[1.0, 2.0, float("nan")], [3.0, float("-inf"), 5.0]], requires_grad=True)
    m = torch.tensor([[1, 1, 0], [1, 0, 1]])
    assert aggregate_token_loss(x, m, "grpo").item() == pytest.approx((1.5 + 4.0) / 2)
    assert aggregate_token_loss(x, m, "bnpo").item() == pytest.approx(11 / 4)
    assert aggregate_token_loss(x, m, "dr_grpo", max_completion_length=4).item() == pytest.approx(11 / 8)
    loss = aggregate_token_loss(x, m, "dapo", num_items_in_batch=8)
    assert loss.item() == pytest.approx(11 / 8)
    loss.backward()
    assert x.grad.tolist() == [[0.125, 0.125, 0.0], [0.125, 0.0, 0.125]]
    with pytest.raises(ValueError, match="num_items_in_batch"):
        aggregate_token_loss(x, m, "dapo", num_items_in_batch=float("nan"))
    with pytest.raises(ValueError, match="per_token_loss must not contain NaN at active"):
        aggregate_token_loss(x, torch.ones(2, 3), "bnpo")
    with pytest.raises(ValueError, match="mask selects no element"):
        aggregate_token_loss(x, torch.zeros(2, 3), "bnpo")
    assert aggregate_token_loss(x, torch.zeros(2, 3), "dr_grpo").item() == 0.0


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(1, 3), st.floats(-5, 5), st.sampled_from([1e-17, 1e-15, 1e-12, 1e-9]), st.data())
def test_near_constant_groups_match_exact_arithmetic(g, G, base, noise, data):
    """Property: advantages equal an exact-fraction reference, and all-equal groups give exactly 0."""
    pattern = data.draw(st.lists(st.sampled_from([0, 1, -1]), min_size=g * G, max_size=g * G))
    r = [base + k * noise for k in pattern]
    A = group_advantages(r, g, eps=0.0, ddof=0).view(G, g)
    for i in range(G):
        grp = r[i * g:(i + 1) * g]
        if max(grp) == min(grp):
            assert A[i].tolist() == [0.0] * g
        else:
            ref = exact_standardise(grp, ddof=0)
            assert A[i].tolist() == pytest.approx(ref, rel=1e-9, abs=1e-9)
    assert dynamic_sampling(r, g).dropped_groups == [i for i in range(G) if max(r[i * g:(i + 1) * g]) == min(r[i * g:(i + 1) * g])]


FILLERS = [0.0, -1e4, -100.0, float("-inf"), float("inf"), float("nan")]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.sampled_from(["grpo", "bnpo", "dr_grpo", "dapo"]),
       st.sampled_from([torch.float32, torch.float64]), st.data())
def test_grpo_loss_ignores_whatever_masked_positions_hold(B, T, loss_type, dtype, data):
    """Property: replacing masked entries of logps/old_logps/ref_logps by any filler changes neither loss, gradient nor metrics."""
    lp = torch.tensor(data.draw(st.lists(st.lists(st.floats(-5, 0), min_size=T, max_size=T), min_size=B, max_size=B)), dtype=dtype)
    old = torch.tensor(data.draw(st.lists(st.lists(st.floats(-5, 0), min_size=T, max_size=T), min_size=B, max_size=B)), dtype=dtype)
    mask = torch.tensor(data.draw(st.lists(st.lists(st.booleans(), min_size=T, max_size=T), min_size=B, max_size=B)))
    mask[:, 0] = True  # every response has a token (loss_type="grpo" needs one)
    adv = torch.tensor(data.draw(st.lists(st.floats(-3, 3), min_size=B, max_size=B)), dtype=dtype)
    fill = torch.tensor(data.draw(st.lists(st.lists(st.sampled_from(FILLERS), min_size=T, max_size=T), min_size=B, max_size=B)), dtype=dtype)

    def run(x, o, r):
        x = x.clone().requires_grad_(True)
        loss, m = grpo_loss(x, o, adv, mask, ref_logps=r, beta=0.04, epsilon=0.2, epsilon_high=0.28, loss_type=loss_type,
                            max_completion_length=T + 1, num_items_in_batch=float(mask.sum()) + 1)
        loss.backward()
        return loss.detach(), x.grad, m

    base = run(lp, old, old)
    filled = run(torch.where(mask, lp, fill), torch.where(mask, old, fill), torch.where(mask, old, fill))
    assert torch.equal(base[0], filled[0]) and torch.equal(base[1], filled[1]) and base[2] == filled[2]
    assert bool(torch.isfinite(filled[1]).all()) and bool((filled[1][~mask] == 0).all())


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 6), st.floats(-100, 100), st.sampled_from([1e-15, 1e-12, 1e-9, 1e-3, 1.0]), st.integers(0, 1), st.data())
def test_unit_std_for_any_real_spread(g, base, noise, ddof, data):
    """Property: with eps = 0 a group with any real spread gets advantages of mean 0 and std 1; no spread gives exact 0."""
    ks = data.draw(st.lists(st.integers(-3, 3), min_size=g, max_size=g))
    r = [base + k * noise for k in ks]
    A = group_advantages(r, g, ddof=ddof, eps=0.0)
    if max(r) == min(r):
        assert A.tolist() == [0.0] * g
    else:
        assert abs(A.mean().item()) < 1e-9 and A.std(correction=ddof).item() == pytest.approx(1.0, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4), st.integers(1, 3), st.data())
def test_integer_rewards_equal_float_rewards(g, G, data):
    """Property: int64 / bool tensors and lists give bit-identical advantages and group stats to float64 input."""
    ints = data.draw(st.lists(st.integers(0, 1), min_size=g * G, max_size=g * G))
    want = group_advantages([float(x) for x in ints], g)
    assert torch.equal(group_advantages(torch.tensor(ints), g), want)
    assert torch.equal(group_advantages(torch.tensor(ints).bool(), g), want)
    assert torch.equal(group_advantages(ints, g), want)
    assert [torch.equal(a, b) for a, b in zip(group_stats(torch.tensor(ints), g), group_stats([float(x) for x in ints], g))] == [True, True]


@pytest.mark.parametrize("scale", ["group", "batch"])
def test_standardising_is_scale_free_down_to_subnormal_spreads(scale):
    """With eps = 0, (R − R̄)/std does not change when every reward is multiplied by 2^-k: computed in the units of
    the spread, so rewards near the smallest floats (1e-310, 5e-324) give the same advantages as 1 and 3. Before,
    1e-310 and 3e-310 gave 2e-306, and process_advantages gave nan for [5e-324, 5e-324, 0, 0]."""
    base = torch.tensor([1.0, 3.0, 0.0, 0.0, 2.0, 2.0, 5.0, 1.0], dtype=torch.float64)
    want = group_advantages(base, 4, scale=scale, eps=0.0)
    for k in (0, 600, 1020, 1030):
        tiny = torch.ldexp(base, torch.tensor(-k))
        assert torch.equal(group_advantages(tiny, 4, scale=scale, eps=0.0), want), k
    A = process_advantages([[5e-324, 5e-324], [0.0, 0.0]], [[1, 3], [1, 3]], length=5)
    assert A[0, :2].tolist() == pytest.approx([2 * 0.8660254037844386] * 2) and A[0, 2:4].tolist() == pytest.approx([0.8660254037844386] * 2)


def test_standardising_edges_found_in_review():
    """A zero-spread group under batch scaling with a subnormal batch spread has a finite gradient; eps far larger than
    a subnormal spread keeps the tiny exact result (not 0); a bad ddof is refused up front under batch scaling."""
    x = torch.tensor([3e-310, 1e-310, 2e-310, 2e-310], dtype=torch.float64, requires_grad=True)
    (group_advantages(x, 2, scale="batch") * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)).sum().backward()
    assert x.grad.tolist() == [-5000.0, 5000.0, 0.0, 0.0]
    assert group_advantages([1e-320, 0.0, 1.0, 1.0], 2).tolist() == pytest.approx([5e-317, -5e-317, 0.0, 0.0], rel=1e-3)
    assert group_advantages([1e-310, 3e-310, 0.0, 1e-300], 2, "batch", eps=1e10).tolist() == pytest.approx(
        [-1e-320, 1e-320, -5e-311, 5e-311], rel=1e-3)
    with pytest.raises(ValueError, match="^ddof"):
        uneven_group_advantages([1.0, 3.0, 3.0, 9.0], [0, 1, 1, 2], scale="batch", ddof=5)
