"""lab.misconceptions: each rule fires on its constructed metric history and stays quiet otherwise."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.misconceptions import RULES, diagnose

RISING = [0.1 + 0.03 * i for i in range(20)]
FLAT = [0.5] * 20


def keys(history, **ctx):
    return [c.key for c in diagnose(history, ctx)]


def test_grpo_loss_near_zero_while_reward_rises():
    h = {"loss": [1e-9 * (-1) ** i for i in range(20)], "reward": RISING}
    assert "grpo_loss_near_zero" in keys(h, algorithm="grpo")
    assert "grpo_loss_near_zero" not in keys(h, algorithm="dpo")
    assert "grpo_loss_near_zero" not in keys({**h, "reward": FLAT}, algorithm="grpo")
    assert "grpo_loss_near_zero" not in keys({**h, "loss": [0.4] * 20}, algorithm="grpo")


def test_all_groups_zero_spread():
    assert "all_groups_zero_spread" in keys({"frac_reward_zero_std": [0.5] * 3 + [1.0] * 5, "reward": [0.0] * 8})
    assert "all_groups_zero_spread" not in keys({"frac_reward_zero_std": [1.0] * 4 + [0.75]})


def test_dpo_chosen_falls_while_margin_rises():
    h = {"rewards/chosen": [-0.01 * i for i in range(12)], "rewards/margins": [0.05 * i for i in range(12)]}
    assert "dpo_chosen_falls" in keys(h)
    assert "dpo_chosen_falls" not in keys({**h, "rewards/margins": [0.5 - 0.05 * i for i in range(12)]})


def test_clip_fraction_zero_with_one_iteration():
    h = {"clip_ratio/region_mean": [0.0] * 10}
    assert "clip_zero_on_policy" in keys(h, num_iterations=1)
    assert "clip_zero_on_policy" not in keys(h, num_iterations=2)
    assert "clip_zero_on_policy" not in keys({"clip_ratio/region_mean": [0.0] * 9 + [0.01]}, num_iterations=1)


def test_negative_k1_kl():
    assert "negative_k1_kl" in keys({"kl": [0.01, -0.002, 0.003]})
    assert "negative_k1_kl" not in keys({"kl": [0.01, -0.002]}, kl_estimator="k3")
    assert "negative_k1_kl" not in keys({"kl": [0.0, 0.01]})


def test_reward_up_heldout_down():
    h = {"reward": RISING, "eval/accuracy": [0.4, 0.5, 0.55, 0.45, 0.35, 0.3]}
    card = next(c for c in diagnose(h) if c.key == "reward_up_heldout_down")
    assert card.page == "proxies" and "eval/accuracy" in card.evidence
    assert "reward_up_heldout_down" not in keys({**h, "eval/accuracy": [0.4, 0.5, 0.6, 0.7]})


def test_cards_are_complete_and_rules_cover_the_issue_list():
    assert set(RULES) == {"grpo_loss_near_zero", "all_groups_zero_spread", "dpo_chosen_falls", "clip_zero_on_policy",
                          "negative_k1_kl", "reward_up_heldout_down"}
    h = {"loss": [0.0] * 20, "reward": RISING, "frac_reward_zero_std": [1.0] * 20, "rewards/chosen": [-0.1 * i for i in range(20)],
         "rewards/margins": [0.1 * i for i in range(20)], "clip_ratio/region_mean": [0.0] * 20, "kl": [-0.1] * 20,
         "eval/accuracy": [0.5, 0.4, 0.3, 0.2]}
    cards = diagnose(h, {"algorithm": "grpo", "num_iterations": 1})
    assert [c.key for c in cards] == list(RULES)
    for c in cards:
        sentences = [s for s in c.explanation.split(". ") if s.strip()]
        assert 2 <= len(sentences) <= 4 and c.title and c.page and c.evidence


def test_short_or_missing_histories_never_fire_or_crash():
    assert diagnose({}) == []
    assert diagnose({"reward": [1.0], "loss": [0.0]}, {"algorithm": "grpo"}) == []
    assert diagnose({"kl": [float("nan"), float("inf")]}) == []  # non-finite values are ignored


def test_bad_input_names_argument():
    with pytest.raises(ValueError, match="history"):
        diagnose([1, 2])
    with pytest.raises(ValueError, match="window"):
        diagnose({}, window=0)
    with pytest.raises(ValueError, match=r"history\['loss'\]"):
        diagnose({"loss": ["x"]})


@given(st.dictionaries(st.sampled_from(["loss", "reward", "kl", "eval/accuracy", "rewards/chosen", "rewards/margins",
                                        "frac_reward_zero_std", "clip_ratio/region_mean"]),
                       st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=30)),
       st.sampled_from(["grpo", "dpo", "sft"]), st.integers(1, 3))
@settings(max_examples=200, deadline=None)
def test_any_history_gives_cards_or_nothing(history, algorithm, mu):
    for card in diagnose(history, {"algorithm": algorithm, "num_iterations": mu}):
        assert card.key in RULES


def test_history_from_small_run_events_feeds_the_rules():
    from lab.misconceptions import history_from_events

    events = [{"type": "phase", "phase": "base"}, {"type": "step", "phase": "base", "step": 1, "loss": 4.0}]
    events += [{"type": "step", "step": i + 1, "total_steps": 20, "loss": 1e-9, "reward": 0.1 + 0.03 * i, "frac_reward_zero_std": 0.25}
               for i in range(20)]
    events += [{"type": "eval", "step": 10, "eval/accuracy": 0.4, "loss": 9.0}, {"type": "samples", "step": 10}]
    h = history_from_events(events)
    assert h["loss"] == [1e-9] * 20 and h["eval/accuracy"] == [0.4] and "total_steps" not in h
    assert [c.key for c in diagnose(h, {"algorithm": "grpo", "num_iterations": 1})] == ["grpo_loss_near_zero"]
    with pytest.raises(ValueError, match="events"):
        history_from_events("nope")
