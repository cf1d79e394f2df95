"""Speed of lab.playground.train and of the Dynamics page's reruns.

    .venv/bin/python benchmarks/playground_speed.py [--repeats 7] [--no-page] [--only GRPO,PPO]

Budget (issue 14): 100 steps of any objective in under 100 ms; a page rerun for 100 steps under 150 ms.
A reference is measured in the same run, interleaved with every measurement (reference, run, reference,
run …), so that both see the same load on a shared machine: 100 steps of the bare autograd loop a
playground step cannot avoid (log-softmax, a weighted sum, autograd.grad, an SGD update on the same
tensors). Columns, per variant over ``--repeats`` pairs, with one thread:

- ``wall ms``: median wall-clock time of 100 steps, and its spread (min–max);
- ``cpu ms``: median CPU time of the thread (what the run costs when it is not waiting for a core);
- ``x ref``: median over the pairs of (run / reference measured just before it);
- ``budget``: ok when the median wall time is under 100 ms.
"""

import argparse
import statistics
import time
from pathlib import Path

import torch

from lab import playground as P

torch.set_num_threads(1)
PAGE = Path(__file__).resolve().parent.parent / "pages" / "dynamics.py"


def timed(fn) -> tuple[float, float]:
    """(wall ms, thread CPU ms) of one call."""
    w0, c0 = time.perf_counter(), time.thread_time()
    fn()
    return (time.perf_counter() - w0) * 1000, (time.thread_time() - c0) * 1000


def paired(fn, repeats: int) -> dict:
    """Interleave the reference and ``fn``; medians, spread and the median ratio."""
    fn()  # warm-up
    reference_loop()
    walls, cpus, refs, ratios = [], [], [], []
    for _ in range(repeats):
        ref, _ = timed(reference_loop)
        wall, cpu = timed(fn)
        walls.append(wall)
        cpus.append(cpu)
        refs.append(ref)
        ratios.append(wall / ref)
    return dict(wall=statistics.median(walls), lo=min(walls), hi=max(walls), cpu=statistics.median(cpus),
                ref=statistics.median(refs), ratio=statistics.median(ratios))


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    return statistics.median(timed(fn)[0] for _ in range(repeats))


def reference_loop(steps: int = 100) -> None:
    theta = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    r = torch.tensor([1.0, 0.5, 0.0], dtype=torch.float64)
    for _ in range(steps):
        logp = torch.log_softmax(theta, -1)
        loss = -(logp.exp().detach() * (r - 0.5) * logp).sum()
        (g,) = torch.autograd.grad(loss, theta)
        with torch.no_grad():
            theta -= 0.5 * g


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-page", action="store_true", help="skip the page rerun measurement")
    ap.add_argument("--only", default="", help="comma-separated substrings of variant names to measure")
    args = ap.parse_args()
    bandit = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5])
    seq = P.sequence_task("count", 2, 3)
    only = [s for s in args.only.split(",") if s]
    print(f"{'policy':<9} {'objective':<23} {'mode':<8} {'wall ms (min–max)':>22} {'cpu ms':>7} {'ref ms':>7} {'x ref':>6} {'budget':>7}")
    worst = (0.0, "", 0.0)
    refs = []
    for pname, pol in (("bandit", bandit), ("sequence", seq)):
        for name, (objective, fixed) in P.VARIANTS.items():
            if only and not any(s in name for s in only):
                continue
            for exact in (False, True):
                kw = dict(fixed)
                if exact and objective in ("grpo", "rloo"):
                    kw["group_size"] = 2 if pname == "sequence" else 4
                m = paired(lambda: P.train(pol, objective, 100, 0.5, exact=exact, **kw), args.repeats)
                refs.append(m["ref"])
                ok = "ok" if m["wall"] < 100 else "OVER"
                spread = f"{m['wall']:.1f} ({m['lo']:.0f}–{m['hi']:.0f})"
                print(f"{pname:<9} {name:<23} {'exact' if exact else 'sampled':<8} {spread:>22} {m['cpu']:>7.1f} {m['ref']:>7.1f} "
                      f"{m['ratio']:>6.1f} {ok:>7}", flush=True)
                worst = max(worst, (m["wall"], f"{pname} {name} {'exact' if exact else 'sampled'}", m["ratio"]))
    if refs:
        print(f"\nreference (100 bare autograd steps): median {statistics.median(refs):.1f} ms over the run "
              f"({min(refs):.1f}–{max(refs):.1f})")
        print(f"slowest: {worst[1]} {worst[0]:.1f} ms = {worst[0] / 100:.2f}x the 100 ms budget ({worst[2]:.1f}x the reference)")
    if args.no_page:
        return
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(PAGE), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    same = median_ms(lambda: at.run(), args.repeats)
    seeds = iter(range(1, 10_000))

    def changed():  # a new seed: every objective trains again (no cache hit)
        at.number_input(key="dyn_seed").set_value(next(seeds)).run()

    fresh = median_ms(changed, args.repeats)
    epochs = iter(range(2, 50))

    def other_knob():  # PPO's μ: none of the default objectives uses it, so each run is a cache hit
        at.number_input(key="dyn_epochs").set_value(next(epochs)).run()

    knob = median_ms(other_knob, args.repeats)
    ref = median_ms(reference_loop, args.repeats)
    print(f"\nDynamics page, default setup (3 objectives × 100 steps): rerun {same:.1f} ms (cached runs) = {same / 150:.2f}x "
          f"the 150 ms budget; {knob:.1f} ms after changing a knob the shown objectives do not use (PPO μ) = {knob / 150:.2f}x; "
          f"{fresh:.1f} ms after changing the seed (retrains all three) = {fresh / 150:.2f}x; reference {ref:.1f} ms")


if __name__ == "__main__":
    main()
