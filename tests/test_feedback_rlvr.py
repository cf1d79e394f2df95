import pytest

from lab.feedback import OUTCOME, OutcomeLabel, ProcessLabel, check_arithmetic_step, is_online_measurable, label_trace
from lab.rlvr import ExactAnswerVerifier, UnitTestVerifier, verifiable_reward


def test_online_measurability():
    online = ProcessLabel("r", step=2, value=1.0, source="checker", computed_after=2)
    hindsight = ProcessLabel("r", step=2, value=1.0, source="reviewer", computed_after=OUTCOME)
    later = ProcessLabel("r", step=2, value=1.0, source="reviewer", computed_after=3)
    out = OutcomeLabel("r", 1.0, "exact")
    assert is_online_measurable(online, 2)
    assert not is_online_measurable(online, 1)  # not yet produced at step 1
    assert not is_online_measurable(online, 2, available_through=1)  # delivery lag
    assert not is_online_measurable(hindsight, 2) and not is_online_measurable(hindsight, 100)
    assert not is_online_measurable(later, 2) and is_online_measurable(later, 3)
    assert not is_online_measurable(out, 4)
    with pytest.raises(ValueError, match="available_through"):
        is_online_measurable(online, 2, available_through=3)
    with pytest.raises(ValueError, match="computed_after"):
        ProcessLabel("r", step=3, value=1.0, source="x", computed_after=2)
    with pytest.raises(ValueError, match="step"):
        ProcessLabel("r", step=0, value=1.0, source="x", computed_after=2)


def test_outcome_and_process_labels_are_separate_records():
    out, proc = label_trace("t", ["2 + 2 = 4", "4 * 3 = 13"], "13", "12")
    assert isinstance(out, OutcomeLabel) and out.value == 0.0
    assert [p.value for p in proc] == [1.0, 0.0] and all(isinstance(p, ProcessLabel) for p in proc)
    assert check_arithmetic_step("no equation here") == 1
    assert check_arithmetic_step("3 × 4 = 12 and 12 + 1 = 14") == 0


def test_exact_answer_verifier_evidence():
    v = ExactAnswerVerifier("last_integer")
    e = v.verify("7+5?", "I think 7 + 5 = 12", answer="12")
    assert e.decision == 1 and e.output["parsed"] == "12" and e.verifier_id == "exact-answer[last_integer]" and e.verifier_version == "1"
    assert v.verify("7+5?", "no idea", answer="12").output["parsed"] is None
    assert v.verify("7+5?", "no idea", answer="12").decision == 0
    with pytest.raises(ValueError, match="parser"):
        ExactAnswerVerifier("regex")


def test_unit_test_verifier_runs_in_sandbox():
    tests = "from solution import f\nassert type(f(3)) is int and f(3) == 9, f'expected 9, got {f(3)!r}'\nprint('1 passed')\n"
    v = UnitTestVerifier()
    good = v.verify("square", "def f(x):\n    return x * x\n", tests=tests)
    bad = v.verify("square", "def f(x):\n    return x + x\n", tests=tests)
    assert good.decision == 1 and "1 passed" in good.output["log"] and good.output["exit_code"] == 0
    assert bad.decision == 0 and "expected 9, got 6" in bad.output["log"]
    assert good.output["sandbox"]["writes"] == "sandbox-directory-only"
    assert good.output["tests"]["verified"] and good.output["tests"]["record"] == "valid" and not bad.output["tests"]["verified"]


def test_verifiable_reward():
    assert verifiable_reward([1, 0, 1]).tolist() == [10.0, 0.0, 10.0]
    assert verifiable_reward(1, alpha=1.0).item() == 1.0
    with pytest.raises(ValueError, match="decision"):
        verifiable_reward([0.5])
    with pytest.raises(ValueError, match="alpha"):
        verifiable_reward([1], alpha=0.0)
