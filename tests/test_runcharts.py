"""labui.runcharts: the chart table, samples views and stage lines for every small-run algorithm.

Hand-built event lists for SFT, DPO, GRPO, RLOO, the reward model, PPO (verifier and learned reward) and an unknown
algorithm are drawn inside a small AppTest script; one real GRPO run's ledger (the CLI, in a tmp dir) is drawn the
same way. Hypothesis and a generated sweep of near-degenerate values check that nothing logged is lost and nothing
raises; bad arguments get a ValueError naming them.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st_h
from streamlit.testing.v1 import AppTest

from labui.runcharts import CHARTS, NOT_METRICS, draw_charts, metric_frame, plan_charts, show_samples, stage_summary

ROOT = Path(__file__).resolve().parent.parent
logging.getLogger("streamlit").setLevel(logging.ERROR)  # bare-mode calls below warn about the missing script context


# ---------------------------------------------------------------- hand-built runs, one per algorithm

def run_events(step_metrics: dict, eval_metrics: dict, steps: int = 4, eval_every: int = 2) -> list[dict]:
    """Step events with ``step_metrics`` (each value a function of the step) and eval events every ``eval_every``."""
    ev = [{"type": "eval", "step": 0, **{k: f(0) for k, f in eval_metrics.items()}}]
    for s in range(1, steps + 1):
        ev.append({"type": "step", "step": s, "total_steps": steps, "lr": 1e-4, "step_time": 0.1, "steps_per_second": 10.0,
                   "grad_norm": 1.0 / s, **{k: f(s) for k, f in step_metrics.items()}})
        if s % eval_every == 0:
            ev.append({"type": "eval", "step": s, **{k: f(s) for k, f in eval_metrics.items()}})
    return ev


def lin(a, b):
    return lambda s: a + b * s


SFT = run_events({"loss": lin(3, -0.5)}, {"eval/accuracy": lin(0, 0.1)})
GRPO_STEP = {"loss": lin(0, 0.01), "reward": lin(0.2, 0.1), "reward_std": lin(0.3, 0), "frac_reward_zero_std": lin(0.5, -0.1),
             "entropy": lin(2, -0.1), "completions/mean_length": lin(6, 0.2), "clip_ratio/low_mean": lin(0, 0),
             "clip_ratio/high_mean": lin(0, 0.01), "clip_ratio/region_mean": lin(0, 0.01), "kl": lin(0, 0.001)}
GRPO = run_events(GRPO_STEP, {"eval/accuracy": lin(0.1, 0.1)})
RLOO = run_events({k: v for k, v in GRPO_STEP.items() if not k.startswith("clip_ratio")}, {"eval/accuracy": lin(0.1, 0.1)})
DPO = run_events({"loss": lin(0.69, -0.1), "rewards/chosen": lin(0, -0.1), "rewards/rejected": lin(0, -0.3),
                  "rewards/margins": lin(0, 0.2), "rewards/accuracies": lin(0.5, 0.1), "logps/chosen": lin(-5, -0.1),
                  "logps/rejected": lin(-5, -0.5)},
                 {"eval/accuracy": lin(0.1, 0.05), "eval/preference_accuracy": lin(0.5, 0.1), "eval/rewards/margins": lin(0, 0.2),
                  "eval/rewards/accuracies": lin(0.5, 0.1)})
RM = run_events({"loss": lin(0.69, -0.1), "accuracy": lin(0.5, 0.1), "margin": lin(0, 0.3), "rewards/chosen": lin(0, 0.1),
                 "rewards/rejected": lin(0, -0.2)},
                {"eval/preference_accuracy": lin(0.71, 0.05), "eval/rewards/margins": lin(0, 0.25)})
PPO_STEP = {"loss/policy_avg": lin(0, -0.01), "loss/value_avg": lin(1, -0.2), "val/explained_variance": lin(-0.5, 0.3),
            "policy/clipfrac_avg": lin(0, 0.02), "val/clipfrac_avg": lin(0, 0.05), "policy/approxkl_avg": lin(0, 0.001),
            "objective/kl": lin(0, 0.05), "objective/scores": lin(0.2, 0.1), "policy/entropy_avg": lin(2, -0.1),
            "reward": lin(0.2, 0.1), "completions/mean_length": lin(6, 0.1)}
PPO = run_events(PPO_STEP, {"eval/accuracy": lin(0.2, 0.07)})
PPO_PROXY = run_events({**PPO_STEP, "reward/verifier": lin(0.2, 0.02)}, {"eval/accuracy": lambda s: 0.2 + 0.1 * s - 0.03 * s * s,
                                                                       "eval/proxy_reward": lin(0.1, 0.4)})
UNKNOWN = run_events({"loss": lin(1, -0.1), "my/new_metric": lin(0, 1), "another": lin(5, 5)}, {"eval/accuracy": lin(0, 0.1)})

LOSS, REWARD, HELD, KL, CLIP, DPO_R, ENT, GRAD, LEN = ("loss", "reward (mean, std) and zero-spread groups", "held-out accuracy",
                                                       "KL to the reference (k3)", "clip fractions",
                                                       "DPO implicit rewards", "policy entropy",
                                                       "gradient norm", "mean completion length")
PROXY = "Proxy vs gold: the proxy rises — does the gold?"
RM_ACC, RM_MARGIN = "reward model: pairs ranked right", "reward model: scores and margin"
PPO_LOSS, PPO_OBJ = "PPO loss: policy (left), value (right)", "PPO: score (left), KL to reference (right)"
EV = "value model: explained variance"
PPO_CLIP, APPROX = "PPO clip fractions: ratio and value", "PPO: approximate KL, old → new policy"

EXPECTED = {  # hand-listed: the charts each algorithm's logged metrics call for, in table order, then "more" (sorted by column order)
    "sft": [LOSS, HELD, GRAD, "lr"],
    "grpo": [LOSS, REWARD, HELD, KL, CLIP, ENT, GRAD, LEN, "lr", "clip_ratio/region_mean"],
    "rloo": [LOSS, REWARD, HELD, KL, ENT, GRAD, LEN, "lr"],
    "dpo": [LOSS, HELD, DPO_R, GRAD, "eval/rewards/accuracies", "lr", "rewards/accuracies", "logps/chosen", "logps/rejected"],
    "rm": [LOSS, RM_ACC, RM_MARGIN, GRAD, "lr"],
    "ppo": [PPO_LOSS, REWARD, HELD, PPO_OBJ, EV, PPO_CLIP, APPROX, ENT, GRAD, LEN, "lr"],
    "ppo_proxy": [PROXY, PPO_LOSS, PPO_OBJ, EV, PPO_CLIP, APPROX, ENT, GRAD, LEN, "lr"],
    "unknown": [LOSS, HELD, GRAD, "lr", "my/new_metric", "another"],
}
RUNS = {"sft": SFT, "grpo": GRPO, "rloo": RLOO, "dpo": DPO, "rm": RM, "ppo": PPO, "ppo_proxy": PPO_PROXY, "unknown": UNKNOWN}


def _draw_script(events, other, projector):
    import streamlit as st

    from labui.runcharts import draw_charts, metric_frame

    st.session_state["projector"] = projector
    n = draw_charts(metric_frame(events), "t", metric_frame(other) if other else None, "b")
    st.caption(f"drawn {n}")


def draw(events, other=None, projector=False) -> tuple[AppTest, list[dict]]:
    at = AppTest.from_function(_draw_script, args=(events, other, projector), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    return at, specs(at)


def specs(at: AppTest) -> list[dict]:
    def no_nan(c):
        raise AssertionError(f"{c} in a chart's JSON: the browser cannot parse it")

    return [json.loads(c.proto.spec, parse_constant=no_nan) for c in at.get("plotly_chart")]


def arr(v) -> list:
    """A trace's x or y as a list: plotly sends numpy data as a typed array ({"dtype", "bdata"}, base64)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def title(spec: dict) -> str:
    return spec["layout"]["title"]["text"]


