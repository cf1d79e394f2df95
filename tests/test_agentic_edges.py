"""Issue 10 §1, agentic/replay/feedback pieces at the edges: hand-computed cases and bad input.

Each test names the finding it pins down. The generated sweep over every public function lives in
tests/test_edge_sweep_agentic.py.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.feedback import (
    OUTCOME,
    OutcomeLabel,
    ProcessLabel,
    arithmetic_step_verdict,
    check_arithmetic_step,
    is_online_measurable,
    label_trace,
)

# ----------------------------------------------------------------------------- feedback: step checker


@pytest.mark.parametrize(
    "text, verdict, label",
    [
        ("1/0 = 5", "undefined", 0),  # was ZeroDivisionError
        ("2 + 1/0 = 2", "undefined", 0),
        ("3 × 4 = 12", "holds", 1),
        ("17 + 2 = 18", "wrong", 0),
        ("3-2=1", "holds", 1),  # "-2" after a number is the operator minus
        ("3 - -2 = 5", "holds", 1),
        ("2 + 3 * 4 = 14", "holds", 1),  # precedence: 2 + 12
        ("7/2*2 = 7", "holds", 1),  # exact rationals: 3.5 * 2
        ("10/4 = 2", "wrong", 0),  # 2.5 is not 2: no integer division
        ("6/3/2 = 1", "holds", 1),  # left to right
        ("1 + 1 = 2 and 2 * 2 = 5", "wrong", 0),  # every equation must hold
        ("3 +\n4\n= 7", "holds", 1),
        ("no equation here", "no_equation", 1),
        ("", "no_equation", 1),
        ("٣ + ٤ = ٧", "no_equation", 1),  # ASCII digits only: nothing to refute
    ],
)
def test_arithmetic_checker_hand_cases(text, verdict, label):
    assert arithmetic_step_verdict(text) == verdict
    assert check_arithmetic_step(text) == label


def test_arithmetic_checker_bounds_its_input():
    # 5000-digit number: was SyntaxError from eval; now a ValueError naming the argument
    with pytest.raises(ValueError, match=r"^text has 5008 characters"):
        check_arithmetic_step("1" * 5000 + " + 1 = 2")
    with pytest.raises(ValueError, match=r"^text holds a 150-digit number"):
        check_arithmetic_step("1" * 150 + " + 1 = 2")
    assert check_arithmetic_step("9" * 100 + " - 1 = 9" + "9" * 98 + "8") == 1  # 100 digits is allowed, exactly
    assert check_arithmetic_step("1" * 150 + " + 1 = 2", max_digits=200) == 0
    with pytest.raises(ValueError, match="text must be a string"):
        check_arithmetic_step(None)
    with pytest.raises(ValueError, match="max_chars"):
        check_arithmetic_step("1 + 1 = 2", max_chars=0)
    with pytest.raises(ValueError, match="max_digits"):
        check_arithmetic_step("1 + 1 = 2", max_digits=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-10**6, 10**6), min_size=2, max_size=6), st.lists(st.sampled_from("+-*/"), min_size=5, max_size=5))
def test_arithmetic_checker_matches_exact_reference(nums, ops):
    from fractions import Fraction

    expr = str(nums[0])
    for op, n in zip(ops, nums[1:]):
        expr += f" {op} {n}"
    # reference: Python's own grammar on Fractions (same precedence, left to right)
    src = " ".join(f"Fraction({t})" if t.lstrip("-").isdigit() else t for t in expr.split())
    try:
        value = eval(src, {"Fraction": Fraction})
    except ZeroDivisionError:
        assert arithmetic_step_verdict(f"{expr} = 0") == "undefined"
        return
    if value.denominator == 1:
        assert arithmetic_step_verdict(f"{expr} = {value.numerator}") == "holds"
        assert arithmetic_step_verdict(f"{expr} = {value.numerator + 1}") == "wrong"
    else:
        assert arithmetic_step_verdict(f"{expr} = {math.floor(value)}") == "wrong"


# ----------------------------------------------------------------------------- feedback: records and measurability


def test_label_records_refuse_bad_fields():
    with pytest.raises(ValueError, match="value must be finite"):
        ProcessLabel("r", 1, math.nan, "x", 1)
    with pytest.raises(ValueError, match="value must be a real number"):
        OutcomeLabel("r", "1", "x")
    with pytest.raises(ValueError, match="step must be an integer"):
        ProcessLabel("r", 1.5, 1.0, "x", 2)
    with pytest.raises(ValueError, match="step must be an integer"):
        ProcessLabel("r", True, 1.0, "x", 2)
    with pytest.raises(ValueError, match="computed_after"):
        ProcessLabel("r", 1, 1.0, "x", math.nan)
    assert ProcessLabel("r", 2, True, "x", OUTCOME).value == 1.0  # bool label converts to the same number
    assert OutcomeLabel("r", 1, "x").value == 1.0 and isinstance(OutcomeLabel("r", 1, "x").value, float)


def test_online_measurability_refuses_nan_and_wrong_types():
    lab_ = ProcessLabel("r", 2, 1.0, "checker", 2)
    with pytest.raises(ValueError, match="step"):
        is_online_measurable(lab_, math.nan)  # was: silently False
    with pytest.raises(ValueError, match="step"):
        is_online_measurable(lab_, math.inf)
    with pytest.raises(ValueError, match="available_through"):
        is_online_measurable(lab_, 3, available_through=math.nan)
    with pytest.raises(ValueError, match="label"):
        is_online_measurable({"computed_after": 1}, 3)
    assert is_online_measurable(lab_, 2.0) and not is_online_measurable(lab_, 1)


def test_label_trace_bad_input():
    with pytest.raises(ValueError, match="steps must be a list of strings"):
        label_trace("r", "1 + 1 = 2", "2", "2")
    with pytest.raises(ValueError, match="final_answer must be a string"):
        label_trace("r", ["1 + 1 = 2"], 2, "2")
    out, proc = label_trace("r", ["1/0 = 5", "3 × 4 = 12"], "12", "12")
    assert out.value == 1.0 and [p.value for p in proc] == [0.0, 1.0]
