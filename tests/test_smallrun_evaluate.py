"""lab.smallrun.evaluate on real tiny checkpoints: per-case scores, confidence, pass@k counts, the checkpoint list,
best-of-N with a real (randomly initialised) GPT2ForSequenceClassification, and bad input naming its argument."""

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from lab.evaluation import pass_at_k
from lab.smallrun import evaluate as E
from lab.smallrun.config import RunConfig
from lab.smallrun.engine import Codec, SmallRun, completion_logps
from lab.smallrun.rundir import ChainLedger
from lab.smallrun.tasks import get_task

EVAL_SIZE = 40


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """One GRPO run with its SFT base stage (tiny model, a few steps) and a random reward model beside it."""
    root = tmp_path_factory.mktemp("runs")
    cfg = RunConfig(algorithm="grpo", steps=2, base_steps=120, batch_size=4, group_size=2, eval_every=100, eval_size=EVAL_SIZE,
                    save_every=1, keep=3, model_size="tiny", seed=0)
    SmallRun(cfg, root / "g").run()
    from transformers import GPT2Config, GPT2ForSequenceClassification

    from lab.models import char_tokenizer

    tok = char_tokenizer()
    torch.manual_seed(0)
    rm = GPT2ForSequenceClassification(GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2, num_labels=1,
                                                  pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id))
    rm.save_pretrained(root / "rm")
    tok.save_pretrained(root / "rm")
    (root / "not-a-run").mkdir()
    (root / "not-a-run" / "run_config.json").write_text("{}")  # no lab marker: never listed
    return root


# ---------------------------------------------------------------- listing


def test_list_checkpoints_names_runs_steps_and_the_base_stage(runs):
    cks = E.list_checkpoints(runs)
    got = [(c.run, c.label, c.step, c.algorithm, c.task) for c in cks]
    assert got == [("g", "step 1", 1, "grpo", "reversal"), ("g", "step 2", 2, "grpo", "reversal"), ("g", "final", 2, "grpo", "reversal"),
                   ("g/base", "step 120", 120, "sft", "reversal"), ("g/base", "final", 120, "sft", "reversal")]
    base, cand = E.default_pair(cks, "g")
    assert (base.run, base.label, cand.run, cand.label) == ("g/base", "final", "g", "final")
    assert E.default_pair(cks, "nothing") == (None, None)
    assert E.list_checkpoints(runs / "missing") == []
    assert not any(c.is_reward_model for c in cks)
    assert E.CheckpointInfo("r", "final", 1, "p", "rm", "reversal").is_reward_model


def test_list_checkpoints_bad_input(runs):
    with pytest.raises(ValueError, match="runs_dir"):
        E.list_checkpoints(runs / "g" / "run_config.json")
    with pytest.raises(ValueError, match="runs_dir"):
        E.list_checkpoints(3)


# ---------------------------------------------------------------- per-case evaluation


def test_greedy_accuracy_matches_the_runs_own_eval_record(runs):
    """The engine evaluated the same held-out cases greedily at the end: the per-case mean must equal it."""
    recs, _ = ChainLedger(runs / "g" / "base" / "ledger.jsonl").read()
    logged = [r for r in recs if r.get("type") == "eval"][-1]["eval/accuracy"]
    ev = E.evaluate_checkpoint(runs / "g" / "base" / "final", n_cases=EVAL_SIZE, n_samples=0)
    assert ev.accuracy == pytest.approx(logged, abs=1e-12)
    assert ev.task == "reversal" and ev.n_cases == EVAL_SIZE and ev.sample_correct == []
    assert ev.prompts == [e.prompt for e in get_task("reversal").heldout(EVAL_SIZE)]
    ver = get_task("reversal").verifier()
    assert ev.correct == [ver.verify(q, y, answer=a).decision for q, y, a in zip(ev.prompts, ev.greedy, ev.answers)]


