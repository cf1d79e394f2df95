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
    return app


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