@pytest.mark.parametrize("algo", list(RUNS))
def test_each_algorithm_draws_its_charts(algo):
    df = metric_frame(RUNS[algo])
    assert [c.title for c, _ in plan_charts(df)] == EXPECTED[algo]
    at, sp = draw(RUNS[algo])
    assert sorted(title(s) for s in sp) == sorted(EXPECTED[algo])  # the page tree lists column by column
    assert any(c.value == f"drawn {len(EXPECTED[algo])}" for c in at.caption)


def test_proxy_vs_gold_has_two_axes_and_the_question_in_its_title():
    _, sp = draw(PPO_PROXY)
    proxy = next(s for s in sp if title(s) == PROXY)
    axis = {t["name"]: t.get("yaxis", "y") for t in proxy["data"]}
    assert axis == {"eval/proxy_reward": "y", "reward": "y", "eval/accuracy": "y2", "reward/verifier": "y2"}
    lay = proxy["layout"]
    assert lay["yaxis2"]["overlaying"] == "y" and lay["yaxis2"]["side"] == "right"
    assert "gold" in lay["yaxis2"]["title"]["text"] and "proxy" in lay["yaxis"]["title"]["text"]
    gold = next(t for t in proxy["data"] if t["name"] == "eval/accuracy")
    # the gold accuracy carries the hand-built rise-then-fall: 0.2 + 0.1 s − 0.03 s² at s = 0, 2, 4
    assert arr(gold["x"]) == [0, 2, 4] and arr(gold["y"]) == pytest.approx([0.2, 0.28, 0.12])


