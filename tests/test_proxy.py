"""lab.proxy: best-of-N KL and selection, Gao et al.'s functional forms, the synthetic over-optimization curve."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import proxy


def test_best_of_n_kl_hand_values():
    assert proxy.best_of_n_kl(1) == 0.0
    assert proxy.best_of_n_kl(2) == pytest.approx(math.log(2) - 0.5)  # 0.19315
    assert proxy.best_of_n_kl(64) == pytest.approx(math.log(64) - 63 / 64)  # 3.17451
    for bad in (0, -3, 2.0, True):
        with pytest.raises(ValueError, match="^n "):
            proxy.best_of_n_kl(bad)


@pytest.mark.parametrize("n", [2, 4, 16, 64])
def test_best_of_n_kl_matches_simulation(n):
    """Simulate best-of-N picks from M equally likely candidates, estimate the pick's distribution by counting,
    and compare its KL to the uniform starting policy with log N − (N−1)/N."""
    m, draws = 400, 400_000
    g = torch.Generator().manual_seed(n)
    scores = torch.randn(m, generator=g, dtype=torch.float64)
    picks = torch.randint(0, m, (draws, n), generator=g)  # (S, N) samples with replacement
    best = picks.gather(1, scores[picks].argmax(1, keepdim=True)).flatten()
    freq = torch.bincount(best, minlength=m).to(torch.float64) / draws
    kl_sim = (freq[freq > 0] * torch.log(freq[freq > 0] * m)).sum().item()
    assert kl_sim == pytest.approx(proxy.best_of_n_kl(n), abs=0.03)
    # the exact distribution over M candidates agrees with the counts
    exact = proxy.best_of_n_distribution(scores, n)
    assert torch.allclose(exact, freq, atol=4e-3)


def test_best_of_n_distribution_hand_values_and_ties():
    # 4 candidates, N = 2: P(rank j) = (j/4)² − ((j−1)/4)² = 1/16, 3/16, 5/16, 7/16
    w = proxy.best_of_n_distribution([0.3, 0.1, 0.9, 0.5], 2)
    assert w.tolist() == pytest.approx([3 / 16, 1 / 16, 7 / 16, 5 / 16])
    # two tied top candidates split the top block 1 − (2/4)² = 3/4 equally
    w = proxy.best_of_n_distribution([0.0, 0.1, 1.0, 1.0], 2)
    assert w.tolist() == pytest.approx([1 / 16, 3 / 16, 3 / 8, 3 / 8])
    # all equal (a constant proxy) leaves the policy unchanged, at any N
    assert proxy.best_of_n_distribution([0.2] * 5, 7).tolist() == pytest.approx([0.2] * 5)


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30), st.integers(1, 100))
@settings(max_examples=80, deadline=None)
def test_best_of_n_distribution_is_a_pmf_and_favours_higher_scores(scores, n):
    w = proxy.best_of_n_distribution(scores, n)
    assert w.sum().item() == pytest.approx(1.0, abs=1e-9) and bool((w >= 0).all())
    s = torch.tensor(scores, dtype=torch.float64)
    hi, lo = int(s.argmax()), int(s.argmin())
    assert w[hi] >= w[lo] - 1e-12


def test_best_of_n_curve_proxy_rises_and_exact_kl_is_below_analytic():
    e = proxy.synthetic_experiment(n_responses=500, seed=0)
    c = proxy.best_of_n_curve(e.proxy, e.gold, [1, 2, 4, 8, 16, 64, 256])
    assert c.proxy == sorted(c.proxy)
    assert c.kl_exact[0] == pytest.approx(0.0, abs=1e-12)
    assert all(x <= a + 1e-12 for x, a in zip(c.kl_exact, c.kl))
    # a proxy that pays for the nuisance feature: the gold score of the pick stops improving, then falls
    peak = max(range(len(c.gold)), key=c.gold.__getitem__)
    assert 0 < peak < len(c.gold) - 1 and c.gold[-1] < c.gold[peak] - 0.1


@pytest.mark.parametrize("form, alpha, beta", [("bon", 1.2, 0.3), ("rl", 0.8, 0.25), ("bon", -0.5, 0.1)])
def test_fit_gao_recovers_known_parameters(form, alpha, beta):
    d = torch.linspace(0, 4, 30, dtype=torch.float64)
    y = proxy.gao_gold_score(d, alpha, beta, form)
    a, b = proxy.fit_gao(d, y, form)
    assert (a, b) == pytest.approx((alpha, beta), abs=1e-9)
    noisy = y + 0.01 * torch.randn(30, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    a, b = proxy.fit_gao(d, noisy, form)
    assert (a, b) == pytest.approx((alpha, beta), abs=0.05)


def test_gao_forms_hand_values():
    assert proxy.gao_gold_score([0.0, 1.0, 2.0], 1.0, 0.25, "bon").tolist() == pytest.approx([0.0, 0.75, 1.0])
    # rl: d(α − β log d): at d = e, e(1 − 0.25) ; at d = 0, 0 (limit)
    assert proxy.gao_gold_score([0.0, math.e], 1.0, 0.25, "rl").tolist() == pytest.approx([0.0, math.e * 0.75])
    assert proxy.gao_gold_score(torch.tensor([0, 1]), 1.0, 0.5).tolist() == [0.0, 0.5]  # ints accepted


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: proxy.gao_gold_score([-1.0], 1, 1), "d "),
        (lambda: proxy.gao_gold_score([1.0], 1, 1, "ppo"), "form"),
        (lambda: proxy.gao_gold_score([1.0], float("nan"), 1), "alpha"),
        (lambda: proxy.fit_gao([0, 1], [0, 1]), "at least two"),
        (lambda: proxy.fit_gao([1, 1, 1], [0.5, 0.5, 0.5]), "distinct"),
        (lambda: proxy.fit_gao([1, 2], [1]), "d and gold"),
        (lambda: proxy.best_of_n_curve([1, 2], [1], [1]), "proxy and gold"),
        (lambda: proxy.best_of_n_curve([1, 2], [1, 2], []), "ns"),
        (lambda: proxy.best_of_n_curve([1, float("nan")], [1, 2], [2]), "proxy"),
        (lambda: proxy.overoptimization_curve([0.5, 0.5], [1, 2], [1, 2], [0]), "strengths"),
        (lambda: proxy.overoptimization_curve([0.5, 0.6], [1, 2], [1, 2], [1]), "init_probs"),
        (lambda: proxy.overoptimization_curve([1.0], [1, 2], [1, 2], [1]), "init_probs, proxy and gold"),
        (lambda: proxy.synthetic_experiment(n_responses=1), "n_responses"),
        (lambda: proxy.synthetic_experiment(bias=float("inf")), "bias"),
        (lambda: proxy.length_drift([1, 2, 3], [2, 2, 2]), "length_difference"),
        (lambda: proxy.length_drift([1], [2]), "margin"),
    ],
)
def test_bad_input_names_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("seed", range(5))
def test_synthetic_experiment_proxy_rises_while_gold_peaks_and_falls(seed):
    c = proxy.synthetic_experiment(seed=seed).curve
    assert c.proxy == sorted(c.proxy)  # optimizing harder never lowers the proxy
    assert c.kl == sorted(c.kl)
    peak = c.peak_index
    assert 0 < peak < len(c.gold) - 1
    # measured seeds 0–9: the gold drop after the peak is 1.02–2.78; demand a margin well below the worst
    assert c.gold[peak] - c.gold[-1] > 0.5
    assert c.gold[peak] > c.gold[0] + 0.2


def test_no_bias_means_no_overoptimization():
    c = proxy.synthetic_experiment(bias=-0.5, harm=0.5, seed=0).curve  # proxy == gold
    assert c.gold == pytest.approx(c.proxy) and c.gold == sorted(c.gold)


def test_length_drift_hand_values_and_constant_margin():
    r = proxy.length_drift([1.0, 2.0, 3.0], [0, 10, 20])
    assert (r.slope, r.intercept, r.correlation) == pytest.approx((0.1, 1.0, 1.0))
    r = proxy.length_drift([0.3 + 1e-17, 0.3, 0.3], [1, 2, 3])  # near-constant margin: slope ~0, no NaN slope
    assert abs(r.slope) < 1e-15 and math.isfinite(r.intercept)


def test_curve_helpers_used_by_the_page():
    e = proxy.synthetic_experiment(n_responses=300, seed=1)
    one = e.at(e.curve.strength[3])
    assert one.gold == pytest.approx([e.curve.gold[3]]) and one.d == pytest.approx([e.curve.d[3]])
    alpha, beta, fitted = e.curve.gao_fit("rl")
    expect = [e.curve.gold[0] + v for v in proxy.gao_gold_score(e.curve.d, alpha, beta, "rl").tolist()]
    assert fitted == pytest.approx(expect) and len(fitted) == len(e.curve.gold)
    bon = proxy.best_of_n_curve(e.proxy, e.gold, [1, 4])
    assert bon.d == pytest.approx([0.0, math.sqrt(math.log(4) - 0.75)])
    # a score that is exactly linear in the feature: the paired drift recovers its pay per unit of feature
    assert proxy.paired_length_drift(0.5 * e.feature, e.feature).slope == pytest.approx(0.5)
    # proxy and gold differ by (bias + harm) · feature, so their slopes differ by exactly 1.0
    gap = proxy.paired_length_drift(e.proxy, e.feature).slope - proxy.paired_length_drift(e.gold, e.feature).slope
    assert gap == pytest.approx(1.0)
    with pytest.raises(ValueError, match="scores and feature"):
        proxy.paired_length_drift([1, 2, 3, 4], [1, 2])
    with pytest.raises(ValueError, match="scores must hold"):
        proxy.paired_length_drift([1, 2, 3], [1, 2, 3])
