"""lab.kl.kl_estimators: per-response k1/k2/k3 and their exact expectations under the policy (issue 13, KL page)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.kl import kl_divergence, kl_estimate, kl_estimators


def test_hand_values_two_outcomes():
    # π = (0.2, 0.8), π_ref = (0.4, 0.6): sampling y1 gives k1 = log 0.5 < 0
    est = kl_estimators([0.2, 0.8], [0.4, 0.6])
    k1 = [math.log(0.2 / 0.4), math.log(0.8 / 0.6)]
    assert est.values[0].tolist() == pytest.approx(k1, abs=1e-15)
    assert est.values[1].tolist() == pytest.approx([x * x / 2 for x in k1], abs=1e-15)
    assert est.values[2].tolist() == pytest.approx([(0.4 / 0.2 - 1) - math.log(2.0), (0.6 / 0.8 - 1) - math.log(0.75)], abs=1e-15)
    kl = 0.2 * math.log(0.5) + 0.8 * math.log(0.8 / 0.6)
    assert est.means[0].item() == pytest.approx(kl, abs=1e-15)
    assert est.means[2].item() == pytest.approx(kl, abs=1e-15)  # π_ref ≪ π here: k3 unbiased too


def test_k3_misses_reference_mass_outside_the_policy():
    # π = (1, 0), π_ref = (0.5, 0.5): KL = log 2, E[k3] = log 2 − 0.5 (π never samples the second response)
    est = kl_estimators([1.0, 0.0], [0.5, 0.5])
    assert est.means.tolist() == pytest.approx([math.log(2), math.log(2) ** 2 / 2, math.log(2) - 0.5], abs=1e-15)
    assert est.values[:, 1].tolist() == [0.0, 0.0, 0.0]


def test_support_mismatch_is_inf():
    est = kl_estimators([0.5, 0.5], [1.0, 0.0])
    assert est.means.tolist() == [math.inf] * 3
    assert est.values[:, 1].tolist() == [math.inf] * 3
    assert est.values[0, 0].item() == pytest.approx(math.log(0.5))


def test_equal_distributions_give_zero_and_near_equal_stay_finite():
    assert kl_estimators([0.25] * 4, [0.25] * 4).means.tolist() == [0.0, 0.0, 0.0]
    for noise in (1e-17, 1e-15, 1e-12, 1e-9):
        est = kl_estimators([0.5 + noise, 0.5 - noise], [0.5, 0.5])
        assert torch.isfinite(est.means).all() and est.means.abs().max().item() < 1e-8


def test_ints_and_batches():
    est = kl_estimators([1, 0], [1, 0])
    assert est.means.dtype == torch.float64 and est.means.tolist() == [0.0, 0.0, 0.0]
    batch = kl_estimators([[0.3, 0.7], [0.6, 0.4]], [0.5, 0.5])
    assert batch.values.shape == (2, 3, 2) and batch.means.shape == (2, 3)
    assert batch.means[1].tolist() == pytest.approx(kl_estimators([0.6, 0.4], [0.5, 0.5]).means.tolist())


@pytest.mark.parametrize("kwargs,name", [
    ({"policy": [0.6, 0.6], "ref_probs": [0.5, 0.5]}, "policy"),
    ({"policy": [0.5, 0.5], "ref_probs": [1.5, -0.5]}, "ref_probs"),
    ({"policy": [0.5, 0.5], "ref_probs": [0.2, 0.3, 0.5]}, "policy"),
    ({"policy": [math.nan, 1.0], "ref_probs": [0.5, 0.5]}, "policy"),
    ({"policy": 1.0, "ref_probs": 1.0}, "policy"),
])
def test_bad_input_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        kl_estimators(**kwargs)


def _pmf(raw):
    t = torch.tensor(raw, dtype=torch.float64)
    return (t / t.sum()).tolist()


pmfs = st.lists(st.floats(0.01, 1.0), min_size=2, max_size=6)


@settings(max_examples=60, deadline=None)
@given(pmfs, st.data())
def test_properties(p_raw, data):
    p = _pmf(p_raw)
    q = _pmf(data.draw(st.lists(st.floats(0.01, 1.0), min_size=len(p), max_size=len(p))))
    est = kl_estimators(p, q)
    kl = kl_divergence(p, q).item()
    assert est.means[0].item() == pytest.approx(kl, abs=1e-12)  # k1 unbiased
    assert est.means[2].item() == pytest.approx(kl, abs=1e-12)  # k3 unbiased when supports agree
    assert (est.values[1:] >= 0).all()  # k2, k3 never negative
    # each value is kl_estimate's per-token value for that sample
    lp, lq = torch.tensor(p, dtype=torch.float64).log(), torch.tensor(q, dtype=torch.float64).log()
    for row, kind in zip(est.values, ("k1", "k2", "k3")):
        assert row.tolist() == pytest.approx(kl_estimate(lp, lq, kind).tolist(), abs=1e-12)
    # k1 is negative exactly where π makes the response rarer than π_ref
    for v, a, b in zip(est.values[0].tolist(), p, q):
        if abs(a - b) > 1e-9:
            assert (v < 0) == (a < b)
