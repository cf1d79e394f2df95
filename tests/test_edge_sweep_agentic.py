"""Generated edge-case sweep over every public callable of lab.feedback, lab.replay, lab.agentic and
lab.rlvr's ExactAnswerVerifier / verifiable_reward (issue 10 §1).

Public callables are enumerated with ``inspect``: a new public function or class without an entry in
CASES (or in RECORDS, for plain records and protocols) fails ``test_every_public_callable_has_an_entry``.
For each entry, one argument at a time is replaced by near-degenerate values (NaN, ±inf, huge numbers,
0, negative, int / bool / list / None where floats or strings are expected, empty and very long strings,
unicode) plus values specific to the function. Each call must end in

- a ``ValueError`` whose message names the argument, or
- a result with no NaN that the entry's oracle (an independent reference computation) accepts.

Anything else is counted: silent NaN, wrong values, unrelated exceptions (any other exception type, or a
ValueError that does not name the argument). The test asserts all three counts are 0.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import re
import tempfile
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import pytest
import torch

import lab.agentic as agentic
import lab.feedback as feedback
import lab.replay as replay
import lab.rlvr as rlvr
from lab.models import char_tokenizer, tiny_gpt2

MODULES = (feedback, replay, agentic)
RLVR_NAMES = ("ExactAnswerVerifier", "verifiable_reward")
SANDBOX_OWNED = {"Sandbox", "SandboxResult"}  # rebuilt by another engineer (issue 11); swept there

NAN, INF = math.nan, math.inf
LONG = "x" * 100_000
GENERIC = [NAN, INF, -INF, 1e308, -1e308, 10**400, 0, -1, 1e-300, True, 2.5, [], [1.0], "", "ü∑😀", LONG, None, {}]

# Plain records, protocols and exception types: no behaviour of their own to sweep (their fields are
# produced and validated by the functions that build them, which are swept).
RECORDS = {
    "lab.agentic.Action": "record; validated by ActionSerializer.encode/decode",
    "lab.agentic.Malformed": "record returned by decode",
    "lab.agentic.Policy": "Protocol",
    "lab.agentic.Step": "record built by react_episode",
    "lab.agentic.Trajectory": "record built by react_episode (cost swept through agentic_run)",
    "lab.agentic.LedgerError": "exception type",
    "lab.agentic.RoundCostError": "exception type raised by agentic_run (swept there)",
    "lab.agentic.AgenticState": "mutable state record (swept through agentic_round's state argument)",
    "lab.agentic.RoundRecord": "record built by agentic_round",
    "lab.agentic.RoundSpec": "declaration of maps (swept through agentic_round's spec argument)",
    "lab.agentic.RunResult": "record built by agentic_run",
    "lab.replay.ReplayAnnotation": "record built by annotate",
    "lab.replay.GateDecision": "record built by DynamicGradientGate.decide",
    "lab.replay.GateCost": "counter record of DynamicGradientGate",
    "lab.replay.Forecast": "record built by forecast_checkpoint",
}


def public_callables() -> dict[str, Any]:
    out = {}
    for mod in MODULES:
        for name, obj in vars(mod).items():
            if name.startswith("_") or name in SANDBOX_OWNED:
                continue
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or getattr(obj, "__module__", None) != mod.__name__:
                continue
            qual = f"{mod.__name__}.{name}"
            out[qual] = obj
            if inspect.isclass(obj) and qual not in RECORDS:
                for m, f in vars(obj).items():
                    if not m.startswith("_") and (inspect.isfunction(f) or isinstance(f, (classmethod, staticmethod, property))):
                        out[f"{qual}.{m}"] = f
                if "__call__" in vars(obj):
                    out[f"{qual}.__call__"] = vars(obj)["__call__"]
    for name in RLVR_NAMES:
        obj = getattr(rlvr, name)
        out[f"lab.rlvr.{name}"] = obj
        if inspect.isclass(obj):
            for m, f in vars(obj).items():
                if not m.startswith("_") and inspect.isfunction(f):
                    out[f"lab.rlvr.{name}.{m}"] = f
    return out


# ----------------------------------------------------------------------------- shared fixtures (built once)

TMP = Path(tempfile.mkdtemp(prefix="lab-edge-sweep-"))
TOK = char_tokenizer()
MODEL = tiny_gpt2(len(TOK), n_layer=1, n_embd=16, n_head=2)
SER = agentic.ActionSerializer()
FINISH = SER.encode(agentic.Action("finish", "done"))
_counter = [0]


def fresh_path() -> Path:
    _counter[0] += 1
    return TMP / f"ledger-{_counter[0]}.jsonl"


def finish_spec(sb, feedback_fn=None, credit_fn=None):
    return agentic.RoundSpec(
        task="t",
        sample_instance=lambda seed: (f"i{seed}", {}),
        rollout=lambda inst, files, seed: agentic.react_episode(agentic.ScriptedPolicy([FINISH]), sb, inst, files=files),
        feedback=feedback_fn or (lambda t, seed: {"steps": len(t.steps), "seed": seed}),
        credit=credit_fn or (lambda t, fb, seed: [float(seed % 7)] * len(t.steps)),
        update=lambda state, credit, seed: ("accept", f"m{state.round_index + 1}", f"o{state.round_index + 1}"),
        policy_stamp=lambda state: state.artifact_id,
    )


SANDBOX = agentic.Sandbox(timeout_s=5, memory_mb=256)


def record(lp=(-1.0,), at=0):
    return replay.RolloutRecord("r", "q", "b", ("y",), lp, ("e",), at)


# ----------------------------------------------------------------------------- references (independent of lab code)


def ref_arithmetic(text: str, max_chars: int, max_digits: int) -> str | None:
    """None: must be refused. Else the verdict, from Python's own parser evaluating on Fractions."""
    if len(text) > max_chars or max((len(d) for d in re.findall(r"[0-9]+", text)), default=0) > max_digits:
        return None
    num = r"-?[0-9]+(?:\.[0-9]+)?"
    eq = re.compile(rf"(?<![A-Za-z0-9_])(?<![0-9][.,])({num}(?:\s*[-+*/x×]\s*{num})+)\s*=\s*({num})(?![0-9]|[.,][0-9])")
    found = False
    for lhs, rhs in eq.findall(text):
        found = True
        src = re.sub(num, lambda m: f"F('{m.group(0)}')", lhs.replace("×", "*").replace("x", "*"))
        src = " ".join(src.split())
        try:
            value = eval(compile(ast.parse(src, mode="eval"), "<ref>", "eval"), {"F": Fraction, "__builtins__": {}})
        except ZeroDivisionError:
            return "undefined"
        if value != Fraction(rhs):
            return "wrong"
    return "holds" if found else "no_equation"


