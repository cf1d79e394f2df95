"""Issue 13 on seven pages (grpo, feedback, agentic, dynamics, credit, proxies, compare), under AppTest:
Previous/Next links, two predict-then-reveal questions answered wrong and revealed with lab's answer, query
parameters that restore inputs, ?projector=1 running clean, and bad parameters falling back with a message."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab import playground as P
from lab import quiz
from lab.course import neighbours

PAGES = Path(__file__).resolve().parent.parent / "pages"
SEVEN = ["grpo", "feedback", "agentic", "dynamics", "credit", "proxies", "compare"]

# page → (link parameters, the session values they must produce)
GOOD = {
    "grpo": ({"rewards": "1,0|0,1", "ddof": "0", "ratios": "1.1,0.9", "lengths": "2,3", "epsilon": "0.3"},
             {"grpo_rewards": "1,0\n0,1", "grpo_ddof": 0, "grpo_ratios": "1.1,0.9", "grpo_lengths": "2,3", "grpo_clip": 0.3}),
    "feedback": ({"r1_step3": "17 + 2 = 18", "hindsight": "1"}, {"fb_step2": "17 + 2 = 18", "fb_hindsight": True}),
    "agentic": ({"z_star": "1", "behaviour_prob": "0.25", "age": "3"}, {"ag_z": 1.0, "ag_pb": 0.25, "ag_age": 3}),
    "dynamics": ({"steps": "20", "lr": "0.3"}, {"dyn_steps": 20, "dyn_lr": 0.3}),
    "credit": ({"mechanisms": "outcome,taco", "step3_correct": "1", "outcome": "0"},
               {"cr_mechs": ["outcome", "taco"], "cr_ok2": True, "cr_outcome": 0.0}),
    "proxies": ({"bias": "1.5", "strength": "8", "responses": "500"}, {"px_bias": 1.5, "px_strength": 8.0, "px_n": 500}),
    "compare": ({"gain": "0.2", "cases": "50", "seed": "3"}, {"cmp_gain": 0.2, "cmp_n": 50, "cmp_seed": 3}),
}
# page → (a bad parameter, the widget it names and that widget's default)
BAD = {
    "grpo": ("epsilon", "5", "grpo_clip", 0.2),
    "feedback": ("hindsight", "maybe", "fb_hindsight", False),
    "agentic": ("age", "-1", "ag_age", 1),
    "dynamics": ("steps", "many", "dyn_steps", 100),
    "credit": ("mechanisms", "outcome,nonsense", "cr_mechs", ["outcome", "process_labels", "math_shepherd", "shapley", "mart", "taco"]),
    "proxies": ("strength", "7", "px_strength", 1.0),
    "compare": ("cases", "1e9", "cmp_n", 200),
}


def start(page: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=90)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    clean(at)
    return at


def clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Traceback" in (e.value or "") for e in at.error)


@pytest.mark.parametrize("page", SEVEN)
def test_previous_next_projector_and_link(page):
    """One run per page covers: nav links, a restoring link, and projector mode (all at once, as a teacher would send it)."""
    query, want = GOOD[page]
    at = start(page, {**query, "projector": "1"})
    assert not at.error, [e.value for e in at.error]
    assert not at.warning or all("link parameter" not in w.value and "could not be restored" not in w.value for w in at.warning)
    prev, nxt = neighbours(page)
    md = [m.value for m in at.markdown]
    assert any(f"[← Previous: {prev.title}](/{prev.key})" in m for m in md), md[-5:]
    assert any(f"[Next: {nxt.title} →](/{nxt.key})" in m for m in md), md[-5:]
    assert at.session_state["projector"] is True
    for key, value in want.items():
        assert at.session_state[key] == value, (key, at.session_state[key])
    for name, value in query.items():  # the URL keeps the link's values (a shareable link round-trips)
        assert at.query_params[name] in (value, f"{float(value):g}" if value.replace(".", "").isdigit() else value), name


@pytest.mark.parametrize("page", SEVEN)
def test_bad_parameter_falls_back_with_a_message(page):
    name, raw, key, default = BAD[page]
    at = start(page, {name: raw})
    shown = [w.value for w in at.warning]
    assert any(name in w for w in shown), shown
    assert at.session_state[key] == default


def _wrong(q: quiz.Question, answer):
    if q.choices is not None:
        return next(c for c in q.choices if c != answer)
    return float(answer) + 10 * q.tolerance + 1.0


@pytest.mark.parametrize("page", ["grpo", "feedback", "agentic", "credit", "proxies", "compare"])
def test_two_predictions_wrong_then_reveal_shows_lab_answer(page):
    at = start(page)
    qs = quiz.for_chapter(page)
    assert len(qs) >= 2
    assert not any("lab computes" in w.value for w in at.warning)  # nothing revealed before a commit
    for q in qs[:2]:
        answer = q.answer()
        guess = _wrong(q, answer)
        widget = at.radio(key=f"predict_{q.key}_guess") if q.choices is not None else at.number_input(key=f"predict_{q.key}_guess")
        widget.set_value(guess).run()
        at.button(key=f"predict_{q.key}_commit").click().run()
        clean(at)
        shown = answer if q.choices is not None else f"{float(answer):.4g}"
        assert any(f"lab computes **{shown}**" in w.value for w in at.warning), [w.value for w in at.warning]
        assert at.session_state["lab_scores"][q.key] == {"question": q.text, "guess": guess, "answer": answer, "correct": False,
                                                         "chapter": page}


@pytest.mark.parametrize("preset", ["dpo", "length"])
def test_dynamics_predictions_wrong_then_reveal(preset):
    """The dynamics page asks through its presets; the same two phenomena are registered in lab.quiz.dynamics."""
    at = start("dynamics")
    at.button(key=f"dyn_preset_{preset}").click().run()
    q = next(q for q in quiz.for_chapter("dynamics") if preset in q.key)
    answer = q.answer()
    if q.choices is not None:
        at.radio(key=f"predict_dyn_{preset}_guess").set_value(_wrong(q, answer)).run()
    else:
        at.number_input(key=f"predict_dyn_{preset}_guess").set_value(_wrong(q, answer)).run()
    at.button(key=f"predict_dyn_{preset}_commit").click().run()
    clean(at)
    shown = answer if q.choices is not None else f"{float(answer):.4g}"
    assert any(f"lab computes **{shown}**" in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.session_state["lab_scores"][f"dyn_{preset}"]["chapter"] == "dynamics"
    assert P.PRESETS[preset].question in q.text


def test_grpo_zero_spread_card_and_label_agree():
    at = start("grpo", {"rewards": "1,1,1,1|0,0,0,0"})
    assert any("zero reward spread" in i.value for i in at.info), [i.value for i in at.info]
    # the metric is labelled as the objective J = +min(...), and shows +min (issue 13: label and value agree)
    labels = [m.label for m in at.metric]
    assert "objective terms Jᵢ = min(ρᵢÂᵢ, clip(ρᵢ)Âᵢ)" in labels
    assert not any("ℓ" in lab for lab in labels)


def test_quiz_hand_values():
    by = {q.key: q.answer() for q in quiz.all_questions()}
    assert by["grpo-no-signal-group"] == "B"
    assert by["grpo-advantage-one-success"] == pytest.approx(0.75 / (0.5 + 1e-4))
    assert by["grpo-loss-types-sign"] == "no"
    assert by["feedback-faulty-step"] == "step 3"
    assert by["feedback-outcome-credit-sign"] == "positive"
    assert by["feedback-hindsight-online"] == "no"
    assert by["agentic-gate-spike"] == "rejected"
    assert by["agentic-gate-ratchet"] == "rejected"
    assert by["agentic-replay-ratio"] == pytest.approx(2.0)
    assert by["credit-outcome-wrong-step"] == "the same"
    assert by["credit-process-wrong-step"] == "lower"
    assert by["credit-outcome-value"] == pytest.approx(0.5 / (3 ** -0.5 + 1e-4), abs=1e-6)
    assert by["proxies-bon-kl"] == pytest.approx(4 * 0.6931471805599453 - 15 / 16)
    assert by["compare-pass-at-2"] == pytest.approx(1 - 21 / 45)
    assert by["dynamics-length-weight"] == pytest.approx(4.0)
    assert by["dynamics-dpo-chosen"] == "it falls"
