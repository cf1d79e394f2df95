"""Predict-then-reveal questions of the course, one module per chapter (``lab/quiz/<chapter>.py``).

Each chapter module defines ``QUESTIONS: list[Question]``. A question states its inputs in its text, and its
answer is *computed by a lab function* from those inputs (never typed in), when the learner has committed a
prediction. Pages ask their chapter's questions (``labui.predict.ask_chapter``); the "Check yourself" page
asks all of them and keeps the session's score per chapter.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class Question:
    key: str  # unique across the course, e.g. "ppo-clip-negative"
    chapter: str  # lab.course chapter key, e.g. "ppo"
    text: str  # the question, with every input it needs stated
    answer: Callable[[], Any]  # computed by a lab call; for choices, returns one of them exactly
    choices: Sequence[str] | None = None  # None: a numeric answer
    tolerance: float = 0.0  # numeric answers: accepted distance
    explanation: str = ""  # shown after the reveal: why, in the project's words


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        yield importlib.import_module(f"{__name__}.{info.name}")


def all_questions() -> list[Question]:
    out: list[Question] = []
    for mod in _modules():
        out.extend(getattr(mod, "QUESTIONS", []))
    keys = [q.key for q in out]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"question keys must be unique; repeated: {dup}")
    return out


def for_chapter(chapter: str) -> list[Question]:
    return [q for q in all_questions() if q.chapter == chapter]