def ref_exp(log_ratio: float) -> float:
    """exp in high-precision decimal, then to float64 (inf beyond its range)."""
    if log_ratio == -INF:
        return 0.0
    with localcontext() as ctx:
        ctx.prec = 60
        try:
            return float(Decimal(log_ratio).exp())
        except (OverflowError, ArithmeticError):  # decimal.Overflow: beyond any float
            return INF


def ref_float(x: Fraction) -> float:
    try:
        return float(x)
    except OverflowError:
        return INF if x > 0 else -INF


def close(a: float, b: float, rel: float = 1e-12) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-300


# ----------------------------------------------------------------------------- entries


@dataclasses.dataclass
class Entry:
    """``call(kw)`` runs the function on a full argument dict; ``base`` is valid; ``sweep`` lists the
    arguments to vary (each gets GENERIC values unless ``generic`` excludes it, plus its specific values);
    ``oracle(kw, result)`` returns None when the result is right, else what is wrong; ``names`` maps an
    argument to the word its ValueError must contain (default: the argument's own name)."""

    call: Callable[[dict], Any]
    base: dict
    sweep: dict[str, list]
    oracle: Callable[[dict, Any], str | None]
    names: dict[str, str] = dataclasses.field(default_factory=dict)
    generic: bool = True


def o_any(kw, r):  # a result with no NaN is all that is claimed (e.g. a record echoing its input)
    return None


def o_label(kw, r):
    if r.value != float(kw["value"]) or not math.isfinite(r.value):
        return f"value {r.value} from {kw['value']!r}"
    if r.computed_after != float(kw["computed_after"]) or math.isnan(r.computed_after):
        return f"computed_after {r.computed_after}"
    if not isinstance(r.response_id, str) or not isinstance(r.source, str):
        return "non-string id/source accepted"
    if isinstance(r, feedback.ProcessLabel) and (type(r.step) is not int or r.step != kw["step"] or r.computed_after < r.step):
        return f"step {r.step!r}"
    return None


def o_measurable(kw, r):
    through = kw["step"] if kw["available_through"] is None else kw["available_through"]
    if type(r) is not bool:
        return f"not a bool: {r!r}"
    if not (0 <= float(through) <= float(kw["step"]) < INF):
        return f"accepted step {kw['step']!r} / available_through {kw['available_through']!r}"
    return None if r == (kw["label"].computed_after <= float(through)) else f"got {r}"


def o_verdict(kw, r):
    if not (isinstance(kw["max_chars"], int) and isinstance(kw["max_digits"], int) and not isinstance(kw["max_chars"], bool)
            and not isinstance(kw["max_digits"], bool) and kw["max_chars"] >= 1 and kw["max_digits"] >= 1 and isinstance(kw["text"], str)):
        return f"accepted bad bounds {kw['max_chars']!r}, {kw['max_digits']!r}"
    want = ref_arithmetic(kw["text"], kw["max_chars"], kw["max_digits"])
    return None if r == want else f"{r!r} != reference {want!r}"


def o_check(kw, r):
    v = o_verdict(kw, "holds" if r == 1 else "wrong")
    want = ref_arithmetic(kw["text"], kw["max_chars"], kw["max_digits"]) if isinstance(kw["text"], str) else None
    if want is None:
        return f"accepted {kw['text'][:40]!r}"
    return None if r == int(want in ("holds", "no_equation")) else f"label {r} for verdict {want}" if v else None


def o_label_trace(kw, r):
    out, proc = r
    if out.value != float(kw["final_answer"].strip() == kw["target"].strip()):
        return "outcome value"
    for p, s in zip(proc, kw["steps"]):
        want = ref_arithmetic(s, feedback.MAX_STEP_CHARS, feedback.MAX_NUMBER_DIGITS)
        if p.value != float(want in ("holds", "no_equation")):
            return f"process label {p.value} for {s[:30]!r}"
        if p.computed_after != (feedback.OUTCOME if kw["reviewer_hindsight"] else p.step):
            return "timing"
    return None if len(proc) == len(kw["steps"]) else "length"


