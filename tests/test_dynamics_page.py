"""The Dynamics page under streamlit.testing.v1.AppTest: every preset asks before it plays and reveals lab's
answer, the numbers on the page are playground.train's, the URL restores the setup, bad input is a message."""

import math
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from lab import playground as P

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "dynamics.py")


def start(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    clean(at)
    return at


def clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Traceback" in (e.value or "") for e in at.error)


def charts(at: AppTest) -> int:
    return len(at.get("plotly_chart"))


def metric(at: AppTest, label: str, nth: int = 0) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert found, [m.label for m in at.metric]
    return found[nth]


def test_default_page_matches_train():
    at = start()
    assert not at.error and charts(at) >= 4
    # the first column is REINFORCE on the default bandit, sampled, 100 steps, lr 0.5, seed 0
    run = P.train(P.Bandit(rewards=[1, 0.5, 0], init_probs=[0.2, 0.3, 0.5]), "reinforce", 100, 0.5, seed=0, n=16, baseline="none")
    assert metric(at, "E[r] at end") == f"{float(run.expected_reward[-1]):.3f}"
    assert metric(at, "KL(π‖π_ref) at end") == f"{float(run.kl[-1]):.4f}"
    assert at.query_params["policy"] == "bandit" and at.query_params["variants"] == "REINFORCE|REINFORCE + baseline|RLOO"


def _expected_answer(key: str):
    pr = P.PRESETS[key]
    s = pr.setup
    if s["policy"] == "bandit":
        pol = P.Bandit(rewards=[float(x) for x in s["rewards"].split(",")], init_probs=[float(x) for x in s["init"].split(",")])
    elif s["policy"] == "sequence":
        pol = P.sequence_task(s["task"], 2, s.get("length", 3))
    else:
        pol = P.dpo_three_outcome_bandit()
    runs = {}
    for name in s["variants"]:
        obj, fixed = P.VARIANTS[name]
        conv = dict(n=16, group_size=4, epsilon=0.2)
        if obj in ("reinforce", "ppo"):
            conv.update(advantage=s.get("advantage", "return"), lam=s.get("lam", 1.0), value_noise=s.get("value_noise", 0.0))
        if obj == "ppo":
            conv["epochs"] = s.get("epochs", 4)
        if obj in ("dpo", "kl_regularized"):
            conv["beta"] = s.get("beta", 0.1)
        conv.update(fixed)
        runs[name] = P.train(pol, obj, s["steps"], s["lr"], seed=0, exact=s["exact"], **conv)
    return pr.answer(runs), runs


@pytest.mark.parametrize("key", list(P.PRESETS))
def test_preset_asks_first_then_reveals_labs_answer(key):
    at = start()
    at.button(key=f"dyn_preset_{key}").click().run()
    clean(at)
    pr = P.PRESETS[key]
    assert at.query_params["preset"] == key
    assert any(pr.question in m.value for m in at.markdown)
    assert charts(at) == 0  # nothing plays before the prediction
    assert any("Commit a prediction" in i.value for i in at.info)
    assert at.button(key=f"predict_dyn_{key}_commit").disabled
    answer, runs = _expected_answer(key)
    if pr.choices is None:
        at.number_input(key=f"predict_dyn_{key}_guess").set_value(float(answer)).run()
    else:
        wrong = next(c for c in pr.choices if c != answer)
        at.radio(key=f"predict_dyn_{key}_guess").set_value(wrong).run()
    at.button(key=f"predict_dyn_{key}_commit").click().run()
    clean(at)
    shown = f"{float(answer):.4g}" if pr.choices is None else answer
    revealed = [s.value for s in at.success] + [w.value for w in at.warning]
    assert any(f"lab computes **{shown}**" in v for v in revealed), revealed
    score = at.session_state["lab_scores"][f"dyn_{key}"]
    assert score["correct"] == (pr.choices is None) and score["answer"] == answer
    assert charts(at) >= 4
    first = next(iter(runs.values()))
    assert metric(at, "E[r] at end") == f"{float(first.expected_reward[-1]):.3f}"


def test_ask_again_clears_the_prediction():
    at = start()
    at.button(key="dyn_preset_dpo").click().run()
    at.radio(key="predict_dyn_dpo_guess").set_value("it falls").run()
    at.button(key="predict_dyn_dpo_commit").click().run()
    assert at.session_state["lab_scores"]["dyn_dpo"]["correct"] is True
    at.button(key="predict_dyn_dpo_reset").click().run()
    clean(at)
    assert "dyn_dpo" not in at.session_state["lab_scores"] and charts(at) == 0


def test_dpo_preset_shows_the_reference_direction():
    at = start()
    at.button(key="dyn_preset_dpo").click().run()
    at.radio(key="predict_dyn_dpo_guess").set_value("it rises").run()
    at.button(key="predict_dyn_dpo_commit").click().run()
    run = P.train(P.dpo_three_outcome_bandit(), "dpo", 40, 0.5, beta=1.0)
    assert float(run.probs[-1, 0]) < 0.4 and float(run.loss[-1]) < math.log(2)
    assert metric(at, "E[r] at end") == f"{float(run.expected_reward[-1]):.3f}"


def test_shared_url_restores_the_setup():
    q = dict(policy="sequence", task="all_a", vocab="3", length="2", variants="RLOO|DPO", exact="1", steps="25", lr="0.7", seed="3", beta="0.2")
    at = start(q)
    assert at.radio(key="dyn_policy").value == "sequence"
    assert at.selectbox(key="dyn_task").value == "all_a"
    assert at.multiselect(key="dyn_variants").value == ["RLOO", "DPO"]
    assert at.number_input(key="dyn_steps").value == 25 and at.toggle(key="dyn_exact").value is True
    run = P.train(P.sequence_task("all_a", 3, 2), "rloo", 25, 0.7, seed=3, exact=True, n=16, group_size=4, epsilon=0.2)
    assert metric(at, "E[r] at end") == f"{float(run.expected_reward[-1]):.3f}"
    assert not at.warning


@pytest.mark.parametrize(
    "query,name",
    [(dict(policy="tree"), "policy"), (dict(steps="many"), "steps"), (dict(variants="SFT"), "variants"),
     (dict(colour="red"), "colour"), (dict(preset="nope"), "preset"), (dict(exact="yes"), "exact"),
     (dict(steps="0"), "steps"), (dict(vocab="9"), "vocab"), (dict(lam="2"), "lam"), (dict(rewards="1,x"), "rewards")],
)
def test_bad_url_shows_a_message_and_falls_back(query, name):
    at = start(query)
    assert any("shared link" in w.value and name in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.radio(key="dyn_policy").value == "bandit" and charts(at) >= 4


def test_bad_input_shows_the_message_next_to_the_control():
    at = start()
    at.text_input(key="dyn_rewards").input("1, x, 0").run()
    clean(at)
    assert any("rewards" in e.value for e in at.error)
    at.text_input(key="dyn_rewards").input("1, 0.5, 0").run()
    at.text_input(key="dyn_init").input("0.5, 0.5, 0.5").run()
    clean(at)
    assert any("starting policy" in e.value or "init_probs" in e.value for e in at.error)
    at.text_input(key="dyn_init").input("0.2, 0.3, 0.5").run()
    at.number_input(key="dyn_group_size").set_value(5).run()
    clean(at)
    assert any("multiple of group_size" in e.value for e in at.error)
    at.number_input(key="dyn_group_size").set_value(4).run()
    at.multiselect(key="dyn_variants").set_value([]).run()
    clean(at)
    assert any("objectives" in e.value for e in at.error)
    at.multiselect(key="dyn_variants").set_value(["DPO"]).run()
    at.number_input(key="dyn_beta").set_value(0.0).run()
    clean(at)
    assert any("beta" in e.value for e in at.error)


def test_sequence_policy_and_ppo_ratio_band():
    at = start()
    at.radio(key="dyn_policy").set_value("sequence").run()
    at.multiselect(key="dyn_variants").set_value(["PPO (clipped)", "GRPO (bnpo)"]).run()
    clean(at)
    assert not at.error
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("clip band" in t for t in titles)  # the ratio band is drawn
    assert any("weight of one response" in t for t in titles)  # GRPO on sequences shows the length weighting
    # moving back to the bandit keeps its fields (the store survives widgets that were not drawn)
    at.radio(key="dyn_policy").set_value("bandit").run()
    assert at.text_input(key="dyn_rewards").value == "1, 0.5, 0"
    assert torch.get_num_threads() >= 1


def _predict_script():
    import streamlit as st

    from labui.predict import predict_then_reveal, score

    def answer():
        st.session_state["calls"] = st.session_state.get("calls", 0) + 1
        return 4.0

    if predict_then_reveal("q", "How many?", None, answer=answer, tolerance=0.01, explanation="Because."):
        st.write("revealed")
    st.write(f"score {score()}")


def test_predict_widget_numeric_tolerance_and_lazy_answer():
    at = AppTest.from_function(_predict_script, default_timeout=30).run()
    clean(at)
    assert "calls" not in at.session_state  # the answer is not computed before the learner commits
    assert not any(m.value == "revealed" for m in at.markdown)
    at.number_input(key="predict_q_guess").set_value(3.98).run()
    at.button(key="predict_q_commit").click().run()
    assert at.session_state["lab_scores"]["q"] == {"question": "How many?", "guess": 3.98, "answer": 4.0, "correct": False}
    assert at.session_state["calls"] == 1 and any(m.value == "revealed" for m in at.markdown)
    assert any("score (0, 1)" in m.value for m in at.markdown)
    at.button(key="predict_q_reset").click().run()
    at.number_input(key="predict_q_guess").set_value(3.995).run()
    at.button(key="predict_q_commit").click().run()
    assert at.session_state["lab_scores"]["q"]["correct"] is True
    assert any("score (1, 1)" in m.value for m in at.markdown)


def test_freeze_startup_objects_freezes_once_per_process():
    """app.py calls labui.freeze_startup_objects after each run; only the first call collects and freezes (a full
    collection over the imported libraries is what made one rerun in ten of this page take 200+ ms)."""
    import gc

    import labui

    labui.freeze_startup_objects()
    frozen = gc.get_freeze_count()
    assert frozen > 10_000 and labui._startup_objects_frozen
    labui.freeze_startup_objects()
    assert gc.get_freeze_count() <= frozen  # not frozen again

    # what a page run creates afterwards (its namespace is a reference cycle) is still collected
    import weakref

    class Figure:
        pass

    namespace = {"fig": Figure()}
    namespace["self"] = namespace  # a cycle, as a page's globals and its functions make
    alive = weakref.ref(namespace["fig"])
    del namespace
    gc.collect()
    assert alive() is None