def test_reward_model_held_out_accuracy_is_drawn_once():
    plan = plan_charts(metric_frame(RM))
    shown = [k for _, keys in plan for k in keys]
    assert shown.count("eval/preference_accuracy") == 1 and HELD not in [c.title for c, _ in plan]


def test_other_run_is_overlaid_dotted():
    _, sp = draw(GRPO, other=SFT)
    loss = next(s for s in sp if title(s) == LOSS)
    names = {t["name"]: t.get("line", {}).get("dash") for t in loss["data"]}
    assert names == {"loss": None, "loss (b)": "dot"}


def test_projector_mode_uses_the_large_template_one_chart_per_row():
    at, sp = draw(SFT, projector=True)
    assert all(s["layout"]["template"]["layout"]["font"]["size"] == 20 for s in sp)
    assert len(at.columns) == 2  # one column for the table's charts, one in "More logged metrics"
    at, sp = draw(SFT, projector=False)
    assert all(s["layout"].get("template", {}).get("layout", {}).get("font", {}).get("size") != 20 for s in sp)
    assert len(at.columns) == 4


def test_non_finite_and_text_values_are_counted_not_drawn():
    ev = [{"type": "step", "step": 1, "loss": 1.0}, {"type": "step", "step": 2, "loss": float("nan")},
          {"type": "step", "step": 3, "loss": float("inf")}, {"type": "step", "step": 4, "loss": "oops"},
          {"type": "step", "step": 5, "loss": 0.5}]
    at, sp = draw(ev)
    loss = next(s for s in sp if title(s) == LOSS)
    assert arr(loss["data"][0]["x"]) == [1, 5] and arr(loss["data"][0]["y"]) == [1.0, 0.5]
    assert any(c.value == "Not drawn (not a finite number): loss: 3" for c in at.caption)
    at, sp = draw([{"type": "step", "step": s, "loss": float("nan"), "grad_norm": 1.0} for s in (1, 2)])  # a diverged run
    assert LOSS in [title(s) for s in sp] and any(c.value == "Not drawn (not a finite number): loss: 2" for c in at.caption)


# ---------------------------------------------------------------- metric_frame

def test_metric_frame_keeps_main_stage_rows_latest_per_step():
    ev = [{"type": "step", "step": 1, "loss": 9.0, "phase": "base"}, {"type": "eval", "step": 0, "eval/accuracy": 0.1},
          {"type": "step", "step": 2, "loss": 2.0}, {"type": "step", "step": 1, "loss": 1.0}, {"type": "checkpoint", "step": 2},
          {"type": "samples", "step": 1, "prompt": "x"}, {"type": "step", "loss": 5.0}, {"type": "step", "step": True, "loss": 4.0},
          {"type": "step", "step": 3, "loss": 3.0}, {"type": "resume", "step": 2},
          {"type": "step", "step": 3, "loss": 3.5}, "not a dict"]  # a resume re-logs step 3: the later row wins
    df = metric_frame(ev)
    assert df["step"].tolist() == [0, 1, 2, 3]
    assert df["type"].tolist() == ["eval", "step", "step", "step"]
    assert df["loss"].tolist()[1:] == [1.0, 2.0, 3.5]
    assert metric_frame([]).empty and metric_frame([{"type": "step", "step": 1, "phase": "base"}]).empty


