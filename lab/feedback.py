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
import numbers
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Sequence

OUTCOME = math.inf  # "computed after the outcome": later than every step


def _finite_number(x, name: str) -> float:
    """A real number (int, float or bool, converted to float); NaN and ±inf refused."""
    if not isinstance(x, numbers.Real):
        raise ValueError(f"{name} must be a real number; got {type(x).__name__} {x!r:.60}")
    try:
        v = float(x)
    except OverflowError:
        raise ValueError(f"{name} is too large to be a float; got an integer with {len(str(abs(int(x))))} digits") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite; got {v}")
    return v


def _integer(x, name: str) -> int:
    """A step index: an int (bool refused: True is not a step number)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {type(x).__name__} {x!r:.60}")
    return int(x)


def _time(x, name: str) -> float:
    """A point in the response's time line: a step number, or OUTCOME (+inf). NaN and -inf refused."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"{name} must be a step number or OUTCOME; got {type(x).__name__} {x!r:.60}")
    try:
        v = float(x)
    except OverflowError:
        raise ValueError(f"{name} is too large; got an integer with {len(str(abs(int(x))))} digits") from None
    if math.isnan(v) or v == -math.inf:
        raise ValueError(f"{name} must be a step number or OUTCOME (+inf); got {v}")
    return v


def _text(x, name: str) -> str:
    if not isinstance(x, str):
        raise ValueError(f"{name} must be a string; got {type(x).__name__}")
    return x


@dataclass(frozen=True)
class OutcomeLabel:
    """A label on the completed response [ftip-003W]. Its information is available only after the outcome."""

    response_id: str
    value: float
    source: str
    computed_after: float = OUTCOME

    def __post_init__(self) -> None:
        _text(self.response_id, "response_id"), _text(self.source, "source")
        object.__setattr__(self, "value", _finite_number(self.value, "value"))
        object.__setattr__(self, "computed_after", _time(self.computed_after, "computed_after"))


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
        _text(self.response_id, "response_id"), _text(self.source, "source")
        step = _integer(self.step, "step")
        if step < 1:
            raise ValueError(f"step must be >= 1 (steps are numbered from 1); got {self.step}")
        object.__setattr__(self, "step", step)
        object.__setattr__(self, "value", _finite_number(self.value, "value"))
        object.__setattr__(self, "computed_after", _time(self.computed_after, "computed_after"))
        if self.computed_after < self.step:
            raise ValueError(f"computed_after ({self.computed_after}) must be >= step ({self.step}): a label cannot precede its prefix")


def is_online_measurable(label: OutcomeLabel | ProcessLabel, step: int, available_through: float | None = None) -> bool:
    """Is ``label`` online measurable at decision time ``step`` [ftip-003Z, ftip-0040]?

    At time ``step`` the history holds steps 1 … ``available_through`` (default ``step``; smaller when
    delivery lags). The label is measurable only if its information, up to ``label.computed_after``,
    lies inside that history. A label computed after a later step or after the outcome is not
    measurable at the earlier step, even if it is attached to that earlier prefix.
    """
    if not isinstance(label, (OutcomeLabel, ProcessLabel)):
        raise ValueError(f"label must be an OutcomeLabel or a ProcessLabel; got {type(label).__name__}")
    step = _time(step, "step")
    if step < 0 or step == math.inf:
        raise ValueError(f"step must be >= 0 and finite; got {step}")
    through = step if available_through is None else _time(available_through, "available_through")
    if through < 0:
        raise ValueError(f"available_through must be >= 0; got {through}")
    if through > step:
        raise ValueError(f"available_through ({through}) must be <= step ({step}): the history at a step holds no later information")
    return label.computed_after <= through


# An equation: a chain "a op b op c …" of numbers, "=", a number. Numbers are ASCII integers or decimals
# ("-12", "0.5"); "x" and "×" mean times. A number never starts inside a word or another number ("v2",
# "1,000", "1.5") and the right side is not cut off ("= 7.5" is 7.5, "= 1,001" is not read).
_NUM = r"-?\d+(?:\.\d+)?"
_EQ = re.compile(rf"(?<!\w)(?<!\d[.,])({_NUM}(?:\s*[-+*/x×]\s*{_NUM})+)\s*=\s*({_NUM})(?!\d|[.,]\d)", re.ASCII)
_NUMBER = re.compile(rf"\s*({_NUM})", re.ASCII)
_OP = re.compile(r"\s*([-+*/x×])", re.ASCII)

MAX_STEP_CHARS = 2_000  # a reasoning step longer than this is refused, not parsed
MAX_NUMBER_DIGITS = 100  # integers with more digits are refused: exact arithmetic on them is not a step check

