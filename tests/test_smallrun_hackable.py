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
    assert evals and all({"eval/accuracy", "eval/proxy_reward", "eval/kl"} <= set(e) for e in evals)
    assert evals[0]["step"] == 0 and evals[0]["eval/kl"] == 0.0  # the policy is still the reference: k1 is exactly 0
    from lab.proxy import run_curves

    assert run_curves(str(tmp_path / "r")).eval_d[0] == 0.0 and run_curves(str(tmp_path / "r")).eval_d[-1] >= 0.0
    assert all(e["eval/proxy_reward"] >= e["eval/accuracy"] for e in evals)  # the buggy checker accepts all the exact one does
    assert steps and all({"reward", "reward/verifier"} <= set(s) for s in steps)
    assert all(s["reward"] >= s["reward/verifier"] for s in steps)
    assert json.loads((tmp_path / "r" / "run_config.json").read_text())["reward_verifier"] == "hackable"


def test_bad_reward_verifier_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="reward_verifier"):
        RunConfig(algorithm="grpo", reward_verifier="lenient")
    with pytest.raises(ValueError, match="reward_verifier"):
        RunConfig(algorithm="ppo", reward_verifier="hackable", reward_model=str(tmp_path))


def test_each_evaluation_decodes_the_heldout_set_once(tmp_path, monkeypatch):
    """The proxy's eval/proxy_reward scores the loop's own greedy completions: one greedy decode of the held-out
    prompts per evaluation, not one for the gold and another for the proxy."""
    import lab.smallrun.decoding as decoding
    import lab.smallrun.loop as loop

    cfg = RunConfig(algorithm="grpo", task="sorting", reward_verifier="hackable", steps=2, base_steps=5, model_size="tiny",
                    eval_every=2, eval_size=8, batch_size=4, group_size=2)
    run = SmallRun(cfg, tmp_path / "r")
    greedy_prompts, per_eval = [], []
    real_sample, real_evaluate = decoding.sample, loop.Loop.evaluate

    def counting(model, codec, prompts, *args, **kw):
        if kw.get("greedy"):
            greedy_prompts.extend(prompts)
        return real_sample(model, codec, prompts, *args, **kw)

    def evaluate(self):
        before = len(greedy_prompts)
        out = real_evaluate(self)
        per_eval.append((self.cfg.algorithm, greedy_prompts[before:], "eval/proxy_reward" in out))
        return out

    monkeypatch.setattr(decoding, "sample", counting)
    monkeypatch.setattr(loop, "sample", counting)
    monkeypatch.setattr(loop.Loop, "evaluate", evaluate)
    run.run()
    heldout = [e.prompt for e in get_task("sorting").heldout(8)]
    grpo = [(prompts, proxy) for algo, prompts, proxy in per_eval if algo == "grpo"]
    assert len(grpo) == 2 and all(proxy for _, proxy in grpo)  # steps 0 and 2, each with the proxy beside the gold
    assert all(prompts == heldout for prompts, _ in grpo)  # each evaluation: the held-out prompts, decoded once
