"""lab.evaluation: paired bootstrap, pass@k, selective answering, MDE, retention, bounded claims."""

import itertools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import evaluation as ev


# ---- pass@k -------------------------------------------------------------------------------------------
def _pass_at_k_by_subsets(n: int, c: int, k: int) -> float:
    """The combinatorial definition: the fraction of k-subsets of n samples holding a correct one."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_equals_subset_enumeration(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert ev.pass_at_k(n, c, k) == pytest.approx(_pass_at_k_by_subsets(n, c, k), abs=1e-12)


def test_pass_at_k_hand_values_and_large_n():
    assert ev.pass_at_k(10, 3, 2) == pytest.approx(1 - math.comb(7, 2) / math.comb(10, 2))  # 1 − 21/45 = 0.5333
    assert ev.pass_at_k(10, 0, 5) == 0.0
    assert ev.pass_at_k(5, 5, 1) == 1.0
    assert ev.pass_at_k(20, 1, 1) == pytest.approx(0.05)
    # large n: C(10000, 100) overflows a float, the product form does not
    v = ev.pass_at_k(10_000, 37, 100)
    assert math.isfinite(v) and 0 < v < 1
    assert v == pytest.approx(1 - math.exp(math.lgamma(10_000 - 37 + 1) - math.lgamma(10_000 - 37 - 100 + 1)
                                           - math.lgamma(10_000 + 1) + math.lgamma(10_000 - 100 + 1)), rel=1e-9)


@given(st.integers(1, 60), st.data())
@settings(max_examples=80, deadline=None)
def test_pass_at_k_monotone_in_k_and_c(n, data):
    c = data.draw(st.integers(0, n))
    ks = [ev.pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(0 <= x <= 1 for x in ks) and all(a <= b + 1e-12 for a, b in zip(ks, ks[1:]))
    if c < n:
        assert ev.pass_at_k(n, c, 1) <= ev.pass_at_k(n, c + 1, 1) + 1e-12
    assert ev.pass_at_k(n, c, 1) == pytest.approx(c / n)


@pytest.mark.parametrize(
    "args, name", [((0, 0, 1), "n"), ((5, 6, 1), "c"), ((5, -1, 1), "c"), ((5, 2, 6), "k"), ((5, 2, 0), "k"),
                   ((5.0, 2, 1), "n"), ((True, 1, 1), "n"), ((5, 2, 1.5), "k")],
)
def test_pass_at_k_bad_input_names_argument(args, name):
    with pytest.raises(ValueError, match=rf"^{name} "):
        ev.pass_at_k(*args)


# ---- paired bootstrap ----------------------------------------------------------------------------------
def test_paired_bootstrap_hand_values():
    # every case improves by exactly 1: every resample has mean difference 1
    r = ev.paired_bootstrap([0, 1, 2, 3], [1, 2, 3, 4], n_resamples=500)
    assert (r.mean_difference, r.low, r.high) == (1.0, 1.0, 1.0) and r.excludes_zero
    # identical checkpoints: a zero-width interval at 0, which does not exclude 0
    r = ev.paired_bootstrap([0.3] * 5, [0.3] * 5, n_resamples=500)
    assert (r.low, r.high) == (0.0, 0.0) and not r.excludes_zero
    r = ev.paired_bootstrap([0, 1, 1, 0, 1], [1, 1, 1, 0, 1], n_resamples=2000, seed=3)
    assert r.mean_difference == pytest.approx(0.2) and 0.0 <= r.low <= 0.2 <= r.high <= 0.6 + 1e-12


def test_paired_bootstrap_is_deterministic_and_accepts_bools_and_ints():
    a, b = [True, False, True, False], [1, 1, 1, 0]
    assert ev.paired_bootstrap(a, b, seed=7) == ev.paired_bootstrap(a, b, seed=7)
    assert ev.paired_bootstrap(torch.tensor(a), torch.tensor(b)).mean_difference == pytest.approx(0.25)


def test_pairing_beats_separate_intervals_when_difficulty_is_shared():
    g = torch.Generator().manual_seed(0)
    difficulty = torch.randn(200, generator=g, dtype=torch.float64) * 3  # shared per-case difficulty
    a = difficulty + 0.1 * torch.randn(200, generator=g, dtype=torch.float64)
    b = difficulty + 0.3 + 0.1 * torch.randn(200, generator=g, dtype=torch.float64)
    paired = ev.paired_bootstrap(a, b, n_resamples=2000)
    ia, ib = ev.mean_interval(a, n_resamples=2000), ev.mean_interval(b, n_resamples=2000)
    assert paired.excludes_zero and paired.low > 0.2
    assert ia.high > ib.low  # the separate intervals overlap: they alone cannot show the gain
    assert (paired.high - paired.low) < 0.2 * (ia.high - ia.low)


def test_paired_bootstrap_coverage_is_about_95_percent():
    """200 simulated studies with a known true difference 0.1: the 95% interval covers it about 95% of the time."""
    g = torch.Generator().manual_seed(1)
    covered = 0
    for study in range(200):
        a = torch.randn(60, generator=g, dtype=torch.float64)
        b = a + 0.1 + 0.5 * torch.randn(60, generator=g, dtype=torch.float64)
        r = ev.paired_bootstrap(a, b, n_resamples=1000, seed=study)
        covered += r.low <= 0.1 <= r.high
    # percentile intervals under-cover slightly at n = 60; binomial sd at p = .95, 200 studies is 1.5 points
    assert 0.88 <= covered / 200 <= 0.99, covered


def test_cluster_bootstrap_widens_for_correlated_cases():
    g = torch.Generator().manual_seed(2)
    cluster_effect = torch.randn(10, generator=g, dtype=torch.float64).repeat_interleave(20)  # 10 docs × 20 questions
    a = torch.zeros(200, dtype=torch.float64)
    b = 0.2 + cluster_effect + 0.05 * torch.randn(200, generator=g, dtype=torch.float64)
    labels = [i // 20 for i in range(200)]
    plain = ev.paired_bootstrap(a, b, n_resamples=2000)
    clustered = ev.paired_bootstrap(a, b, n_resamples=2000, cluster=labels)
    assert clustered.n_units == 10 and plain.n_units == 200
    assert clustered.mean_difference == pytest.approx(plain.mean_difference)
    assert (clustered.high - clustered.low) > 2 * (plain.high - plain.low)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(a=[1, 2], b=[1, 2, 3]), "a and b"),
        (dict(a=[], b=[]), "a "),
        (dict(a=[1, float("nan")], b=[1, 2]), "a "),
        (dict(a=[1, 2], b=[1, float("inf")]), "b "),
        (dict(a=[1, 2], b=[1, 2], confidence=1.0), "confidence"),
        (dict(a=[1, 2], b=[1, 2], confidence=0), "confidence"),
        (dict(a=[1, 2], b=[1, 2], n_resamples=10), "n_resamples"),
        (dict(a=[1, 2], b=[1, 2], cluster=[0]), "cluster"),
        (dict(a=[[1, 2]], b=[[1, 2]]), "a "),
        (dict(a=["x"], b=[1]), "a "),
    ],
)
def test_paired_bootstrap_bad_input_names_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ev.paired_bootstrap(**kwargs)


# ---- selective answering, MDE, retention, bounded claim ------------------------------------------------
def test_selective_metrics_hand_values():
    correct = [1, 0, 1, 1, 0, 0]
    answered = [1, 1, 1, 0, 0, 0]
    m = ev.selective_metrics(correct, answered, confidence=[0.9, 0.2, 0.6, 0.99, 0.1, 0.5])
    assert m.coverage == pytest.approx(0.5)
    assert m.selective_accuracy == pytest.approx(2 / 3)
    assert m.overall_accuracy == pytest.approx(2 / 6)
    assert m.thresholds == [0.9, 0.6, 0.2]
    assert m.curve_coverage == pytest.approx([1 / 6, 2 / 6, 3 / 6])
    assert m.curve_risk == pytest.approx([0.0, 0.0, 1 / 3])


def test_selective_metrics_nothing_answered_is_nan_not_zero():
    m = ev.selective_metrics([1, 0], [False, False])
    assert m.coverage == 0 and math.isnan(m.selective_accuracy) and m.overall_accuracy == 0


@pytest.mark.parametrize(
    "args, name",
    [(([1, 2], [1, 0]), "correct"), (([1, 0], [0.5, 1]), "answered"), (([1, 0], [1]), "correct and answered"),
     (([1, 0], [1, 1], [0.3]), "confidence"), (([], []), "correct")],
)
def test_selective_metrics_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        ev.selective_metrics(*args)


def test_minimum_detectable_effect_hand_value_and_scaling():
    # (1.959964 + 0.841621) · 1 / √100 = 0.280159
    assert ev.minimum_detectable_effect(100, 1.0) == pytest.approx(0.2801585, abs=1e-6)
    assert ev.minimum_detectable_effect(400, 1.0) == pytest.approx(ev.minimum_detectable_effect(100, 1.0) / 2)
    assert ev.minimum_detectable_effect(50, 0.0) == 0.0
    for kwargs, name in [(dict(n=1, sd_diff=1), "n"), (dict(n=10, sd_diff=-1), "sd_diff"),
                         (dict(n=10, sd_diff=float("nan")), "sd_diff"), (dict(n=10, sd_diff=1, alpha=0), "alpha"),
                         (dict(n=10, sd_diff=1, power=1), "power")]:
        with pytest.raises(ValueError, match=name):
            ev.minimum_detectable_effect(**kwargs)


def test_retention_hand_values():
    r = ev.retention([1, 1, 0, 1], [1, 0, 0, 1])
    assert (r.before, r.after, r.change, r.retained_fraction) == pytest.approx((0.75, 0.5, -0.25, 2 / 3))
    assert math.isnan(ev.retention([0, 0], [0, 1]).retained_fraction)
    with pytest.raises(ValueError, match="before and after"):
        ev.retention([1, 0], [1])


def test_bounded_claim_takes_only_measured_values():
    iv = ev.paired_bootstrap([0, 0, 1, 0], [1, 0, 1, 1], n_resamples=500)
    text = ev.bounded_claim("ckpt-b", "ckpt-a", "exact match", iv, "held-out reversal prompts",
                            "greedy decoding, 8 new tokens", "sorting", None, "harmful compliance")
    assert "+0.500" in text and "4 independent cases" in text and "not measured" in text
    with pytest.raises(ValueError, match="population"):
        ev.bounded_claim("b", "a", "m", iv, " ", "c", "o", None, "e")
    with pytest.raises(ValueError, match="interval"):
        ev.bounded_claim("b", "a", "m", 0.5, "p", "c", "o", None, "e")


@pytest.mark.parametrize("noise", [0.0, 1e-17, 1e-12, 1e-9])
def test_near_degenerate_scores_give_finite_intervals(noise):
    a = torch.full((30,), 0.5, dtype=torch.float64)
    b = a + noise * torch.arange(30, dtype=torch.float64)
    r = ev.paired_bootstrap(a, b, n_resamples=200)
    assert all(math.isfinite(x) for x in (r.mean_difference, r.low, r.high))
    assert r.low <= r.mean_difference + 1e-15 and r.mean_difference <= r.high + 1e-15
    assert ev.retention(a, b).change == pytest.approx(noise * 14.5, abs=1e-15)


# ---- pass@k curve, CSV tables, the synthetic comparison, the abstaining variant ------------------------
def test_pass_at_k_curve_hand_values_and_auto_ks():
    curve = ev.pass_at_k_curve([4, 4], [1, 4], ks=[1, 2], n_resamples=500)
    # case 1: pass@1 = 1/4, pass@2 = 1 − C(3,2)/C(4,2) = 1/2; case 2: always 1
    assert curve.mean == pytest.approx([(0.25 + 1) / 2, (0.5 + 1) / 2])
    assert all(lo <= m <= hi for lo, m, hi in zip(curve.low, curve.mean, curve.high))
    assert curve.above == pytest.approx([h - m for h, m in zip(curve.high, curve.mean)])
    assert ev.pass_at_k_curve([10, 12], [3, 0], n_resamples=200).k == [1, 2, 3, 5, 10]
    for args, name in [(([4], [5]), "c must lie"), (([4, 4], [1]), "n and c"), (([4.5], [1]), "whole numbers"),
                       (([4], [1], [5]), "ks"), (([4], [1], []), "ks")]:
        with pytest.raises(ValueError, match=name):
            ev.pass_at_k_curve(*args)


def test_read_score_table_parses_and_names_bad_cells():
    t = ev.read_score_table("baseline,candidate,cluster\n1,0,a\ntrue,no,b\n\n0.5, 1 ,a\n")
    assert t == {"baseline": [1.0, 1.0, 0.5], "candidate": [0.0, 0.0, 1.0], "cluster": ["a", "b", "a"]}
    for text, msg in [("a,b\n1,x\n", "row 2, column 'b'"), ("a,b\n1,nan\n", "not finite"), ("a,b\n1\n", "row 2 has 1 cells"),
                      ("a,a\n1,2\n", "header"), ("a,b\n", "at least one case"), ("", "header row")]:
        with pytest.raises(ValueError, match=msg):
            ev.read_score_table(text)
    with pytest.raises(ValueError, match="at most 3"):
        ev.read_score_table("a\n1\n2\n3\n4\n", max_rows=3)
    with pytest.raises(ValueError, match="text must be CSV"):
        ev.read_score_table(b"a\n1\n")


def test_synthetic_comparison_shows_why_pairing_matters():
    d = ev.synthetic_comparison()
    paired = ev.paired_bootstrap(d["baseline"], d["candidate"])
    a, b = ev.mean_interval(d["baseline"]), ev.mean_interval(d["candidate"])
    assert paired.excludes_zero and a.high > b.low  # separate intervals overlap, the paired one excludes 0
    assert ev.synthetic_comparison(seed=3) == ev.synthetic_comparison(seed=3)
    assert set(d) == {"baseline", "candidate", "n", "c_baseline", "c_candidate", "confidence", "old_before", "old_after", "cluster"}
    assert ev.retention(d["old_before"], d["old_after"]).change < 0
    for kwargs, name in [(dict(n_cases=1), "n_cases"), (dict(samples=0), "samples"), (dict(gain=2), "gain")]:
        with pytest.raises(ValueError, match=name):
            ev.synthetic_comparison(**kwargs)


def test_abstain_below():
    assert ev.abstain_below([0.1, 0.5, 0.9], 0.5).tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="threshold"):
        ev.abstain_below([0.1], float("nan"))
