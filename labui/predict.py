"""Predict-then-reveal: the learner commits to an answer before the page shows what lab computes.

Reusable on every page::

    if predict_then_reveal("dpo_chosen", "Does the chosen probability rise or fall?", ["rises", "falls"],
                           answer=lambda: lab_answer(...), explanation="..."):
        ...  # the committed learner now sees the computation

``answer`` may be a value or a zero-argument callable (called only after the learner commits, so the page
does not compute the answer before it is asked). With ``choices=None`` the learner types a number, and it is
right when within ``tolerance`` of the answer. Each result is kept in ``st.session_state["lab_scores"][key]``
as ``{"question", "guess", "answer", "correct"}``; :func:`score` sums them.
"""

from __future__ import annotations

from typing import Any, Sequence

import streamlit as st

SCORES = "lab_scores"


def _resolve(answer: Any) -> Any:
    return answer() if callable(answer) else answer


def predict_then_reveal(
    key: str,
    question: str,
    choices: Sequence[str] | None = None,
    answer: Any = None,
    tolerance: float = 0.0,
    explanation: str = "",
    chapter: str = "",
) -> bool:
    """Ask ``question``; after the learner commits, reveal ``answer`` and whether they were right.

    Returns True once the learner has committed (the page may then play what it was hiding).
    A "Ask again" button clears the commitment. Nothing is revealed before the commit.
    """
    scores = st.session_state.setdefault(SCORES, {})
    box = st.container(border=True)
    box.markdown(f"**Predict first:** {question}")
    done = key in scores and scores[key].get("question") == question
    if not done:
        if choices is not None:
            guess = box.radio("your prediction", list(choices), index=None, key=f"predict_{key}_guess")
        else:
            guess = box.number_input("your prediction", value=None, key=f"predict_{key}_guess", format="%.4g")
        if box.button("Commit and reveal", key=f"predict_{key}_commit", disabled=guess is None):
            ans = _resolve(answer)
            if choices is not None:
                correct = guess == ans
            else:
                correct = abs(float(guess) - float(ans)) <= tolerance
            scores[key] = {"question": question, "guess": guess, "answer": ans, "correct": bool(correct),
                           **({"chapter": chapter} if chapter else {})}
            done = True
        elif guess is None:
            box.caption("Choose an answer to reveal the result.")
    if done:
        res = scores[key]
        shown = res["answer"] if choices is not None else f"{float(res['answer']):.4g}"
        (box.success if res["correct"] else box.warning)(
            f"{'✅ Right' if res['correct'] else '❌ Not quite'}: you said **{res['guess']}**; lab computes **{shown}**."
        )
        if explanation:
            box.markdown(explanation)
        if box.button("Ask again", key=f"predict_{key}_reset"):
            scores.pop(key, None)
            st.session_state.pop(f"predict_{key}_guess", None)
            st.rerun()
    return done


def score() -> tuple[int, int]:
    """(right, answered) over every question answered in this session."""
    scores = st.session_state.get(SCORES, {})
    return sum(1 for v in scores.values() if v["correct"]), len(scores)


def score_by_chapter() -> dict[str, tuple[int, int]]:
    """{chapter: (right, answered)} for this session (questions without a chapter count under "other")."""
    out: dict[str, tuple[int, int]] = {}
    for v in st.session_state.get(SCORES, {}).values():
        ch = v.get("chapter") or "other"
        right, n = out.get(ch, (0, 0))
        out[ch] = (right + bool(v["correct"]), n + 1)
    return out


def ask_chapter(chapter: str) -> None:
    """Ask every question of ``chapter`` from ``lab.quiz`` (each with its own commit-then-reveal box)."""
    from lab.quiz import for_chapter

    for q in for_chapter(chapter):
        predict_then_reveal(q.key, q.text, q.choices, answer=q.answer, tolerance=q.tolerance, explanation=q.explanation,
                            chapter=q.chapter)
