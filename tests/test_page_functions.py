"""Library functions the pages call instead of computing formulas inline (issue 10, "no math in pages"),
and ``reward_model_loss(weights=)``: hand values, hypothesis properties, near-degenerate sweeps, bad input."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.preference import Comparison, fit_bradley_terry, reward_model_loss, to_observations

finite = st.floats(-30, 30, allow_nan=False)


# ---------------------------------------------------------------- reward_model_loss(weights=)

def _issue_records():
    # A ≻ B twice, B ≻ A once, one tie split into two half-weight observations (issue 10)
    comps = [Comparison("x", "A", "B", "j", "a")] * 2 + [Comparison("x", "A", "B", "j", "b"), Comparison("x", "A", "B", "j", "tie")]
    return to_observations(comps, ties="split")


def test_weighted_reward_model_loss_by_hand():
    obs = _issue_records()
    assert [o.weight for o in obs] == [1.0, 1.0, 1.0, 0.5, 0.5]
    s = fit_bradley_terry(obs)
    # A wins weight 2.5 of 4: the fit gives σ(r_A − r_B) = 0.625 exactly
    assert s["A"] - s["B"] == pytest.approx(math.log(5 / 3), abs=1e-9)
    rc, rr, w = [s[o.chosen] for o in obs], [s[o.rejected] for o in obs], [o.weight for o in obs]
    want = (2.5 * -math.log(0.625) + 1.5 * -math.log(0.375)) / 4  # 0.66156
    assert float(reward_model_loss(rc, rr, weights=w)) == pytest.approx(want, abs=1e-12)
    assert float(reward_model_loss(rc, rr, weights=w)) == pytest.approx(0.66156, abs=5e-6)
    # unweighted, the split tie counts as two whole observations: the issue's 0.67433
    assert float(reward_model_loss(rc, rr)) == pytest.approx(0.67433, abs=5e-6)


def test_weighted_loss_is_minimised_by_the_weighted_fit():
    obs = _issue_records()
    s = fit_bradley_terry(obs)
    w = [o.weight for o in obs]
    d = s["A"] - s["B"]
    at = lambda dd: float(reward_model_loss([dd if o.chosen == "A" else -dd for o in obs], [0.0] * len(obs), weights=w))
    assert at(d) < at(d + 1e-3) and at(d) < at(d - 1e-3)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(finite, finite, st.integers(1, 4)), min_size=1, max_size=8), st.floats(1e-3, 1e3))
def test_weights_properties(rows, scale):
    rc = [r[0] for r in rows]
    rr = [r[1] for r in rows]
    w = [float(r[2]) for r in rows]
    base = float(reward_model_loss(rc, rr))
    assert float(reward_model_loss(rc, rr, weights=[1.0] * len(rows))) == pytest.approx(base, rel=1e-12, abs=1e-12)
    weighted = float(reward_model_loss(rc, rr, weights=w))
    # scaling every weight changes nothing; an integer weight k is k repeated observations
    assert float(reward_model_loss(rc, rr, weights=[x * scale for x in w])) == pytest.approx(weighted, rel=1e-9, abs=1e-12)
    rep_c = [c for c, k in zip(rc, w) for _ in range(int(k))]
    rep_r = [r for r, k in zip(rr, w) for _ in range(int(k))]
    assert float(reward_model_loss(rep_c, rep_r)) == pytest.approx(weighted, rel=1e-9, abs=1e-12)


def test_weights_none_is_the_trl_mean_and_weights_keep_the_margin():
    rc, rr, m = torch.tensor([1.0, -2.0, 0.3]), torch.tensor([0.5, 0.5, 0.3]), torch.tensor([0.1, 0.0, 2.0])
    plain = reward_model_loss(rc, rr, margin=m)
    assert torch.equal(plain, -torch.nn.functional.logsigmoid(rc - rr - m).mean())  # TRL RewardTrainer's formula
    assert float(reward_model_loss(rc, rr, margin=m, weights=torch.ones(3))) == pytest.approx(float(plain), abs=1e-7)


@pytest.mark.parametrize("w", [[1e-300, 0.0, 0.0], [0.0, 0.0, 5.0], [1e300, 1e300, 1e300], [1, 0, 1], [True, False, True]])
def test_weights_near_degenerate(w):
    rc, rr = [2.0, -1.0, 0.0], [0.0, 0.0, 1e4]
    per = [-math.log(1 / (1 + math.exp(-2.0))), -math.log(1 / (1 + math.exp(1.0))), 1e4]
    wf = [float(x) for x in w]
    # float64 reference: normalise the weights first (1e300 · 1e4 must not overflow the reference)
    wn = [x / max(wf) for x in wf]
    want = sum(a * b for a, b in zip(wn, per)) / sum(wn)
    got = float(reward_model_loss(rc, rr, weights=w))
    assert math.isfinite(got) and got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("w, needle", [
    ([1.0, 1.0], "same shape"), ([[1.0, 1.0, 1.0]], "same shape"), ([1.0, -0.5, 1.0], ">= 0"),
    ([1.0, float("inf"), 1.0], "finite"), ([1.0, float("nan"), 1.0], "NaN"), ([0.0, 0.0, 0.0], "all be zero"),
    ("heavy", "weights"),
])
def test_weights_bad_input(w, needle):
    with pytest.raises(ValueError, match="weights") as e:
        reward_model_loss([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], weights=w)
    assert needle in str(e.value)


# ---------------------------------------------------------------- lab.kl: log_probabilities, kl_regularized_objective
from lab.dpo import log_partition, log_ratio, optimal_policy  # noqa: E402
from lab.grpo import (  # noqa: E402
    group_surrogate, grpo_loss, length_mask, loss_types_from_ratios, step_end_positions, token_advantages,
)
from lab.kl import kl_regularized_objective, log_probabilities  # noqa: E402
from lab.ppo import clipped_surrogate, clipping_effect, kl_shaped_reward_from_ratio  # noqa: E402
from lab.preference import Observation, find_preference_cycle, majority_edges  # noqa: E402

pmf = st.lists(st.floats(0.01, 1.0), min_size=2, max_size=6).map(lambda xs: [x / sum(xs) for x in xs])


def test_log_probabilities_by_hand_and_bad_input():
    assert log_probabilities([0.5, 1.0]).tolist() == [math.log(0.5), 0.0]
    assert float(log_probabilities(1)) == 0.0  # an int probability converts at the boundary
    for bad in (0.0, 1.5, -0.1, float("nan"), float("inf"), "p"):
        with pytest.raises(ValueError, match="π_θ"):
            log_probabilities(bad, "π_θ")


def test_kl_regularized_objective_by_hand():
    # π = (0.3, 0.2, 0.5), π_ref = (0.4, 0.4, 0.2), r = (0, 1, 2), β = 1 (the lab's own numbers)
    o = kl_regularized_objective([0.3, 0.2, 0.5], [0.4, 0.4, 0.2], [0.0, 1.0, 2.0], 1.0)
    kl = 0.3 * math.log(0.3 / 0.4) + 0.2 * math.log(0.2 / 0.4) + 0.5 * math.log(0.5 / 0.2)
    assert float(o.expected_reward) == pytest.approx(1.2, abs=1e-15)
    assert float(o.kl) == pytest.approx(kl, abs=1e-15) and float(o.kl) == pytest.approx(0.23321, abs=1e-5)
    assert float(o.objective) == pytest.approx(1.2 - kl, abs=1e-15)
    half = kl_regularized_objective([0.3, 0.2, 0.5], [0.4, 0.4, 0.2], [0.0, 1.0, 2.0], 0.5)
    assert float(half.objective) == pytest.approx(1.2 - 0.5 * kl, abs=1e-15)
    # support mismatch: KL = inf, objective = −inf; a zero-probability response adds nothing to E[r]
    m = kl_regularized_objective([0.5, 0.5], [1.0, 0.0], [1.0, 3.0], 0.1)
    assert math.isinf(float(m.kl)) and float(m.objective) == -math.inf and float(m.expected_reward) == 2.0
    z = kl_regularized_objective([1.0, 0.0], [0.5, 0.5], [2.0, -1e6], 1.0)
    assert float(z.expected_reward) == 2.0 and float(z.kl) == pytest.approx(math.log(2))
    batch = kl_regularized_objective([[0.3, 0.2, 0.5], [0.4, 0.4, 0.2]], [0.4, 0.4, 0.2], [0, 1, 2], 1.0)
    assert batch.objective.shape == (2,) and float(batch.kl[1]) == 0.0


@settings(max_examples=60, deadline=None)
@given(pmf, st.lists(st.floats(-5, 5), min_size=6, max_size=6), st.floats(0.05, 10))
def test_optimal_policy_maximises_the_kl_regularized_objective(ref, rewards, beta):
    r = rewards[: len(ref)]
    pi = optimal_policy(ref, r, beta)
    best = kl_regularized_objective(pi, ref, r, beta)
    assert float(best.objective) == pytest.approx(beta * float(log_partition(ref, r, beta)), abs=1e-9)  # = β log Z
    for other in (ref, [1.0 / len(ref)] * len(ref)):
        assert float(kl_regularized_objective(other, ref, r, beta).objective) <= float(best.objective) + 1e-9


@pytest.mark.parametrize("noise", [0.0, 1e-17, 1e-12, 1e-9])
def test_kl_regularized_objective_near_equal_distributions(noise):
    p = torch.tensor([0.5 + noise, 0.5 - noise], dtype=torch.float64)
    o = kl_regularized_objective(p, [0.5, 0.5], [1.0, 1.0], 0.1)
    assert abs(float(o.kl)) < 1e-15 and float(o.objective) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("args, name", [
    (([0.5, 0.5], [0.5, 0.5], [0.0, 1.0], 0.0), "beta"), (([0.5, 0.5], [0.5, 0.5], [0.0, 1.0], float("nan")), "beta"),
    (([0.6, 0.6], [0.5, 0.5], [0.0, 1.0], 1.0), "policy"), (([0.5, 0.5], [0.7, 0.7], [0.0, 1.0], 1.0), "ref_probs"),
    (([0.5, 0.5], [0.5, 0.5], [0.0, float("inf")], 1.0), "rewards"), (([0.5, 0.5], [0.5, 0.5], [0.0, 1.0, 2.0], 1.0), "policy"),
    (([0.5, 0.5], [0.2, 0.3, 0.5], [0.0, 1.0], 1.0), "ref_probs"), (([0.5, 0.5], [0.5, 0.5], "r", 1.0), "rewards"),
])
def test_kl_regularized_objective_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        kl_regularized_objective(*args)


# ---------------------------------------------------------------- lab.ppo: clipping_effect, kl_shaped_reward_from_ratio

def test_clipping_effect_by_hand():
    # ftip-003I's three cases at ε = 0.2: ρA 2.8 → 2.4 (0.4 removed), −1.2 → −1.6 (nothing removed), −2.8 kept
    for (a, rho), (plain, clip, gone) in zip([(2.0, 1.4), (-2.0, 0.6), (-2.0, 1.4)], [(2.8, 2.4, 0.4), (-1.2, -1.6, 0.4), (-2.8, -2.8, 0.0)]):
        e = clipping_effect(rho, a, 0.2)
        assert (float(e.unclipped), float(e.clipped), float(e.removed)) == pytest.approx((plain, clip, gone), abs=1e-12)
    e = clipping_effect(1.2, 2.0, 0.1, 0.3)  # inside the asymmetric band: nothing removed, exactly
    assert float(e.removed) == 0.0 and float(e.clipped) == pytest.approx(2.4)


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 5), st.floats(-10, 10), st.floats(0.01, 0.99), st.floats(0.01, 2))
def test_clipping_effect_properties(rho, a, eps, eps_high):
    e = clipping_effect(rho, a, eps, eps_high)
    assert float(e.removed) >= 0
    assert float(e.clipped) == float(clipped_surrogate(rho, a, eps, eps_high))
    if 1 - eps <= rho <= 1 + eps_high:
        assert float(e.removed) == 0.0


@pytest.mark.parametrize("args, name", [((-0.1, 1.0), "ratio"), ((float("inf"), 1.0), "ratio"), ((1.0, float("inf")), "advantages"),
                                        (([1.0, 2.0], [1.0, 2.0, 3.0]), "ratio"), ((1.0, 1.0, 1.5), "epsilon")])
def test_clipping_effect_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        clipping_effect(*args)


def test_kl_shaped_reward_from_ratio_by_hand_and_edges():
    assert float(kl_shaped_reward_from_ratio(0.8, 2.0, 0.1)) == pytest.approx(0.8 - 0.1 * math.log(2), abs=1e-15)  # ftip-003J
    assert float(kl_shaped_reward_from_ratio(0.8, 1, 0.1)) == 0.8
    assert float(kl_shaped_reward_from_ratio(0.0, 1e-300, 1.0)) == pytest.approx(300 * math.log(10))
    for args, name in (((0.8, 0.0, 0.1), "ratio"), ((0.8, float("inf"), 0.1), "ratio"), ((0.8, 2.0, 0.0), "beta"),
                       ((float("nan"), 2.0, 0.1), "score"), ((0.8, -1.0, 0.1), "ratio")):
        with pytest.raises(ValueError, match=name):
            kl_shaped_reward_from_ratio(*args)


@settings(max_examples=60, deadline=None)
@given(st.floats(-10, 10), st.floats(1e-6, 1e6), st.floats(0.001, 5))
def test_kl_shaped_reward_from_ratio_matches_the_logprob_form(score, ratio, beta):
    from lab.ppo import kl_shaped_reward

    lr = math.log(ratio)
    ref = -1.0 - max(lr, 0.0)  # any reference log-prob that keeps both <= 0
    assert float(kl_shaped_reward_from_ratio(score, ratio, beta)) == pytest.approx(float(kl_shaped_reward(score, ref + lr, ref, beta)), abs=1e-9)


# ---------------------------------------------------------------- lab.dpo.log_ratio

def test_log_ratio_by_hand_and_bad_input():
    # ftip-003S: ℓ(y+) = log(0.6/0.3) = log 2, ℓ(y−) = log(0.2/0.4) = −log 2
    assert float(log_ratio(math.log(0.6), math.log(0.3))) == pytest.approx(math.log(2), abs=1e-15)
    assert float(log_ratio(math.log(0.2), math.log(0.4))) == pytest.approx(-math.log(2), abs=1e-15)
    assert log_ratio(torch.tensor([-1.0, -2.0]), -1.0).tolist() == [0.0, -1.0]
    for args, name in (((0.5, -1.0), "logps"), ((-1.0, float("-inf")), "ref_logps"), (([-1.0, -2.0], [-1.0, -2.0, -3.0]), "logps")):
        with pytest.raises(ValueError, match=name):
            log_ratio(*args)


# ---------------------------------------------------------------- lab.preference.majority_edges

def test_majority_edges_by_hand():
    o = lambda a, b, w=1.0: Observation("x", a, b, "j", w)
    assert majority_edges([o("A", "B"), o("B", "C"), o("C", "A")]) == [("A", "B"), ("B", "C"), ("C", "A")]
    assert majority_edges([o("A", "B"), o("B", "A")]) == []  # 1–1: no majority
    assert majority_edges([o("A", "B"), o("A", "B", 0.5), o("B", "A", 0.5)]) == [("A", "B")]
    assert majority_edges([Comparison("x", "A", "B", "j", "b"), Comparison("x", "A", "B", "j", "tie")]) == [("B", "A")]
    with pytest.raises(ValueError, match="weight"):
        majority_edges([o("A", "B", -1.0)])
    with pytest.raises(ValueError, match="comparisons"):
        majority_edges(["A > B"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABCD"), st.sampled_from("ABCD"), st.sampled_from([0.5, 1.0, 2.0])), max_size=12))
def test_majority_edges_agree_with_cycle_search(rows):
    obs = [Observation("x", a, b, "j", w) for a, b, w in rows if a != b]
    edges = majority_edges(obs)
    assert not any((b, a) in edges for a, b in edges)  # antisymmetric
    cycle = find_preference_cycle(obs)
    if cycle:
        assert all(e in edges for e in zip(cycle, cycle[1:] + cycle[:1]))


# ---------------------------------------------------------------- lab.grpo additions

def test_length_mask_and_token_advantages_by_hand():
    m = length_mask([3, 1, 0])
    assert m.tolist() == [[1, 1, 1], [1, 0, 0], [0, 0, 0]]
    assert length_mask([2.0], max_length=4).tolist() == [[1, 1, 0, 0]]
    t = token_advantages([1.0, -1.0, 2.0], m)
    assert t.tolist() == [[1, 1, 1], [-1, 0, 0], [0, 0, 0]]
    # what grpo_loss does with a (G,) advantage: same loss as with the spread (G, T) one
    lp = torch.full((2, 3), -1.0, dtype=torch.float64)
    adv, mk = torch.tensor([0.5, -2.0], dtype=torch.float64), length_mask([3, 2])
    assert float(grpo_loss(lp, lp, adv, mk)[0]) == pytest.approx(float(grpo_loss(lp, lp, token_advantages(adv, mk), mk)[0]), abs=1e-15)


@pytest.mark.parametrize("filler", [0.0, -1e4, 1e300])
def test_token_advantages_masked_positions_are_exactly_zero(filler):
    m = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    assert token_advantages([1e300], m).tolist() == [[1e300, 0.0]]
    assert token_advantages(torch.tensor([filler], dtype=torch.float64), m)[0, 1].item() == 0.0


@pytest.mark.parametrize("call, name", [
    (lambda: length_mask([]), "lengths"), (lambda: length_mask([2.5]), "lengths"), (lambda: length_mask([-1]), "lengths"),
    (lambda: length_mask([float("inf")]), "lengths"), (lambda: length_mask([float("nan")]), "lengths"), (lambda: length_mask(["3"]), "lengths"),
    (lambda: length_mask([3], max_length=2), "max_length"),
    (lambda: token_advantages([1.0, float("inf")], torch.ones(2, 2)), "advantages"),
    (lambda: token_advantages([1.0], torch.ones(2, 2)), "mask"), (lambda: token_advantages([1.0], [[0.5, 1.0]]), "mask"),
    (lambda: token_advantages([[1.0]], torch.ones(1, 2)), "advantages"),
])
def test_length_mask_token_advantages_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_group_surrogate_by_hand():
    # the lab's own illustration for ftip-004N: Â = (1, −1, −1, 1), ρ = (1.3, 0.7, 1.1, 0.9), ε = 0.2
    g = group_surrogate([1.3, 0.7, 1.1, 0.9], [1.0, -1.0, -1.0, 1.0], 0.2)
    assert g.terms.tolist() == pytest.approx([1.2, -0.8, -1.1, 0.9], abs=1e-12)
    assert float(g.mean) == pytest.approx(0.05, abs=1e-12)
    for call, name in ((lambda: group_surrogate([1.0, 1.0], [1.0]), "ratios"), (lambda: group_surrogate([], []), "ratios"),
                       (lambda: group_surrogate([float("inf")], [1.0]), "ratios"), (lambda: group_surrogate([1.0], [1.0], 1.0), "epsilon")):
        with pytest.raises(ValueError, match=name):
            call()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0.05, 5), st.floats(-3, 3)), min_size=1, max_size=6), st.floats(0.05, 0.5))
def test_group_surrogate_mean_is_the_mean_of_clipped_terms(rows, eps):
    r, a = [x[0] for x in rows], [x[1] for x in rows]
    g = group_surrogate(r, a, eps)
    assert float(g.mean) == pytest.approx(sum(float(clipped_surrogate(x, y, eps)) for x, y in rows) / len(rows), abs=1e-12)


def test_loss_types_from_ratios_by_hand():
    # ratios all 1 and lengths 2 and 1: every term is −Â; grpo = −mean(Â) per response mean; bnpo weighs tokens
    out = loss_types_from_ratios([1.0, 1.0], [1.0, -1.0], [2, 1])
    assert float(out["grpo"][0]) == pytest.approx(0.0, abs=1e-15)  # (−1 + 1) / 2
    assert float(out["bnpo"][0]) == pytest.approx((-1 - 1 + 1) / 3, abs=1e-15)
    assert float(out["dapo"][0]) == pytest.approx((-1 - 1 + 1) / 3, abs=1e-15)
    assert float(out["dr_grpo"][0]) == pytest.approx((-1 - 1 + 1) / (2 * 2), abs=1e-15)
    big = loss_types_from_ratios([50.0, 1e-3], [1.0, -1.0], [1, 1], 0.2)  # log-probs stay valid for huge ratios
    assert float(big["grpo"][0]) == pytest.approx(-(1.2 - 0.8) / 2, abs=1e-12)


@pytest.mark.parametrize("args, name", [
    (([1.0, 0.0], [1.0, -1.0], [1, 1]), "ratios"), (([1.0, float("inf")], [1.0, -1.0], [1, 1]), "ratios"),
    (([1.0, 1.0], [1.0], [1, 1]), "advantages"), (([1.0, 1.0], [1.0, -1.0], [1]), "lengths"),
    (([1.0, 1.0], [1.0, -1.0], [1, 0]), "lengths"), (([1.0, 1.0], [1.0, -1.0], [1, 2.5]), "lengths"),
])
def test_loss_types_from_ratios_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        loss_types_from_ratios(*args)


def test_step_end_positions():
    assert step_end_positions([3, 4, 2]) == [2, 6, 8]
    assert step_end_positions([1]) == [0] and step_end_positions([2.0, 1]) == [1, 2]
    for bad in ([], [0], [1, -2], [1.5], [float("inf")], [True], ["2"]):
        with pytest.raises(ValueError, match="step_lengths"):
            step_end_positions(bad)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=10))
def test_step_end_positions_property(lengths):
    ends = step_end_positions(lengths)
    assert ends[-1] == sum(lengths) - 1 and all(b - a == n for a, b, n in zip([-1] + ends, ends, lengths))