def test_events_whose_step_is_not_a_finite_number_are_left_out():
    ev = [{"type": "step", "step": s, "loss": 1.0} for s in (1, float("nan"), float("inf"), -float("inf"), "3", None, 2)]
    assert metric_frame(ev)["step"].tolist() == [1, 2]
    at, sp = draw(ev)
    (loss,) = [s for s in sp if title(s) == LOSS]
    assert arr(loss["data"][0]["x"]) == [1, 2]


def test_metric_frame_of_nothing_draws_nothing():
    assert plan_charts(metric_frame([])) == [] and plan_charts(pd.DataFrame({"loss": [1.0]})) == []


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, arg", [
    (lambda: metric_frame("events"), "events"),
    (lambda: metric_frame(None), "events"),
    (lambda: plan_charts([{"step": 1}]), "df"),
    (lambda: draw_charts(metric_frame(SFT), ""), "key"),
    (lambda: draw_charts(metric_frame(SFT), "k", other=[1, 2]), "other"),
    (lambda: show_samples(["prompt"]), "event"),
    (lambda: stage_summary(None), "summary_event"),
])
def test_bad_arguments_are_refused_by_name(call, arg):
    with pytest.raises(ValueError, match=rf"^{arg} must"):
        call()


# ---------------------------------------------------------------- samples views

GRPO_SAMPLES = {"type": "samples", "step": 7, "prompt": "rev ab=", "answer": "ba", "completions": ["ba", "ab", "b`a"],
                "rewards": [1.0, 0.0, 0.0], "advantages": [1.1547, -0.5774, -0.5774], "tokens": [["b", "a"], ["a", "b"], ["b", "`", "a"]]}
DPO_SAMPLES = {"type": "samples", "step": 3, "prompt": "rev ab=", "chosen": "ba", "rejected": "ab", "reward_chosen": 0.25,
               "reward_rejected": -0.5, "logp_chosen": -2.0, "logp_rejected": -3.0}
RM_SAMPLES = {"type": "samples", "step": 5, "prompt": "rev abc=", "chosen": "cba", "rejected": "abc", "score_chosen": -0.2,
              "score_rejected": 0.8}
PPO_SAMPLES = {"type": "samples", "step": 9, "prompt": "rev ab=", "answer": "ba", "completions": ["ba", "a"], "rewards": [1.0, 0.0],
               "tokens": [["b", "a", "<eos>"], ["a"]], "token_advantages": [[0.5, 0.25, 0.125], [-0.75]],
               "token_values": [[0.4, 0.6, 0.9], [0.3]]}


def _samples_script(event):
    import streamlit as st

    from labui.runcharts import show_samples

    st.caption("kind " + show_samples(event, key="s"))