def o_hash(kw, r):
    return None if isinstance(r, str) and re.fullmatch(r"[0-9a-f]{64}", r) else f"not a sha256: {r!r}"


def o_record(kw, r):
    want = tuple(float(x) for x in kw["behavior_logps"])
    if r.behavior_logps != want or any(not math.isfinite(x) or x > 0 for x in want):
        return f"stored {r.behavior_logps}"
    return None if type(r.collected_at) is int and r.collected_at >= 0 else f"collected_at {r.collected_at!r}"


def o_annotate(kw, r):
    b = kw["behavior_logp"]
    c = kw["current_logp"]
    if isinstance(c, torch.Tensor) and c.numel() == 1 and c.is_floating_point():
        c = c.item()  # a one-element tensor is the number it holds
    if isinstance(c, bool) or not isinstance(c, (int, float)) or c > 0:
        return f"accepted current log-prob {c!r}"
    want = ref_exp(float(c) - b)
    if not close(r.ratios[0], want):
        return f"ratio {r.ratios[0]} != {want}"
    if r.clipped[0] != (abs(want - 1) > kw["epsilon"]):
        return "clip status"
    if r.age != kw["update_index"] - 0 or r.prior_uses != kw["prior_uses"]:
        return "age / prior uses"
    return None


def o_zscore(kw, r):
    exact = (Fraction(kw["increment"]) - Fraction(kw["mu"])) / Fraction(kw["s"])
    return None if close(r, ref_float(exact)) else f"{r} != {ref_float(exact)}"


def o_energy(kw, r):
    exact = sum(Fraction(float(x)) ** 2 for x in kw["grad"])
    return None if close(r, ref_float(exact)) else f"{r} != {ref_float(exact)}"


def o_projectors(kw, r):
    for P, x in zip(r, (kw["u"], kw["v"])):
        x = torch.as_tensor(x, dtype=torch.float64)
        x = x / x.abs().max()
        if not torch.allclose(P, P.T) or not torch.allclose(P @ P, P, atol=1e-12) or abs(float(P.trace()) - 1) > 1e-12:
            return "not a rank-one orthogonal projector"
        if not torch.allclose(P @ x, x, atol=1e-12):
            return "does not fix its vector"
    return None


def o_forecast(kw, r):
    mats = [torch.as_tensor(d, dtype=torch.float64) for d in kw["deltas"]]
    lows = []
    for d in mats:
        scale = float(d.abs().max()) or 1.0
        U, S, Vh = torch.linalg.svd(d / scale, full_matrices=False)
        lows.append((U[:, : kw["rank"]] * S[: kw["rank"]]) @ Vh[: kw["rank"]] * scale)
    want = 2 * lows[-1] - lows[-2]
    if not torch.allclose(r.predicted_delta, want, rtol=1e-9, atol=1e-9 * float(want.abs().max() or 1.0)):
        return "predicted delta"
    return None if all(0 <= e <= 1 + 1e-12 for e in r.explained) else f"explained {r.explained}"


def o_verify(kw, r):
    parsed = rlvr.PARSERS[kw["parser"]](kw["response"])
    target = rlvr.PARSERS[kw["parser"]](str(kw["answer"]))
    if target is None:
        return "an unreadable answer was accepted"
    return None if r.decision == int(parsed == target) and r.output["parsed"] == parsed else "decision"


def o_reward(kw, r):
    d = torch.as_tensor(kw["decision"], dtype=torch.float64)
    want = d * float(kw["alpha"])
    return None if torch.equal(r.double(), want) else f"{r} != {want}"


def o_budget_run(kw, r):
    total = [sum(rec.cost[i] for rec in r.records) for i in range(3)]
    if any(t > b for t, b in zip(total, kw["budget"])):
        return f"crossed the budget: {total} > {kw['budget']}"
    return None if len(r.records) <= kw["rounds"] else "too many rounds"


def o_seeds(kw, r):
    want = {k: kw["seed"] * 1_000_003 + 5 * kw["round_index"] + i for i, k in enumerate(agentic.SEED_STREAMS)}
    return None if r == want else f"{r}"


def o_round(kw, r):
    s = kw["seeds"]
    if r.feedback != {"steps": 1, "seed": s["feedback"]} or r.credit != [float(s["credit"] % 7)]:
        return "feedback/credit did not receive their seeds"
    return None if r.seeds == s else "recorded seeds differ from those passed on"


def o_decode(kw, r):
    if isinstance(r, agentic.Action):
        return None if SER.decode(SER.encode(r)) == r and r.tool in SER.tools else "decoded action does not re-encode"
    return None if isinstance(r, agentic.Malformed) and r.reason else "neither Action nor Malformed"


def o_encode(kw, r):
    return None if SER.decode(r) == kw["action"] else "does not round-trip"


def o_serializer(kw, r):
    tools = kw["tools"]
    for t in tools:
        a = agentic.Action(t, "arg")
        if r.decode(r.encode(a)) != a:
            return f"tool {t!r} does not round-trip"
    return None


