import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.preference import (
    Comparison,
    Observation,
    bradley_terry_probability,
    find_preference_cycle,
    fit_bradley_terry,
    reward_model_loss,
    to_observations,
)

floats = st.floats(-30, 30, allow_nan=False)


def test_bradley_terry_by_hand():
    assert bradley_terry_probability(2.0, 0.5).item() == pytest.approx(math.exp(2) / (math.exp(2) + math.exp(0.5)))
    assert bradley_terry_probability(1.0, 1.0).item() == 0.5


@settings(max_examples=100, deadline=None)
@given(floats, floats, floats)
def test_bradley_terry_offset_invariance(a, b, c):
    p = bradley_terry_probability(a, b).item()
    assert bradley_terry_probability(a + c, b + c).item() == pytest.approx(p, abs=1e-9)
    assert bradley_terry_probability(b, a).item() == pytest.approx(1 - p, abs=1e-9)


def test_reward_model_loss_by_hand():
    loss = reward_model_loss([2.0, 0.0], [0.5, 1.0])
    expected = 0.5 * (-math.log(1 / (1 + math.exp(-1.5))) - math.log(1 / (1 + math.exp(1.0))))
    assert loss.item() == pytest.approx(expected)
    with_margin = reward_model_loss([2.0], [0.5], margin=[1.0])
    assert with_margin.item() == pytest.approx(-math.log(1 / (1 + math.exp(-0.5))))


def test_reward_model_loss_extreme_is_finite():
    assert torch.isfinite(reward_model_loss([-500.0], [500.0]))
    assert reward_model_loss([-500.0], [500.0]).item() == pytest.approx(1000.0)


def test_reward_model_loss_bad_shapes():
    with pytest.raises(ValueError, match="r_chosen.*r_rejected"):
        reward_model_loss([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="margin"):
        reward_model_loss([1.0, 2.0], [1.0, 2.0], margin=[1.0, 2.0, 3.0])


def test_outcomes_policies():
    cs = [
        Comparison("x", "A", "B", "j1", "a"),
        Comparison("x", "A", "B", "j2", "b"),
        Comparison("x", "A", "C", "j1", "tie"),
        Comparison("x", "B", "C", "j1", "abstain"),
        Comparison("x", "B", "C", "j3", "invalid"),
    ]
    with pytest.raises(ValueError, match="tie"):
        to_observations(cs)
    with pytest.raises(ValueError, match="abstention"):
        to_observations(cs, ties="drop")
    with pytest.raises(ValueError, match="invalid"):
        to_observations(cs, ties="drop", abstentions="drop")
    obs = to_observations(cs, ties="split", abstentions="drop", invalid="drop")
    assert [(o.chosen, o.rejected, o.weight) for o in obs] == [("A", "B", 1.0), ("B", "A", 1.0), ("A", "C", 0.5), ("C", "A", 0.5)]
    with pytest.raises(ValueError, match="outcome"):
        Comparison("x", "A", "B", "j", "draw")
    with pytest.raises(ValueError, match="ties"):
        to_observations(cs, ties="coin")


def test_fit_bradley_terry_recovers_known_scores():
    # 3 wins of A over B out of 4 and 3 of B over C out of 4: MLE differences are log 3.
    obs = []
    for w, l, n in [("A", "B", 3), ("B", "A", 1), ("B", "C", 3), ("C", "B", 1)]:
        obs += [Observation("x", w, l, "j")] * n
    s = fit_bradley_terry(obs)
    assert s["A"] - s["B"] == pytest.approx(math.log(3), abs=1e-8)
    assert s["B"] - s["C"] == pytest.approx(math.log(3), abs=1e-8)
    assert sum(s.values()) == pytest.approx(0.0, abs=1e-10)
    anchored = fit_bradley_terry(obs, normalization="anchor", anchor="C")
    assert anchored["C"] == 0.0 and anchored["A"] == pytest.approx(2 * math.log(3), abs=1e-8)


def test_fit_bradley_terry_separable_needs_declared_prior():
    obs = [Observation("x", "A", "B", "j")]
    with pytest.raises(ValueError, match="l2"):
        fit_bradley_terry(obs)
    s = fit_bradley_terry(obs, l2=1.0)
    assert s["A"] > 0 > s["B"] and math.isfinite(s["A"])
    with pytest.raises(ValueError, match="anchor"):
        fit_bradley_terry(obs, l2=1.0, normalization="anchor", anchor="Z")
    with pytest.raises(ValueError, match="l2"):
        fit_bradley_terry(obs, l2=-1.0)


def test_find_cycle_and_majority_aggregation():
    cyc = [Observation("x", "A", "B", "j"), Observation("x", "B", "C", "j"), Observation("x", "C", "A", "j")]
    c = find_preference_cycle(cyc)
    assert c is not None and sorted(c) == ["A", "B", "C"]
    # consecutive elements must be a strict majority preference
    edges = {("A", "B"), ("B", "C"), ("C", "A")}
    assert all((c[i], c[(i + 1) % 3]) in edges for i in range(3))
    assert find_preference_cycle(cyc[:2]) is None
    # disagreement between judges alone is not a cycle
    dis = [Observation("x", "A", "B", "j1"), Observation("x", "B", "A", "j2")]
    assert find_preference_cycle(dis) is None
    # ties carry no direction
    assert find_preference_cycle([Comparison("x", "A", "B", "j", "tie")]) is None