def test_confidence_is_the_mean_token_logprob_of_the_greedy_answer(runs):
    path = runs / "g" / "base" / "final"
    ev = E.evaluate_checkpoint(path, n_cases=6, n_samples=0)
    model, tok = E.load_policy(path)
    codec = Codec(tok, torch.device("cpu"))
    for q, y, conf in zip(ev.prompts, ev.greedy, ev.confidence):
        pid, pat = codec.left_pad([q])
        cid, cm = codec.right_pad([y])  # the greedy text + eos, as written
        cm = cm[:, : E.DEFAULT_MAX_NEW_TOKENS]  # a completion cut at max_new_tokens has no eos
        cid = cid[:, : E.DEFAULT_MAX_NEW_TOKENS]
        with torch.no_grad():
            lp = completion_logps(model, pid, pat, cid, cm)
        assert conf == pytest.approx(float((lp * cm).sum() / cm.sum()), abs=1e-5)
        assert conf <= 0


def test_sampled_counts_are_seeded_bounded_and_give_pass_at_k(runs):
    path = runs / "g" / "base" / "final"
    a = E.evaluate_checkpoint(path, n_cases=20, n_samples=6, ks=[1, 3, 6], seed=3)
    b = E.evaluate_checkpoint(path, n_cases=20, n_samples=6, ks=[1, 3, 6], seed=3)
    assert a.sample_correct == b.sample_correct and a.weights_sha256 == b.weights_sha256
    assert all(0 <= c <= 6 for c in a.sample_correct)
    for k in (1, 3, 6):
        assert a.pass_at[k] == pytest.approx(sum(pass_at_k(6, c, k) for c in a.sample_correct) / 20)
    assert a.pass_at[1] <= a.pass_at[3] <= a.pass_at[6]
    assert sum(a.sample_correct) > 0, "the 120-step base solves some reversals when sampling"


def test_retention_task_and_paired_cases(runs):
    path = runs / "g" / "final"
    own = E.evaluate_checkpoint(path, n_cases=10, n_samples=0)
    other = E.evaluate_checkpoint(path, task="addition", n_cases=10, n_samples=0)
    assert other.task == "addition" and other.prompts[0].endswith("=") and "+" in other.prompts[0]
    assert E.paired_cases(own, own) == (own.correct, own.correct)
    with pytest.raises(ValueError, match="^b .*task"):
        E.paired_cases(own, other)
    shorter = E.evaluate_checkpoint(path, n_cases=5, n_samples=0)
    with pytest.raises(ValueError, match="^b scored different cases"):
        E.paired_cases(own, shorter)
    with pytest.raises(ValueError, match="^a must be a CaseEvaluation"):
        E.paired_cases([1, 0], own)


def test_hackable_verifier_accepts_at_least_what_exact_accepts(runs):
    path = runs / "g" / "base" / "final"
    exact = E.evaluate_checkpoint(path, n_cases=20, n_samples=0)
    hack = E.evaluate_checkpoint(path, n_cases=20, n_samples=0, verifier="hackable")
    assert exact.greedy == hack.greedy
    assert all(h >= e for h, e in zip(hack.correct, exact.correct))


