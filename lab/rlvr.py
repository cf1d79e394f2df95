"""Reinforcement learning with verifiable rewards: verifiers with evidence, and the verifiable reward.

Reference chapter "Reinforcement learning with verifiable rewards" (ftip-0042): RLVR ftip-0044
(Lambert et al. 2024, Tülu 3, §6, eqs. 7–8), correctness indicator ftip-0046, evidence ftip-0047,
decision vs evidence ftip-0048, verifiable reward ftip-0049 (α = 10 in Tülu 3), rule/test/proof
evidence ftip-004A. Worked example ftip-004M (Definition ftip-0049 is applied to the lab's own responses).

A verifier returns an evidence record, not just a bit: the parsed answer or the test log that decided,
and the verifier's id and version, so a decision can be audited and reproduced later.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch

from lab._checks import TensorLike, as_tensor, check_positive


@dataclass(frozen=True)
class VerifierEvidence:
    """e_ver = (ι_ver, x, y, o, d_ver) [ftip-0047]: verifier id and version, prompt, response, output used, decision."""

    verifier_id: str
    verifier_version: str
    prompt: str
    response: str
    output: dict = field(hash=False)
    decision: int


class Verifier(Protocol):
    verifier_id: str
    version: str

    def verify(self, prompt: str, response: str, **fields) -> VerifierEvidence: ...


# Declared answer parsers: the parser is part of the verifier (ftip-0046).
PARSERS: dict[str, Callable[[str], str | None]] = {
    "strip": lambda s: s.strip() or None,
    "first_line": lambda s: (s.strip().splitlines() or [""])[0].strip() or None,
    "last_integer": lambda s: (re.findall(r"-?\d+", s) or [None])[-1],
    "first_integer": lambda s: (re.findall(r"-?\d+", s) or [None])[0],
    "boxed": lambda s: (re.findall(r"\\boxed\{([^{}]*)\}", s) or [None])[-1],
}


class ExactAnswerVerifier:
    """Rule evidence [ftip-004A]: parse the response with a declared parser and compare to the target.

    ``parser``: one of :data:`PARSERS` (``"strip"``, ``"first_line"``, ``"last_integer"``,
    ``"first_integer"``, ``"boxed"``). An unparseable response is a 0 decision with ``parsed = None``.
    """

    def __init__(self, parser: str = "strip", verifier_id: str = "exact-answer", version: str = "1") -> None:
        if not isinstance(parser, str) or parser not in PARSERS:
            raise ValueError(f"parser must be one of {list(PARSERS)}; got {parser!r}")
        for name, v in (("verifier_id", verifier_id), ("version", version)):
            if not isinstance(v, str) or not v:
                raise ValueError(f"{name} must be a non-empty string; got {v!r}")
        self.parser, self.verifier_id, self.version = parser, f"{verifier_id}[{parser}]", version

    def verify(self, prompt: str, response: str, answer: str) -> VerifierEvidence:
        """``answer``: the reference answer, a string or an int (a float such as 1.0 is refused: its text
        "1.0" would parse differently from 1). An answer the parser cannot read raises ``ValueError``."""
        for name, v in (("prompt", prompt), ("response", response)):
            if not isinstance(v, str):
                raise ValueError(f"{name} must be a string; got {type(v).__name__}")
        if isinstance(answer, bool) or not isinstance(answer, (str, int)):
            raise ValueError(f"answer must be a string or an int; got {type(answer).__name__} {answer!r:.40}")
        parsed = PARSERS[self.parser](response)
        target = PARSERS[self.parser](str(answer))
        if target is None:
            raise ValueError(f"answer {str(answer)!r:.40} has nothing the {self.parser!r} parser can read; every response would score 0")
        decision = int(parsed is not None and parsed == target)
        return VerifierEvidence(self.verifier_id, self.version, prompt, response, {"parsed": parsed, "target": target}, decision)


class UnitTestVerifier:
    """Test evidence [ftip-004A]: run the candidate program against unit tests inside the sandbox.

    The candidate is written to ``solution.py`` in a fresh sandbox directory; the tests never touch the
    directory (they reach the harness over a pipe, so the candidate cannot read them). The decision is 1
    exactly when the harness's result record, written after every test ran and carrying the run's random
    nonce, says at least one test ran and none failed (:func:`lab.sandbox.tests_verified`). Stdout text
    and exit codes alone never decide, and the candidate's values reach the tests only as plain data
    (see :meth:`lab.sandbox.Sandbox.run_tests`), so a wrong solution that prints "1 passed" and calls
    ``os._exit(0)``, or returns an object whose ``__eq__`` always says True, scores 0.
    The evidence keeps the test log, exit code, the harness record and the sandbox's declared restrictions.
    """

    def __init__(self, sandbox=None, verifier_id: str = "unit-tests", version: str = "2") -> None:
        from lab.sandbox import Sandbox

        self.sandbox = sandbox or Sandbox()
        self.verifier_id, self.version = verifier_id, version

    def verify(self, prompt: str, response: str, tests: str) -> VerifierEvidence:
        from lab.sandbox import tests_verified

        if not isinstance(response, str):
            raise ValueError(f"response must be a str; got {type(response).__name__}")
        if not isinstance(tests, str):
            raise ValueError(f"tests must be a str; got {type(tests).__name__}")
        self.sandbox.reset({"solution.py": response})
        try:
            res = self.sandbox.run_tests(tests, filename="test_solution.py", module="solution")
        finally:
            self.sandbox.close()
        log = (res.stdout + res.stderr)[-4000:]
        output = {"status": res.status, "exit_code": res.exit_code, "log": log, "tests": res.evidence["tests"],
                  "sandbox": res.evidence["sandbox"]}
        return VerifierEvidence(self.verifier_id, self.version, prompt, response, output, int(tests_verified(res)))


def verifiable_reward(decision: TensorLike, alpha: float = 10.0) -> torch.Tensor:
    """R_ver = α if v(x, y) = 1 else 0 [ftip-0049; Lambert et al. 2024, §6, eq. 8; α = 10 there].

    ``decision``: 0/1 values (a scalar or (N,)); any other value raises ``ValueError``.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or (isinstance(alpha, int) and abs(alpha) > 2**1000):
        raise ValueError(f"alpha must be a real number > 0; got {alpha!r:.40}")
    alpha = check_positive(alpha, "alpha")
    try:
        d = as_tensor(decision, "decision")
    except (OverflowError, RuntimeError):
        raise ValueError("decision must be 0 or 1 values; got a number too large for a tensor") from None
    if not bool(((d == 0) | (d == 1)).all()):
        raise ValueError(f"decision must be 0 or 1; got {d.tolist()}")
    return d.to(torch.float64 if not d.is_floating_point() else d.dtype) * alpha
