import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.dpo import (
    dpo_gradient_weight,
    dpo_loss,
    dpo_metrics,
    log_partition,
    optimal_policy,
    preference_probability,
    reward_from_policy,
)
from lab.kl import kl_divergence

lp = st.floats(-20, -0.01)


def test_optimal_policy_by_hand_and_reward_roundtrip():
    ref = [0.5, 0.25, 0.25]
    r = [0.0, 1.0, 0.0]
    pi = optimal_policy(ref, r, beta=1.0)
    Z = 0.5 + 0.25 * math.e + 0.25
    assert pi.tolist() == pytest.approx([0.5 / Z, 0.25 * math.e / Z, 0.25 / Z])
    logZ = log_partition(ref, r, 1.0)
    assert logZ.item() == pytest.approx(math.log(Z))
    assert reward_from_policy(pi, ref, 1.0, logZ).tolist() == pytest.approx(r)
    # zero reference mass stays zero: the optimum never leaves the reference's support
    assert optimal_policy([1.0, 0.0], [0.0, 100.0], 0.1)[1].item() == 0.0


def test_beta_trades_reward_for_kl():
    ref, r = torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.0, 1.0, 2.0])
    kls = [kl_divergence(optimal_policy(ref, r, b), ref).item() for b in (0.1, 1.0, 10.0)]
    assert kls[0] > kls[1] > kls[2] > 0


def test_dpo_by_hand():
    losses, rc, rr = dpo_loss(math.log(0.6), math.log(0.2), math.log(0.3), math.log(0.4), beta=0.5)
    assert (rc - rr).item() == pytest.approx(math.log(2))
    assert losses.item() == pytest.approx(math.log(1.5))
    assert preference_probability(math.log(0.6), math.log(0.2), math.log(0.3), math.log(0.4), 0.5).item() == pytest.approx(2 / 3)
    assert dpo_gradient_weight(math.log(0.6), math.log(0.2), math.log(0.3), math.log(0.4), 0.5).item() == pytest.approx(1 / 3)
    m = dpo_metrics(torch.tensor([1.0, -1.0]), torch.tensor([0.0, 0.0]))
    assert m == {"rewards/chosen": 0.0, "rewards/rejected": 0.0, "rewards/margins": 0.0, "rewards/accuracies": 0.5}


@settings(max_examples=100, deadline=None)
@given(lp, lp, lp, lp, st.floats(-5, 5), st.floats(0.01, 5))
def test_dpo_invariant_to_prompt_constant(c, r, rc, rr, k, beta):
    """Adding one prompt-only constant k to both implicit rewards (βℓ⁺ + k, βℓ⁻ + k) leaves the loss unchanged;
    e.g. shifting both reference log-probs by the same amount."""
    base, _, _ = dpo_loss(c, r, rc, rr, beta)
    shift = abs(k) + 1.0  # lowering both reference log-probs raises both implicit rewards by beta*shift
    shifted, _, _ = dpo_loss(c, r, rc - shift, rr - shift, beta)
    assert shifted.item() == pytest.approx(base.item(), rel=1e-6, abs=1e-9)


def test_dpo_extreme_margin_finite_and_gradient():
    c = torch.tensor([-1.0, -300.0], dtype=torch.float64, requires_grad=True)
    losses, _, _ = dpo_loss(c, torch.tensor([-300.0, -1.0], dtype=torch.float64), torch.tensor([-1.0, -1.0]).double(),
                            torch.tensor([-1.0, -1.0]).double(), beta=1.0)
    assert torch.isfinite(losses).all() and losses[1].item() == pytest.approx(299.0)
    losses.sum().backward()
    assert c.grad[1].item() == pytest.approx(-1.0)  # sigma(-beta*Delta) -> 1: full push on the wrong pair


def test_dpo_bad_input():
    with pytest.raises(ValueError, match="beta"):
        dpo_loss(-1.0, -1.0, -1.0, -1.0, beta=0.0)
    with pytest.raises(ValueError, match="beta"):
        optimal_policy([1.0], [0.0], beta=-1.0)
    with pytest.raises(ValueError, match="rejected_logps"):
        dpo_loss([-1.0, -1.0], [-1.0], [-1.0, -1.0], [-1.0, -1.0])
    with pytest.raises(ValueError, match="chosen_logps"):
        dpo_loss(0.5, -1.0, -1.0, -1.0)
    with pytest.raises(ValueError, match="policy_probs"):
        reward_from_policy(0.0, 0.5, 1.0)
    with pytest.raises(ValueError, match="ref_probs"):
        reward_from_policy(0.5, 1.5, 1.0)
    with pytest.raises(ValueError, match="ref_probs"):
        optimal_policy([0.5, 0.6], [0.0, 0.0], 1.0)


def test_preference_probability_and_partition_bad_input():
    with pytest.raises(ValueError, match="ref_rejected_logps"):
        preference_probability(-1.0, -1.0, -1.0, 0.2, beta=1.0)
    with pytest.raises(ValueError, match="beta"):
        preference_probability(-1.0, -1.0, -1.0, -1.0, beta=-0.5)
    with pytest.raises(ValueError, match="beta"):
        log_partition([1.0], [0.0], beta=0.0)
    with pytest.raises(ValueError, match="beta"):
        dpo_gradient_weight(-1.0, -1.0, -1.0, -1.0, beta=0.0)