def samples(event) -> AppTest:
    at = AppTest.from_function(_samples_script, args=(event,), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def kind(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith("kind ")).removeprefix("kind ")


def test_group_samples_table_and_shared_advantage_strip():
    at = samples(GRPO_SAMPLES)
    assert kind(at) == "group" and at.subheader[0].value == "Latest samples (step 7)"
    table = at.dataframe[0].value
    assert table["completion"].tolist() == ["ba", "ab", "b`a"] and table["advantage"].tolist() == [1.1547, -0.5774, -0.5774]
    assert at.markdown[0].value == "Prompt ` rev ab= ` · correct answer ` ba `"
    (strip,) = specs(at)
    z = strip["data"][0]["z"]
    assert z == [[1.1547, 1.1547, None], [-0.5774, -0.5774, None], [-0.5774, -0.5774, -0.5774]]  # one number per response
    assert strip["data"][0]["text"][2] == ["b", "`", "a"]


def test_ppo_samples_strip_shows_per_token_advantages_and_values_on_hover():
    at = samples(PPO_SAMPLES)
    assert kind(at) == "ppo"
    (strip,) = specs(at)
    hm = strip["data"][0]
    assert hm["z"] == [[0.5, 0.25, 0.125], [-0.75, None, None]]
    assert hm["customdata"] == [["0.400", "0.600", "0.900"], ["0.300", "n/a", "n/a"]]
    assert hm["text"] == [["b", "a", "<eos>"], ["a", "", ""]] and "V = %{customdata}" in hm["hovertemplate"]
    assert hm["y"] == ["#1 r=1.00", "#2 r=0.00"]
    assert at.dataframe[0].value["reward"].tolist() == [1.0, 0.0]
    assert "token by token" in " ".join(c.value for c in at.caption) and "ftip-003E" in " ".join(c.value for c in at.caption)


def test_ppo_samples_also_read_advantages_and_values_per_completion():
    """The spelling of the rmppo branch: ``advantages`` / ``values`` as one list per completion, ``scores`` from a reward model."""
    event = {"type": "samples", "step": 4, "prompt": "rev ab=", "answer": "ba", "completions": ["ba", "a"], "scores": [0.8, -0.1],
             "tokens": [["b", "a"], ["a"]], "advantages": [[0.5, 0.25], [-0.75]], "values": [[0.4, 0.6], [0.3]]}
    at = samples(event)
    assert kind(at) == "ppo"
    (strip,) = specs(at)
    hm = strip["data"][0]
    assert hm["z"] == [[0.5, 0.25], [-0.75, None]] and hm["customdata"] == [["0.400", "0.600"], ["0.300", "n/a"]]
    assert hm["y"] == ["#1 s=0.80", "#2 s=-0.10"]
    assert at.dataframe[0].value["score"].tolist() == [0.8, -0.1]
    assert "token by token" in " ".join(c.value for c in at.caption) and "ftip-003E" in " ".join(c.value for c in at.caption)


def test_reward_model_samples_say_which_answer_wins_and_by_what_margin():
    at = samples(RM_SAMPLES)
    assert kind(at) == "rm"
    text = " ".join(m.value for m in at.markdown)
    # hand-computed: margin −0.2 − 0.8 = −1.000; σ(−1) = 0.26894
    assert "prefers the **rejected** answer" in text and "margin -1.000" in text and "= 0.269" in text
    assert at.dataframe[0].value["score"].tolist() == [-0.2, 0.8]


def test_dpo_samples_show_implicit_rewards():
    at = samples(DPO_SAMPLES)
    assert kind(at) == "dpo"
    text = " ".join(m.value for m in at.markdown)
    # hand-computed: 0.25 − (−0.5) = 0.750; σ(0.75) = 0.67918
    assert "prefers the **chosen** answer" in text and "margin 0.750" in text and "= 0.679" in text
    assert at.dataframe[0].value["implicit reward"].tolist() == [0.25, -0.5]


def test_reward_model_margin_from_the_event_wins_and_equal_scores_are_a_tie():
    at = samples({**RM_SAMPLES, "score_chosen": 0.3, "score_rejected": 0.3, "margin": 0.0})
    text = " ".join(m.value for m in at.markdown)
    assert "scores both answers the same" in text and "margin 0.000" in text and "= 0.500" in text


@pytest.mark.parametrize("event, want", [
    ({"type": "samples"}, "other"),
    ({"type": "samples", "step": 1, "note": "x"}, "other"),
    ({"completions": ["a", "b"]}, "group"),
    ({"completions": ["a"], "rewards": [1.0, 0.0, 1.0], "advantages": [0.1], "tokens": [["a"], ["b", "c"]]}, "group"),
    ({"completions": "not a list", "advantages": None, "tokens": 3}, "group"),
    ({"token_advantages": [[0.1, float("nan")], [float("inf")]], "tokens": [["a"]]}, "ppo"),
    ({"token_advantages": [], "token_values": [[1.0]]}, "ppo"),
    ({"token_advantages": [[1.0, 2.0]], "tokens": [["a", "b"]], "token_values": [[None, "x"]], "rewards": [None]}, "ppo"),
    ({"chosen": "ba"}, "dpo"),
    ({"chosen": "ba", "rejected": "ab", "reward_chosen": float("nan"), "reward_rejected": 1.0}, "dpo"),
    ({"score_chosen": 1.0}, "rm"),
    ({"score_chosen": 1e308, "score_rejected": -1e308, "prompt": "`"}, "rm"),
    ({"score_chosen": "high", "score_rejected": 0.0, "extra": {"a": 1}}, "rm"),
])
def test_samples_with_missing_or_odd_keys_show_what_is_there(event, want):
    assert kind(samples(event)) == want


# ---------------------------------------------------------------- stage summaries

@pytest.mark.parametrize("event, line", [
    ({"type": "summary", "algorithm": "rm", "metric": "eval/preference_accuracy", "before": 0.71, "after": 0.935, "steps": 200,
      "stopped": False, "accuracy_before": None, "accuracy_after": None}, "reward model: held-out preference accuracy 71.0% → 93.5%"),
    ({"type": "done", "algorithm": "ppo", "metric": "eval/accuracy", "before": 0.2, "after": 0.48, "accuracy_before": 0.2,
      "accuracy_after": 0.48, "steps": 300, "stopped": False}, "PPO: held-out accuracy 20.0% → 48.0%"),
    ({"algorithm": "dpo", "metric": "eval/preference_accuracy", "before": 0.5, "after": 0.875, "accuracy_before": 0.1,
      "accuracy_after": 0.25}, "DPO: held-out preference accuracy 50.0% → 87.5%; held-out accuracy 10.0% → 25.0%"),
    ({"algorithm": "sft", "metric": "eval/accuracy", "before": 0.0, "after": 0.445, "phase": "base"}, "base SFT: held-out accuracy 0.0% → 44.5%"),
    ({"algorithm": "grpo", "metric": "eval/accuracy", "before": 0.3, "after": None, "stopped": True, "steps": 17},
     "GRPO: held-out accuracy 30.0% → n/a (stopped at step 17)"),
    ({"algorithm": "rloo", "metric": "eval/accuracy", "before": 0.125, "after": 1}, "RLOO: held-out accuracy 12.5% → 100.0%"),
    ({"algorithm": "mystery", "metric": "eval/bleu", "before": "?", "after": 0.5}, "mystery: bleu ? → 50.0%"),
    ({"algorithm": "sft", "steps": 12}, "SFT: finished after 12 steps"),
    ({"algorithm": "ppo", "metric": "eval/accuracy", "before": 0.445, "after": 0.05, "proxy_before": -3.158, "proxy_after": 1.42},
     "PPO: held-out accuracy 44.5% → 5.0%; proxy score -3.158 → 1.420"),
    ({"algorithm": "grpo", "metric": "eval/accuracy", "before": 0.2, "after": 0.3, "proxy_before": None, "proxy_after": 0.5},
     "GRPO: held-out accuracy 20.0% → 30.0%; proxy score n/a → 0.500"),
    ({}, "stage: finished"),
])
def test_stage_summary_lines(event, line):
    assert stage_summary(event) == line


# ---------------------------------------------------------------- properties and a near-degenerate sweep

ALL_KEYS = sorted({k for c in CHARTS for k in c.all_keys} | {"lr", "my/metric"})
VALUES = st_h.one_of(st_h.floats(allow_nan=True, allow_infinity=True), st_h.integers(-10**6, 10**6), st_h.none(),
                     st_h.booleans(), st_h.sampled_from(["", "x", "1e-3"]))


@st_h.composite
def events(draw_):
    keys = draw_(st_h.lists(st_h.sampled_from(ALL_KEYS), unique=True, max_size=12))
    n = draw_(st_h.integers(0, 6))
    out = []
    for i in range(n):
        typ = draw_(st_h.sampled_from(["step", "eval", "step"]))
        out.append({"type": typ, "step": draw_(st_h.integers(0, 5)), **{k: draw_(VALUES) for k in keys if draw_(st_h.booleans())}})
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events())
def test_every_logged_metric_lands_in_exactly_one_new_chart(ev):
    df = metric_frame(ev)
    plan = plan_charts(df)
    drawn = [k for _, keys in plan for k in keys]
    logged = {k for k in df.columns if k not in NOT_METRICS and any(
        isinstance(v, (int, float)) or v == "NaN" for v in df[k].tolist() if v is not None and not (isinstance(v, float) and v != v))}
    assert set(drawn) == logged  # nothing logged is lost, nothing unlogged is drawn
    seen: set[str] = set()
    for chart, keys in plan:
        assert keys and set(keys) - seen, f"{chart.title} adds nothing new"
        assert chart.when is None or chart.when in keys
        seen |= set(keys)
    assert len({c.title for c, _ in plan}) == len(plan)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events(), st_h.booleans())
