"""Small runs, shortened, with fixed seeds: loss falls, parameters change, accuracy rises, resume is exact."""

import json
import subprocess
import sys
import threading

import pytest
import torch

from lab.models import load_pretrained
from lab.smallrun import RunConfig, SmallRun, get_task
from lab.smallrun.data import DataFileError, validate_lines


def weights(run: SmallRun) -> dict:
    return {k: v.detach().clone() for k, v in run.model.state_dict().items()}


def test_tasks_split_and_verifier():
    t = get_task("reversal")
    train = {e.prompt for e in t.sample(2000, seed=1)}
    held = {e.prompt for e in t.heldout(200)}
    assert len(held) == 200 and not (train & held)
    assert t.prompt_space > 100 * len(held)
    e = t.heldout(1)[0]
    assert t.verifier().verify(e.prompt, e.answer, answer=e.answer).decision == 1
    assert t.sample(5, seed=3) == t.sample(5, seed=3)
    with pytest.raises(ValueError, match="task"):
        get_task("chess")


def test_sft_learns_and_parameters_change(tmp_path):
    cfg = RunConfig(algorithm="sft", steps=120, eval_every=120, eval_size=100, save_every=1000, seed=0)
    run = SmallRun(cfg, tmp_path / "sft")
    w0 = weights(run)
    s = run.run()
    losses = [h["loss"] for h in run.history if h["type"] == "step"]
    assert sum(losses[-10:]) / 10 < 0.5 * sum(losses[:10]) / 10
    assert any(not torch.equal(w0[k], v) for k, v in weights(run).items())
    # seeds 0–4 (benchmarks/learning_seeds.py test-sft): 0% -> 40–94% after 120 steps; the threshold sits below the worst
    assert s["after"] > s["before"] and s["after"] >= 0.25
    recs = [json.loads(l) for l in (tmp_path / "sft" / "ledger.jsonl").read_text().splitlines()]
    assert recs[0]["type"] == "config" and "torch" in recs[0]["versions"] and recs[0]["seed"] == 0
    assert any(r["type"] == "checkpoint" and len(r["policy_stamp"]) == 64 for r in recs)
    final = tmp_path / "sft" / "final"
    assert (final / "model.safetensors").exists() and (final / "trainer_state.pt").exists()
    model, tok = load_pretrained(final)  # a real local checkpoint directory with its tokenizer
    assert tok.eos_token == "<eos>" and sum(p.numel() for p in model.parameters()) > 0


@pytest.mark.parametrize("algorithm", ["sft", "grpo"])
def test_resume_is_exact(tmp_path, algorithm):
    extra = {"base_steps": 30, "batch_size": 4, "group_size": 4, "num_iterations": 2} if algorithm == "grpo" else {"batch_size": 16}
    cfg = RunConfig(algorithm=algorithm, steps=12, eval_every=100, eval_size=20, save_every=100, seed=1, **extra)
    full = SmallRun(cfg, tmp_path / "full")
    full.run()
    stop = threading.Event()
    part = SmallRun(cfg, tmp_path / "part", stop_event=stop, callback=lambda e: stop.set() if e["type"] == "step" and e.get("phase") is None and e["step"] == 5 else None)
    s = part.run()
    assert s["stopped"] and part.step == 5
    resumed = SmallRun(RunConfig(), tmp_path / "part", resume=True)  # the stored config wins
    assert resumed.step == 5 and resumed.cfg == cfg
    resumed.run()
    a, b = weights(full), weights(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a), "resumed run diverged from the uninterrupted one"
    kinds = [json.loads(l)["type"] for l in (tmp_path / "part" / "ledger.jsonl").read_text().splitlines()]
    assert "resume" in kinds


def test_grpo_raises_heldout_accuracy(tmp_path):
    """The README's default GRPO run (100 base SFT steps, then 200 GRPO steps at lr 3e-4). Evaluation is greedy and
    draws no random numbers, so evaluating only at the start and end trains exactly as the default does.

    Measured by benchmarks/learning_seeds.py (grpo-default), seeds 0–4: start 24–58%, gain +24.5 to +41 points.
    The former test config (100 GRPO steps at lr 1e-3) gained only +1 point on seed 2 (+9.5 on seed 4), which
    is why another machine saw 44.5% -> 53.5%: it is no longer used. Thresholds sit well below the worst seed."""
    cfg = RunConfig(algorithm="grpo", seed=0, eval_every=200, save_every=1000)
    run = SmallRun(cfg, tmp_path / "grpo")
    s = run.run()
    steps = [h for h in run.history if h["type"] == "step"]
    for key in ("reward", "reward_std", "frac_reward_zero_std", "clip_ratio/region_mean", "entropy", "completions/mean_length"):
        assert key in steps[-1]
    assert 0.1 <= s["before"] <= 0.75  # a weak starting policy: RL has signal (seeds 0–4: 24–58%)
    assert s["after"] >= s["before"] + 0.10  # worst of seeds 0–4: +24.5 points


def test_dpo_raises_margin_and_preference_accuracy(tmp_path):
    cfg = RunConfig(algorithm="dpo", steps=60, base_steps=100, dpo_pairs=256, eval_every=60, eval_size=100, save_every=1000, seed=0)
    run = SmallRun(cfg, tmp_path / "dpo")
    s = run.run()
    ev = [h for h in run.history if h["type"] == "eval"]
    assert ev[0]["eval/rewards/margins"] == pytest.approx(0.0, abs=1e-6)
    # seeds 0–4 (benchmarks/learning_seeds.py test-dpo): margin 0.147–0.451, preference accuracy gain +5.2 to +12 points
    assert ev[-1]["eval/rewards/margins"] > 0.05
    assert s["after"] >= s["before"]
    last = [h for h in run.history if h["type"] == "step"][-1]
    assert {"rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies"} <= set(last)
    assert (tmp_path / "dpo" / "pairs.jsonl").exists()