@pytest.mark.parametrize("kwargs, name", [
    ({"n_samples": 2, "ks": [3]}, "ks"), ({"ks": [0]}, "ks"), ({"n_cases": 0}, "n_cases"), ({"n_samples": -1}, "n_samples"),
    ({"task": "poetry"}, "task"), ({"task": 3}, "task"), ({"verifier": "lenient"}, "verifier"), ({"temperature": 0.0}, "temperature"),
    ({"max_new_tokens": 200}, "max_new_tokens"), ({"seed": 1.5}, "seed"), ({"n_cases": True}, "n_cases"),
    ({"temperature": None}, "temperature"), ({"temperature": "hot"}, "temperature"), ({"temperature": float("nan")}, "temperature"),
])
def test_evaluate_bad_arguments_are_named(runs, kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        E.evaluate_checkpoint(runs / "g" / "final", **{"n_cases": 5, "n_samples": 2, **kwargs})


def test_evaluate_refuses_what_is_not_a_checkpoint(runs, tmp_path):
    with pytest.raises(ValueError, match="^path: .* is not a directory"):
        E.evaluate_checkpoint(tmp_path / "missing")
    with pytest.raises(ValueError, match="^path: .*no config.json"):
        E.evaluate_checkpoint(runs / "g")  # a run directory, not a checkpoint
    bare = tmp_path / "bare"
    shutil.copytree(runs / "g" / "final", bare)
    (bare / "manifest.json").unlink()
    with pytest.raises(ValueError, match="^task: .*run_config.json"):
        E.evaluate_checkpoint(bare)  # no run around it: the task must be named
    assert E.evaluate_checkpoint(bare, task="reversal", n_cases=3, n_samples=0).n_cases == 3
    tampered = tmp_path / "tampered"
    shutil.copytree(runs / "g" / "final", tampered)
    (tampered / "config.json").write_text((tampered / "config.json").read_text().replace("\n", "\n "))
    with pytest.raises(ValueError, match="^path: .*config.json was changed"):
        E.evaluate_checkpoint(tampered, task="reversal")


def test_fingerprint_is_the_manifest_weights_hash(runs):
    path = runs / "g" / "final"
    m = json.loads((path / "manifest.json").read_text())
    assert E.checkpoint_fingerprint(path) == m["weights_sha256"]
    assert E.evaluate_checkpoint(path, n_cases=2, n_samples=0).weights_sha256 == m["weights_sha256"]
    with pytest.raises(ValueError, match="^path"):
        E.checkpoint_fingerprint(runs / "g")


# ---------------------------------------------------------------- best-of-N with a learned proxy


def test_reward_scores_read_the_last_real_token_like_the_hf_head(runs):
    rm, tok = E.load_reward_model(runs / "rm")
    prompts, comps = ["rev abc=", "rev abcdef="], ["cba", "x"]
    got = E.reward_scores(rm, tok, prompts, comps)
    for q, y, s in zip(prompts, comps, got):
        ids = torch.tensor([tok(q + y, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]])
        with torch.no_grad():
            want = rm(input_ids=ids).logits[0, 0].item()  # one unpadded row: HF reads its last token
        assert s == pytest.approx(want, abs=1e-5)


def test_best_of_n_with_proxy_mechanics(runs):
    res = E.best_of_n_with_proxy(runs / "g" / "base" / "final", runs / "rm", n_cases=8, n_max=8, seed=1, n_resamples=200)
    c = res.curve
    assert c.n == [1, 2, 4, 8] and c.n_prompts == 8 and c.n_max == 8
    P, G = torch.tensor(res.proxy_scores), torch.tensor(res.gold_scores, dtype=torch.float64)
    assert c.proxy[0] == pytest.approx(P[:, 0].mean().item()) and c.gold[0] == pytest.approx(G[:, 0].mean().item())
    assert c.proxy[-1] == pytest.approx(P.max(1).values.mean().item())
    pick = P.argmax(1)
    assert c.gold[-1] == pytest.approx(G[torch.arange(8), pick].mean().item())
    assert all(x <= y + 1e-12 for x, y in zip(c.proxy, c.proxy[1:]))
    again = E.best_of_n_with_proxy(runs / "g" / "base" / "final", runs / "rm", n_cases=8, n_max=8, seed=1, n_resamples=200)
    assert again.proxy_scores == res.proxy_scores


def test_best_of_n_with_proxy_bad_input(runs, tmp_path):
    pol, rm = runs / "g" / "final", runs / "rm"
    with pytest.raises(ValueError, match="^ns"):
        E.best_of_n_with_proxy(pol, rm, n_cases=2, n_max=4, ns=[8])
    with pytest.raises(ValueError, match="^n_max"):
        E.best_of_n_with_proxy(pol, rm, n_cases=2, n_max=0)
    with pytest.raises(ValueError, match="^reward_model"):
        E.best_of_n_with_proxy(pol, runs / "g" / "base" / "final", n_cases=2, n_max=2)  # a causal LM, not a reward model
    with pytest.raises(ValueError, match="^policy"):
        E.best_of_n_with_proxy(tmp_path, rm, n_cases=2, n_max=2)
    from transformers import GPT2Config, GPT2ForSequenceClassification

    two = tmp_path / "two"
    GPT2ForSequenceClassification(GPT2Config(vocab_size=90, n_positions=32, n_embd=16, n_layer=1, n_head=2, num_labels=2)).save_pretrained(two)
    with pytest.raises(ValueError, match="^reward_model: .*num_labels = 2"):
        E.best_of_n_with_proxy(pol, two, n_cases=2, n_max=2)


def test_comparison_table_columns_and_bad_input(runs):
    path_a, path_b = runs / "g" / "base" / "final", runs / "g" / "final"
    a = E.evaluate_checkpoint(path_a, n_cases=10, n_samples=4)
    b = E.evaluate_checkpoint(path_b, n_cases=10, n_samples=4)
    oa = E.evaluate_checkpoint(path_a, task="sorting", n_cases=10, n_samples=0)
    ob = E.evaluate_checkpoint(path_b, task="sorting", n_cases=10, n_samples=0)
    t = E.comparison_table(a, b, oa, ob)
    assert t["baseline"] == [float(v) for v in a.correct] and t["candidate"] == [float(v) for v in b.correct]
    assert t["n"] == [4.0] * 10 and t["c_baseline"] == [float(c) for c in a.sample_correct]
    assert t["confidence"] == [pytest.approx(math.exp(c)) for c in b.confidence]
    assert all(0 < c <= 1 for c in t["confidence"])
    assert t["old_before"] == [float(v) for v in oa.correct] and t["old_after"] == [float(v) for v in ob.correct]
    assert "n" not in E.comparison_table(a, E.evaluate_checkpoint(path_b, n_cases=10, n_samples=2))  # unequal n: no pass@k columns
    with pytest.raises(ValueError, match="^old_a and old_b"):
        E.comparison_table(a, b, oa, None)
    with pytest.raises(ValueError, match="^old_a must be evaluated on another task"):
        E.comparison_table(a, b, a, b)
    with pytest.raises(ValueError, match="^old_b must be a CaseEvaluation"):
        E.comparison_table(a, b, oa, "x")
    with pytest.raises(ValueError, match="^b "):
        E.comparison_table(a, oa)


def test_command_line(runs, capsys):
    assert E.main(["case", str(runs / "g" / "base" / "final"), "--n-cases", "5", "--samples", "2"]) == 0
    out = capsys.readouterr().out
    ev = E.evaluate_checkpoint(runs / "g" / "base" / "final", n_cases=5, n_samples=2, ks=[1, 2])
    assert f"greedy accuracy {ev.accuracy:.3f}" in out and f"pass@2 {ev.pass_at[2]:.3f}" in out
    assert E.main(["bon", "--policy", str(runs / "g" / "final"), "--reward-model", str(runs / "rm"), "--n-cases", "2", "--n-max", "4",
                   "--seeds", "0,1"]) == 0
    out = capsys.readouterr().out
    assert "seeds [0, 1]" in out and out.strip().splitlines()[-1].split()[0] == "4"
    assert E.main(["case", str(runs)]) == 2
    assert "error: path:" in capsys.readouterr().out


def test_small_helpers_bad_input(runs):
    with pytest.raises(ValueError, match="^run must be"):
        E.default_pair(E.list_checkpoints(runs), None)
    with pytest.raises(ValueError, match="^checkpoints must be"):
        E.default_pair(["g/final"], "g")
    with pytest.raises(ValueError, match="^path must be"):
        E.checkpoint_config(1)
    assert E.checkpoint_config(runs / "g" / "final")["algorithm"] == "grpo"
    assert E.checkpoint_config(runs / "g" / "checkpoints" / "step-000001")["algorithm"] == "grpo"
    assert E.checkpoint_config(runs / "g" / "base" / "final")["algorithm"] == "sft"
    rm, tok = E.load_reward_model(runs / "rm")
    with pytest.raises(ValueError, match="^prompts and completions"):
        E.reward_scores(rm, tok, ["a", "b"], ["x"])
