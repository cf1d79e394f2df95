import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.agentic import (
    Action,
    ActionSerializer,
    AgenticState,
    Ledger,
    LedgerError,
    Malformed,
    RoundSpec,
    Sandbox,
    ScriptedPolicy,
    agentic_run,
    code_agent_trace,
    react_episode,
)

SER = ActionSerializer()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SER.tools), st.text())
def test_decode_encode_roundtrip(tool, arg):
    a = Action(tool, arg)
    if SER.in_domain(a):
        assert SER.decode(SER.encode(a)) == a
        assert SER.decode("  \n" + SER.encode(a) + "\n ") == a
    else:
        with pytest.raises(ValueError, match="argument"):
            SER.encode(a)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_decode_never_invents_an_action(text):
    d = SER.decode(text)
    if isinstance(d, Action):
        # the text is the encoding up to whitespace around the thought and the tag
        assert SER.decode(SER.encode(d)) == d
        assert " ".join(SER.encode(d).split()) == " ".join(text.split())
    else:
        assert isinstance(d, Malformed) and d.reason


def test_malformed_examples():
    for s, why in [("run the tests", "opening"), ('<action tool="python">print(1)', "closing"),
                   ('<action tool="rm">x</action>', "unknown tool"), ('<action tool="python">x</action> and more', "after")]:
        d = SER.decode(s)
        assert isinstance(d, Malformed) and why in d.reason
    with pytest.raises(ValueError, match="tool"):
        SER.encode(Action("rm", "-rf /"))


@pytest.fixture
def sandbox():
    sb = Sandbox(timeout_s=3, memory_mb=256)
    sb.reset()
    yield sb
    sb.close()


def test_sandbox_runs_and_reports_cost(sandbox):
    r = sandbox.run_python("print('hello')")
    assert r.status == "ok" and r.stdout == "hello\n" and r.exit_code == 0
    assert r.seconds > 0 and r.output_bytes == 6
    assert r.evidence["sandbox"]["timeout_s"] == 3 and r.evidence["exit_code"] == 0


def test_infinite_loop_is_killed(sandbox):
    r = sandbox.run_python("while True:\n    pass\n")
    assert r.status == "timeout" and 2.9 < r.seconds < 10


def test_memory_bomb_is_stopped(sandbox):
    r = sandbox.run_python("x = []\nwhile True:\n    x.append(bytearray(50_000_000))\n")
    assert r.status in ("memory", "killed")


def test_network_is_refused(sandbox):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        r = sandbox.run_python(f"import socket\ns = socket.socket()\ns.settimeout(2)\ns.connect(('127.0.0.1', {port}))\nprint('connected')\n")
    finally:
        srv.close()
    assert r.status in ("denied", "error") and "connected" not in r.stdout


def test_writes_outside_are_refused(sandbox, tmp_path):
    target = tmp_path / "escape.txt"
    for code in (f"open({str(target)!r}, 'w').write('x')", f"import os\nos.rename('a.txt', {str(target)!r})",
                 "open('../escape.txt', 'w').write('x')", "import os\nos.system('touch /tmp/x')"):
        (sandbox.root / "a.txt").write_text("a")
        r = sandbox.run_python(code)
        assert r.status == "denied", code
    assert not target.exists() and not (sandbox.root.parent / "escape.txt").exists()
    assert sandbox.run_python("open('inside.txt', 'w').write('ok')").status == "ok"
    with pytest.raises(PermissionError):
        sandbox._path("../x")
    assert sandbox.execute(Action("write", "../x.py\nprint(1)")).status == "denied"


def test_malformed_action_is_not_executed(sandbox):
    r = sandbox.execute(SER.decode("please run rm -rf"))
    assert r.status == "malformed" and "malformed" in r.observation


def test_code_agent_trace_real():
    t = code_agent_trace()
    tests = [s for s in t.steps if s.action.tool == "run_tests"]
    assert "expected 9, got 6" in tests[0].result.stdout and tests[0].result.exit_code == 1
    assert tests[1].result.exit_code == 0 and "1 passed" in tests[1].result.stdout
    assert t.success and t.stop_reason == "success"


