"""A short code-agent trace with tool evidence, executed in the real sandbox [ftip-004V]."""

from lab.agentic import code_agent_trace, tests_passed

ID = "code-agent-trace"
FTIP = "ftip-004V"
SOURCE = "definitions ftip-004V (Yao et al. 2023, ReAct, §2)"
INPUTS = {"task": "make add_squares pass its test"}
EXPECTED = [0, 1, 1]
TOLERANCE = 0


def compute() -> list[float]:
    t = code_agent_trace()
    tests = [s.result for s in t.steps if s.action.tool == "run_tests"]
    return [int(tests_passed(tests[0])), int(tests_passed(tests[1])), int(t.success)]


def explain() -> str:
    t = code_agent_trace()
    return "\n".join(f"{s.action.tool}: {s.result.observation.splitlines()[-1]}" for s in t.steps) + f"\nterminal success (read from the test evidence): {t.success}"