def o_policy_out(kw, r):
    return None if isinstance(r, str) else f"not a string: {r!r}"


def o_trajectory(kw, r):
    return None if r.steps and r.stop_reason in ("finish", "max_steps", "success") and len(r.steps) <= kw["max_steps"] else "trajectory"


def o_ledger_append(kw, r):
    led = kw["_ledger"]
    recs, trunc = led.read()
    return None if recs[-1] == kw["record"] and not trunc else f"read back {recs[-1]!r:.60}"


def o_pool_insert(kw, r):
    pool = kw["_pool"]
    spread = kw["advantage_spread"]
    want = spread is None or float(spread) != 0.0 if pool.insertion == "nonzero_advantage" else True
    return None if r == want else f"inserted={r} for spread {spread!r}"


def o_decide(kw, r):
    return None if r.accepted in (True, False) and r.energy == float(kw["energy"]) else "decision"


def o_gate(kw, r):
    return None if r.window == kw["window"] and r.min_history == kw["min_history"] and r.z_threshold == float(kw["z_threshold"]) else "settings"


def o_model_policy(kw, r):
    return None if r.decoding["max_new_tokens"] == kw["max_new_tokens"] and r.decoding["temperature"] == float(kw["temperature"]) else "decoding"


def _gate_step(kw):
    torch.manual_seed(0)
    lin = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    lin(torch.ones(1, 2)).sum().backward()
    return replay.DynamicGradientGate().step(opt, lin.weight, seconds=kw["seconds"])


def _energy(kw):
    p = torch.nn.Parameter(torch.zeros(len(kw["grad"]), dtype=torch.float64))
    p.grad = torch.tensor(kw["grad"], dtype=torch.float64)
    return replay.gradient_energy(p)


def _pool(kw):
    pool = replay.ReplayPool(4, insertion="nonzero_advantage")
    kw["_pool"] = pool
    return pool.insert(kw["record"], advantage_spread=kw["advantage_spread"])


def _ledger_append(kw):
    led = agentic.Ledger(fresh_path())
    kw["_ledger"] = led
    led.append(kw["record"])


def _run(kw):
    state = agentic.AgenticState("m0", "o0", agentic.Ledger(fresh_path()))
    return agentic.agentic_run(state, finish_spec(SANDBOX), kw["rounds"], kw["budget"], kw["max_round_cost"], seed=kw["seed"])


def _round(kw):
    state = kw["state"] if kw["state"] != "fresh" else agentic.AgenticState("m0", "o0", agentic.Ledger(fresh_path()))
    spec = kw["spec"] if kw["spec"] != "finish" else finish_spec(SANDBOX)
    return agentic.agentic_round(state, spec, kw["seeds"])


ONE_STEP = agentic.react_episode(agentic.ScriptedPolicy([FINISH]), SANDBOX, "t")
SCRIPT = agentic.ScriptedPolicy(["a"])