ArithmeticVerdict = Literal["holds", "wrong", "undefined", "no_equation"]


def _evaluate(lhs: str) -> Fraction | None:
    """Exact value of ``a op b op …`` with * and / before + and − (left to right); None on division by zero."""
    nums, ops, pos = [], [], 0
    while True:
        m = _NUMBER.match(lhs, pos)
        nums.append(Fraction(m.group(1)))  # exact: Fraction("0.1") is 1/10
        pos = m.end()
        m = _OP.match(lhs, pos)
        if m is None:
            break
        ops.append(m.group(1))
        pos = m.end()
    terms, signs = [nums[0]], []
    for op, x in zip(ops, nums[1:]):
        if op in "*x×":
            terms[-1] *= x
        elif op == "/":
            if x == 0:
                return None
            terms[-1] /= x
        else:
            signs.append(op)
            terms.append(x)
    total = terms[0]
    for sign, t in zip(signs, terms[1:]):
        total = total + t if sign == "+" else total - t
    return total


def arithmetic_step_verdict(text: str, max_chars: int = MAX_STEP_CHARS, max_digits: int = MAX_NUMBER_DIGITS) -> ArithmeticVerdict:
    """Check every equation ``a op b … = c`` in one reasoning step, exactly (rational arithmetic, no eval).

    Numbers are integers or decimals (``0.1 + 0.2 = 0.3`` holds: the arithmetic is exact, not floating
    point); ``*``, ``x``, ``×`` and ``/`` bind before ``+`` and ``-``, left to right.

    Returns ``"holds"`` (every equation is true), ``"wrong"`` (some equation is false), ``"undefined"``
    (some left side divides by zero, e.g. ``1/0 = 5``: the claimed value cannot be right), or
    ``"no_equation"``. The first equation that fails decides. Input size is bounded: ``text`` longer
    than ``max_chars`` characters, or holding an integer with more than ``max_digits`` digits, raises
    ``ValueError`` naming ``text``.
    """
    text = _text(text, "text")
    max_chars, max_digits = _integer(max_chars, "max_chars"), _integer(max_digits, "max_digits")
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1; got {max_chars}")
    if max_digits < 1:
        raise ValueError(f"max_digits must be >= 1; got {max_digits}")
    if len(text) > max_chars:
        raise ValueError(f"text has {len(text)} characters; the step checker reads at most max_chars = {max_chars}")
    longest = max((len(d) for d in re.findall(r"\d+", text, re.ASCII)), default=0)
    if longest > max_digits:
        raise ValueError(f"text holds a {longest}-digit number; the step checker accepts at most max_digits = {max_digits} digits")
    found = False
    for lhs, rhs in _EQ.findall(text):
        found = True
        value = _evaluate(lhs)
        if value is None:
            return "undefined"
        if value != Fraction(rhs):
            return "wrong"
    return "holds" if found else "no_equation"


def check_arithmetic_step(text: str, max_chars: int = MAX_STEP_CHARS, max_digits: int = MAX_NUMBER_DIGITS) -> int:
    """A deterministic step checker: 1 if every equation ``a op b … = c`` in ``text`` holds, else 0.

    Steps without an equation are labelled 1 (nothing to refute). An equation whose left side divides by
    zero (``1/0 = 5``) is labelled 0: its value is undefined, so the claimed number is not shown correct.
    See :func:`arithmetic_step_verdict` for the reason and the input-size bounds. It sees only the step
    itself, so its labels are online measurable at that step [ftip-003Z].
    """
    return int(arithmetic_step_verdict(text, max_chars, max_digits) in ("holds", "no_equation"))


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
    response_id, final_answer, target = _text(response_id, "response_id"), _text(final_answer, "final_answer"), _text(target, "target")
    if not isinstance(reviewer_hindsight, bool):
        raise ValueError(f"reviewer_hindsight must be True or False; got {reviewer_hindsight!r:.40}")
    if isinstance(steps, str) or not isinstance(steps, Sequence) or not all(isinstance(s, str) for s in steps):
        raise ValueError("steps must be a list of strings (one per reasoning step)")
    out = OutcomeLabel(response_id, float(final_answer.strip() == target.strip()), "exact-answer")
    proc = []
    for k, s in enumerate(steps, start=1):
        try:
            value = float(check_arithmetic_step(s))
        except ValueError as exc:
            raise ValueError(f"steps[{k - 1}]: {exc}") from None
        proc.append(ProcessLabel(response_id, k, value, "arithmetic-checker", OUTCOME if reviewer_hindsight else float(k)))
    return out, proc
