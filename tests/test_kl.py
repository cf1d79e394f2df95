import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.kl import entropy, entropy_from_logits, kl_divergence, kl_estimate


def pmf(n):
    return st.lists(st.floats(0.01, 10), min_size=n, max_size=n).map(lambda w: [x / sum(w) for x in w])


def test_kl_by_hand_and_conventions():
    assert kl_divergence([0.5, 0.5], [0.25, 0.75]).item() == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(2 / 3))
    assert kl_divergence([1.0, 0.0], [0.5, 0.5]).item() == pytest.approx(math.log(2))  # 0 log 0 = 0
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]).item() == math.inf  # support mismatch
    assert entropy([0.5, 0.5]).item() == pytest.approx(math.log(2))
    assert entropy([1.0, 0.0]).item() == 0.0


@settings(max_examples=100, deadline=None)
@given(pmf(4), pmf(4))
def test_kl_nonnegative_zero_iff_equal(p, q):
    assert kl_divergence(p, q).item() >= -1e-12
    assert kl_divergence(p, p).item() == pytest.approx(0.0, abs=1e-12)
    if max(abs(a - b) for a, b in zip(p, q)) > 1e-3:
        assert kl_divergence(p, q).item() > 0


def test_kl_bad_input():
    with pytest.raises(ValueError, match="p must sum"):
        kl_divergence([0.5, 0.6], [0.5, 0.5])
    with pytest.raises(ValueError, match="q must have entries"):
        kl_divergence([0.5, 0.5], [1.5, -0.5])
    with pytest.raises(ValueError, match="p.*q.*broadcast"):
        kl_divergence([0.5, 0.5], [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="kind"):
        kl_estimate(-1.0, -1.0, "k4")
    with pytest.raises(ValueError, match="logp"):
        kl_estimate(float("inf"), -1.0)


def test_kl_estimators_by_hand():
    lp, rlp = math.log(0.5), math.log(0.25)
    d = rlp - lp
    assert kl_estimate(lp, rlp, "k1").item() == pytest.approx(-d)
    assert kl_estimate(lp, rlp, "k2").item() == pytest.approx(d * d / 2)
    assert kl_estimate(lp, rlp, "k3").item() == pytest.approx(math.exp(d) - d - 1)


def test_k3_stable_near_zero_and_unbiased():
    lp = torch.tensor([-1.0], dtype=torch.float32)
    tiny = kl_estimate(lp, lp + 1e-6, "k3")
    assert tiny.item() >= 0 and tiny.item() == pytest.approx(0.5e-12, rel=0.05)
    assert kl_estimate(lp, lp, "k3").item() == 0.0
    # unbiased: E_{y~p}[k1] = E_{y~p}[k3] = KL(p || q)
    p = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    q = torch.tensor([0.4, 0.4, 0.2], dtype=torch.float64)
    kl = kl_divergence(p, q).item()
    assert (p * kl_estimate(p.log(), q.log(), "k1")).sum().item() == pytest.approx(kl)
    assert (p * kl_estimate(p.log(), q.log(), "k3")).sum().item() == pytest.approx(kl)


def test_entropy_from_logits():
    logits = torch.randn(3, 7)
    assert torch.allclose(entropy_from_logits(logits), entropy(torch.softmax(logits, -1).double()).float(), atol=1e-5)


def test_entropy_bad_input():
    with pytest.raises(ValueError, match="p must sum"):
        entropy([0.5, 0.6])
    with pytest.raises(ValueError, match="p must be a probability vector"):
        entropy(0.5)


# ---- Issue 10 §1: -inf logits, masks in kl_estimate, zero probabilities in gradients ----

def test_entropy_from_logits_with_minus_inf():
    logits = torch.tensor([[0.0, 0.0, float("-inf")]], requires_grad=True)
    H = entropy_from_logits(logits)
    assert H.item() == pytest.approx(math.log(2))  # used to be NaN (0 · −inf)
    H.sum().backward()
    assert torch.isfinite(logits.grad).all()
    assert entropy_from_logits([[1e4, 0.0]]).item() == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="logits"):
        entropy_from_logits([[float("-inf"), float("-inf")]])
    with pytest.raises(ValueError, match="logits"):
        entropy_from_logits([[float("inf"), 0.0]])


def test_kl_estimate_mask_ignores_fillers():
    for f in (0.0, -1e4, float("-inf"), float("nan")):
        lp = torch.tensor([-1.0, f], requires_grad=True)
        k = kl_estimate(lp, torch.tensor([-2.0, f]), "k3", mask=[True, False])
        k.sum().backward()
        assert k.tolist() == pytest.approx([math.exp(-1) + 1 - 1, 0.0])
        assert torch.isfinite(lp.grad).all() and lp.grad[1].item() == 0.0
    with pytest.raises(ValueError, match="logp must not contain NaN at active"):
        kl_estimate([float("nan")], [-1.0])
    with pytest.raises(ValueError, match="overflows"):
        kl_estimate(torch.tensor([-1e3]), torch.tensor([0.0]))


def test_kl_gradient_finite_at_zero_probabilities():
    p = torch.tensor([1.0, 0.0], requires_grad=True)
    kl_divergence(p, [0.5, 0.5]).backward()
    assert torch.isfinite(p.grad).all()
    q = torch.tensor([0.5, 0.5, 0.0], requires_grad=True)
    entropy(q).backward()
    assert torch.isfinite(q.grad).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.data())
def test_entropy_from_logits_with_minus_inf_equals_entropy_of_the_rest(V, data):
    """Property: −inf logits contribute 0·log 0 = 0; the entropy equals that of the renormalised finite part."""
    logits = data.draw(st.lists(st.floats(-30, 30), min_size=V, max_size=V))
    off = data.draw(st.lists(st.booleans(), min_size=V, max_size=V))
    off[0] = False
    x = torch.tensor([[float("-inf") if o else v for v, o in zip(logits, off)]], dtype=torch.float64)
    p = torch.softmax(torch.tensor([v for v, o in zip(logits, off) if not o], dtype=torch.float64), -1)
    assert entropy_from_logits(x).item() == pytest.approx(entropy(p).item(), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-20, 0), st.floats(-20, 0), st.booleans()), min_size=1, max_size=6))
def test_masked_k3_is_nonnegative_and_zero_where_masked(rows):
    lp = torch.tensor([r[0] for r in rows], dtype=torch.float64)
    rp = torch.tensor([r[1] for r in rows], dtype=torch.float64)
    m = torch.tensor([r[2] for r in rows])
    k = kl_estimate(torch.where(m, lp, float("nan")), rp, "k3", mask=m)
    assert bool((k >= 0).all()) and bool((k[~m] == 0).all())
