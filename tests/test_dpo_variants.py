"""Direct-alignment variants beside DPO: cDPO, robust DPO, hinge (SLiC), IPO, SimPO, ORPO's odds-ratio term."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import dpo

# The lab's own illustration (ftip-003S's numbers): ℓ(y⁺) = log 2, ℓ(y⁻) = −log 2, so Δ = 2 log 2; β = 0.5 gives βΔ = log 2.
LP = [math.log(0.6), math.log(0.2), math.log(0.3), math.log(0.4)]


def test_hand_values():
    # cDPO, ε = 0.1: −0.9 log(2/3) − 0.1 log(1/3)
    assert dpo.cdpo_loss(*LP, beta=0.5, label_smoothing=0.1).item() == pytest.approx(0.9 * math.log(1.5) + 0.1 * math.log(3))
    # robust DPO, ε = 0.1: (0.9 log 1.5 − 0.1 log 3) / 0.8
    assert dpo.robust_dpo_loss(*LP, beta=0.5, label_smoothing=0.1).item() == pytest.approx((0.9 * math.log(1.5) - 0.1 * math.log(3)) / 0.8)
    assert dpo.hinge_loss(*LP, beta=0.5).item() == pytest.approx(1 - math.log(2))
    assert dpo.ipo_loss(*LP, beta=0.5).item() == pytest.approx((2 * math.log(2) - 1) ** 2)
    # IPO with lengths 2 and 4: (log 2 / 2 + log 2 / 4 − 1)²
    assert dpo.ipo_loss(*[[x] for x in LP], beta=0.5, chosen_lengths=[2], rejected_lengths=[4]).item() == pytest.approx((0.75 * math.log(2) - 1) ** 2)
    # SimPO, β = 2, γ = 0.5: rewards 2·(−4/4) = −2 and 2·(−9/3) = −6, z = 3.5
    losses, rc, rr = dpo.simpo_loss([-4.0], [-9.0], [4], [3])
    assert (losses.item(), rc.item(), rr.item()) == pytest.approx((math.log1p(math.exp(-3.5)), -2.0, -6.0))
    # ORPO: odds(0.5) = 1, odds(0.2) = 1/4, log odds ratio = log 4, loss = −log σ(log 4) = log(5/4)
    loss, lor = dpo.orpo_odds_ratio_loss([math.log(0.5)], [math.log(0.2)], lam=1.0)
    assert (loss.item(), lor.item()) == pytest.approx((math.log(1.25), math.log(4)))


def test_zero_smoothing_is_dpo_and_minima_are_where_the_papers_put_them():
    sig = dpo.dpo_loss(*LP, beta=0.5)[0]
    assert torch.equal(dpo.cdpo_loss(*LP, beta=0.5), sig)
    assert torch.allclose(dpo.robust_dpo_loss(*LP, beta=0.5, label_smoothing=0.0), sig)
    # IPO is zero exactly at margin 1/(2τ); hinge is zero beyond 1/β
    tau = 0.25
    assert dpo.ipo_loss([0.0], [-1 / (2 * tau)], [0.0], [0.0], beta=tau).item() == pytest.approx(0.0, abs=1e-24)
    assert dpo.hinge_loss([0.0], [-20.0], [0.0], [0.0], beta=0.1).item() == 0.0
    # cDPO's minimum over the margin is at βΔ = log((1−ε)/ε), not at infinity
    z = torch.linspace(-5, 10, 30001, dtype=torch.float64)
    eps = 0.1
    zero = torch.zeros_like(z)
    loss = dpo.cdpo_loss(zero, -z.clamp(min=0), zero, z.clamp(max=0), beta=1.0, label_smoothing=eps)  # Δ = z
    assert z[loss.argmin()].item() == pytest.approx(math.log(9), abs=1e-3)


@given(st.floats(-50, 0), st.floats(-50, 0), st.floats(-50, 0), st.floats(-50, 0), st.floats(0.01, 5), st.floats(-30, 30))
@settings(max_examples=100, deadline=None)
def test_prompt_constant_invariance_and_finiteness(c, r, rc, rr, beta, shift):
    """Adding a constant to both reference log-probs (a prompt-only term) changes none of the reference-based losses."""
    shifted = [c, r, min(0.0, rc + shift), min(0.0, rr + shift)]
    if shifted[2] - rc != shifted[3] - rr:
        return  # the clamp at 0 broke the equal shift
    for fn in (dpo.cdpo_loss, dpo.robust_dpo_loss, dpo.hinge_loss, dpo.ipo_loss):
        kw = {"label_smoothing": 0.2} if fn in (dpo.cdpo_loss, dpo.robust_dpo_loss) else {}
        a = fn([c], [r], [rc], [rr], beta=beta, **kw)
        b = fn(*[[x] for x in shifted], beta=beta, **kw)
        assert torch.isfinite(a).all() and torch.allclose(a, b, rtol=1e-9, atol=1e-9)


def test_masked_style_extremes_stay_finite_and_grad_is_finite():
    c = torch.tensor([-1e4, -1e-12, -3.0], dtype=torch.float64, requires_grad=True)
    r = torch.tensor([-1e-12, -1e4, -3.0], dtype=torch.float64, requires_grad=True)
    zero = torch.zeros(3, dtype=torch.float64)
    for fn in (dpo.cdpo_loss, dpo.robust_dpo_loss, dpo.hinge_loss, dpo.ipo_loss):
        out = fn(c, r, zero, zero, beta=0.5)
        out.sum().backward()
        assert torch.isfinite(out).all() and torch.isfinite(c.grad).all() and torch.isfinite(r.grad).all()
        c.grad = r.grad = None
    losses, _, _ = dpo.simpo_loss(c, r, [1, 1, 1], [1, 1, 1])
    lo, _ = dpo.orpo_odds_ratio_loss(c, r)
    (losses.sum() + lo.sum()).backward()
    assert torch.isfinite(losses).all() and torch.isfinite(lo).all() and torch.isfinite(c.grad).all()


def test_ints_and_lists_are_accepted():
    assert dpo.ipo_loss([-1], [-2], [-1], [-1], beta=1.0, chosen_lengths=torch.tensor([1]), rejected_lengths=torch.tensor([1])).item() == pytest.approx(0.25)
    assert dpo.simpo_loss(torch.tensor([-4]), torch.tensor([-9]), [4], [3])[0].item() == pytest.approx(math.log1p(math.exp(-3.5)))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: dpo.cdpo_loss(*LP, label_smoothing=0.5), "label_smoothing"),
        (lambda: dpo.robust_dpo_loss(*LP, label_smoothing=-0.1), "label_smoothing"),
        (lambda: dpo.hinge_loss(*LP, beta=0), "beta"),
        (lambda: dpo.ipo_loss(*[[x] for x in LP], chosen_lengths=[2]), "chosen_lengths and rejected_lengths"),
        (lambda: dpo.ipo_loss(*[[x] for x in LP], chosen_lengths=[0], rejected_lengths=[1]), "chosen_lengths"),
        (lambda: dpo.ipo_loss(*[[x] for x in LP], chosen_lengths=[1.5], rejected_lengths=[1]), "chosen_lengths"),
        (lambda: dpo.ipo_loss(*LP, chosen_lengths=[1, 2], rejected_lengths=[1, 2]), "chosen_lengths"),
        (lambda: dpo.ipo_loss(0.5, *LP[1:]), "chosen_logps"),
        (lambda: dpo.simpo_loss([-1.0], [-1.0], [1], [1], gamma=-1), "gamma"),
        (lambda: dpo.simpo_loss([-1.0], [-1.0, -2.0], [1], [1]), "rejected_logps"),
        (lambda: dpo.simpo_loss([-1.0], [-1.0], [1, 2], [1]), "chosen_lengths"),
        (lambda: dpo.simpo_loss([float("nan")], [-1.0], [1], [1]), "chosen_logps"),
        (lambda: dpo.orpo_odds_ratio_loss([0.0], [-1.0]), "chosen_avg_logps"),
        (lambda: dpo.orpo_odds_ratio_loss([-1.0], [-1.0], lam=0), "lam"),
    ],
)
def test_bad_input_names_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("noise", [0.0, 1e-17, 1e-12, 1e-9])
def test_near_equal_pairs(noise):
    """Chosen and rejected nearly equal: every loss sits at its value for Δ = 0, finite, no NaN."""
    c, r = [-2.0 + noise], [-2.0]
    assert dpo.cdpo_loss(c, r, [-2.0], [-2.0], label_smoothing=0.1).item() == pytest.approx(math.log(2), abs=1e-8)
    assert dpo.ipo_loss(c, r, [-2.0], [-2.0], beta=0.5).item() == pytest.approx(1.0, abs=1e-8)
    assert dpo.hinge_loss(c, r, [-2.0], [-2.0]).item() == pytest.approx(1.0, abs=1e-8)
    assert dpo.orpo_odds_ratio_loss(c, r, lam=1.0)[0].item() == pytest.approx(math.log(2), abs=1e-8)
