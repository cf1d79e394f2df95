import math
import statistics

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.grpo import (
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
    # independent reference: statistics computes mean and std from exact fractions (no underflow)
    sd = statistics.stdev(allr)
    norm = [(x - statistics.fmean(allr)) / sd if max(allr) > min(allr) else 0.0 for x in allr]
    for j, e in enumerate(ends):
        assert A[e].item() == pytest.approx(sum(norm[j:len(rs)]), rel=1e-9, abs=1e-9)
    assert A[-1].item() == 0.0
