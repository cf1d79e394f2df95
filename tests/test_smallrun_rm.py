"""The reward model (issue 12): learns a separable data file, saves a checkpoint plain transformers loads, and
``--reward-model`` is validated before anything trains."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from lab.models import char_tokenizer, tiny_gpt2
from lab.smallrun import RunConfig, SmallRun
from lab.smallrun.rewardmodel import check_reward_model, last_token_index, scalar_head_model, score_texts
from lab.smallrun.decoding import Codec


def save_tiny_policy(path, alphabet=None):
    """A fresh tiny GPT-2 causal LM with the character tokenizer, saved as a local checkpoint (the --model of a run)."""
    tok = char_tokenizer(alphabet) if alphabet else char_tokenizer()
    model = tiny_gpt2(len(tok), n_layer=1, n_head=2, n_embd=32, seed=0, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                      bos_token_id=tok.bos_token_id)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return model, tok


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("policy")
    save_tiny_policy(d)
    return d


def separable_pairs(path, n=64):
    """Chosen answers in lower case, rejected in upper case: separable by the tokens alone."""
    rows = [{"prompt": f"rev {s}=", "chosen": s[::-1], "rejected": s.upper()} for s in
            ("".join("abcdefgh"[(7 * i + 3 * j) % 8] for j in range(3 + i % 4)) for i in range(n))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_last_token_index_is_the_last_real_token_with_left_padding():
    attn = torch.tensor([[0, 0, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1], [0, 1, 0, 0, 0, 0]])  # left-padded prompt | right-padded response
    assert last_token_index(attn).tolist() == [4, 5, 1]
    with pytest.raises(ValueError, match="attn"):
        last_token_index(torch.zeros(1, 3, dtype=torch.long))


def test_scores_equal_plain_transformers_and_padding_does_not_matter(tmp_path):
    model, tok = save_tiny_policy(tmp_path / "p")
    rm = scalar_head_model(model, seed=3)
    assert type(rm).__name__ == "GPT2ForSequenceClassification" and rm.config.num_labels == 1
    assert torch.equal(rm.transformer.wte.weight, model.transformer.wte.weight)  # backbone copied, head new
    codec = Codec(tok, torch.device("cpu"))
    prompts, responses = ["rev ab=", "rev abcdef=", "sort 31="], ["ba", "fedcba", "13"]
    with torch.no_grad():
        batched = score_texts(rm, codec, prompts, responses)
        for i, (p, r) in enumerate(zip(prompts, responses)):  # one at a time: no padding at all
            alone = score_texts(rm, codec, [p], [r])
            assert float(alone[0]) == pytest.approx(float(batched[i]), abs=1e-5)
            ids = torch.tensor([codec.ids(p) + codec.ids(r) + [codec.eos]])
            assert float(rm(input_ids=ids).logits[0, 0]) == pytest.approx(float(batched[i]), abs=1e-5)  # transformers' own pooling


def test_rm_learns_a_separable_data_file_and_final_loads_with_transformers(tmp_path, policy_dir):
    data = tmp_path / "pairs.jsonl"
    rows = separable_pairs(data)
    cfg = RunConfig(algorithm="rm", model=str(policy_dir), data=str(data), steps=40, batch_size=16, lr=3e-3, warmup_steps=5,
                    eval_every=40, eval_size=10, save_every=1000, seed=0)
    run = SmallRun(cfg, tmp_path / "rm")
    s = run.run()
    steps = [h for h in run.history if h["type"] == "step"]
    assert {"loss", "accuracy", "margin", "grad_norm"} <= set(steps[-1])
    assert sum(h["loss"] for h in steps[-5:]) / 5 < 0.5 * sum(h["loss"] for h in steps[:5]) / 5
    assert sum(h["accuracy"] for h in steps[-5:]) / 5 >= 0.9
    assert s["metric"] == "eval/preference_accuracy"
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    final = tmp_path / "rm" / "final"
    rm = AutoModelForSequenceClassification.from_pretrained(final)
    tok = AutoTokenizer.from_pretrained(final)
    assert rm.config.num_labels == 1 and check_reward_model(str(final), tok)["architectures"] == ["GPT2ForSequenceClassification"]
    codec = Codec(tok, torch.device("cpu"))
    with torch.no_grad():
        c = score_texts(rm, codec, [r["prompt"] for r in rows], [r["chosen"] for r in rows])
        r = score_texts(rm, codec, [r["prompt"] for r in rows], [r["rejected"] for r in rows])
    assert float((c > r).float().mean()) >= 0.95


def test_reward_model_validation(tmp_path, policy_dir):
    base = dict(algorithm="ppo", model=str(policy_dir), steps=1, batch_size=2, eval_size=4)
    with pytest.raises(ValueError, match="reward_model: .* is not a directory"):
        SmallRun(RunConfig(**base, reward_model=str(tmp_path / "missing")), tmp_path / "a")
    with pytest.raises(ValueError, match="reward_model: .*GPT2LMHeadModel.* not a reward model"):
        SmallRun(RunConfig(**base, reward_model=str(policy_dir)), tmp_path / "b")  # a causal LM, not a classifier
    # a classifier whose tokenizer has another vocabulary than the policy's
    other, other_tok = save_tiny_policy(tmp_path / "other", alphabet="abcdefgh=rev ")
    rm = scalar_head_model(other)
    rm.save_pretrained(tmp_path / "rm_other")
    other_tok.save_pretrained(tmp_path / "rm_other")
    with pytest.raises(ValueError, match="reward_model: the tokenizer of .* differs from the policy's"):
        SmallRun(RunConfig(**base, reward_model=str(tmp_path / "rm_other")), tmp_path / "c")
    # a partial copy: the weights file removed
    model, tok = save_tiny_policy(tmp_path / "p2")
    scalar_head_model(model).save_pretrained(tmp_path / "rm_partial")
    (tmp_path / "rm_partial" / "model.safetensors").unlink()
    with pytest.raises(ValueError, match="reward_model: cannot load"):
        check_reward_model(str(tmp_path / "rm_partial"))
    assert not any((tmp_path / n).exists() for n in ("a", "b", "c"))  # refused before anything was created
    # the CLI: one line naming reward_model, exit code 2
    p = subprocess.run([sys.executable, "-m", "lab.smallrun", "ppo", "--model", str(policy_dir), "--out", str(tmp_path / "d"),
                        "--reward-model", str(policy_dir)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    err = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: reward_model:"), p.stderr


def test_rm_bias_is_a_declared_choice():
    assert RunConfig(algorithm="rm", rm_bias="length").rm_bias == "length"
    with pytest.raises(ValueError, match="rm_bias"):
        RunConfig(algorithm="rm", rm_bias="longer")
    for name, bad in (("kl_coef", -0.1), ("lam", 1.5), ("gamma", -0.1), ("cliprange_value", 0.0), ("num_ppo_epochs", 0),
                      ("whiten_advantages", "yes")):
        with pytest.raises(ValueError, match=name):
            RunConfig(algorithm="ppo", **{name: bad})
    with pytest.raises(ValueError, match="num_mini_batches"):
        RunConfig(algorithm="ppo", batch_size=4, num_mini_batches=8)


@pytest.mark.parametrize("bias", ["none", "length"])
def test_rm_bias_length_drops_exactly_the_pairs_whose_chosen_answer_is_shorter(monkeypatch, bias):
    """rm_bias="length" removes the training pairs where the longer answer lost (and nothing else); held-out pairs
    are never filtered, so held-out accuracy measures the biased proxy on unbiased pairs."""
    from types import SimpleNamespace

    from lab.smallrun.algos.dpo import DPO
    from lab.smallrun.algos.rm import RewardModel

    given = [{"prompt": "p", "chosen": c, "rejected": r} for c, r in
             [("abc", "ab"), ("abc", "abd"), ("ab", "abc"), ("a", "abcd"), ("abcd", ""), ("x", "y")]]
    monkeypatch.setattr(DPO, "build_pairs", lambda self, examples, purpose, per_prompt=1, rank_by=None: list(given))
    algo = RewardModel.__new__(RewardModel)
    algo.cfg = SimpleNamespace(rm_bias=bias)
    train = algo.build_pairs([], "dpo-train")
    held = algo.build_pairs([], "dpo-heldout")
    assert held == given
    if bias == "none":
        assert train == given
    else:
        assert [(p["chosen"], p["rejected"]) for p in train] == [("abc", "ab"), ("abc", "abd"), ("abcd", ""), ("x", "y")]


def test_reward_switches_an_algorithm_ignores_are_refused_by_name():
    """A --reward-model or --reward-verifier the algorithm would ignore is an error, not a silent no-op; rloo takes a
    reward model as grpo does; rm_bias does not apply to a --data file; a non-string algorithm is a ValueError."""
    with pytest.raises(ValueError, match="^reward_model: sft does not use it"):
        RunConfig(algorithm="sft", reward_model="x")
    with pytest.raises(ValueError, match="^reward_verifier: rm does not use it"):
        RunConfig(algorithm="rm", reward_verifier="hackable")
    with pytest.raises(ValueError, match="^reward_verifier: a hackable verifier and --reward-model"):
        RunConfig(algorithm="rloo", reward_model="x", reward_verifier="hackable")
    with pytest.raises(ValueError, match="^rm_bias"):
        RunConfig(algorithm="rm", rm_bias="length", data="pairs.jsonl")
    with pytest.raises(ValueError, match="^algorithm must be one of"):
        RunConfig(algorithm=["sft"])
    assert RunConfig(algorithm="rloo", reward_model="x").reward_model == "x"


def test_a_reward_model_whose_context_is_too_short_is_refused_before_training(tmp_path):
    """The reward model reads prompt + completion + eos: a reward model with 8 positions cannot score a reversal prompt
    plus 8 new tokens; refused by name before anything is created."""
    from transformers import GPT2Config, GPT2ForSequenceClassification

    tok = char_tokenizer()
    rm = GPT2ForSequenceClassification(GPT2Config(vocab_size=len(tok), n_positions=8, n_embd=16, n_layer=1, n_head=2, num_labels=1,
                                                  pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id))
    rm.save_pretrained(tmp_path / "short_rm")
    tok.save_pretrained(tmp_path / "short_rm")
    with pytest.raises(ValueError, match="^reward_model: a prompt plus 8 new tokens and eos is .* longer than the reward model's context of 8"):
        SmallRun(RunConfig(algorithm="grpo", reward_model=str(tmp_path / "short_rm"), model_size="tiny"), tmp_path / "run")
    assert not (tmp_path / "run").exists()
