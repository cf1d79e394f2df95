"""Export a small run's config to a standalone TRL script: the way to scale out.

    python -m lab.smallrun export-trl --config RUN_DIR_OR_FLAGS --out train_trl.py

``--config`` is a run directory (its ``run_config.json``) or the flags of a small run in quotes
(``"grpo --task reversal --kl-beta 0.04"``). The script uses TRL's ``SFTTrainer``, ``DPOTrainer``, ``GRPOTrainer``,
``RLOOTrainer`` or ``RewardTrainer`` (for ``rm``) with the lab's options mapped onto TRL's; the dataset is written beside it as JSONL in TRL's
format; the reward is the task's exact-answer check (the "strip" parser: the completion, stripped of surrounding
whitespace, equals the answer). A lab option with no TRL equivalent is named in a comment in the script and
returned (and printed by the command) as a warning. Written for TRL 1.16.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from pathlib import Path

from lab.smallrun.config import RunConfig
from lab.smallrun.tasks import get_task


def load_config(config: str) -> RunConfig:
    """A :class:`RunConfig` from a run directory (``run_config.json``) or a small-run flag string."""
    p = Path(config)
    if p.is_dir():
        f = p / "run_config.json"
        if not f.exists():
            raise ValueError(f"config: {config} is a directory without run_config.json (not a small-run directory)")
        return RunConfig.from_dict(json.loads(f.read_text()))
    from lab.smallrun.__main__ import parse

    try:
        cfg, _ = parse(shlex.split(config))
    except SystemExit:
        raise ValueError(f"config: {config!r} is neither a run directory nor valid small-run flags") from None
    except ValueError as exc:  # flags that parse but name a bad value (RunConfig's check)
        raise ValueError(f"config: {config!r}: {exc}") from None
    return cfg


def _rows(cfg: RunConfig) -> list[dict]:
    """Training rows in TRL's format for the algorithm (from --data when given, else drawn from the task)."""
    if cfg.data:
        return [json.loads(line) for line in Path(cfg.data).read_text().splitlines() if line.strip()]
    task = get_task(cfg.task)
    if cfg.algorithm == "sft":
        return [{"prompt": e.prompt, "completion": e.answer} for e in task.sample(cfg.steps * cfg.batch_size, cfg.seed)]
    if cfg.algorithm in ("grpo", "rloo"):
        return [{"prompt": e.prompt, "answer": e.answer} for e in task.sample(cfg.steps * cfg.batch_size, cfg.seed)]
    rows = []
    n_pairs = cfg.steps * cfg.batch_size if cfg.algorithm == "rm" else cfg.dpo_pairs
    for e in task.sample(n_pairs, cfg.seed):  # gold answer against a wrong one (see the warning)
        wrong = e.answer[::-1] if e.answer[::-1] != e.answer else e.answer + e.answer[-1]
        rows.append({"prompt": e.prompt, "chosen": e.answer, "rejected": wrong})
    return rows


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def export(cfg: RunConfig, out: str | Path, overwrite: bool = False) -> list[str]:
    """Write the TRL script to ``out`` and its dataset to ``out`` with suffix ``.jsonl``; return the warnings.

    Refuses to overwrite an existing file unless ``overwrite`` (nothing the lab did not create is lost).
    """
    if cfg.algorithm not in ("sft", "dpo", "grpo", "rloo", "rm"):  # never a script for another trainer than the run's
        raise ValueError(f"algorithm: export-trl writes SFT, DPO, GRPO, RLOO and reward-model scripts; {cfg.algorithm!r} has no "
                         "mapping yet (TRL 1.16's PPO trainer is experimental)")
    out = Path(out)
    data = out.with_suffix(".jsonl")
    for f in (out, data):
        if f.exists() and not overwrite:
            raise ValueError(f"out: {f} exists; pass overwrite=True (--force) to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    warnings: list[str] = []
    common = dict(max_steps=cfg.steps, learning_rate=cfg.lr, warmup_steps=cfg.warmup_steps, lr_scheduler_type="constant_with_warmup",
                  weight_decay=cfg.weight_decay, max_grad_norm=cfg.max_grad_norm, seed=cfg.seed, logging_steps=1,
                  report_to=[], save_strategy="no")
    if cfg.algorithm == "grpo":
        opts = dict(common, per_device_train_batch_size=cfg.batch_size * cfg.group_size, num_generations=cfg.group_size,
                    max_completion_length=cfg.max_new_tokens, temperature=cfg.temperature, loss_type=cfg.loss_type,
                    scale_rewards=cfg.scale, epsilon=cfg.epsilon, beta=cfg.kl_beta, num_iterations=cfg.num_iterations,
                    use_bias_correction_kl=False)
        if cfg.epsilon_high is not None:
            opts["epsilon_high"] = cfg.epsilon_high
        trainer, config_cls = "GRPOTrainer", "GRPOConfig"
    elif cfg.algorithm == "rloo":
        opts = dict(common, per_device_train_batch_size=cfg.batch_size * cfg.group_size, num_generations=cfg.group_size,
                    max_completion_length=cfg.max_new_tokens, temperature=cfg.temperature, epsilon=cfg.epsilon, beta=cfg.kl_beta,
                    num_iterations=cfg.num_iterations, normalize_advantages=False)
        if cfg.epsilon_high is not None:
            opts["epsilon_high"] = cfg.epsilon_high
        trainer, config_cls = "RLOOTrainer", "RLOOConfig"
        warnings.append(f"RLOO objective: TRL's RLOOTrainer clips one sequence-level ratio per completion and averages per "
                        f"completion; the lab clips token-level ratios aggregated as loss_type={cfg.loss_type!r} (the "
                        "leave-one-out advantages are the same)")
        if cfg.kl_beta > 0:
            warnings.append("KL: TRL's RLOOTrainer subtracts beta x (summed k1 log-ratio) from each completion's reward; the lab "
                            "adds beta x k3 per token to the loss, as GRPO does")
    elif cfg.algorithm == "rm":
        opts = dict(common, per_device_train_batch_size=cfg.batch_size)
        trainer, config_cls = "RewardTrainer", "RewardConfig"
        if not cfg.data:
            warnings.append("reward-model pairs: the lab samples the starting policy and pairs verified-correct with incorrect "
                            "completions (up to rm_pairs_per_prompt per prompt); the exported dataset pairs the gold answer "
                            "with a corrupted one (reversed)")
        if cfg.rm_bias != "none":
            warnings.append(f"rm_bias={cfg.rm_bias!r} filters the lab's sampled pairs; the exported pairs are not filtered")
    elif cfg.algorithm == "dpo":
        opts = dict(common, per_device_train_batch_size=cfg.batch_size, beta=cfg.beta, loss_type="sigmoid")
        trainer, config_cls = "DPOTrainer", "DPOConfig"
        if not cfg.data:
            warnings.append("DPO pairs: the lab samples the starting policy and pairs a verified-correct with an incorrect "
                            "completion; the exported dataset pairs the gold answer with a corrupted one (reversed)")
    else:
        opts = dict(common, per_device_train_batch_size=cfg.batch_size, completion_only_loss=True)
        trainer, config_cls = "SFTTrainer", "SFTConfig"
    if cfg.algorithm in ("grpo", "dpo", "rloo", "rm") and not cfg.model:
        warnings.append(f"base stage: the lab first runs {cfg.base_steps} SFT steps from a fresh tiny GPT-2; "
                        "the script starts from --model (run the exported SFT script first, or pass a real checkpoint)")
    warnings.append(f"held-out evaluation every {cfg.eval_every} steps on {cfg.eval_size} prompts has no TRL option here; "
                    "evaluate the saved model separately")
    if cfg.algorithm == "grpo":
        warnings.append("use_bias_correction_kl is set to False to match the lab's k3 (TRL 1.16's default is True)")
    if cfg.reward_verifier != "exact" and cfg.algorithm in ("grpo", "rloo"):
        warnings.append(f"reward_verifier={cfg.reward_verifier!r}: the script rewards the exact-answer check, not the lab's "
                        "deliberately buggy one")
    if cfg.reward_model and cfg.algorithm in ("grpo", "rloo"):
        warnings.append(f"reward_model={cfg.reward_model!r}: the script rewards the exact-answer check; pass the reward model "
                        "to the trainer's reward_funcs to optimize it")
    notes = "\n".join(f"# NOTE (not mapped): {w}" for w in warnings)
    opt_lines = "\n".join(f"    {k}={v!r}," for k, v in opts.items())
    reward = '''

REWARD_LOG = None  # set in main(): every scored batch is appended here (prompts, completions, lengths, rewards)


def reward_exact(prompts, completions, answer, completion_ids=None, **kwargs):
    """1.0 when the completion, stripped of surrounding whitespace, equals the answer (the lab's "strip" parser)."""
    rewards = [float(c.strip() == a) for c, a in zip(completions, answer)]
    if REWARD_LOG is not None:
        lengths = [len(ids) for ids in completion_ids] if completion_ids is not None else None
        with open(REWARD_LOG, "a") as f:
            f.write(json.dumps({"prompts": prompts, "completions": completions, "completion_lengths": lengths, "rewards": rewards}) + "\\n")
    return rewards
''' if cfg.algorithm in ("grpo", "rloo") else ""
    extra = ", reward_funcs=[reward_exact]" if cfg.algorithm in ("grpo", "rloo") else ""
    grpo = cfg.algorithm in ("grpo", "rloo")  # the reward log
    model_cls, model_kw = ("AutoModelForSequenceClassification", ", num_labels=1") if cfg.algorithm == "rm" else ("AutoModelForCausalLM", "")
    script = f'''"""Exported from Post-Training Lab (python -m lab.smallrun export-trl): {cfg.algorithm} on task {cfg.task!r}.

Run on one machine:   python {out.name} --model PATH_OR_HUB_ID --output-dir out
Several GPUs:         accelerate launch --num_processes 8 {out.name} --model PATH_OR_HUB_ID --output-dir out
Written for TRL 1.16. The dataset is {data.name} (JSONL, TRL's format), next to this script.
"""
# lab config: {json.dumps(cfg.to_dict(), sort_keys=True)}
{notes}

import argparse
import json
from pathlib import Path

from datasets import Dataset
from transformers import {model_cls}, AutoTokenizer
from trl import {config_cls}, {trainer}
{reward}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default={cfg.model!r}, required={cfg.model is None})
    ap.add_argument("--output-dir", default="trl-out")
    ap.add_argument("--data", default=str(Path(__file__).with_suffix(".jsonl")))
    ap.add_argument("--max-steps", type=int, default=None, help="override max_steps (e.g. 2 for a smoke test)")
    ap.add_argument("--cpu", action="store_true")
    a = ap.parse_args()
    rows = [json.loads(line) for line in Path(a.data).read_text().splitlines() if line.strip()]
    opts = dict(
{opt_lines}
    )
    if a.max_steps is not None:
        opts["max_steps"] = a.max_steps
    if a.cpu:
        opts.update(use_cpu=True, bf16=False)
    args = {config_cls}(output_dir=a.output_dir, **opts)
    Path(a.output_dir).mkdir(parents=True, exist_ok=True)
    if {grpo}:
        global REWARD_LOG
        REWARD_LOG = str(Path(a.output_dir) / "rewards.jsonl")
    tok = AutoTokenizer.from_pretrained(a.model)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = {model_cls}.from_pretrained(a.model{model_kw})
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tok.pad_token_id
    trainer = {trainer}(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok{extra})
    trainer.train()
    Path(a.output_dir).mkdir(parents=True, exist_ok=True)
    (Path(a.output_dir) / "log_history.json").write_text(json.dumps(trainer.state.log_history))
    trainer.save_model(a.output_dir)


if __name__ == "__main__":
    main()
'''
    _write_atomic(data, "".join(json.dumps(r) + "\n" for r in _rows(cfg)))
    _write_atomic(out, script)
    return warnings


def main(argv: list[str]) -> int:
    """The ``export-trl`` subcommand: writes the script and its dataset, prints each unmapped option as a warning."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m lab.smallrun export-trl", description="Write a standalone TRL script for a small run's config.")
    ap.add_argument("--config", required=True, help="a run directory, or the small run's flags in quotes, e.g. \"grpo --task reversal\"")
    ap.add_argument("--out", default="train_trl.py")
    ap.add_argument("--force", action="store_true", help="replace an existing script and dataset")
    a = ap.parse_args(argv)
    try:
        warns = export(load_config(a.config), a.out, overwrite=a.force)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for w in warns:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {a.out} and {Path(a.out).with_suffix('.jsonl')}")
    return 0
