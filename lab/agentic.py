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

SANDBOX_VERSION = "lab-sandbox/1"
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

# Runs inside the child before the action: an audit hook that refuses network use, process creation
# and any write outside the sandbox directory. It cannot be removed from Python code once installed.
_GUARD = r'''
import os, sys
_ROOT = os.path.realpath(os.getcwd())
sys.path.insert(0, _ROOT)  # -I drops the script directory; the episode's own files must import
def _inside(p):
    try:
        p = os.fsdecode(p)
    except Exception:
        return False
    return os.path.realpath(os.path.join(_ROOT, p)).startswith(_ROOT + os.sep)
_WRITE_EVENTS = {"os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.symlink", "os.link", "os.chmod",
                 "os.chown", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile"}
_DENY = {"socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo", "socket.gethostbyname",
         "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
         "pty.spawn", "ctypes.dlopen", "os.kill", "os.killpg", "os.chdir", "os.chroot"}
def _hook(event, args):
    if event in _DENY:
        raise PermissionError(f"sandbox: {event} is not allowed")
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int):
            return
        writing = (mode is not None and any(c in str(mode) for c in "wax+")) or (flags is not None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if writing and not _inside(path):
            raise PermissionError(f"sandbox: writing {path!r} outside the sandbox directory is not allowed")
    elif event in _WRITE_EVENTS:
        for p in args[:2]:
            if isinstance(p, (str, bytes, os.PathLike)) and not _inside(p):
                raise PermissionError(f"sandbox: {event} on {p!r} outside the sandbox directory is not allowed")
sys.addaudithook(_hook)
del _hook
_src = open(sys.argv[1]).read()
sys.argv = sys.argv[1:]
exec(compile(_src, sys.argv[0], "exec"), {"__name__": "__main__"})
'''


def _netns_available() -> bool:
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return False
    try:
        r = subprocess.run(["unshare", "--net", "--map-root-user", "true"], capture_output=True, timeout=10)
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


_NETNS: bool | None = None


@dataclass(frozen=True)
class SandboxResult:
    """What one executed action returns: observation, evidence record and cost [ftip-004S].

    ``status``: ``"ok"`` (exit 0), ``"error"`` (non-zero exit), ``"timeout"`` (killed at the wall-clock
    limit), ``"memory"`` (hit the memory limit), ``"killed"`` (ended by a signal), ``"denied"``
    (a sandbox rule refused an operation), ``"malformed"`` (the action never ran).
    """

    status: str
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    output_bytes: int
    evidence: dict

    @property
    def observation(self) -> str:
        """The text appended to the agent's context."""
        if self.status == "malformed":
            return f"malformed action: {self.stderr}"
        head = f"[{self.status}, exit {self.exit_code}]"
        out = (self.stdout + ("\n" + self.stderr if self.stderr else "")).strip()
        return f"{head}\n{out}" if out else head

    @property
    def cost(self) -> tuple[float, float]:
        """Cost increment (seconds, bytes of output)."""
        return (self.seconds, float(self.output_bytes))


