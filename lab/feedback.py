"""Outcome and process feedback, and when a label is available online.

Reference chapter "Outcome and process feedback" (ftip-003V): outcome-supervised reward model
ftip-003W and process-supervised reward model ftip-003X (Lightman et al. 2023, §2.5–2.6), terminal vs
intermediate supervision ftip-003Y, online measurability ftip-003Z and label timing ftip-0040,
worked example ftip-0041 (a correct answer reached through a wrong step).

Outcome and process labels are separate record types on purpose: one is about the completed
response, the other about a declared step prefix, and neither is a decomposition of the other.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

OUTCOME = math.inf  # "computed after the outcome": later than every step


@dataclass(frozen=True)
class OutcomeLabel:
    """A label on the completed response [ftip-003W]. Its information is available only after the outcome."""

    response_id: str
    value: float
    source: str
    computed_after: float = OUTCOME


@dataclass(frozen=True)
class ProcessLabel:
    """A label attached to the prefix s_≤step of a response [ftip-003X].

    ``computed_after``: the last step the labeller had seen when producing it. ``step`` means an online
    step checker; a later step, or :data:`OUTCOME`, means a reviewer who saw more (hindsight).
    """

    response_id: str
    step: int
    value: float
    source: str
    computed_after: float

    def __post_init__(self) -> None:
        if self.step < 1:
            raise ValueError(f"step must be >= 1 (steps are numbered from 1); got {self.step}")
        if self.computed_after < self.step:
            raise ValueError(f"computed_after ({self.computed_after}) must be >= step ({self.step}): a label cannot precede its prefix")


def is_online_measurable(label: OutcomeLabel | ProcessLabel, step: int, available_through: float | None = None) -> bool:
    """Is ``label`` online measurable at decision time ``step`` [ftip-003Z, ftip-0040]?

    At time ``step`` the history holds steps 1 … ``available_through`` (default ``step``; smaller when
    delivery lags). The label is measurable only if its information, up to ``label.computed_after``,
    lies inside that history. A label computed after a later step or after the outcome is not
    measurable at the earlier step, even if it is attached to that earlier prefix.
    """
    if step < 0:
        raise ValueError(f"step must be >= 0; got {step}")
    through = step if available_through is None else available_through
    if through > step:
        raise ValueError(f"available_through ({through}) must be <= step ({step}): the history at a step holds no later information")
    return label.computed_after <= through


_EQ = re.compile(r"(-?\d+(?:\s*[-+*/x×]\s*-?\d+)+)\s*=\s*(-?\d+)")


def check_arithmetic_step(text: str) -> int:
    """A deterministic step checker: 1 if every equation ``a op b … = c`` in ``text`` holds, else 0.

    Steps without an equation are labelled 1 (nothing to refute). It sees only the step itself, so its
    labels are online measurable at that step.
    """
    for lhs, rhs in _EQ.findall(text):
        expr = lhs.replace("×", "*").replace("x", "*")
        if not re.fullmatch(r"[-+*/\d\s]+", expr):
            return 0
        if abs(eval(expr, {"__builtins__": {}}) - int(rhs)) > 1e-9:  # expr is digits and operators only
            return 0
    return 1


# The four-step trace of ftip-0041: the final answer 19 is right, step three's arithmetic is wrong.
EXAMPLE_PROBLEM = "Compute 3 × 4 + 5 + 2."
EXAMPLE_STEPS = ("3 × 4 = 12", "12 + 5 = 17", "17 + 2 = 18", "correction: 17 + 2 = 19, so the answer is 19")
EXAMPLE_ANSWER = "19"


def label_trace(response_id: str, steps: Sequence[str], final_answer: str, target: str, reviewer_hindsight: bool = False) -> tuple[OutcomeLabel, list[ProcessLabel]]:
    """Outcome label (exact answer match) and process labels (arithmetic step checker) for one trace.

    ``reviewer_hindsight=True`` records the process labels as produced by a reviewer after reading the
    whole response (computed after the outcome), the way many process datasets are made: same values,
    different availability.
    """
    out = OutcomeLabel(response_id, float(final_answer.strip() == target.strip()), "exact-answer")
    proc = [
        ProcessLabel(response_id, k, float(check_arithmetic_step(s)), "arithmetic-checker",
                     OUTCOME if reviewer_hindsight else float(k))
        for k, s in enumerate(steps, start=1)
    ]
    return out, proc
