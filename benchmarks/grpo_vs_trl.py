"""GRPO optimizer steps per second: this engine vs TRL's GRPOTrainer, same run, same everything.

    .venv/bin/python benchmarks/grpo_vs_trl.py [--steps 20]

Identical tiny GPT-2 (same weights), tokenizer, prompts and verifier reward; 32 completions per step
(4 prompts × 8), at most 8 new tokens, 1 CPU thread, μ = 1, no reference model (β = 0), fp32 on both sides.
The first steps are warm-up and not timed. Also: SFT tokens per second vs a plain transformers.Trainer on
the same examples. The last line prints the GRPO ratio.
"""

import argparse
import shutil
import tempfile
import time
import warnings

import torch

warnings.filterwarnings("ignore")
torch.set_num_threads(1)


def ours_grpo(base: str, steps: int, warm: int) -> float:
    from lab.smallrun import RunConfig, SmallRun

    times = []
    cfg = RunConfig(algorithm="grpo", model=base, steps=steps + warm, batch_size=4, group_size=8, max_new_tokens=8, lr=3e-4,
                    eval_every=10_000, eval_size=4, save_every=10_000, threads=1, loss_type="grpo")
    out = tempfile.mkdtemp()
    SmallRun(cfg, out, callback=lambda e: times.append(time.perf_counter()) if e["type"] == "step" else None).run()
    shutil.rmtree(out, ignore_errors=True)
    return steps / (times[-1] - times[warm - 1])


def trl_grpo(base: str, steps: int, warm: int) -> float:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from lab.smallrun import get_task

    task = get_task("reversal")
    ver = task.verifier()
    ex = task.sample(4 * (steps + warm), seed=0)
    answers = {e.prompt: e.answer for e in ex}

    def reward(prompts, completions, **_):
        return [float(ver.verify(p, c, answer=answers[p]).decision) for p, c in zip(prompts, completions)]

    times = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter())

    args = GRPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=32, num_generations=8, max_completion_length=8,
                      max_steps=steps + warm, learning_rate=3e-4, report_to=[], use_cpu=True, bf16=False, logging_steps=10_000,
                      save_strategy="no", beta=0.0, num_iterations=1, loss_type="grpo", dataloader_num_workers=0, seed=0)
    tr = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(base), reward_funcs=[reward], args=args,
                     train_dataset=Dataset.from_list([{"prompt": e.prompt} for e in ex]),
                     processing_class=AutoTokenizer.from_pretrained(base), callbacks=[Clock()])
    tr.train()
    return steps / (times[-1] - times[warm - 1])


def ours_sft(steps: int, warm: int) -> float:
    from lab.smallrun import RunConfig, SmallRun

    marks = []
    cfg = RunConfig(algorithm="sft", steps=steps + warm, batch_size=64, eval_every=10_000, eval_size=4, save_every=10_000, threads=1)
    out = tempfile.mkdtemp()
    SmallRun(cfg, out, callback=lambda e: marks.append((time.perf_counter(), e.get("num_tokens", 0))) if e["type"] == "step" else None).run()
    shutil.rmtree(out, ignore_errors=True)
    toks = sum(n for _, n in marks[warm:])
    return toks / (marks[-1][0] - marks[warm - 1][0])


def hf_sft(steps: int, warm: int) -> float:
    from datasets import Dataset
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from lab.models import char_tokenizer, tiny_gpt2
    from lab.smallrun import get_task
    from lab.smallrun.config import MODEL_SIZES
    from lab.smallrun.engine import step_seed

    tok = char_tokenizer()
    rows = []
    for s in range(steps + warm):  # the same examples our engine sees, step by step
        for e in get_task("reversal").sample(64, seed=step_seed(0, s, "sft")):
            p = tok(e.prompt, add_special_tokens=False)["input_ids"]
            c = tok(e.answer, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            rows.append({"input_ids": p + c, "labels": [-100] * len(p) + c})

    def collate(batch):
        L = max(len(b["input_ids"]) for b in batch)
        ids = torch.full((len(batch), L), tok.pad_token_id)
        lab = torch.full((len(batch), L), -100)
        att = torch.zeros(len(batch), L, dtype=torch.long)
        for i, b in enumerate(batch):
            n = len(b["input_ids"])
            ids[i, :n], lab[i, :n], att[i, :n] = torch.tensor(b["input_ids"]), torch.tensor(b["labels"]), 1
        return {"input_ids": ids, "labels": lab, "attention_mask": att}

    marks = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            marks.append(time.perf_counter())

    n_layer, n_head, n_embd = MODEL_SIZES["small"]
    model = tiny_gpt2(len(tok), n_layer=n_layer, n_head=n_head, n_embd=n_embd, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=64, max_steps=steps + warm, learning_rate=3e-3,
                             report_to=[], use_cpu=True, logging_steps=10_000, save_strategy="no", dataloader_num_workers=0)
    Trainer(model=model, args=args, train_dataset=Dataset.from_list(rows), data_collator=collate, callbacks=[Clock()]).train()
    sup = sum(sum(1 for x in r["labels"] if x != -100) for r in rows[warm * 64:])
    return sup / (marks[-1] - marks[warm - 1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    from lab.smallrun import RunConfig, SmallRun

    base = tempfile.mkdtemp()  # one starting checkpoint for both GRPO trainers: a short SFT run
    SmallRun(RunConfig(algorithm="sft", steps=100, eval_every=1000, eval_size=4, save_every=1000), base).run()
    ckpt = f"{base}/final"
    sft_ours, sft_hf = ours_sft(a.steps * 3, a.warmup), hf_sft(a.steps * 3, a.warmup)
    print(f"SFT supervised tokens/s: lab {sft_ours:.0f}, transformers.Trainer {sft_hf:.0f}, ratio {sft_ours / sft_hf:.2f}x")
    g_ours, g_trl = ours_grpo(ckpt, a.steps, a.warmup), trl_grpo(ckpt, a.steps, a.warmup)
    print(f"GRPO steps/s (32 completions, <=8 new tokens, 1 thread): lab {g_ours:.2f}, TRL GRPOTrainer {g_trl:.2f}")
    print(f"GRPO speed ratio lab/TRL: {g_ours / g_trl:.2f}x")


if __name__ == "__main__":
    main()
