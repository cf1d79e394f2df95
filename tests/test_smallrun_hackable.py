"""The hackable-verifier switch (issue 16): the training reward from a deliberately buggy checker, the gold from the
exact verifier, both logged side by side."""

import json

import pytest

from lab.smallrun import RunConfig, SmallRun, get_task
from lab.smallrun.live import read_ledger_records


def test_hackable_checker_pays_for_a_wrong_order_the_gold_does_not():
    task = get_task("sorting")
    ex = next(e for e in task.sample(50, seed=0) if e.answer[::-1] != e.answer)  # "sort 931=" → "139"; "931" is wrong
    wrong = ex.answer[::-1]
    assert task.verifier("hackable").verify(ex.prompt, wrong, answer=ex.answer).decision == 1
    assert task.verifier("exact").verify(ex.prompt, wrong, answer=ex.answer).decision == 0
    assert task.verifier("hackable").verify(ex.prompt, ex.answer + "1", answer=ex.answer).decision == 0  # other characters: no


@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_a_short_run_logs_proxy_and_gold(tmp_path, algorithm):
    cfg = RunConfig(algorithm=algorithm, task="sorting", reward_verifier="hackable", steps=2, base_steps=5, model_size="tiny",
                    eval_every=2, eval_size=8, batch_size=4, **({"group_size": 2} if algorithm == "grpo" else {}))
    SmallRun(cfg, tmp_path / "r").run()
    recs = read_ledger_records(tmp_path / "r")
    evals = [r for r in recs if r.get("type") == "eval"]
    steps = [r for r in recs if r.get("type") == "step"]
    assert evals and all({"eval/accuracy", "eval/proxy_reward"} <= set(e) for e in evals)
    assert all(e["eval/proxy_reward"] >= e["eval/accuracy"] for e in evals)  # the buggy checker accepts all the exact one does
    assert steps and all({"reward", "reward/verifier"} <= set(s) for s in steps)
    assert all(s["reward"] >= s["reward/verifier"] for s in steps)
    assert json.loads((tmp_path / "r" / "run_config.json").read_text())["reward_verifier"] == "hackable"


def test_bad_reward_verifier_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="reward_verifier"):
        RunConfig(algorithm="grpo", reward_verifier="lenient")
    with pytest.raises(ValueError, match="reward_verifier"):
        RunConfig(algorithm="ppo", reward_verifier="hackable", reward_model=str(tmp_path))