CASES: dict[str, Entry] = {
    # ---------------------------------------------------------------- lab.feedback
    "lab.feedback.OutcomeLabel": Entry(
        lambda kw: feedback.OutcomeLabel(**kw), {"response_id": "r", "value": 1.0, "source": "s", "computed_after": INF},
        {"response_id": [b"r"], "value": [0.5, -0.0, 1, False], "source": [1], "computed_after": [3, 0.5]}, o_label),
    "lab.feedback.ProcessLabel": Entry(
        lambda kw: feedback.ProcessLabel(**kw), {"response_id": "r", "step": 2, "value": 1.0, "source": "s", "computed_after": 3},
        {"response_id": [1], "step": [1, 3, 4, 2.0, -5], "value": [0, 1, 0.25], "source": [None], "computed_after": [2, 1, 10**3]}, o_label),
    "lab.feedback.is_online_measurable": Entry(
        lambda kw: feedback.is_online_measurable(**kw),
        {"label": feedback.ProcessLabel("r", 2, 1.0, "c", 2), "step": 3, "available_through": None},
        {"label": [feedback.OutcomeLabel("r", 1.0, "x"), "label"], "step": [1, 2, 2.0, 10**6], "available_through": [1, 2, 3, 4]},
        o_measurable),
    "lab.feedback.arithmetic_step_verdict": Entry(
        lambda kw: feedback.arithmetic_step_verdict(**kw), {"text": "3 × 4 = 12", "max_chars": 2000, "max_digits": 100},
        {"text": ["1/0 = 5", "0/0 = 0", "1 / -0 = 1", "9" * 5000, "9" * 101 + " = 1", "1" * 99 + " * " + "1" * 99 + " = 1",
                  "2 x 3 = 6", "2×3=6", "1+" * 600 + "1 = 601", "0.1 + 0.2 = 0.3", "0.5 + 1 = 1.5", "1.5 + 1.5 = 4",
                  "1,000 + 1 = 1,001", "so 2 + 2 = 4, then 4 * 4 = 15.", "-3 * -3 = 9", "٣ + ٤ = ٧", "1e308 + 1 = 1e308",
                  "\n".join(["1 + 1 = 2"] * 150), "10/4 = 2.5", "7 - 10 = -3", "2 + 2 = 4 = 5", "=", "1 + = 2", "\x00 1+1=2"],
         "max_chars": [1, 5, 10**9], "max_digits": [1, 2, 10**9]}, o_verdict),
    "lab.feedback.check_arithmetic_step": Entry(
        lambda kw: feedback.check_arithmetic_step(**kw), {"text": "3 × 4 = 12", "max_chars": 2000, "max_digits": 100},
        {"text": ["1/0 = 5", "9" * 5000, "17 + 2 = 18", "0.1 + 0.2 = 0.3", "no equation", "1 + 1 = 3 and 2 * 3 = 6"],
         "max_chars": [3], "max_digits": [1]}, o_check),
    "lab.feedback.label_trace": Entry(
        lambda kw: feedback.label_trace(**kw),
        {"response_id": "r", "steps": ["3 × 4 = 12", "12 + 5 = 18"], "final_answer": "19", "target": "19", "reviewer_hindsight": False},
        {"response_id": [1], "steps": [[], ["1/0 = 5"], ("1 + 1 = 2",), ["9" * 5000], "1 + 1 = 2", [1, 2]],
         "final_answer": [" 19 ", "20", 19], "target": [19.0, " 19"], "reviewer_hindsight": [True, "no", 1]}, o_label_trace),
    # ---------------------------------------------------------------- lab.replay
    "lab.replay.weights_hash": Entry(lambda kw: replay.weights_hash(**kw), {"model": MODEL},
                                     {"model": [torch.nn.Linear(1, 1), torch.nn.Sequential(), torch.ones(2)]}, o_hash),
    "lab.replay.tokenizer_hash": Entry(lambda kw: replay.tokenizer_hash(**kw), {"tokenizer": TOK},
                                       {"tokenizer": [char_tokenizer("ab"), MODEL]}, o_hash),
    "lab.replay.PolicyStamp.from_parts": Entry(
        lambda kw: replay.PolicyStamp.from_parts(**kw),
        {"model": MODEL, "tokenizer": TOK, "serializer": SER.describe(), "decoding": {"temperature": 1.0}, "code_revision": "abc"},
        {"model": [TOK], "tokenizer": [MODEL], "serializer": ["id", {"nan": NAN}], "decoding": [{1: 2}, {"t": NAN}, {"a": 1, "b": [1]}],
         "code_revision": [1]}, o_any),
    "lab.replay.PolicyStamp": Entry(
        lambda kw: replay.PolicyStamp(**kw), {"weights": "w", "tokenizer": "t", "serializer": "s", "decoding": (("t", 1.0),), "code_revision": "c"},
        {"weights": [1], "tokenizer": [None], "serializer": [b"s"], "decoding": [(), (("t", NAN),), ((1, 2),), {"t": 1.0}, (("t",),)],
         "code_revision": [""]}, o_any),
    "lab.replay.PolicyStamp.digest": Entry(
        lambda kw: replay.PolicyStamp("w", "t", "s", kw["decoding"], "c").digest, {"decoding": (("t", 1.0),)},
        {"decoding": [(), (("t", NAN),)]}, o_hash, generic=False),
    "lab.replay.RolloutRecord": Entry(
        lambda kw: record(kw["behavior_logps"], kw["collected_at"]), {"behavior_logps": (-1.0,), "collected_at": 0},
        {"behavior_logps": [(-1000.0,), (0.0, -0.0), (-1e308,), [-1, -2], (-INF,), (NAN,), (1e-9,), ("a",), (True,), (10**400 * -1,), "ab"],
         "collected_at": [3, 2**40, -1, 1.0]}, o_record),
    "lab.replay.CurrentPolicy": Entry(lambda kw: replay.CurrentPolicy(**kw), {"stamp": "s", "logprobs": lambda r: [-1.0]},
                                      {"stamp": [1, ""], "logprobs": [[-1.0], "f"]}, o_any),
    "lab.replay.annotate": Entry(
        lambda kw: replay.annotate(record((kw["behavior_logp"],)), replay.CurrentPolicy("now", lambda r: [kw["current_logp"]]),
                                   kw["update_index"], kw["prior_uses"], kw["epsilon"]),
        {"behavior_logp": math.log(0.25), "current_logp": math.log(0.5), "update_index": 3, "prior_uses": 2, "epsilon": 0.2},
        {"behavior_logp": [-1000.0, -1e308, -709.0, -710.0, -745.0, -0.0, -1e-300],
         "current_logp": [0.0, -1000.0, -1e308, -INF, 1e-12, torch.tensor(-1.0), -1, 0, -1e-300],
         "update_index": [0, 10**6, 2**70], "prior_uses": [0, 10**6], "epsilon": [1e-12, 0.999, 1.0, 0.0]},
        o_annotate, names={"current_logp": "current_policy", "behavior_logp": "behavior_logps"}),
    "lab.replay.ReplayPool": Entry(
        lambda kw: replay.ReplayPool(**kw), {"capacity": 2, "insertion": "all", "eviction": "fifo", "max_uses": None},
        {"capacity": [1, 10**9], "insertion": ["ALL", None], "eviction": ["lifo", 1], "max_uses": [1, 0, 2.0]}, o_any),
    "lab.replay.ReplayPool.insert": Entry(
        _pool, {"record": record(), "advantage_spread": 0.5},
        {"record": ["r"], "advantage_spread": [0.0, -0.0, 1e-17, 5e-324, -1e-17, 1, torch.tensor(0.5)]}, o_pool_insert),
    "lab.replay.ReplayPool.select": Entry(
        lambda kw: (lambda p: (p.insert(record()), p.insert(record()), p.select(kw["k"], kw["generator"]))[-1])(replay.ReplayPool(3)),
        {"k": 1, "generator": None}, {"k": [2, 3, 0]}, o_any),
    "lab.replay.ReplayPool.records": Entry(lambda kw: replay.ReplayPool(2).records(), {}, {}, o_any),
    "lab.replay.gradient_energy": Entry(
        _energy, {"grad": [3.0, 4.0]}, {"grad": [[0.0], [1e200, 1e200], [1e-200], [NAN, 1.0], [INF], [-1e308, 1e308], [5e-324]]},
        o_energy, names={"grad": "param"}, generic=False),
    "lab.replay.gate_zscore": Entry(
        lambda kw: replay.gate_zscore(**kw), {"increment": 1.5, "mu": 1.0, "s": 0.5},
        {"increment": [1e308, -1e308, 1, 5e-324], "mu": [-1e308, 1], "s": [5e-324, 1e-300, 1e308, 10**400]}, o_zscore),
    "lab.replay.DynamicGradientGate": Entry(
        lambda kw: replay.DynamicGradientGate(**kw), {"z_threshold": 2.0, "window": 8, "min_history": 3, "ddof": 1},
        {"z_threshold": [0.0, -1.0, 1e308], "window": [2, 3, 10**6], "min_history": [2, 8, 9], "ddof": [0, 2, 3, -1]}, o_gate),
    "lab.replay.DynamicGradientGate.decide": Entry(
        lambda kw: replay.DynamicGradientGate().decide(kw["energy"]), {"energy": 1.0}, {"energy": [0.0, 1e308, 5e-324, -1e-300]}, o_decide),
    "lab.replay.DynamicGradientGate.step": Entry(_gate_step, {"seconds": 0.0}, {"seconds": [1e-9, 1e308]}, o_any),
    "lab.replay.rank_one_projectors": Entry(
        lambda kw: replay.rank_one_projectors(**kw), {"u": [1.0, 2.0], "v": [3.0]},
        {"u": [[3e200, 4e200], [1e-300, 1e-300], [3, 4], [0.0, 0.0], [5e-324], [[1.0]], torch.tensor([1, 2]), [1e308, 1e308]],
         "v": [[-1.0], [0, 1], [NAN, 1.0], [INF, 1.0]]}, o_projectors),
    "lab.replay.forecast_checkpoint": Entry(
        lambda kw: replay.forecast_checkpoint(**kw),
        {"deltas": [[[1.0, 0.0], [0.0, 0.1]], [[2.0, 0.0], [0.0, 0.2]]], "rank": 1},
        {"deltas": [[[[1e200, 0.0], [0.0, 1e199]], [[2e200, 0.0], [0.0, 2e199]]], [[[0.0, 0.0]], [[0.0, 0.0]]],
                    [[[1, 2]], [[3, 4]]], [[[1.0]]], [[[1.0]], [[NAN]]], [[[1.0, 2.0]], [[1.0]]], [torch.eye(2), torch.eye(2)],
                    [[[1e-300, 0.0], [0.0, 1e-300]], [[1.0, 0.0], [0.0, 1.0]]]],
         "rank": [2, 3, 0]}, o_forecast),
    # ---------------------------------------------------------------- lab.agentic
    "lab.agentic.ActionSerializer": Entry(
        lambda kw: agentic.ActionSerializer(**kw), {"tools": ("runTests",), "allow_thought": True},
        {"tools": [("run tests",), ("a", "a"), (), "runTests", ("fs.read", "ÜberTool", "x" * 500), ('a"',), ("<t>",), ("a\u200b",),
                   ["python"], (1,)],
         "allow_thought": [False, "yes"]}, o_serializer),
    "lab.agentic.ActionSerializer.encode": Entry(
        lambda kw: SER.encode(kw["action"]), {"action": agentic.Action("python", "print(1)")},
        {"action": [agentic.Action("python", ""), agentic.Action("python", "a</action>b"), agentic.Action("rm", "x"),
                    agentic.Action("python", "x", "  thought"), agentic.Action("python", "x", "I think <action"),
                    agentic.Action("python", "x", "Thought: ok"), agentic.Action("python", LONG), agentic.Action("python", 1),
                    agentic.Action(None, "x"), agentic.Action("python", "x", None)]}, o_encode),
    "lab.agentic.ActionSerializer.decode": Entry(
        lambda kw: SER.decode(kw["text"]), {"text": FINISH},
        {"text": ['Thought: x\n<action tool="python">1</action>', '<action tool="python">', '<action tool="python">a</action>b',
                  '<action tool="PYTHON">a</action>', '<action tool="">a</action>', "<action", '<action tool="python">' + LONG + "</action>",
                  '<action tool="python">a</action></action>', b"<action>"]}, o_decode),
    "lab.agentic.ActionSerializer.in_domain": Entry(
        lambda kw: SER.in_domain(kw["action"]), {"action": agentic.Action("python", "x")},
        {"action": [agentic.Action("python", "</action>"), "python"]},
        lambda kw, r: None if r == (isinstance(kw["action"], agentic.Action) and "</action>" not in str(kw["action"].argument)
                                    and kw["action"].tool in SER.tools) else "in_domain"),
    "lab.agentic.ActionSerializer.describe": Entry(lambda kw: SER.describe(), {}, {}, o_any),
    "lab.agentic.ScriptedPolicy": Entry(lambda kw: agentic.ScriptedPolicy(**kw), {"generations": ["a"]},
                                        {"generations": ["abc", [1], [], (FINISH,)]}, o_any),
    "lab.agentic.ScriptedPolicy.__call__": Entry(lambda kw: agentic.ScriptedPolicy(["a"])(kw["context"]), {"context": "c"},
                                                 {"context": []}, o_policy_out),
    "lab.agentic.ModelPolicy": Entry(
        lambda kw: agentic.ModelPolicy(MODEL, TOK, **kw), {"max_new_tokens": 4, "do_sample": False, "temperature": 1.0, "seed": 0},
        {"max_new_tokens": [1, 10**6], "do_sample": ["no", 1], "temperature": [1e-300, 1e308], "seed": [2**32, 2**31]}, o_model_policy),
    "lab.agentic.ModelPolicy.__call__": Entry(
        lambda kw: agentic.ModelPolicy(MODEL, TOK, max_new_tokens=3)(kw["context"]), {"context": "Task: "},
        {"context": ["ü∑😀 unknown characters", "a" * 100]}, o_policy_out, generic=False),
    "lab.agentic.tests_passed": Entry(lambda kw: agentic.tests_passed(**kw), {"result": ONE_STEP.steps[0].result},
                                      {"result": ["1 passed"]}, lambda kw, r: None if r is False else "a finish step is not a test pass"),
    "lab.agentic.react_episode": Entry(
        lambda kw: agentic.react_episode(**kw),
        {"policy": agentic.ScriptedPolicy([FINISH] * 3), "sandbox": SANDBOX, "task": "t", "serializer": None, "files": None,
         "max_steps": 2, "success": agentic.tests_passed},
        {"policy": [lambda c: None, lambda c: 5, "policy"], "sandbox": ["sb"], "task": [b"t"], "serializer": ["xml"],
         "files": [{"a.py": 1}, {"a.py": "print(1)"}, ["a.py"]], "max_steps": [1, 10**9, 0, 1.0], "success": ["yes"]},
        o_trajectory),
    "lab.agentic.Ledger": Entry(lambda kw: agentic.Ledger(**kw), {"path": TMP / "l.jsonl"}, {"path": [TMP, str(TMP / "m.jsonl"), b"x"]}, o_any),
    "lab.agentic.Ledger.append": Entry(
        _ledger_append, {"record": {"a": 1}},
        {"record": [{"a": NAN}, {"a": INF}, {1: 2}, {"a": "ü∑😀\n"}, {"a": LONG}, {"a": 10**400}, ["a"], {"a": [1e308]}]},
        o_ledger_append),
    "lab.agentic.Ledger.read": Entry(lambda kw: agentic.Ledger(fresh_path()).read(), {}, {}, lambda kw, r: None if r == ([], False) else "read"),
    "lab.agentic.trajectory_summary": Entry(lambda kw: agentic.trajectory_summary(**kw), {"t": ONE_STEP}, {"t": [{"steps": []}]}, o_any),
    "lab.agentic.round_seeds": Entry(lambda kw: agentic.round_seeds(**kw), {"seed": 3, "round_index": 2},
                                     {"seed": [0, 2**32 - 1, 2**32], "round_index": [0, 2**31]}, o_seeds),
    "lab.agentic.agentic_round": Entry(
        _round, {"state": "fresh", "spec": "finish", "seeds": agentic.round_seeds(4, 1)},
        {"state": [{"artifact_id": "m"}], "spec": [{"task": "t"}],
         "seeds": [{"task": 0}, {**agentic.round_seeds(0, 0), "credit": NAN}, {**agentic.round_seeds(0, 0), "feedback": True},
                   {**agentic.round_seeds(0, 0), "update": -1}, {**agentic.round_seeds(0, 0), "extra": 1}, agentic.round_seeds(2**20, 7)]},
        o_round),
    "lab.agentic.agentic_run": Entry(
        # output bytes bind: each round finishes with "done" (4 bytes), declared worst case 10 bytes
        _run, {"rounds": 3, "budget": [600.0, 600.0, 40.0], "max_round_cost": [20.0, 20.0, 10.0], "seed": 0},
        {"rounds": [0, 10**9], "budget": [[600, 600, 15], [60, 60, NAN], [INF, 1, 1], [-1, 1, 1], [1, 1], "abc", [0, 0, 0],
                                            torch.tensor([600.0, 600.0, 25.0])],
         "max_round_cost": [[NAN, 1, 1], [0, 0, 0], [20, 20, 1e308], [INF, 0, 0], [20, 20, -1], [20, 20, 4]], "seed": [2**32, -1, 1.0]},
        o_budget_run),
    "lab.agentic.code_agent_script": Entry(lambda kw: agentic.code_agent_script(), {}, {},
                                           lambda kw, r: None if [SER.decode(g).tool for g in r] == ["write", "run_tests"] * 2 else "script"),
    "lab.agentic.code_agent_trace": Entry(lambda kw: agentic.code_agent_trace(**kw), {"sandbox": SANDBOX}, {"sandbox": ["sb", 1]},
                                          lambda kw, r: None if r.success else "trace did not succeed", generic=False),
    # ---------------------------------------------------------------- lab.rlvr (exact answers and the verifiable reward)
    "lab.rlvr.ExactAnswerVerifier": Entry(
        lambda kw: rlvr.ExactAnswerVerifier(**kw), {"parser": "strip", "verifier_id": "v", "version": "1"},
        {"parser": ["regex", ["strip"]], "verifier_id": [1], "version": [2]}, o_any),
    "lab.rlvr.ExactAnswerVerifier.verify": Entry(
        lambda kw: rlvr.ExactAnswerVerifier(kw["parser"]).verify(kw["prompt"], kw["response"], kw["answer"]),
        {"parser": "last_integer", "prompt": "7+5?", "response": "7 + 5 = 12", "answer": "12"},
        {"prompt": [1], "response": ["12 ", "no idea", "١٢", "-12", "12.0", "\\boxed{12}"], "answer": [12, 12.0, "x", " 12 ", -12, "١٢"]},
        o_verify),
    "lab.rlvr.verifiable_reward": Entry(
        lambda kw: rlvr.verifiable_reward(**kw), {"decision": [1, 0, 1], "alpha": 10.0},
        {"decision": [[True, False], 1, 0.0, [0.5], [[1, 0]], torch.tensor([1, 0]), torch.tensor([True]), [2], ["1"]],
         "alpha": [1, 1e308, 5e-324, 10**400, "10", [1.0], -1.0, 0.0]}, o_reward),
}


