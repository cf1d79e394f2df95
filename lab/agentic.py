"""Agentic post-training: action serializer, a real sandbox, a ReAct loop, rounds, runs and their ledger.

Reference chapter "Agentic post-training" (ftip-004O): action serializer ftip-004P, generated tokens
vs actions ftip-004Q, tool interaction ftip-004R (Yao et al. 2023, ReAct, §2), sandbox ftip-004S and
its restrictions ftip-004T, training state ftip-004U, one round ftip-0073, a run ftip-0074, the
code-agent trace ftip-004V.

The sandbox is real: every action runs in its own Python subprocess, inside a fresh temporary
directory, with a wall-clock timeout, an address-space limit, no network and no writes outside that
directory. Isolation is layered (see :class:`Sandbox`) and every evidence record says which layers
were in force, because a sandbox's semantics are part of the trajectory law (ftip-004T).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

SERIALIZER_VERSION = "lab-xml-action/1"

# ----------------------------------------------------------------------------- serializer (ftip-004P)


@dataclass(frozen=True)
class Action:
    """An executable action: a tool name and its text argument."""

    tool: str
    argument: str


@dataclass(frozen=True)
class Malformed:
    """A generated string outside the decoder's domain. It is never executed [ftip-004P]."""

    text: str
    reason: str


class ActionSerializer:
    """A pair of partial maps enc: A ⇀ V*, dec: V* ⇀ A [ftip-004P].

    Text form: ``<action tool="NAME">ARGUMENT</action>``, optionally surrounded by whitespace.
    ``encode`` is defined for actions whose tool is allowed and whose argument does not contain the
    closing tag; ``decode`` returns an :class:`Action` for exactly the strings ``encode`` can produce
    (up to surrounding whitespace) and a :class:`Malformed` result, with a reason, for anything else.
    Hence dec(enc(a)) = a on the encoder's domain.
    """

    OPEN = re.compile(r'\s*<action tool="([a-z_][a-z0-9_]*)">', re.S)
    CLOSE = "</action>"

    def __init__(self, tools: Sequence[str] = ("write", "python", "run_tests", "finish")) -> None:
        self.tools = tuple(tools)
        self.version = SERIALIZER_VERSION

    def in_domain(self, action: Action) -> bool:
        return action.tool in self.tools and self.CLOSE not in action.argument

    def encode(self, action: Action) -> str:
        if action.tool not in self.tools:
            raise ValueError(f"action.tool must be one of {list(self.tools)}; got {action.tool!r}")
        if self.CLOSE in action.argument:
            raise ValueError(f"action.argument must not contain {self.CLOSE!r} (it would end the action early)")
        return f'<action tool="{action.tool}">{action.argument}{self.CLOSE}'

    def decode(self, text: str) -> Action | Malformed:
        m = self.OPEN.match(text)
        if not m:
            return Malformed(text, 'no <action tool="..."> opening tag at the start')
        body_and_rest = text[m.end():]
        end = body_and_rest.find(self.CLOSE)
        if end < 0:
            return Malformed(text, "no closing </action> tag")
        if body_and_rest[end + len(self.CLOSE):].strip():
            return Malformed(text, "text after </action>")
        tool = m.group(1)
        if tool not in self.tools:
            return Malformed(text, f"unknown tool {tool!r}; allowed: {list(self.tools)}")
        return Action(tool, body_and_rest[:end])

    def describe(self) -> dict:
        return {"version": self.version, "tools": list(self.tools)}


# ----------------------------------------------------------------------------- sandbox (ftip-004S)

# The sandbox lives in lab.sandbox (bubblewrap isolation, a test harness); re-exported here.
from lab.sandbox import SANDBOX_VERSION, Sandbox, SandboxResult, SandboxUnavailable, tests_verified  # noqa: E402,F401


# ----------------------------------------------------------------------------- ReAct loop (ftip-004R)


