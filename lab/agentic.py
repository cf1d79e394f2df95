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
import inspect
import json
import math
import numbers
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

SERIALIZER_VERSION = "lab-xml-action/2"  # 2: optional ReAct thought before the tag; any valid tool name

# ----------------------------------------------------------------------------- serializer (ftip-004P)


@dataclass(frozen=True)
class Action:
    """An executable action: a tool name and its text argument.

    ``thought``: the reasoning text the model generated before the action (a ReAct "thought",
    Yao et al. 2023, §2). It is kept beside the action, never executed; ``""`` when there was none.
    """

    tool: str
    argument: str
    thought: str = ""


@dataclass(frozen=True)
class Malformed:
    """A generated string outside the decoder's domain. It is never executed [ftip-004P]."""

    text: str
    reason: str


def _check_tool_name(name: object) -> str:
    """A tool name is any non-empty printable string without whitespace, ``"``, ``<`` or ``>``
    (the characters that would break the ``tool="NAME"`` attribute)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"tools must hold non-empty strings; got {name!r}")
    bad = [c for c in name if c in '"<>' or c.isspace() or not c.isprintable()]
    if bad:
        raise ValueError(f"tools: name {name!r} contains {bad[0]!r}; names may not contain whitespace, '\"', '<' or '>'")
    return name


class ActionSerializer:
    """A pair of partial maps enc: A ⇀ V*, dec: V* ⇀ A [ftip-004P].

    Text form: ``[THOUGHT] <action tool="NAME">ARGUMENT</action>``, optionally surrounded by whitespace.

    - ``tools``: the allowed tool names, exactly as given (any printable name without whitespace, ``"``,
      ``<`` or ``>``; e.g. ``"runTests"``, ``"fs.read"``). The decoder accepts exactly these names.
    - ``allow_thought`` (default True): text before the opening tag is a ReAct thought [ftip-004R], returned
      in :attr:`Action.thought` (stripped). With False, any text before the tag is Malformed.

    ``encode`` is defined for actions whose tool is allowed, whose argument does not contain the closing
    tag, and whose thought is stripped and holds no ``<action``; ``decode`` returns an :class:`Action`
    for exactly the strings ``encode`` can produce (up to whitespace around the thought and the tag) and
    a :class:`Malformed` result, with a reason, for anything else: no tag, an unclosed tag, an unknown
    tool, text after ``</action>`` (e.g. a second action). Hence dec(enc(a)) = a on the encoder's domain.
    """

    OPEN = re.compile(r'<action tool="([^"]*)">')
    OPEN_PREFIX = "<action"
    CLOSE = "</action>"

    def __init__(self, tools: Sequence[str] = ("write", "python", "run_tests", "finish"), allow_thought: bool = True) -> None:
        if isinstance(tools, str) or not isinstance(tools, Sequence):
            raise ValueError(f"tools must be a sequence of tool names (a list or tuple), not {type(tools).__name__} {tools!r:.40}")
        names = tuple(_check_tool_name(t) for t in tools)
        if not names:
            raise ValueError("tools must name at least one tool")
        if len(set(names)) != len(names):
            raise ValueError(f"tools must not repeat a name; got {list(names)}")
        if not isinstance(allow_thought, bool):
            raise ValueError(f"allow_thought must be True or False; got {allow_thought!r}")
        self.tools = names
        self.allow_thought = allow_thought
        self.version = SERIALIZER_VERSION

    def _domain_error(self, action: Action) -> str | None:
        if not isinstance(action, Action):
            return f"action must be an Action; got {type(action).__name__}"
        if not isinstance(action.tool, str) or action.tool not in self.tools:
            return f"action.tool must be one of {list(self.tools)}; got {action.tool!r}"
        if not isinstance(action.argument, str):
            return f"action.argument must be a string; got {type(action.argument).__name__}"
        if self.CLOSE in action.argument:
            return f"action.argument must not contain {self.CLOSE!r} (it would end the action early)"
        if not isinstance(action.thought, str):
            return f"action.thought must be a string; got {type(action.thought).__name__}"
        if action.thought and not self.allow_thought:
            return "action.thought must be empty: this serializer declares allow_thought=False"
        if action.thought != action.thought.strip():
            return "action.thought must not start or end with whitespace (the decoder strips it)"
        if self.OPEN_PREFIX in action.thought:
            return f"action.thought must not contain {self.OPEN_PREFIX!r} (the decoder would read an action there)"
        return None

    def in_domain(self, action: Action) -> bool:
        return self._domain_error(action) is None

    def encode(self, action: Action) -> str:
        err = self._domain_error(action)
        if err is not None:
            raise ValueError(err)
        tag = f'<action tool="{action.tool}">{action.argument}{self.CLOSE}'
        return f"{action.thought}\n{tag}" if action.thought else tag

    def decode(self, text: str) -> Action | Malformed:
        if not isinstance(text, str):
            raise ValueError(f"text must be a string (the generated text); got {type(text).__name__}")
        start = text.find(self.OPEN_PREFIX)
        if start < 0:
            return Malformed(text, 'no <action tool="..."> opening tag')
        thought = text[:start].strip()
        if thought and not self.allow_thought:
            return Malformed(text, "text before the opening tag (allow_thought=False)")
        m = self.OPEN.match(text, start)
        if not m:
            return Malformed(text, 'malformed opening tag: expected <action tool="NAME">')
        body_and_rest = text[m.end():]
        end = body_and_rest.find(self.CLOSE)
        if end < 0:
            return Malformed(text, "no closing </action> tag")
        if body_and_rest[end + len(self.CLOSE):].strip():
            return Malformed(text, "text after </action> (one action per step)")
        tool = m.group(1)
        if tool not in self.tools:
            return Malformed(text, f"unknown tool {tool!r}; allowed: {list(self.tools)}")
        return Action(tool, body_and_rest[:end], thought)

    def describe(self) -> dict:
        return {"version": self.version, "tools": list(self.tools), "allow_thought": self.allow_thought}


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
        if isinstance(generations, str) or not isinstance(generations, Sequence) or not all(isinstance(g, str) for g in generations):
            raise ValueError("generations must be a list of strings (one generated text per step)")
        self.generations = list(generations)
        self.calls = 0

    def __call__(self, context: str) -> str:
        if self.calls >= len(self.generations):
            return '<action tool="finish">out of script</action>'
        out = self.generations[self.calls]
        self.calls += 1
        return out


class ModelPolicy:
    """A causal LM as a policy: greedy or sampled continuation of the context, up to ``max_new_tokens``.

    ``seed`` fixes the sampling noise: the k-th call (k = 0, 1, …) samples under ``seed * 1_000_003 + k``
    inside a forked RNG, so an episode is reproducible from the seed (build one policy per episode, e.g.
    from the round's rollout seed), successive steps do not reuse one noise stream, and the caller's
    global RNG state is left as it was.
    """

    def __init__(self, model, tokenizer, max_new_tokens: int = 64, do_sample: bool = False, temperature: float = 1.0, seed: int = 0) -> None:
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, numbers.Integral) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an integer >= 1; got {max_new_tokens!r}")
        if not isinstance(do_sample, bool):
            raise ValueError(f"do_sample must be True or False; got {do_sample!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) or not (0 < temperature and (not isinstance(temperature, numbers.Integral) or temperature < 2**1000) and float(temperature) < math.inf):
            raise ValueError(f"temperature must be a finite number > 0; got {temperature!r}")
        self.model, self.tokenizer = model, tokenizer
        self.decoding = {"max_new_tokens": int(max_new_tokens), "do_sample": do_sample, "temperature": float(temperature),
                         "seed": _seed_int(seed, "seed")}
        self.calls = 0

    def __call__(self, context: str) -> str:
        import torch

        if not isinstance(context, str):
            raise ValueError(f"context must be a string; got {type(context).__name__}")
        dev = next(self.model.parameters()).device
        with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
            torch.manual_seed(self.decoding["seed"] * 1_000_003 + self.calls)
            enc = self.tokenizer(context, return_tensors="pt").to(dev)
            out = self.model.generate(**enc, max_new_tokens=self.decoding["max_new_tokens"], do_sample=self.decoding["do_sample"],
                                      temperature=self.decoding["temperature"], pad_token_id=self.tokenizer.pad_token_id)
        self.calls += 1
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


def _cap_output(result: SandboxResult, cap: int) -> SandboxResult:
    """At most ``cap`` bytes of stdout (first) and stderr (then) reach the agent and the cost record."""
    if result.output_bytes <= cap and len(result.stdout.encode()) + len(result.stderr.encode()) <= cap:
        return result
    out = result.stdout.encode()[:cap]
    err = result.stderr.encode()[: cap - len(out)]
    stdout, stderr = out.decode("utf-8", "ignore"), err.decode("utf-8", "ignore")  # drop a cut multi-byte character
    kept = len(stdout.encode()) + len(stderr.encode())
    evidence = {**result.evidence, "output_truncated": True, "output_bytes_produced": result.output_bytes, "output_bytes_kept": kept}
    return dataclasses.replace(result, stdout=stdout, stderr=stderr, output_bytes=kept, evidence=evidence)


def tests_passed(result: SandboxResult) -> bool:
    """Success rule of the code-agent example [ftip-004V]: a test run that exited 0 and printed 'passed'
    with no failures. It reads the tool evidence, never the model's claim."""
    if not isinstance(result, SandboxResult):
        raise ValueError(f"result must be a SandboxResult; got {type(result).__name__}")
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
    success rule firing on tool evidence.

    Output accounting: each step delivers at most ``sandbox.max_output_bytes`` bytes of stdout + stderr
    (UTF-8) to the context, and that is the step's recorded output cost; anything the tool printed beyond
    it is cut, and the step's evidence records ``output_truncated`` and ``output_bytes_produced``. So an
    episode's output cost is at most ``max_steps * sandbox.max_output_bytes`` (a bound a run can declare).
    """
    ser = serializer or ActionSerializer()
    if isinstance(max_steps, bool) or not isinstance(max_steps, numbers.Integral) or max_steps < 1:
        raise ValueError(f"max_steps must be an integer >= 1; got {max_steps!r}")
    if not isinstance(task, str):
        raise ValueError(f"task must be a string; got {type(task).__name__}")
    if not all(hasattr(sandbox, a) for a in ("reset", "execute", "max_output_bytes")):
        raise ValueError(f"sandbox must be a Sandbox (reset, execute, max_output_bytes); got {type(sandbox).__name__}")
    if not callable(policy):
        raise ValueError(f"policy must be callable (context -> generated text); got {type(policy).__name__}")
    if not isinstance(ser, ActionSerializer):
        raise ValueError(f"serializer must be an ActionSerializer; got {type(serializer).__name__}")
    if files is not None and (not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
        raise ValueError("files must be a dict of file name -> text content")
    if not callable(success):
        raise ValueError(f"success must be callable (SandboxResult -> bool); got {type(success).__name__}")
    cap = int(sandbox.max_output_bytes)
    sandbox.reset(files)
    context = f"Task: {task}\n"
    steps: list[Step] = []
    ok, reason = False, "max_steps"
    for _ in range(max_steps):
        gen = policy(context)
        if not isinstance(gen, str):
            raise ValueError(f"policy must return a string (the generated text); got {type(gen).__name__}")
        act = ser.decode(gen)
        res = _cap_output(sandbox.execute(act), cap)
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
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise ValueError(f"path must be a file path (str or Path); got {path!r:.60}")
        self.path = Path(path)
        try:
            is_dir = self.path.is_dir()
        except OSError as exc:  # e.g. a name longer than the file system allows
            raise ValueError(f"path is not usable: {exc.strerror}") from None
        if is_dir:
            raise ValueError(f"path must be a file, not a directory: {self.path}")

    def append(self, record: dict) -> None:
        """Append one record (a dict with string keys; numbers finite: JSON has no NaN or inf)."""
        if not isinstance(record, dict) or not all(isinstance(k, str) for k in record):
            raise ValueError(f"record must be a dict with string keys; got {type(record).__name__}")
        try:
            line = json.dumps(record, sort_keys=True, default=_jsonable, allow_nan=False)
        except ValueError:
            raise ValueError("record must not contain NaN or inf (a ledger line must be valid JSON)") from None
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
    """The JSON-ready form of a trajectory that a round record stores."""
    if not isinstance(t, Trajectory):
        raise ValueError(f"t must be a Trajectory; got {type(t).__name__}")
    return {
        "task": t.task, "success": t.success, "stop_reason": t.stop_reason,
        "steps": [{"generated": s.generated,
                   "action": dataclasses.asdict(s.action) if isinstance(s.action, Action) else {"malformed": s.action.reason},
                   "status": s.result.status, "observation": s.result.observation} for s in t.steps],
    }


@dataclass
class RoundSpec:
    """The maps of one round [ftip-0073]: sample a task instance, roll out, feed back, assign credit, update.

    Each map receives its own seed from the round's seed tuple ω_n = (task, rollout, feedback, credit,
    update), as in ftip-0073:

    - ``sample_instance(seed) -> (instance, files)``
    - ``rollout(instance, files, seed) -> Trajectory``
    - ``feedback(trajectory, seed) -> dict``
    - ``credit(trajectory, feedback, seed) -> list``
    - ``update(state, credit, seed) -> (decision, proposed_artifact_id, proposed_optimizer_state_id)``;
      on ``"reject"`` the state keeps its artifact and optimizer state, but the proposal's cost is still counted.

    A deterministic ``feedback`` or ``credit`` map may omit its seed parameter (``feedback(trajectory)``,
    ``credit(trajectory, feedback)``); the round record then stores ``None`` for that seed, so a recorded
    seed is always one that was passed on.
    """

    task: str
    sample_instance: Callable[[int], tuple[str, dict]]
    rollout: Callable[[str, dict, int], Trajectory]
    feedback: Callable[..., dict]
    credit: Callable[..., list]
    update: Callable[[AgenticState, list, int], tuple[str, str, str]]
    policy_stamp: Callable[[AgenticState], str]
    env_version: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)


SEED_STREAMS = ("task", "rollout", "feedback", "credit", "update")


def _takes_seed(fn: Callable, n_args: int) -> bool:
    """Does ``fn`` accept one more positional argument (the seed) after its ``n_args`` inputs?"""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # no introspectable signature (some builtins): pass the seed
        return True
    try:
        sig.bind(*([None] * (n_args + 1)))
        return True
    except TypeError:
        return False


def round_seeds(seed: int, round_index: int) -> dict[str, int]:
    """The declared seed law of :func:`agentic_run`: ω_n for round ``round_index`` of a run with ``seed``.

    Deterministic and distinct per stream and round: ``seed * 1_000_003 + 5 * round_index + k`` for the
    streams task, rollout, feedback, credit, update (k = 0 … 4).
    """
    seed, round_index = _seed_int(seed, "seed"), _seed_int(round_index, "round_index")
    base = seed * 1_000_003 + 5 * round_index
    return {name: base + k for k, name in enumerate(SEED_STREAMS)}


def _seed_int(x: object, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {type(x).__name__} {x!r:.40}")
    if not 0 <= int(x) < 2**32:
        raise ValueError(f"{name} must lie in [0, 2**32); got {x}")
    return int(x)


def agentic_round(state: AgenticState, spec: RoundSpec, seeds: dict[str, int]) -> RoundRecord:
    """Run one round and append its record to the ledger; returns the record [ftip-0073].

    ``seeds``: one integer per stream of :data:`SEED_STREAMS`; each is passed to its map (see
    :class:`RoundSpec`). The record's ``seeds`` holds the seeds actually passed on (``None`` for a
    deterministic feedback or credit map that takes no seed).
    """
    if not isinstance(state, AgenticState):
        raise ValueError(f"state must be an AgenticState; got {type(state).__name__}")
    if not isinstance(spec, RoundSpec):
        raise ValueError(f"spec must be a RoundSpec; got {type(spec).__name__}")
    if not isinstance(seeds, dict) or set(seeds) != set(SEED_STREAMS):
        raise ValueError(f"seeds must be a dict with exactly the keys {list(SEED_STREAMS)}; got {seeds!r:.80}")
    seeds = {k: _seed_int(v, f"seeds[{k!r}]") for k, v in seeds.items()}
    used = dict(seeds)
    t0 = time.perf_counter()
    instance, files = spec.sample_instance(seeds["task"])
    traj = spec.rollout(instance, files, seeds["rollout"])
    if _takes_seed(spec.feedback, 1):
        fb = spec.feedback(traj, seeds["feedback"])
    else:
        fb, used["feedback"] = spec.feedback(traj), None
    if _takes_seed(spec.credit, 2):
        credit = spec.credit(traj, fb, seeds["credit"])
    else:
        credit, used["credit"] = spec.credit(traj, fb), None
    decision, prop_art, prop_opt = spec.update(state, credit, seeds["update"])
    if decision not in ("accept", "reject"):
        raise ValueError(f"update must return decision 'accept' or 'reject'; got {decision!r}")
    committed_art = prop_art if decision == "accept" else state.artifact_id
    committed_opt = prop_opt if decision == "accept" else state.optimizer_state_id
    sandbox_s, out_bytes = traj.cost
    wall = time.perf_counter() - t0
    rec = RoundRecord(
        state.round_index, spec.task, instance, spec.policy_stamp(state), spec.env_version, trajectory_summary(traj), fb, credit,
        decision, prop_art, committed_art, prop_opt, committed_opt, used, spec.versions, [wall, sandbox_s, out_bytes],
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


COST_COMPONENTS = ("wall seconds", "sandbox seconds", "output bytes")


class RoundCostError(ValueError):
    """A round cost more than the run's declared ``max_round_cost``: the admission rule's premise failed.

    The run stops at once; ``result`` holds the records so far (they are in the ledger too).
    """

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result


def _cost_vector(v: object, name: str) -> list[float]:
    """(wall seconds, sandbox seconds, output bytes): three finite numbers >= 0."""
    if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) and not hasattr(v, "tolist"):
        raise ValueError(f"{name} must be a sequence (wall seconds, sandbox seconds, output bytes); got {type(v).__name__}")
    items = list(v.tolist() if hasattr(v, "tolist") else v)
    if len(items) != len(COST_COMPONENTS):
        raise ValueError(f"{name} must have 3 components (wall seconds, sandbox seconds, output bytes); got {len(items)}")
    out = []
    for comp, x in zip(COST_COMPONENTS, items):
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise ValueError(f"{name} ({comp}) must be a number; got {x!r:.40}")
        try:
            f = float(x)
        except OverflowError:
            raise ValueError(f"{name} ({comp}) is too large to be a float") from None
        if not math.isfinite(f) or f < 0:
            raise ValueError(f"{name} ({comp}) must be finite and >= 0; got {f}")
        out.append(f)
    return out


def agentic_run(
    state: AgenticState,
    spec: RoundSpec,
    rounds: int,
    budget: Sequence[float],
    max_round_cost: Sequence[float],
    seed: int = 0,
) -> RunResult:
    """An agentic run [ftip-0074]: up to ``rounds`` rounds with a hard componentwise ``budget``.

    Cost vectors are (wall seconds, sandbox seconds, output bytes), each finite and >= 0 (NaN, inf or a
    negative component raises ``ValueError`` naming the argument). Pre-admission rule: a round starts
    only if cumulative + ``max_round_cost`` <= ``budget`` in every component, so with a true worst-case
    bound the realised cumulative cost never exceeds the budget (budget 1500 bytes, rounds of at most
    1000 bytes: one round runs, the second is not admitted). The bound is checked after every round: a
    round that cost more than ``max_round_cost`` stops the run with :class:`RoundCostError` (its record is
    kept), because the guarantee no longer holds. :func:`react_episode` makes the bytes bound true by
    construction (at most ``max_steps * sandbox.max_output_bytes`` per episode). Round seeds follow
    :func:`round_seeds`.
    """
    if isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral) or rounds < 0:
        raise ValueError(f"rounds must be an integer >= 0; got {rounds!r}")
    budget = _cost_vector(budget, "budget")
    bound = _cost_vector(max_round_cost, "max_round_cost")
    seed = _seed_int(seed, "seed")
    total = [0.0, 0.0, 0.0]
    records: list[RoundRecord] = []
    reason = "rounds"
    for n in range(int(rounds)):
        if any(t + m > b for t, m, b in zip(total, bound, budget)):
            reason = "budget"
            break
        rec = agentic_round(state, spec, round_seeds(seed, n))
        records.append(rec)
        total = [t + c for t, c in zip(total, rec.cost)]
        over = [(comp, c, m) for comp, c, m in zip(COST_COMPONENTS, rec.cost, bound) if not c <= m]
        if over:
            comp, c, m = over[0]
            raise RoundCostError(
                f"max_round_cost is not a bound: round {rec.round_index} cost {c:g} {comp} > declared {m:g}; "
                f"the run stopped (cumulative cost {[round(t, 6) for t in total]}, budget {budget})",
                RunResult(state.artifact_id, records, total, "round_cost_exceeded"),
            )
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
    if sandbox is not None and not isinstance(sandbox, Sandbox):
        raise ValueError(f"sandbox must be a Sandbox or None; got {type(sandbox).__name__}")
    sb = sandbox or Sandbox()
    try:
        return react_episode(ScriptedPolicy(code_agent_script()), sb, "make add_squares pass its test",
                             files={"test_solution.py": TEST_SOLUTION}, max_steps=6)
    finally:
        if sandbox is None:
            sb.close()
