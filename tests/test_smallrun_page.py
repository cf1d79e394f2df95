"""The small-run page under AppTest: start a tiny run, watch it finish, stop and resume, bad data refused."""

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "smallrun.py")


@pytest.fixture
def at(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    app = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not app.exception, [e.value for e in app.exception]
    app.selectbox(key="sr_algo").select("sft").run()
    app.number_input(key="sr_eval_size").set_value(10).run()
    app.number_input(key="sr_eval_every").set_value(5).run()
    app.selectbox(key="sr_size").select("tiny").run()
    yield app
    from lab.smallrun import live

    for lr in list(live._REGISTRY.values()):  # a failed test leaves no worker training on the shared machine
        if lr.alive:
            lr.proc.terminate()
            lr.proc.wait(timeout=60)


def wait_for(app, cond, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        app.run()
        assert not app.exception, [e.value for e in app.exception]
        if cond(app):
            return
        time.sleep(0.5)
    raise AssertionError("condition not reached; markdown: " + " | ".join(m.value for m in app.markdown)[-1500:])


def state(app) -> str:
    for m in app.markdown:
        if m.value.startswith("**Run**"):
            return m.value
    return ""


def test_start_run_shows_metrics_and_chart(at, tmp_path):
    at.number_input(key="sr_steps").set_value(12).run()
    at.text_input(key="sr_name").input("t-start").run()
    at.button(key="sr_start").click().run()
    wait_for(at, lambda a: "state: **done**" in state(a))
    assert any("Finished" in s.value for s in at.success)
    assert len(at.get("plotly_chart")) >= 2  # loss and held-out accuracy at least
    run = tmp_path / "runs" / "t-start"
    assert (run / "final" / "model.safetensors").exists() and (run / "ledger.jsonl").exists()
    # the earlier-runs section reads the ledger and offers the CSV
    at.run()
    assert at.selectbox(key="sr_cmp_a").options == ["t-start"]


def test_stop_leaves_checkpoint_and_resume_finishes(at, tmp_path):
    at.number_input(key="sr_steps").set_value(400).run()
    at.text_input(key="sr_name").input("t-stop").run()
    at.button(key="sr_start").click().run()
    wait_for(at, lambda a: "step " in " ".join(p.value.get("text", "") if isinstance(p.value, dict) else str(p.proto.text) for p in a.get("progress")) and "state: **running**" in state(a))
    at.button(key="sr_stop").click().run()
    wait_for(at, lambda a: "state: **stopped**" in state(a))
    ckpts = sorted((tmp_path / "runs" / "t-stop" / "checkpoints").glob("step-*"))
    assert ckpts, "Stop must leave a resumable checkpoint"
    stopped_at = int(ckpts[-1].name.split("-")[1])
    assert 0 < stopped_at < 400
    at.button(key="sr_resume").click().run()
    wait_for(at, lambda a: "state: **done**" in state(a), timeout=240)
    assert (tmp_path / "runs" / "t-stop" / "final").exists()


def test_bad_data_lists_lines_and_trains_nothing(at, tmp_path):
    at.text_area(key="sr_paste").input('{"prompt": "rev ab=", "completion": "ba"}\nnot json\n{"prompt": "x"}\n').run()
    assert any("line 2" in e.value and "line 3" in e.value for e in at.error)
    assert at.button(key="sr_start").disabled  # a browser user cannot start a run on a bad file
    at.text_input(key="sr_name").input("t-bad").run()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("name", ["../escape", "/tmp/abs", "a/b", ".."])
def test_run_name_is_a_name_not_a_path(at, tmp_path, name):
    """Reproduced: the run name reached outside the runs directory. Now a clear message and nothing created."""
    outside = set(tmp_path.iterdir())
    at.text_input(key="sr_name").input(name).run()
    assert any("run name must be a plain name" in e.value for e in at.error)
    assert at.button(key="sr_start").disabled and at.button(key="sr_resume").disabled
    assert set(tmp_path.iterdir()) == outside


def test_start_refuses_a_directory_the_lab_did_not_create(at, tmp_path):
    """Reproduced: Start on an existing directory deleted the user's final/ and checkpoint files."""
    mine = tmp_path / "runs" / "mine"
    (mine / "final").mkdir(parents=True)
    (mine / "final" / "notes.txt").write_text("do not touch")
    at.text_input(key="sr_name").input("mine").run()
    at.button(key="sr_start").click().run()
    assert not at.exception
    assert any("not a lab run" in e.value for e in at.error)
    assert sorted(p.name for p in mine.rglob("*")) == ["final", "notes.txt"]
    assert (mine / "final" / "notes.txt").read_text() == "do not touch"


def test_bad_config_shows_one_message_and_creates_nothing(at, tmp_path):
    at.text_input(key="sr_model").input(str(tmp_path / "no-such-model")).run()
    at.text_input(key="sr_name").input("t-badmodel").run()
    at.button(key="sr_start").click().run()
    assert any("model:" in e.value and "not a directory" in e.value for e in at.error)
    assert not (tmp_path / "runs" / "t-badmodel").exists()


def test_pasted_data_is_kept_under_runs_and_trains(at, tmp_path):
    rows = '{"prompt": "rev ab=", "completion": "ba"}\n{"prompt": "rev abc=", "completion": "cba"}\n'
    at.text_area(key="sr_paste").input(rows).run()
    at.number_input(key="sr_steps").set_value(3).run()
    at.text_input(key="sr_name").input("t-data").run()
    at.button(key="sr_start").click().run()
    wait_for(at, lambda a: "state: **done**" in state(a))
    import json

    cfg = json.loads((tmp_path / "runs" / "t-data" / "run_config.json").read_text())
    kept = Path(cfg["data"])
    assert kept.parent == tmp_path / "runs" / ".uploads" and kept.read_text() == rows
    assert not (tmp_path / "runs" / "t-data" / "data.jsonl").exists()


# ----------------------------------------------------------------------------- training in its own process


def progress_text(app) -> str:
    return " | ".join(p.proto.text for p in app.get("progress"))


def status_of(run: Path) -> dict:
    import json

    try:
        return json.loads((run / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def start(app, name: str, steps: int) -> None:
    app.number_input(key="sr_steps").set_value(steps).run()
    app.text_input(key="sr_name").input(name).run()
    app.button(key="sr_start").click().run()
    assert not app.error, [e.value for e in app.error]


def test_training_runs_in_another_process_and_stop_clears_eta(at, tmp_path):
    import os

    run = tmp_path / "runs" / "t-proc"
    start(at, "t-proc", 2000)
    wait_for(at, lambda a: "state: **running**" in state(a) and "ETA" in progress_text(a))
    pid = status_of(run)["pid"]
    assert pid != os.getpid()  # a child process trains, not a thread of this (server) process
    # while it trains, the runs list shows it (it used to say "none yet")
    assert "t-proc (training now)" in at.selectbox(key="sr_cmp_a").options
    at.button(key="sr_stop").click().run()
    wait_for(at, lambda a: "state: **stopped**" in state(a))
    assert "ETA" not in progress_text(at), progress_text(at)  # the ETA used to stay after Stop
    assert not any("Finished" in s.value for s in at.success)
    assert any("Stopped at step" in i.value for i in at.info)
    assert list((run / "checkpoints").glob("step-*")), "Stop must leave a resumable checkpoint"
    assert not (run / "STOP").exists()  # the worker removes the stop file it obeyed


def test_killed_worker_shows_failed_server_lives_and_resume_works(at, tmp_path):
    """kill -9 of the training process: the page (the server) lives on, says failed with the exit code, Resume continues."""
    import json
    import os
    import signal

    run = tmp_path / "runs" / "t-kill"
    start(at, "t-kill", 2000)
    wait_for(at, lambda a: status_of(run).get("phase") == "main" and (status_of(run).get("step") or 0) >= 30
             and list((run / "checkpoints").glob("step-*")))
    os.kill(status_of(run)["pid"], signal.SIGKILL)
    wait_for(at, lambda a: "state: **failed**" in state(a))
    assert any("exited with code -9" in e.value for e in at.error), [e.value for e in at.error]
    saved = max(int(p.name.split("-")[1]) for p in (run / "checkpoints").glob("step-*"))
    at.button(key="sr_resume").click().run()
    wait_for(at, lambda a: "state: **running**" in state(a))
    at.button(key="sr_stop").click().run()
    wait_for(at, lambda a: "state: **stopped**" in state(a))
    recs = [json.loads(ln) for ln in (run / "ledger.jsonl").read_text().splitlines()]
    resumed = [r for r in recs if r["type"] == "resume"]
    assert resumed and resumed[-1]["step"] == saved  # continued from the last checkpoint before the kill


def test_base_stage_result_is_never_the_runs_finished_banner(at, tmp_path):
    """Reproduced: "Finished: accuracy 0.0% → 44.5%" from the base SFT stage showed while GRPO trained and after Stop."""
    run = tmp_path / "runs" / "t-base"
    at.selectbox(key="sr_algo").select("grpo").run()
    at.number_input(key="sr_opt_base_steps").set_value(3).run()
    at.number_input(key="sr_opt_group_size").set_value(2).run()
    at.number_input(key="sr_batch").set_value(2).run()
    start(at, "t-base", 2000)
    wait_for(at, lambda a: status_of(run).get("phase") == "main" and "state: **running**" in state(a) and "step " in progress_text(a))
    assert status_of(run)["base_summary"] is not None and status_of(run)["summary"] is None  # the base stage is done
    assert not any("Finished" in s.value for s in at.success)
    at.button(key="sr_stop").click().run()
    wait_for(at, lambda a: "state: **stopped**" in state(a))
    assert not any("Finished" in s.value for s in at.success)


def test_reload_and_a_restarted_server_find_the_live_run(at, tmp_path, monkeypatch):
    from lab.smallrun import live

    start(at, "t-reload", 2000)
    wait_for(at, lambda a: "state: **running**" in state(a))
    fresh = AppTest.from_file(PAGE, default_timeout=60).run()  # a reload: a new session, nothing in its state
    assert "t-reload" in state(fresh) and "state: **running**" in state(fresh), state(fresh)
    monkeypatch.setattr(live, "_REGISTRY", {})  # a restarted server: it did not start this worker
    other = AppTest.from_file(PAGE, default_timeout=60).run()
    assert "t-reload" in state(other) and "state: **running**" in state(other), state(other)
    other.button(key="sr_stop").click().run()  # stops it through the run directory (STOP file)
    wait_for(other, lambda a: "state: **stopped**" in state(a))


def test_numeric_inputs_show_the_algorithms_real_defaults(tmp_path, monkeypatch):
    from lab.smallrun.config import ALGORITHM_DEFAULTS

    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    app = AppTest.from_file(PAGE, default_timeout=60).run()
    for algo in ["grpo", "sft", "dpo", "grpo"]:
        app.selectbox(key="sr_algo").select(algo).run()
        d = ALGORITHM_DEFAULTS[algo]
        got = {k: app.number_input(key=f"sr_{k}").value for k in ("steps", "lr", "batch")}
        assert got == {"steps": d["steps"], "lr": pytest.approx(d["lr"]), "batch": d["batch_size"]}, (algo, got)
        assert app.number_input(key="sr_steps").label == f"steps ({algo} default: {d['steps']})"
    assert not any("0 = default" in n.label for n in app.number_input)


# ----------------------------------------------------------------------------- the worker's status and stop file (no training)


def _lab_dir(tmp_path) -> Path:
    from lab.smallrun.rundir import RunDir

    d = tmp_path / "run"
    RunDir.open(d, resume=False).close()
    return d


def test_status_keeps_the_base_stage_result_apart_and_drops_eta_on_stop(tmp_path):
    import json

    from lab.smallrun.worker import Status

    d = _lab_dir(tmp_path)
    s = Status(d, "grpo", resume=False)
    s.main_total = 10
    s.on_event({"type": "phase", "phase": "base", "steps": 3})
    assert (s.s["phase"], s.s["total"]) == ("base", 3)
    s.on_event({"type": "step", "step": 3, "total_steps": 3, "steps_per_second": 5.0, "phase": "base"})
    s.on_event({"type": "done", "phase": "base", "before": 0.0, "after": 0.445, "metric": "eval/accuracy"})
    assert s.s["summary"] is None and s.s["base_summary"]["after"] == 0.445
    s.on_event({"type": "eval", "step": 0, "eval/accuracy": 0.4})  # the main stage begins: its own counter and total
    assert (s.s["phase"], s.s["step"], s.s["total"]) == ("main", 0, 10)
    s.on_event({"type": "step", "step": 4, "total_steps": 10, "steps_per_second": 2.0})
    assert s.s["eta_s"] == pytest.approx(3.0)
    s.write(state="stopping")
    s.on_event({"type": "step", "step": 5, "total_steps": 10, "steps_per_second": 2.0})
    assert s.s["eta_s"] is None
    s.on_event({"type": "stopped", "step": 5})
    s.write(state="stopped")
    on_disk = json.loads((d / "status.json").read_text())
    assert on_disk["state"] == "stopped" and on_disk["summary"] is None and on_disk["eta_s"] is None


def test_status_step_writes_are_throttled(tmp_path, monkeypatch):
    from lab.smallrun import worker

    d = _lab_dir(tmp_path)
    s = worker.Status(d, "sft", resume=False)
    writes = []
    real = worker.rundir.atomic_write_text
    monkeypatch.setattr(worker.rundir, "atomic_write_text", lambda *a, **k: (writes.append(a[1]), real(*a, **k)))
    for i in range(200):  # far faster than STATUS_HZ: one write, the rest wait for the next interval
        s.on_event({"type": "step", "step": i + 1, "total_steps": 1000, "steps_per_second": 100.0})
    assert len(writes) == 1
    s.on_event({"type": "eval", "step": 200, "eval/accuracy": 0.5})  # an evaluation is written at once, with the latest step
    assert len(writes) == 2 and '"step": 200' in writes[-1]


from hypothesis import given, settings, strategies as hst  # noqa: E402

EVENTS = hst.lists(hst.one_of(
    hst.builds(lambda n: {"type": "step", "step": n, "total_steps": 50, "steps_per_second": 3.0, "phase": "base"}, hst.integers(1, 50)),
    hst.builds(lambda n: {"type": "step", "step": n, "total_steps": 50, "steps_per_second": 3.0}, hst.integers(1, 50)),
    hst.just({"type": "done", "phase": "base", "before": 0.0, "after": 0.4, "metric": "eval/accuracy"}),
    hst.just({"type": "eval", "step": 1, "eval/accuracy": 0.1}),
    hst.just({"type": "checkpoint", "step": 1, "path": "x", "phase": "base"}),
    hst.just({"type": "stopped", "step": 2}),
    hst.just("STOP"),
), max_size=30)


@settings(max_examples=60, deadline=None)
@given(EVENTS)
def test_property_no_base_event_makes_a_run_result_and_no_eta_once_stopping(tmp_path_factory, events):
    from lab.smallrun.worker import Status

    d = _lab_dir(tmp_path_factory.mktemp("p"))
    s = Status(d, "grpo", resume=False)
    stopping = False
    for e in events:
        if e == "STOP":
            stopping = True
            s.write(state="stopping", eta_s=None)
            continue
        s.on_event(e)
        assert s.s["summary"] is None  # only a main-stage "done" is the run's result
        if stopping:
            assert s.s["state"] == "stopping" and s.s["eta_s"] is None


def test_stop_file_names_its_worker(tmp_path):
    from lab.smallrun.worker import STOP, stop_requested

    d = _lab_dir(tmp_path)
    assert not stop_requested(d, 1234)
    (d / STOP).write_text("999\n")
    assert not stop_requested(d, 1234)  # an earlier worker's stop file is not obeyed
    (d / STOP).write_text("1234\n")
    assert stop_requested(d, 1234)
    (d / STOP).write_text("")
    assert stop_requested(d, 1234)  # a bare `touch OUT/STOP` from a shell stops it too


def test_a_dead_worker_reads_as_failed_and_stop_writes_nowhere_foreign(tmp_path):
    import json
    import os

    from lab.smallrun.live import read_status, request_stop

    d = _lab_dir(tmp_path)
    # a status saying "running" whose process is not a worker for this directory (this test's own pid)
    (d / "status.json").write_text(json.dumps({"state": "running", "pid": os.getpid(), "eta_s": 12.0, "step": 3, "total": 9}))
    s = read_status(d)
    assert s["state"] == "failed" and "ended without a final status" in s["error"] and s["eta_s"] is None and not s["alive"]
    assert not request_stop(d) and not (d / "STOP").exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "status.json").write_text(json.dumps({"state": "running", "pid": os.getpid()}))
    assert not request_stop(foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["status.json"]  # nothing written into a directory the lab did not create


def test_worker_refuses_a_foreign_directory_and_writes_nothing(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from lab.smallrun import RunConfig

    root = Path(__file__).resolve().parent.parent
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    r = subprocess.run([sys.executable, "-m", "lab.smallrun.worker", "--out", str(foreign), "--config",
                        json.dumps(RunConfig(model_size="tiny").to_dict())], capture_output=True, text=True, timeout=300,
                       cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert r.returncode == 2 and "not a lab run" in r.stderr, r.stderr[-1000:]
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    r = subprocess.run([sys.executable, "-m", "lab.smallrun.worker", "--out", str(tmp_path / "x"), "--config", "{not json"],
                       capture_output=True, text=True, timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert r.returncode == 2 and "error:" in r.stderr and not (tmp_path / "x").exists()


@settings(max_examples=60, deadline=None)
@given(hst.lists(hst.dictionaries(hst.sampled_from(["type", "step", "loss", "note"]), hst.one_of(hst.integers(), hst.text(max_size=5)),
                                  max_size=4), min_size=1, max_size=12), hst.data())
def test_property_incremental_ledger_read_equals_a_full_read(tmp_path_factory, records, data):
    """The page reads only what was appended since its last read; however the bytes arrive (a line cut mid-write
    included), it sees exactly the complete lines, as a full read does."""
    import json

    from lab.smallrun.live import read_ledger_records

    d = tmp_path_factory.mktemp("ledger")
    blob = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    cuts = sorted(data.draw(hst.lists(hst.integers(0, len(blob)), max_size=6)))
    path, done = d / "ledger.jsonl", 0
    path.write_bytes(b"")
    for c in cuts + [len(blob)]:
        with open(path, "ab") as f:
            f.write(blob[done:c])
        done = max(done, c)
        complete = blob[:done][: blob[:done].rfind(b"\n") + 1]
        assert read_ledger_records(d) == [json.loads(ln) for ln in complete.split(b"\n")[:-1]]
    assert read_ledger_records(d) == records


def test_reading_a_directory_without_a_run_is_no_error(tmp_path):
    from lab.smallrun.live import find_live_runs, read_ledger_metrics, read_status, request_stop

    for d in (tmp_path / "none", tmp_path):
        s = read_status(d)
        assert s["state"] == "unknown" and not s["known"] and not s["alive"]
        assert read_ledger_metrics(d) == ([], {}) and not request_stop(d)
    assert find_live_runs(tmp_path / "none") == [] and find_live_runs(tmp_path) == []
    assert list(tmp_path.iterdir()) == []  # reading created nothing


def test_a_stop_whose_checkpoint_fails_reads_as_failed_not_stopped(tmp_path):
    """A full disk during the stop checkpoint is a failure with its error, never a clean stop (the page would promise
    a checkpoint that is not there)."""
    import json
    import os
    import subprocess
    import sys

    from lab.smallrun import RunConfig

    root = Path(__file__).resolve().parent.parent
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "from lab.smallrun import loop, rundir\n"
        "def save_checkpoint(self, final=False):\n"
        "    self.stop_event.set()  # a stop is pending when the write fails\n"
        "    raise rundir.CheckpointWriteError('No space left on device (test)')\n"
        "loop.Loop.save_checkpoint = save_checkpoint\n")
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "lab.smallrun.worker", "--out", str(out), "--config",
                        json.dumps(RunConfig(model_size="tiny", steps=3, batch_size=4, eval_size=4, save_every=1).to_dict())],
                       capture_output=True, text=True, timeout=300, cwd=root,
                       env={**os.environ, "PYTHONPATH": f"{hook}{os.pathsep}{root}"})
    status = json.loads((out / "status.json").read_text())
    assert r.returncode == 1 and status["state"] == "failed", (status, (out / "worker.log").read_text()[-1500:])
    assert "CheckpointWriteError" in status["error"] and "No space left" in status["error"]


def test_a_pipeline_stage_that_cannot_start_is_reported_by_the_stage_before(tmp_path):
    """The worker checks the next stage before starting it (as the page checks a first start); a refusal goes into its
    own status as next_error, the next directory is left untouched, and the page shows it instead of "starting"."""
    import json
    import os
    import subprocess
    import sys

    from lab.smallrun import RunConfig

    root = Path(__file__).resolve().parent.parent
    foreign = tmp_path / "p-rm"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    tiny = RunConfig(model_size="tiny", steps=2, batch_size=4, eval_size=4).to_dict()
    r = subprocess.run([sys.executable, "-m", "lab.smallrun.worker", "--out", str(tmp_path / "p-sft"), "--config", json.dumps(tiny),
                        "--then", json.dumps([{"out": str(foreign), "config": tiny}])],
                       capture_output=True, text=True, timeout=300, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    status = json.loads((tmp_path / "p-sft" / "status.json").read_text())
    assert r.returncode == 0 and status["state"] == "done" and status["next"] is None, status
    assert "cannot start" in status["next_error"] and "not a lab run" in status["next_error"]
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_a_second_worker_for_the_same_directory_writes_nothing(tmp_path):
    """Two workers started for one directory (two clicks, two servers): while one holds the worker lock, the other is
    refused before it writes a status, a log line or removes a stop request, even in the seconds before the first takes
    the run's own lock (simulated here by holding the worker lock)."""
    import fcntl
    import json
    import os
    import subprocess
    import sys

    from lab.smallrun import RunConfig, rundir
    from lab.smallrun.worker import WORKER_LOCK

    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "run"
    rundir.RunDir.open(out, resume=False).close()  # a lab run directory, as the first worker makes it
    (out / "STOP").write_text("a stop request of the live worker")
    held = os.open(out / WORKER_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the live worker
    try:
        r = subprocess.run([sys.executable, "-m", "lab.smallrun.worker", "--out", str(out), "--config",
                            json.dumps(RunConfig(model_size="tiny", steps=2).to_dict())],
                           cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=300)
    finally:
        os.close(held)
    assert r.returncode == 2 and "in use by another worker" in r.stderr, r.stderr
    assert not (out / "status.json").exists() and not (out / "worker.log").exists()
    assert (out / "STOP").read_text() == "a stop request of the live worker"
