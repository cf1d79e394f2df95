"""Over-optimization on the tiny GPT-2: a deliberately biased proxy reward model, then RL against it (issue 16).

    nice .venv/bin/python benchmarks/overoptimization.py [--seeds 0 1 2] [--algorithm grpo|ppo] [--steps 300]

Per seed: (1) ``rm`` with ``rm_bias="length"`` (training pairs only where the correct answer is longer than the
incorrect one, so the proxy also learns "longer is better"); (2) ``grpo`` (or ``ppo``) with ``--reward-model`` set
to that proxy, evaluated every ``--eval-every`` steps. Prints both curves per seed — the proxy score of the greedy
held-out completions (``eval/proxy_reward``) and the verifier's held-out exact match (``eval/accuracy``, the gold
score) — then, per seed, the proxy's rise, the gold peak and the gold drop from its peak to the end (Gao et al. 2022:
optimizing a proxy eventually lowers the gold score). One CPU thread, as the engine uses.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import torch

warnings.filterwarnings("ignore")
torch.set_num_threads(1)


def run_seed(seed: int, algorithm: str, steps: int, eval_every: int, rm_steps: int, root: Path) -> dict:
    from lab.smallrun import RunConfig, SmallRun

    t0 = time.perf_counter()
    rm = SmallRun(RunConfig(algorithm="rm", seed=seed, rm_bias="length", steps=rm_steps, eval_every=rm_steps, save_every=10_000),
                  root / f"rm{seed}")
    rs = rm.run()
    run = SmallRun(RunConfig(algorithm=algorithm, seed=seed, steps=steps, eval_every=eval_every, save_every=10_000,
                             reward_model=str(root / f"rm{seed}" / "final")), root / f"{algorithm}{seed}")
    run.run()
    evals = [h for h in run.history if h["type"] == "eval"]
    proxy = [h["eval/proxy_reward"] for h in evals]
    gold = [h["eval/accuracy"] for h in evals]
    steps_at = [h["step"] for h in evals]
    lengths = [h["completions/mean_length"] for h in run.history if h["type"] == "step"]
    peak = max(range(len(gold)), key=gold.__getitem__)
    return {"seed": seed, "rm_heldout_acc": rs["after"], "steps": steps_at, "proxy": proxy, "gold": gold,
            "proxy_rise": proxy[-1] - proxy[0], "gold_peak": gold[peak], "gold_peak_step": steps_at[peak],
            "gold_drop_from_peak": gold[peak] - gold[-1], "length_first_10": statistics.fmean(lengths[:10]),
            "length_last_10": statistics.fmean(lengths[-10:]), "wall_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--algorithm", choices=["grpo", "ppo"], default="grpo")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--rm-steps", type=int, default=300)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for s in a.seeds:
            r = run_seed(s, a.algorithm, a.steps, a.eval_every, a.rm_steps, Path(d))
            rows.append(r)
            print(f"seed {s}: proxy rm held-out preference accuracy {100 * r['rm_heldout_acc']:.1f}%  [{r['wall_s']:.0f} s]")
            for st, p, g in zip(r["steps"], r["proxy"], r["gold"]):
                print(f"  step {st:4d}  proxy {p:+.3f}  gold {100 * g:5.1f}%")
            print(f"  proxy rise {r['proxy_rise']:+.3f}; gold peak {100 * r['gold_peak']:.1f}% at step {r['gold_peak_step']}, "
                  f"drop from peak {100 * r['gold_drop_from_peak']:.1f} points; mean completion length "
                  f"{r['length_first_10']:.2f} -> {r['length_last_10']:.2f}", flush=True)
    for key in ("proxy_rise", "gold_peak", "gold_drop_from_peak", "length_last_10"):
        vals = [r[key] for r in rows]
        print(f"{key}: min {min(vals):.3f} mean {statistics.fmean(vals):.3f} max {max(vals):.3f} (seeds {a.seeds})")
    hits = sum(r["proxy_rise"] > 0 and r["gold_drop_from_peak"] >= 0.10 for r in rows)
    print(f"proxy up and gold down >= 10 points from its peak on {hits} of {len(rows)} seeds")


if __name__ == "__main__":
    main()