class Policy(Protocol):
    """Anything that maps the context so far to the next generated text."""

    def __call__(self, context: str) -> str: ...


class ScriptedPolicy:
    """Replays fixed generations in order: a transparent stand-in for a model in demos and tests."""

    def __init__(self, generations: Sequence[str]) -> None:
        self.generations = list(generations)
        self.calls = 0

    def __call__(self, context: str) -> str:
        if self.calls >= len(self.generations):
            return '<action tool="finish">out of script</action>'
        out = self.generations[self.calls]
        self.calls += 1
        return out


class ModelPolicy:
    """A causal LM as a policy: greedy or sampled continuation of the context, up to ``max_new_tokens``."""

    def __init__(self, model, tokenizer, max_new_tokens: int = 64, do_sample: bool = False, temperature: float = 1.0, seed: int = 0) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.decoding = {"max_new_tokens": max_new_tokens, "do_sample": do_sample, "temperature": temperature, "seed": seed}

    def __call__(self, context: str) -> str:
        import torch

        torch.manual_seed(self.decoding["seed"])
        enc = self.tokenizer(context, return_tensors="pt")
        out = self.model.generate(**enc, max_new_tokens=self.decoding["max_new_tokens"], do_sample=self.decoding["do_sample"],
                                  temperature=self.decoding["temperature"], pad_token_id=self.tokenizer.pad_token_id)
        return self.tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


@dataclass(frozen=True)
class Step:
    generated: str
    action: Action | Malformed
    result: SandboxResult


@dataclass(frozen=True)
class Trajectory:
    """A stopped trajectory: the task, every step, and whether the success rule fired."""

    task: str
    steps: tuple[Step, ...]
    success: bool
    stop_reason: str

    @property
    def cost(self) -> tuple[float, float]:
        return (sum(s.result.seconds for s in self.steps), float(sum(s.result.output_bytes for s in self.steps)))


def tests_passed(result: SandboxResult) -> bool:
    """Success rule of the code-agent example [ftip-004V]: a test run that exited 0 and printed 'passed'
    with no failures. It reads the tool evidence, never the model's claim."""
    return result.status == "ok" and result.evidence.get("exit_code") == 0 and re.search(r"\b\d+ passed\b", result.stdout) is not None and "failed" not in result.stdout


def react_episode(
    policy: Policy,
    sandbox: Sandbox,
    task: str,
    serializer: ActionSerializer | None = None,
    files: dict[str, str] | None = None,
    max_steps: int = 6,
    success: Callable[[SandboxResult], bool] = tests_passed,
) -> Trajectory:
    """One ReAct-style episode [ftip-004R; Yao et al. 2023, §2]: generate → decode → execute → append the
    observation to the context, until a ``finish`` action, ``max_steps``, or (with ``run_tests``) the
    success rule firing on tool evidence."""
    ser = serializer or ActionSerializer()
    sandbox.reset(files)
    context = f"Task: {task}\n"
    steps: list[Step] = []
    ok, reason = False, "max_steps"
    for _ in range(max_steps):
        gen = policy(context)
        act = ser.decode(gen)
        res = sandbox.execute(act)
        steps.append(Step(gen, act, res))
        context += f"{gen}\nObservation: {res.observation}\n"
        if isinstance(act, Action) and act.tool == "run_tests" and success(res):
            ok, reason = True, "success"
            break
        if isinstance(act, Action) and act.tool == "finish":
            reason = "finish"
            break
    return Trajectory(task, tuple(steps), ok, reason)


# ----------------------------------------------------------------------------- ledger, rounds, runs (ftip-004U, 0073, 0074)


class LedgerError(ValueError):
    pass