def test_drawing_any_run_never_raises(ev, with_other):
    df = metric_frame(ev)
    assert draw_charts(df, "h", df if with_other else None, "again") == len(plan_charts(df))  # Streamlit bare mode


SAMPLE_KEYS = ["prompt", "answer", "completions", "rewards", "advantages", "tokens", "token_advantages", "token_values", "chosen",
               "rejected", "reward_chosen", "reward_rejected", "score_chosen", "score_rejected", "margin", "step"]
LEAF = st_h.one_of(VALUES, st_h.text(max_size=5))
SAMPLE_VALUES = st_h.one_of(LEAF, st_h.lists(LEAF, max_size=4), st_h.lists(st_h.lists(LEAF, max_size=4), max_size=3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st_h.dictionaries(st_h.sampled_from(SAMPLE_KEYS), SAMPLE_VALUES, max_size=8))
def test_any_samples_event_shows_without_raising(event):
    assert show_samples(event) in ("ppo", "group", "rm", "dpo", "other")


@settings(max_examples=100, deadline=None)
@given(st_h.dictionaries(st_h.sampled_from(["algorithm", "metric", "before", "after", "accuracy_before", "accuracy_after", "steps",
                                            "stopped", "phase", "stage"]), LEAF, max_size=8))
def test_stage_summary_is_one_line_for_any_summary(event):
    line = stage_summary(event)
    assert isinstance(line, str) and "\n" not in line and ":" in line


DEGENERATE = {"tiny": [1e-17, 2e-17, 1e-17], "equal": [0.5, 0.5, 0.5], "huge": [1e300, -1e300, 1e300], "negzero": [-0.0, 0.0, -0.0],
              "one": [0.25], "allnan": [float("nan")] * 3, "mixed": [float("-inf"), 1.0, None], "ints": [0, 1, 0]}


@pytest.mark.parametrize("chart", CHARTS, ids=lambda c: c.title[:30])
@pytest.mark.parametrize("pattern", list(DEGENERATE))
def test_near_degenerate_values_sweep(chart, pattern):
    vals = DEGENERATE[pattern]
    ev = [{"type": "eval" if k.startswith("eval/") else "step", "step": i, k: v} for k in chart.all_keys for i, v in enumerate(vals)]
    if chart.when is not None:  # the chart's own precondition holds with finite values
        ev += [{"type": "eval", "step": 9, chart.when: 0.5}]
    df = metric_frame(ev)
    plan = plan_charts(df)
    assert chart.title in [c.title for c, _ in plan]  # even all-NaN: drawn empty, with the count of values not drawn
    assert draw_charts(df, "sweep") == len(plan)


# ---------------------------------------------------------------- no formula math in the module (as for pages)

def test_runcharts_computes_no_formulas():
    from tests.test_pages import _math_in_page

    assert _math_in_page(ROOT / "labui" / "runcharts.py") == []


# ---------------------------------------------------------------- one real run's ledger

@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runcharts") / "grpo"
    proc = subprocess.run([sys.executable, "-m", "lab.smallrun", "grpo", "--steps", "4", "--base-steps", "4", "--model-size", "tiny",
                           "--eval-every", "2", "--eval-size", "10", "--threads", "1", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, proc.stdout + proc.stderr


def test_real_grpo_run_ledger_draws_and_summarizes(real_run):
    from lab.agentic import Ledger
    from lab.smallrun.live import read_ledger_metrics

    out, text = real_run
    ev, cfg = read_ledger_metrics(out)
    assert cfg["algorithm"] == "grpo"
    df = metric_frame(ev)
    assert df["step"].max() == 4 and sorted(df.loc[df["type"] == "eval", "step"]) == [0, 2, 4]
    at, sp = draw(ev)
    titles = [title(s) for s in sp]
    for t in (LOSS, REWARD, HELD, CLIP, ENT, LEN):
        assert t in titles, titles
    assert PROXY not in titles and PPO_LOSS not in titles
    recs, _ = Ledger(out / "ledger.jsonl").read()
    summary = [r for r in recs if r.get("type") == "summary"][-1]
    before, after = re.search(r"held-out accuracy ([\d.]+)% -> ([\d.]+)%", text).groups()
    assert stage_summary(summary) == f"GRPO: held-out accuracy {before}% → {after}%"
    base = [r for r in Ledger(out / "base" / "ledger.jsonl").read()[0] if r.get("type") == "summary"][-1]
    assert stage_summary({**base, "phase": "base"}).startswith("base SFT: held-out accuracy ")


# ---------------------------------------------------------------- what a person sees (headless Chromium)

BROWSER_PAGE = '''
import json, os
import streamlit as st
from labui.runcharts import draw_charts, metric_frame, show_samples
st.set_page_config(layout="wide")
st.session_state["projector"] = st.query_params.get("projector") == "1"
st.sidebar.markdown("the app's sidebar of pages")  # as under app.py: the charts get the width they get there
st.title("runcharts")
data = json.loads(open(os.environ["RUNCHARTS_DATA"]).read())
draw_charts(metric_frame(data["run"]), "b", metric_frame(data["other"]), "verifier run")
for name, events in data["more_runs"].items():
    draw_charts(metric_frame(events), name)
for e in data["samples"]:
    show_samples(e, key=str(e["step"]))
'''


@pytest.mark.browser
@pytest.mark.parametrize("projector", ["0", "1"])
def test_browser_charts_render_with_titles_clear_of_legends(tmp_path, projector):
    import time

    from tests.test_browser import _require_browser, start_browser, start_server, stop_server

    _require_browser()
    from selenium.webdriver.common.by import By

    page = tmp_path / "page.py"
    page.write_text(BROWSER_PAGE)
    more = {"grpo": GRPO, "dpo": DPO, "rm": RM}
    (tmp_path / "data.json").write_text(json.dumps({"run": PPO_PROXY, "other": PPO, "samples": [PPO_SAMPLES, GRPO_SAMPLES], "more_runs": more}))
    url, proc = start_server(page, env={"PYTHONPATH": str(ROOT), "RUNCHARTS_DATA": str(tmp_path / "data.json")})
    drv = None
    try:
        drv = start_browser("1280,900")
        drv.get(f"{url}/?projector={projector}")
        table = {c.title for c in CHARTS}  # the folded "More logged metrics" charts are drawn only once opened
        want = {t for name in ("ppo_proxy", *more) for t in EXPECTED[name] if t in table} | {"PPO's credit per token: GAE advantage Â_t (hover: value V_t)",
                                                     "Credit each token received (every token of a response shares its advantage)"}
        end, titles = time.time() + 90, set()
        while time.time() < end and not want <= titles:
            time.sleep(1.0)
            titles = {t.text for t in drv.find_elements(By.CSS_SELECTOR, "text.gtitle")}
        assert want <= titles, want - titles
        assert not drv.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
        overlaps = drv.execute_script("""
            const out = [];
            for (const plot of document.querySelectorAll('.js-plotly-plot')) {
              const t = plot.querySelector('text.gtitle'), l = plot.querySelector('g.legend');
              if (!t || !l) continue;
              const a = t.getBoundingClientRect(), b = l.getBoundingClientRect();
              if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) out.push(t.textContent);
            }
            return out;""")
        assert overlaps == [], overlaps
        clipped = drv.execute_script("""
            const out = [];
            for (const plot of document.querySelectorAll('.js-plotly-plot')) {
              const t = plot.querySelector('text.gtitle'); if (!t) continue;
              const a = t.getBoundingClientRect(), p = plot.getBoundingClientRect();
              if (a.right > p.right + 1) out.push(t.textContent);
            }
            return out;""")
        assert clipped == [], clipped  # every title fits its chart
    finally:
        if drv is not None:
            drv.quit()
        stop_server(proc)


def _where_script(events, event):
    import streamlit as st

    from labui.runcharts import draw_charts, metric_frame, show_samples

    st.markdown("above")
    box = st.container()
    st.markdown("below")
    st.caption(f"drawn {draw_charts(metric_frame(events), 'w', where=box)}")
    show_samples(event, where=st.expander("samples"), key="w")


def test_charts_and_samples_go_where_they_are_told():
    at = AppTest.from_function(_where_script, args=(GRPO, PPO_SAMPLES), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m.value for m in at.main.markdown][:2] == ["above", "below"]  # drawn into the container placed between them
    box = at.main.children[1]
    assert len(box.get("plotly_chart")) == len(EXPECTED["grpo"])
    (exp,) = [e for e in at.expander if e.label == "samples"]
    assert len(exp.get("plotly_chart")) == 1 and exp.subheader[0].value == "Latest samples (step 9)"
