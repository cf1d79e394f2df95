"""The RLHF pipeline view: SFT → reward model → PPO as three chained worker processes (lab.smallrun.live)."""

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab.smallrun import live
from lab.smallrun.config import RunConfig

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "smallrun.py")
# a tiny pipeline: minutes of CPU become seconds; the mechanics are the same as the defaults'
SMALL = {"sft": {"steps": 100, "eval_size": 10, "eval_every": 100},  # as the default base stage: some answers right, some wrong
         "rm": {"steps": 4, "eval_size": 10, "eval_every": 4, "rm_prompts": 32, "batch_size": 8},
         "ppo": {"steps": 2, "eval_size": 10, "eval_every": 2, "batch_size": 8}}


def wait_all(stages, timeout=420):
    end = time.time() + timeout
    while time.time() < end:
        if all(live.stage_finished(out) for _, out, _ in stages):
            return
        failed = [(out, live.read_status(out).get("error")) for _, out, _ in stages if live.read_status(out)["state"] == "failed"]
        assert not failed, failed
        time.sleep(1)
    raise AssertionError("pipeline did not finish: " + json.dumps({str(o): live.read_status(o)["state"] for _, o, _ in stages}))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    stages = live.rlhf_pipeline(runs, "p", task="reversal", seed=0, model_size="small", overrides=SMALL)
    first = live.start_pipeline(stages)
    assert first is not None
    wait_all(stages)
    yield runs, stages


def test_stages_chain_and_use_each_others_checkpoints(finished):
    runs, stages = finished
    (_, sft, _), (_, rm, _), (_, ppo, _) = stages
    rm_cfg = json.loads((rm / "run_config.json").read_text())
    ppo_cfg = json.loads((ppo / "run_config.json").read_text())
    assert rm_cfg["algorithm"] == "rm" and rm_cfg["model"] == str(sft / "final")
    assert ppo_cfg["algorithm"] == "ppo" and ppo_cfg["model"] == str(sft / "final") and ppo_cfg["reward_model"] == str(rm / "final")
    # PPO against a learned reward logs the proxy beside the gold at every evaluation
    evals = [r for r in live.read_ledger_records(ppo) if r.get("type") == "eval"]
    assert evals and all("eval/proxy_reward" in e and "eval/accuracy" in e for e in evals)
    assert live.read_status(sft).get("next") == str(rm.resolve()) and live.read_status(rm).get("next") == str(ppo.resolve())
    assert live.start_pipeline(stages) is None  # every stage finished: nothing restarts, nothing is overwritten


def test_a_stopped_stage_resumes_and_later_stages_wait(tmp_path):
    stages = live.rlhf_pipeline(tmp_path, "q", model_size="tiny", overrides={**SMALL, "sft": {**SMALL["sft"], "steps": 400, "save_every": 5}})
    run = live.start_pipeline(stages)
    sft = stages[0][1]
    end = time.time() + 120
    while time.time() < end and not (live.read_status(sft)["state"] == "running" and (live.read_status(sft).get("step") or 0) >= 3):
        time.sleep(0.3)
    assert live.request_stop(sft)
    run.wait(timeout=120)
    assert live.read_status(sft)["state"] == "stopped"
    time.sleep(1)
    assert not (stages[1][1] / "status.json").exists()  # a stop does not start the next stage
    again = live.start_pipeline(stages)  # resumes the SFT stage from its checkpoint
    assert again.resume
    live.request_stop(sft)
    again.wait(timeout=120)


def test_bad_pipeline_input_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="overrides"):
        live.rlhf_pipeline(tmp_path, "x", overrides={"dpo": {}})
    with pytest.raises(ValueError, match="steps"):
        live.rlhf_pipeline(tmp_path, "x", overrides={"ppo": {"steps": 0}})
    with pytest.raises(ValueError):
        live.rlhf_pipeline(tmp_path, "../escape")


def test_page_shows_each_stage_result_and_checkpoint(finished, monkeypatch):
    runs, stages = finished
    monkeypatch.setenv("LAB_RUNS_DIR", str(runs))
    at = AppTest.from_file(PAGE, default_timeout=90).run()
    at.text_input(key="sr_pipe_name").input("p").run()
    assert not at.exception, [e.value for e in at.exception]
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    for stage, out, _ in stages:
        assert out.name in text
    assert "reward model: held-out preference accuracy" in text and "PPO: held-out accuracy" in text
    assert str(stages[2][1] / "final") in text
    titles = " ".join(json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart"))
    assert "Proxy vs gold" in titles
