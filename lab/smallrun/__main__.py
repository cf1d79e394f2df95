"""python -m lab.smallrun {sft,dpo,grpo} --task reversal --steps N --out runs/NAME [--resume] [--model PATH] [--device auto] [--seed S]
python -m lab.smallrun verify RUN_DIR      (ledger hash chain, checkpoints against manifests and policy stamps)

Exit codes: 0 done; 1 a run failed while training (e.g. a full disk; the message names the checkpoint that is
intact) or ``verify`` found problems; 2 the config, data, model, device or run directory was refused before
anything was created or trained.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from lab.smallrun.config import RunConfig
from lab.smallrun.data import DataFileError
from lab.smallrun.tasks import TASKS


def parse(argv: list[str] | None = None) -> tuple[RunConfig, argparse.Namespace]:
    ap = argparse.ArgumentParser(prog="python -m lab.smallrun", description="Train a tiny GPT-2 with SFT, DPO or GRPO using lab's own losses.")
    ap.add_argument("algorithm", choices=["sft", "dpo", "grpo"])
    ap.add_argument("--task", default=RunConfig.task, choices=list(TASKS))
    ap.add_argument("--data", help="JSONL training file in TRL's format for the algorithm")
    ap.add_argument("--steps", type=int)
    ap.add_argument("--out", help="run directory (default runs/ALGORITHM-TASK-sSEED)")
    ap.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    ap.add_argument("--model", help="local causal-LM checkpoint directory to start from (no download)")
    ap.add_argument("--model-size", default=RunConfig.model_size, choices=["tiny", "small", "medium"])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float)
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--base-steps", type=int, default=RunConfig.base_steps)
    ap.add_argument("--beta", type=float, default=RunConfig.beta, help="DPO β")
    ap.add_argument("--group-size", type=int, default=RunConfig.group_size)
    ap.add_argument("--epsilon", type=float, default=RunConfig.epsilon)
    ap.add_argument("--epsilon-high", type=float)
    ap.add_argument("--scale", default=RunConfig.scale, choices=["group", "batch", "none"])
    ap.add_argument("--loss-type", default=RunConfig.loss_type, choices=["grpo", "bnpo", "dr_grpo", "dapo"])
    ap.add_argument("--kl-beta", type=float, default=RunConfig.kl_beta)
    ap.add_argument("--num-iterations", type=int, default=RunConfig.num_iterations)
    ap.add_argument("--eval-every", type=int, default=RunConfig.eval_every)
    ap.add_argument("--eval-size", type=int, default=RunConfig.eval_size)
    ap.add_argument("--save-every", type=int, default=RunConfig.save_every)
    ap.add_argument("--keep", type=int, default=RunConfig.keep, help="checkpoints to keep (the newest); final/ is kept besides them")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args(argv)
    cfg = RunConfig(algorithm=a.algorithm, task=a.task, data=a.data, steps=a.steps, seed=a.seed, lr=a.lr, batch_size=a.batch_size,
                    model=a.model, model_size=a.model_size, base_steps=a.base_steps, beta=a.beta, group_size=a.group_size,
                    epsilon=a.epsilon, epsilon_high=a.epsilon_high, scale=a.scale, loss_type=a.loss_type, kl_beta=a.kl_beta,
                    num_iterations=a.num_iterations, eval_every=a.eval_every, eval_size=a.eval_size, save_every=a.save_every, keep=a.keep,
                    device=a.device, threads=a.threads)
    a.out = a.out or f"runs/{a.algorithm}-{a.task}-s{a.seed}"
    return cfg, a


def verify(argv: list[str]) -> int:
    from lab.smallrun.rundir import verify_run

    ap = argparse.ArgumentParser(prog="python -m lab.smallrun verify", description="Check a run directory: the ledger's hash chain, "
                                 "every checkpoint against its manifest and the ledger's policy stamp, final/ and the base stage.")
    ap.add_argument("run_dir")
    a = ap.parse_args(argv)
    facts, problems = verify_run(a.run_dir)
    for f in facts:
        print(f"ok: {f}")
    for p in problems:
        print(f"PROBLEM: {p}")
    print(f"{a.run_dir}: " + ("verified, no problems" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["verify"]:
        return verify(argv[1:])
    if argv[:1] == ["export-trl"]:  # python -m lab.smallrun export-trl --config ... --out ...
        from lab.smallrun.export_trl import main as export_main

        return export_main(argv[1:])
    warnings.filterwarnings("ignore")
    import transformers
    from tqdm import tqdm

    from lab.smallrun.engine import SmallRun
    from lab.smallrun.rundir import CheckpointWriteError

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        cfg, a = parse(argv)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bars: dict[str, tqdm] = {}

    def on_event(e: dict) -> None:
        phase = e.get("phase", "main")
        if e["type"] == "step":
            bar = bars.get(phase)
            if bar is None:
                total = cfg.base_steps if phase == "base" else cfg.steps
                bar = bars[phase] = tqdm(total=total, desc=f"{'base sft' if phase == 'base' else cfg.algorithm}", unit="step", initial=e["step"] - 1)
            keys = ("loss", "reward", "rewards/margins")
            bar.set_postfix({k.split("/")[-1]: f"{e[k]:.3f}" for k in keys if k in e})
            bar.update(1)
        elif e["type"] == "eval":
            vals = " ".join(f"{k.removeprefix('eval/')}={v:.3f}" for k, v in e.items() if k.startswith("eval/"))
            tqdm.write(f"[{phase}] step {e['step']}: {vals}")
        elif e["type"] == "phase":
            tqdm.write(f"base stage: {e['steps']} SFT steps to get a starting policy that sometimes succeeds")

    try:
        run = SmallRun(cfg, a.out, callback=on_event, resume=a.resume)
    except (DataFileError, ValueError) as exc:  # refused before anything was created or trained
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (CheckpointWriteError, RuntimeError) as exc:  # the base stage failed or was stopped while training
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        s = run.run()
    except (CheckpointWriteError, ValueError) as exc:
        for b in bars.values():
            b.close()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        for b in bars.values():
            b.close()
    pct = lambda x: "n/a" if x is None else f"{100 * x:.1f}%"
    if s["algorithm"] == "dpo":
        print(f"held-out preference accuracy {pct(s['before'])} -> {pct(s['after'])}; mean implicit margin 0.000 -> {s['margin_after']:.3f}; "
              f"held-out exact match {pct(s['accuracy_before'])} -> {pct(s['accuracy_after'])}  ({a.out})")
    else:
        print(f"held-out accuracy {pct(s['before'])} -> {pct(s['after'])}  ({a.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