def test_react_context_grows_with_observations():
    seen = []

    def policy(ctx):
        seen.append(ctx)
        return SER.encode(Action("python", "print(6 * 7)")) if len(seen) == 1 else SER.encode(Action("finish", "42"))

    with Sandbox() as sb:
        t = react_episode(policy, sb, "compute 6*7")
    assert "Observation: [ok, exit 0]\n42" in seen[1] and t.stop_reason == "finish"


def test_ledger_append_only_and_truncation(tmp_path):
    led = Ledger(tmp_path / "ledger.jsonl")
    led.append({"a": 1})
    led.append({"b": 2})
    first = (tmp_path / "ledger.jsonl").read_bytes()
    led.append({"c": 3})
    assert (tmp_path / "ledger.jsonl").read_bytes().startswith(first)  # earlier bytes never rewritten
    recs, trunc = led.read()
    assert recs == [{"a": 1}, {"b": 2}, {"c": 3}] and not trunc
    with open(tmp_path / "ledger.jsonl", "a") as f:
        f.write('{"d": ')  # a crash mid-write
    recs, trunc = led.read()
    assert len(recs) == 3 and trunc
    with pytest.raises(LedgerError, match="truncated"):
        led.append({"e": 5})
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\nnot json\n{"b": 2}\n')
    with pytest.raises(LedgerError, match="line 2"):
        Ledger(tmp_path / "bad.jsonl").read()


def _spec(sandbox):
    from lab.agentic import TEST_SOLUTION, code_agent_script

    def update(state, credit, seed):
        ok = sum(credit) > 0
        return ("accept" if ok else "reject", f"model-{state.round_index + 1}", f"opt-{state.round_index + 1}")

    return RoundSpec(
        task="fix add_squares",
        sample_instance=lambda seed: (f"instance-{seed}", {"test_solution.py": TEST_SOLUTION}),
        rollout=lambda inst, files, seed: react_episode(ScriptedPolicy(code_agent_script()), sandbox, inst, files=files),
        feedback=lambda t: {"success": int(t.success)},
        credit=lambda t, fb: [fb["success"] / len(t.steps)] * len(t.steps),
        update=update,
        policy_stamp=lambda st: f"stamp:{st.artifact_id}",
        env_version={"sandbox": sandbox.describe()},
        versions={"rollout": "scripted/1"},
    )


def test_agentic_run_records_rounds_and_stops_at_budget(tmp_path):
    with Sandbox() as sb:
        state = AgenticState("model-0", "opt-0", Ledger(tmp_path / "run.jsonl"))
        res = agentic_run(state, _spec(sb), rounds=10, budget=[1e9, 1e9, 1e9], max_round_cost=[60, 60, 400], seed=3)
        assert res.stop_reason == "rounds" and len(res.records) == 10
        recs, trunc = state.ledger.read()
        assert len(recs) == 10 and not trunc
        assert recs[0]["decision"] == "accept" and recs[0]["committed_artifact_id"] == "model-1"
        assert recs[0]["trajectory"]["steps"][1]["observation"].endswith("expected 9, got 6")
        # hard budget on output bytes: rounds are admitted only while cumulative + declared bound fits
        state2 = AgenticState("model-0", "opt-0", Ledger(tmp_path / "run2.jsonl"))
        budget, bound = [1e9, 1e9, 1000.0], [1e8, 1e8, 400.0]
        res2 = agentic_run(state2, _spec(sb), rounds=50, budget=budget, max_round_cost=bound)
        assert res2.stop_reason == "budget" and 1 <= len(res2.records) < 50
        assert all(c <= b for c, b in zip(res2.cumulative_cost, budget))
        assert res2.cumulative_cost[2] + bound[2] > budget[2]  # the next round could not be admitted
        assert all(r.cost[2] <= bound[2] for r in res2.records)