# ----------------------------------------------------------------------------- the sweep


def _has_nan(x: Any, depth: int = 0) -> bool:
    if depth > 6:
        return False
    if isinstance(x, float):
        return math.isnan(x)
    if isinstance(x, torch.Tensor):
        return x.is_floating_point() and bool(torch.isnan(x).any())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return any(_has_nan(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x))
    if isinstance(x, dict):
        return any(_has_nan(v, depth + 1) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_has_nan(v, depth + 1) for v in x[:1000])
    return False


def _show(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def run_sweep() -> tuple[dict[str, int], list[str], int]:
    counts = {"refused": 0, "ok": 0, "silent_nan": 0, "wrong": 0, "unrelated": 0}
    problems: list[str] = []
    calls = 0
    for qual, e in CASES.items():
        trials = [(None, None)]
        for arg, specific in e.sweep.items():
            values = (GENERIC if e.generic else []) + list(specific)
            trials += [(arg, v) for v in values]
        for arg, value in trials:
            kw = dict(e.base)
            if arg is not None:
                kw[arg] = value
            calls += 1
            where = f"{qual}({arg}={_show(value)})" if arg else f"{qual}(base)"
            try:
                result = e.call(kw)
            except ValueError as exc:
                word = e.names.get(arg, arg) if arg else None
                if word is None or not re.search(rf"(?<![A-Za-z_]){re.escape(word)}(?![A-Za-z_])", str(exc)):
                    counts["unrelated"] += 1
                    problems.append(f"unrelated: {where}: ValueError not naming {word!r}: {str(exc)[:120]}")
                else:
                    counts["refused"] += 1
                continue
            except Exception as exc:  # noqa: BLE001 - counting is the point
                counts["unrelated"] += 1
                problems.append(f"unrelated: {where}: {type(exc).__name__}: {str(exc)[:120]}")
                continue
            if _has_nan(result):
                counts["silent_nan"] += 1
                problems.append(f"silent NaN: {where}")
                continue
            try:
                wrong = e.oracle(kw, result)
            except Exception as exc:  # noqa: BLE001 - an oracle that cannot judge the result means the input should have been refused
                wrong = f"oracle could not judge the accepted input ({type(exc).__name__}: {str(exc)[:80]})"
            if wrong:
                counts["wrong"] += 1
                problems.append(f"wrong: {where}: {wrong}")
            else:
                counts["ok"] += 1
    return counts, problems, calls


def test_every_public_callable_has_an_entry():
    found = public_callables()
    missing = sorted(q for q in found if q not in CASES and q not in RECORDS)
    stale = sorted(q for q in list(CASES) + list(RECORDS) if q not in found)
    assert not missing, f"public callables without a sweep entry (add one to CASES or RECORDS): {missing}"
    assert not stale, f"entries for callables that no longer exist: {stale}"


def test_edge_sweep_has_no_silent_nan_wrong_value_or_unrelated_exception():
    torch.set_num_threads(1)
    counts, problems, calls = run_sweep()
    print(f"\nedge sweep (feedback, replay, agentic, exact-answer rlvr): {calls} calls: {counts}")
    assert calls >= 700
    assert counts["silent_nan"] == 0 and counts["wrong"] == 0 and counts["unrelated"] == 0, "\n".join(problems)
    assert counts["refused"] > 0 and counts["ok"] > 0


@pytest.fixture(scope="module", autouse=True)
def _cleanup():
    yield
    SANDBOX.close()
    import shutil

    shutil.rmtree(TMP, ignore_errors=True)
