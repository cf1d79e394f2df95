"""Over-optimization on the tiny GPT-2: a deliberately biased proxy reward model, then RL and best-of-N against it
(issue 16; Gao et al. 2022, "Scaling Laws for Reward Model Overoptimization").

    nice .venv/bin/python benchmarks/overoptimization.py [--seeds 0 1 2] [--algorithm grpo|ppo] [--out runs/overopt]

The demo recipe (the defaults), per seed:

1. ``rm`` with ``rm_bias="length"`` on a 200-step base SFT stage: the training pairs are the verifier's (a correct against an incorrect sample of
   the base policy), minus every pair whose correct answer is the shorter one. The proxy never sees a longer answer
   lose; its held-out accuracy is measured on unbiased pairs.
2. ``grpo`` from the same base stage with ``--reward-model`` set to that proxy (lr 1e-4, 400 steps, evaluation every
   25 steps). It prints
   both curves: the proxy score of the greedy held-out completions (``eval/proxy_reward``) and the verifier's held-out
   exact match (``eval/accuracy``, the gold score), against d = √KL, where KL is the sequence-level KL to the
   starting policy (``eval/kl``), and Gao et al.'s RL form fitted to gold against d. Then it prints the proxy's rise, the gold peak and the gold drop
   from that peak to the end, and the mean completion length.
3. Best-of-N with the same proxy on the base policy (``lab.smallrun.evaluate.best_of_n_with_proxy``): N = 1 … 64
   samples per held-out prompt, the proxy's favourite kept. It prints the pick's proxy score and gold accuracy
   against d = √KL, where KL = log N − (N−1)/N is the analytic KL of best-of-N.

Acceptance (issue 16): on every seed, the proxy rises while the gold accuracy peaks and then falls by ≥ 10 points.
The script prints how many seeds meet it. It uses one CPU thread, as the engine does, and takes about 4 min per seed
on a 2-core CPU. ``--out DIR`` keeps the runs (``DIR/rm-sSEED``, ``DIR/grpo-sSEED``) so that the Proxies page can
show them: ``LAB_RUNS_DIR=DIR ./lab.sh app``.
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


def run_seed(seed: int, a: argparse.Namespace, root: Path) -> dict:
    from lab.proxy import run_curves
    from lab.smallrun import RunConfig, SmallRun
    from lab.smallrun.evaluate import best_of_n_with_proxy

    t0 = time.perf_counter()
    rm_dir, pol_dir = root / f"rm-s{seed}", root / f"{a.algorithm}-s{seed}"
    rm = SmallRun(RunConfig(algorithm="rm", seed=seed, rm_bias=a.rm_bias, steps=a.rm_steps, eval_every=a.rm_steps,
                            rm_prompts=a.rm_prompts, base_steps=a.base_steps, save_every=10_000), rm_dir)
    rs = rm.run()
    # the same seed and base_steps give the same base SFT stage as the reward model's, so RL starts from the policy
    # whose samples the proxy was trained on
    run = SmallRun(RunConfig(algorithm=a.algorithm, seed=seed, steps=a.steps, lr=a.lr, eval_every=a.eval_every,
                             base_steps=a.base_steps, save_every=10_000, reward_model=str(rm_dir / "final")), pol_dir)
    run.run()
    evals = [h for h in run.history if h["type"] == "eval"]
    proxy = [h["eval/proxy_reward"] for h in evals]
    gold = [h["eval/accuracy"] for h in evals]
    steps_at = [h["step"] for h in evals]
    lengths = [h["completions/mean_length"] for h in run.history if h["type"] == "step"]
    peak = max(range(len(gold)), key=gold.__getitem__)
    curves = run_curves(str(pol_dir))  # d = √KL of whole completions at each evaluation (eval/kl), and Gao's RL fit
    try:
        _, _, alpha, beta, _ = curves.gao_fit("rl")
    except ValueError:
        alpha = beta = float("nan")
    bon = best_of_n_with_proxy(rm_dir / "base" / "final", rm_dir / "final", n_cases=a.bon_cases, n_max=64, seed=seed).curve
    return {"seed": seed, "rm_heldout_acc": rs["after"], "steps": steps_at, "proxy": proxy, "gold": gold, "d": curves.eval_d,
            "gao_alpha": alpha, "gao_beta": beta,
            "proxy_rise": max(proxy) - proxy[0], "gold_start": gold[0], "gold_peak": gold[peak], "gold_peak_step": steps_at[peak],
            "gold_end": gold[-1], "gold_drop_from_peak": gold[peak] - gold[-1], "length_first_10": statistics.fmean(lengths[:10]),
            "length_last_10": statistics.fmean(lengths[-10:]), "bon": bon, "wall_s": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--algorithm", choices=["grpo", "ppo"], default="grpo")
    ap.add_argument("--steps", type=int, default=400, help="RL steps against the proxy")
    ap.add_argument("--lr", type=float, default=1e-4, help="RL learning rate (at grpo's default 3e-4 the gold score falls "
                                                            "from the first evaluations, with no rise to see)")
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--rm-steps", type=int, default=1000)
    ap.add_argument("--rm-bias", choices=["none", "length"], default="length")
    ap.add_argument("--rm-prompts", type=int, default=4096, help="prompts whose samples make the reward model's pairs")
    ap.add_argument("--base-steps", type=int, default=200, help="SFT steps of the base stage (shared by rm and RL; at 100, seed 2 starts at 24%% and RL against the proxy barely moves it in 600 steps)")
    ap.add_argument("--bon-cases", type=int, default=200, help="held-out prompts for best-of-N (64 samples each)")
    ap.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary directory)")
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        root = a.out if a.out is not None else Path(d)
        for s in a.seeds:
            r = run_seed(s, a, root)
            rows.append(r)
            print(f"seed {s}: proxy reward model (rm_bias={a.rm_bias}) held-out preference accuracy "
                  f"{100 * r['rm_heldout_acc']:.1f}%  [{r['wall_s']:.0f} s]")
            for st, dd, p, g in zip(r["steps"], r["d"], r["proxy"], r["gold"]):
                print(f"  {a.algorithm} step {st:4d}  d=√KL {dd:.3f}  proxy {p:+.3f}  gold {100 * g:5.1f}%")
            print(f"  Gao et al.'s RL form fitted to gold against d: α = {r['gao_alpha']:.3f}, β = {r['gao_beta']:.3f}")
            print(f"  proxy {r['proxy'][0]:+.3f} -> max {max(r['proxy']):+.3f}; gold {100 * r['gold_start']:.1f}% -> peak "
                  f"{100 * r['gold_peak']:.1f}% at step {r['gold_peak_step']} -> {100 * r['gold_end']:.1f}% (drop from peak "
                  f"{100 * r['gold_drop_from_peak']:.1f} points); mean completion length {r['length_first_10']:.2f} -> "
                  f"{r['length_last_10']:.2f}")
            b = r["bon"]
            print("  best-of-N on the base policy with the same proxy: N, d = √KL, proxy of the pick, gold accuracy of the pick")
            for n, dd, p, g in zip(b.n, b.d, b.proxy, b.gold):
                print(f"    N={n:3d}  d={dd:.3f}  proxy {p:+.3f}  gold {100 * g:5.1f}%")
            print(flush=True)
    for key in ("rm_heldout_acc", "proxy_rise", "gold_start", "gold_peak", "gold_end", "gold_drop_from_peak", "length_last_10"):
        vals = [r[key] for r in rows]
        print(f"{key}: min {min(vals):.3f} mean {statistics.fmean(vals):.3f} max {max(vals):.3f} (seeds {a.seeds})")
    hits = sum(r["proxy_rise"] > 0 and r["gold_peak"] > r["gold_start"] and r["gold_drop_from_peak"] >= 0.10 for r in rows)
    print(f"proxy up, gold up to a peak and then down >= 10 points on {hits} of {len(rows)} seeds")
    bon_hits = sum(r["bon"].proxy[-1] > r["bon"].proxy[0] and r["bon"].gold[-1] <= max(r["bon"].gold) for r in rows)
    best = [r["bon"].n[max(range(len(r["bon"].gold)), key=r["bon"].gold.__getitem__)] for r in rows]
    print(f"best-of-N: the proxy of the pick rises from N=1 to N=64 on {bon_hits} of {len(rows)} seeds; gold is best at N = {best}")
    return rows


if __name__ == "__main__":
    main()