def test_bad_data_file_lists_lines_and_trains_nothing(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text('{"prompt": "a", "completion": "b"}\nnot json\n{"prompt": "a"}\n{"prompt": "x", "completion": "y"}\n[1]\n')
    with pytest.raises(DataFileError) as ei:
        SmallRun(RunConfig(algorithm="sft", data=str(f), steps=5), tmp_path / "run")
    msg = str(ei.value)
    assert "line 2" in msg and "line 3" in msg and "line 5" in msg and "line 1:" not in msg
    assert not (tmp_path / "run" / "checkpoints").exists()
    recs, bad = validate_lines(['{"prompt": "p", "chosen": "a", "rejected": "a"}'], "preference")
    assert bad and "identical" in bad[0].reason


def test_sft_from_jsonl_file_and_messages(tmp_path):
    f = tmp_path / "sft.jsonl"
    rows = [{"prompt": f"rev {s}=", "completion": s[::-1]} for s in ("abc", "hgf", "dde")]
    rows.append({"messages": [{"role": "user", "content": "rev ab="}, {"role": "assistant", "content": "ba"}]})
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = SmallRun(RunConfig(algorithm="sft", data=str(f), steps=5, batch_size=4, eval_every=100, eval_size=10), tmp_path / "r")
    run.run()
    assert run.step == 5


def test_cli_end_to_end(tmp_path):
    out = tmp_path / "cli"
    r = subprocess.run([sys.executable, "-m", "lab.smallrun", "sft", "--steps", "20", "--out", str(out), "--eval-size", "20", "--seed", "3"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "held-out accuracy" in r.stdout and "->" in r.stdout
    again = subprocess.run([sys.executable, "-m", "lab.smallrun", "sft", "--steps", "20", "--out", str(out)], capture_output=True, text=True)
    assert again.returncode == 2 and "--resume" in again.stderr
    r2 = subprocess.run([sys.executable, "-m", "lab.smallrun", "grpo", "--steps", "2", "--batch-size", "2", "--group-size", "2",
                         "--model", str(out / "final"), "--out", str(tmp_path / "g"), "--eval-size", "10"], capture_output=True, text=True, timeout=300)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert not (tmp_path / "g" / "base").exists()  # started from the local checkpoint, no base stage


def test_fast_decoder_matches_hf_forward():
    from lab.models import char_tokenizer, tiny_gpt2
    from lab.smallrun import fastgen
    from lab.smallrun.engine import Codec, sample

    tok = char_tokenizer()
    model = tiny_gpt2(len(tok), n_layer=3, n_embd=96, seed=4, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id).eval()
    assert fastgen.supports(model)
    codec = Codec(tok, torch.device("cpu"))
    ids, attn = codec.left_pad(["rev abc=", "rev abcdef=", "x="])  # different lengths: left padding
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    dec = fastgen.GPT2Decoder(model)
    fast = dec.prefill(ids, attn, pos)
    ref = model(input_ids=ids, attention_mask=attn, position_ids=pos).logits[:, -1]
    assert torch.allclose(fast, ref, atol=1e-5)
    nxt = torch.tensor([5, 6, 7])
    attn2 = torch.cat([attn, torch.ones(3, 1, dtype=attn.dtype)], 1)
    fast2 = dec.step(nxt, attn2, pos[:, -1] + 1)
    ids2 = torch.cat([ids, nxt[:, None]], 1)
    ref2 = model(input_ids=ids2, attention_mask=attn2, position_ids=(attn2.cumsum(-1) - 1).clamp(min=0)).logits[:, -1]
    assert torch.allclose(fast2, ref2, atol=1e-5)
    # the sampled log-probs equal the training-path log-probs of the same tokens
    from lab.smallrun.engine import completion_logps

    g = torch.Generator().manual_seed(0)
    prompts = ["rev abc="] * 3 + ["rev abcdef="] * 3  # groups share a prompt: prefilled once, cache copied
    comp, mask, lp = sample(model, codec, prompts, 6, generator=g)
    pids, pattn = codec.left_pad(prompts)
    lp2 = completion_logps(model, pids, pattn, comp, mask)
    assert torch.allclose(lp * mask, lp2 * mask, atol=1e-5)


def test_background_run_finishes_with_no_page_attached(tmp_path):
    """A closed browser tab: nothing reads the buffer; the run still completes with an intact ledger and checkpoint."""
    from lab.agentic import Ledger
    from lab.smallrun.live import get_run, start_run

    out = tmp_path / "bg"
    live = start_run(RunConfig(algorithm="sft", steps=15, batch_size=16, eval_every=100, eval_size=10, model_size="tiny"), out)
    with pytest.raises(ValueError, match="already training"):
        start_run(RunConfig(algorithm="sft", steps=15), out)
    live.wait(timeout=120)  # a worker process now, not a thread
    assert get_run(out) is live and live.state == "done" and live.error is None
    recs, truncated = Ledger(out / "ledger.jsonl").read()
    assert not truncated and recs[-1]["type"] == "summary"
    model, _ = load_pretrained(out / "final")
    assert sum(p.numel() for p in model.parameters()) > 0
