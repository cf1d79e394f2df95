"""lab.quiz: every question is well formed and its answer is computed by lab; the Check-yourself page."""

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab import course, quiz

ROOT = Path(__file__).resolve().parent.parent


def test_every_question_is_well_formed_and_answerable():
    chapters = {c.key for c in course.CHAPTERS}
    qs = quiz.all_questions()
    assert qs
    for q in qs:
        assert q.chapter in chapters, q.key
        ans = q.answer()
        if q.choices is not None:
            assert ans in q.choices, (q.key, ans)
        else:
            assert isinstance(ans, float) and math.isfinite(ans), q.key
        assert q.explanation and q.text


def test_ppo_questions_hand_values():
    by = {q.key: q for q in quiz.for_chapter("ppo")}
    assert by["ppo-clip-negative-inside"].answer() == "yes"
    assert by["ppo-clipped-value"].answer() == pytest.approx(2.4)


def test_check_yourself_scores_a_wrong_then_right_prediction():
    at = AppTest.from_file(str(ROOT / "pages" / "check_yourself.py"), default_timeout=60).run()
    assert not at.exception
    radio = next(r for r in at.radio if r.key == "predict_ppo-clip-negative-inside_guess")
    radio.set_value("no").run()
    next(b for b in at.button if b.key == "predict_ppo-clip-negative-inside_commit").click().run()
    assert not at.exception
    assert any("lab computes **yes**" in w.value for w in at.warning)
    table = at.dataframe[0].value
    row = table[table["chapter"] == "PPO clipping"].iloc[0]
    assert (row["answered"], row["right"]) == (1, 0)