class Ledger:
    """An append-only JSON-lines ledger: records are only ever appended, never rewritten.

    ``append`` writes one line and fsyncs it. ``read`` returns every complete record and reports a
    truncated last line (a crash mid-write) instead of guessing; appending after a truncated tail raises.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def append(self, record: dict) -> None:
        line = json.dumps(record, sort_keys=True, default=_jsonable)
        if "\n" in line:
            raise LedgerError("record must serialise to a single line")
        if self.path.exists() and self.path.stat().st_size > 0:
            with open(self.path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    raise LedgerError(f"{self.path}: last line is truncated; refusing to append after it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read(self) -> tuple[list[dict], bool]:
        """``(records, truncated_tail)``. A malformed line before the last one raises ``LedgerError``."""
        if not self.path.exists():
            return [], False
        data = self.path.read_text(encoding="utf-8")
        lines = data.split("\n")
        truncated = not data.endswith("\n") and data != ""
        body = lines[:-1] if not truncated else lines[:-1]
        records = []
        for i, ln in enumerate(body, start=1):
            try:
                records.append(json.loads(ln))
            except json.JSONDecodeError as exc:
                raise LedgerError(f"{self.path}: line {i} is not valid JSON ({exc.msg})") from None
        return records, truncated


def _jsonable(o: Any) -> Any:
    if dataclasses.is_dataclass(o):
        return dataclasses.asdict(o)
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "tolist"):
        return o.tolist()
    return str(o)


@dataclass
class AgenticState:
    """Σ_n = (M_n, s_n, L_n) [ftip-004U]: model artifact id, optimizer-state id, and the ledger."""

    artifact_id: str
    optimizer_state_id: str
    ledger: Ledger
    round_index: int = 0


@dataclass(frozen=True)
class RoundRecord:
    """The typed record r_n of one agentic round [ftip-0073]."""

    round_index: int
    task: str
    instance: str
    policy_stamp: str
    env_version: dict
    trajectory: dict
    feedback: dict
    credit: list
    decision: str  # "accept" | "reject"
    proposed_artifact_id: str
    committed_artifact_id: str
    proposed_optimizer_state_id: str
    committed_optimizer_state_id: str
    seeds: dict
    versions: dict
    cost: list


def trajectory_summary(t: Trajectory) -> dict:
    return {
        "task": t.task, "success": t.success, "stop_reason": t.stop_reason,
        "steps": [{"generated": s.generated,
                   "action": dataclasses.asdict(s.action) if isinstance(s.action, Action) else {"malformed": s.action.reason},
                   "status": s.result.status, "observation": s.result.observation} for s in t.steps],
    }


@dataclass
class RoundSpec:
    """The maps of one round [ftip-0073]: sample a task instance, roll out, feed back, assign credit, update.

    ``update(state, credit, seed)`` returns ``(decision, proposed_artifact_id, proposed_optimizer_state_id)``;
    on ``"reject"`` the state keeps its artifact and optimizer state, but the proposal's cost is still counted.
    """

    task: str
    sample_instance: Callable[[int], tuple[str, dict]]
    rollout: Callable[[str, dict, int], Trajectory]
    feedback: Callable[[Trajectory], dict]
    credit: Callable[[Trajectory, dict], list]
    update: Callable[[AgenticState, list, int], tuple[str, str, str]]
    policy_stamp: Callable[[AgenticState], str]
    env_version: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)


def agentic_round(state: AgenticState, spec: RoundSpec, seeds: dict[str, int]) -> RoundRecord:
    """Run one round and append its record to the ledger; returns the record [ftip-0073]."""
    t0 = time.perf_counter()
    instance, files = spec.sample_instance(seeds["task"])
    traj = spec.rollout(instance, files, seeds["rollout"])
    fb = spec.feedback(traj)
    credit = spec.credit(traj, fb)
    decision, prop_art, prop_opt = spec.update(state, credit, seeds["update"])
    if decision not in ("accept", "reject"):
        raise ValueError(f"update must return decision 'accept' or 'reject'; got {decision!r}")
    committed_art = prop_art if decision == "accept" else state.artifact_id
    committed_opt = prop_opt if decision == "accept" else state.optimizer_state_id
    sandbox_s, out_bytes = traj.cost
    wall = time.perf_counter() - t0
    rec = RoundRecord(
        state.round_index, spec.task, instance, spec.policy_stamp(state), spec.env_version, trajectory_summary(traj), fb, credit,
        decision, prop_art, committed_art, prop_opt, committed_opt, dict(seeds), spec.versions, [wall, sandbox_s, out_bytes],
    )
    state.ledger.append(dataclasses.asdict(rec))
    state.artifact_id, state.optimizer_state_id = committed_art, committed_opt
    state.round_index += 1
    return rec


@dataclass(frozen=True)
class RunResult:
    artifact_id: str
    records: list[RoundRecord]
    cumulative_cost: list[float]
    stop_reason: str


def agentic_run(
    state: AgenticState,
    spec: RoundSpec,
    rounds: int,
    budget: Sequence[float],
    max_round_cost: Sequence[float],
    seed: int = 0,
) -> RunResult:
    """An agentic run [ftip-0074]: up to ``rounds`` rounds with a hard componentwise ``budget``.

    Cost vectors are (wall seconds, sandbox seconds, output bytes). Pre-admission rule: a round starts
    only if cumulative + ``max_round_cost`` <= ``budget`` in every component, so the realised cumulative cost
    never exceeds the budget as long as each round respects ``max_round_cost`` (the sandbox's timeout
    and output cap are what make that bound true).
    """
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0; got {rounds}")
    if len(budget) != len(max_round_cost) or len(budget) != 3:
        raise ValueError("budget and max_round_cost must both be (wall seconds, sandbox seconds, output bytes)")
    total = [0.0, 0.0, 0.0]
    records: list[RoundRecord] = []
    reason = "rounds"
    for n in range(rounds):
        if any(t + m > b for t, m, b in zip(total, max_round_cost, budget)):
            reason = "budget"
            break
        seeds = {"task": seed * 1_000_003 + 5 * n, "rollout": seed * 1_000_003 + 5 * n + 1, "feedback": seed * 1_000_003 + 5 * n + 2,
                 "credit": seed * 1_000_003 + 5 * n + 3, "update": seed * 1_000_003 + 5 * n + 4}
        rec = agentic_round(state, spec, seeds)
        records.append(rec)
        total = [t + c for t, c in zip(total, rec.cost)]
    return RunResult(state.artifact_id, records, total, reason)


# ----------------------------------------------------------------------------- the code-agent example (ftip-004V)

BUGGY_SOLUTION = "def add_squares(a, b):\n    return a * 2 + b * 2\n"
FIXED_SOLUTION = "def add_squares(a, b):\n    return a ** 2 + b ** 2\n"
TEST_SOLUTION = '''from solution import add_squares

got = add_squares(0, 3)
if type(got) is not int or got != 9:
    print(f"FAILED test_add_squares: expected 9, got {got}")
    raise SystemExit(1)
print("1 passed")
'''


def code_agent_script() -> list[str]:
    """The scripted generations of the ftip-004V trace: edit, test (fails), edit again, test (passes)."""
    ser = ActionSerializer()
    return [
        ser.encode(Action("write", "solution.py\n" + BUGGY_SOLUTION)),
        ser.encode(Action("run_tests", "test_solution.py")),
        ser.encode(Action("write", "solution.py\n" + FIXED_SOLUTION)),
        ser.encode(Action("run_tests", "test_solution.py")),
    ]


def code_agent_trace(sandbox: Sandbox | None = None) -> Trajectory:
    """Execute the code-agent example for real: the first test run returns 'expected 9, got 6', the second exits 0 with '1 passed'."""
    sb = sandbox or Sandbox()
    try:
        return react_episode(ScriptedPolicy(code_agent_script()), sb, "make add_squares pass its test",
                             files={"test_solution.py": TEST_SOLUTION}, max_steps=6)
    finally:
        if sandbox is None:
            sb.close()