class Sandbox:
    """A real, restricted executor for Python actions [ftip-004S, ftip-004T].

    ``reset()`` makes a fresh temporary directory (the episode's state); ``execute(action)`` runs one
    action as a child process of ``sys.executable -I -B`` there. Restrictions, all recorded in each
    evidence record:

    - wall clock: ``timeout_s``; the whole process group is killed when it expires;
    - memory: ``RLIMIT_AS = memory_mb`` (a bomb gets ``MemoryError`` or is killed); file size and
      process count limited too;
    - network: a fresh network namespace (``unshare --net``) when the OS allows it, and in every case an
      audit hook refusing sockets, subprocesses and ``ctypes``;
    - filesystem: writes only inside the sandbox directory (audit hook); environment emptied.

    Tools: ``write`` (argument ``PATH\\nCONTENT``: write a file inside the directory), ``python``
    (argument: a script), ``run_tests`` (argument: a test file to run, default ``test_solution.py``),
    ``finish`` (no execution: ends the episode).
    """

    def __init__(self, timeout_s: float = 5.0, memory_mb: int = 512, max_output_bytes: int = 20_000, network_namespace: bool | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0; got {timeout_s}")
        if memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64 (the interpreter itself needs memory); got {memory_mb}")
        global _NETNS
        if network_namespace is None:
            if _NETNS is None:
                _NETNS = _netns_available()
            network_namespace = _NETNS
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.max_output_bytes = int(max_output_bytes)
        self.network_namespace = bool(network_namespace)
        self.root: Path | None = None

    def describe(self) -> dict:
        return {
            "version": SANDBOX_VERSION,
            "timeout_s": self.timeout_s,
            "memory_mb": self.memory_mb,
            "network": "netns+audit-hook" if self.network_namespace else "audit-hook",
            "writes": "sandbox-directory-only",
            "python": sys.version.split()[0],
        }

    def reset(self, files: dict[str, str] | None = None) -> Path:
        """Start an episode in a fresh temporary directory, optionally with initial files."""
        self.close()
        self.root = Path(tempfile.mkdtemp(prefix="lab-sandbox-"))
        for name, content in (files or {}).items():
            self._write(name, content)
        return self.root

    def close(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> "Sandbox":
        if self.root is None:
            self.reset()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _path(self, name: str) -> Path:
        assert self.root is not None
        p = (self.root / name).resolve()
        if not str(p).startswith(str(self.root.resolve()) + os.sep):
            raise PermissionError(f"sandbox: path {name!r} leaves the sandbox directory")
        return p

    def _write(self, name: str, content: str) -> None:
        p = self._path(name)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)

    def _limits(self) -> None:  # runs in the child between fork and exec
        import resource

        mem = self.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024, 16 * 1024 * 1024))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    def run_python(self, source: str, filename: str = "action.py", args: Sequence[str] = ()) -> SandboxResult:
        """Run ``source`` as a script in the sandbox directory under every restriction."""
        if self.root is None:
            self.reset()
        self._write(filename, source)
        (self.root / "_guard.py").write_text(_GUARD)
        cmd = [sys.executable, "-I", "-B", "_guard.py", filename, *args]
        if self.network_namespace:
            cmd = ["unshare", "--net", "--map-root-user", *cmd]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.root), "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=self._limits, start_new_session=True)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        seconds = time.perf_counter() - start
        code = proc.returncode
        stdout = out[: self.max_output_bytes].decode("utf-8", "replace")
        stderr = err[: self.max_output_bytes].decode("utf-8", "replace")
        if timed_out:
            status = "timeout"
        elif "MemoryError" in stderr:
            status = "memory"
        elif code is not None and code < 0:
            status = "killed"
        elif "PermissionError: sandbox:" in stderr:
            status = "denied"
        else:
            status = "ok" if code == 0 else "error"
        evidence = {
            "sandbox": self.describe(),
            "command": " ".join(cmd[-3:]),
            "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
            "exit_code": code,
            "status": status,
            "stdout": stdout,
            "stderr_tail": stderr[-2000:],
        }
        return SandboxResult(status, code, stdout, stderr, seconds, len(out) + len(err), evidence)

    def execute(self, action: Action | Malformed) -> SandboxResult:
        """Execute one decoded action; a :class:`Malformed` result is reported, never run."""
        if isinstance(action, Malformed):
            return SandboxResult("malformed", None, "", action.reason, 0.0, 0, {"sandbox": self.describe(), "status": "malformed"})
        if self.root is None:
            self.reset()
        if action.tool == "write":
            path, _, content = action.argument.partition("\n")
            try:
                self._write(path.strip(), content)
            except (PermissionError, OSError) as exc:
                return SandboxResult("denied", None, "", str(exc), 0.0, 0, {"sandbox": self.describe(), "status": "denied"})
            msg = f"wrote {path.strip()} ({len(content)} characters)"
            return SandboxResult("ok", 0, msg, "", 0.0, len(msg), {"sandbox": self.describe(), "status": "ok", "wrote": path.strip(),
                                                                    "content_sha256": hashlib.sha256(content.encode()).hexdigest()})
        if action.tool == "python":
            return self.run_python(action.argument)
        if action.tool == "run_tests":
            target = action.argument.strip() or "test_solution.py"
            try:
                source = self._path(target).read_text()
            except (OSError, PermissionError) as exc:
                return SandboxResult("error", None, "", f"cannot read {target}: {exc}", 0.0, 0, {"sandbox": self.describe(), "status": "error"})
            return self.run_python(source, filename=target)
        if action.tool == "finish":
            return SandboxResult("ok", 0, action.argument, "", 0.0, len(action.argument), {"sandbox": self.describe(), "status": "finish"})
        raise ValueError(f"action.tool {action.tool!r} has no executor in this sandbox")


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
if got != 9:
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
