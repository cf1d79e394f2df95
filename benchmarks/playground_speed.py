"""Speed of lab.playground.train and of the Dynamics page's reruns.

    .venv/bin/python benchmarks/playground_speed.py [--repeats 7] [--no-page] [--page-only] [--only GRPO,PPO]

Budget (issue 14): 100 steps of any objective in under 100 ms; a page rerun for 100 steps under 150 ms.
The machine's load average is printed first and last: on a shared CPU every number scales with it, the
ratios to the reference (measured interleaved, under the same load) much less.
A reference is measured in the same run, interleaved with every measurement (reference, run, reference,
run …), so that both see the same load on a shared machine: 100 steps of the bare autograd loop a
playground step cannot avoid (log-softmax, a weighted sum, autograd.grad, an SGD update on the same
tensors). Columns, per variant over ``--repeats`` pairs, with one thread:

- ``wall ms``: median wall-clock time of 100 steps, and its spread (min–max);
- ``cpu ms``: median CPU time of the thread (what the run costs when it is not waiting for a core);
- ``x ref``: median over the pairs of (run / reference measured just before it);
- ``budget``: ok when the median wall time is under 100 ms.

The Dynamics page (default setup: bandit, REINFORCE, REINFORCE + baseline and RLOO, sampled, 100 steps) is
run with ``streamlit.testing.v1.AppTest``. AppTest compiles the page on every run, which a Streamlit server
does once (its script cache); the page rows are measured with one shared compiled copy, as a server runs
them, and the compile time is printed separately. Rows: a rerun with every run cached, a rerun after a
knob that none of the shown objectives uses, and a rerun after a new seed (all three sampled runs train
again), split into the training of the three runs (measured alone, the same calls) and the rest.
"""

import argparse
import os
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


def spread_ms(fn, repeats: int) -> tuple[float, float, float]:
    """(median, min, max) wall ms over ``repeats`` calls after one warm-up."""
    fn()
    ms = [timed(fn)[0] for _ in range(repeats)]
    return statistics.median(ms), min(ms), max(ms)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} CPUs"


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
    ap.add_argument("--page-only", action="store_true", help="measure only the page reruns")
    ap.add_argument("--only", default="", help="comma-separated substrings of variant names to measure")
    args = ap.parse_args()
    print(f"start: {load()}")
    bandit = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5])
    seq = P.sequence_task("count", 2, 3)
    only = [s for s in args.only.split(",") if s] if not args.page_only else ["(none)"]
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
    if not args.no_page:
        page(args.repeats)
    print(f"end: {load()}")


def page(repeats: int) -> None:
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import AppTest
    from streamlit.testing.v1 import local_script_runner

    fresh_cache = ScriptCache
    compile_ms = spread_ms(lambda: fresh_cache().get_bytecode(str(PAGE)), repeats)
    shared = fresh_cache()  # one compiled copy for every run, as a server's script cache keeps it
    local_script_runner.ScriptCache = lambda: shared

    import labui  # noqa: F401  (app.py imports the libraries, then freezes them, before any page runs)
    import labui.predict  # noqa: F401
    import labui.share  # noqa: F401
    from labui import freeze_startup_objects

    freeze_startup_objects()
    at = AppTest.from_file(str(PAGE), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    same = spread_ms(lambda: at.run(), repeats)
    epochs = iter(range(2, 50))

    def other_knob():  # PPO's μ: none of the default objectives uses it, so each run is a cache hit
        at.number_input(key="dyn_epochs").set_value(next(epochs)).run()

    knob = spread_ms(other_knob, repeats)
    seeds = iter(range(1, 10_000))

    def changed():  # a new seed: the three sampled runs train again (no cache hit)
        at.number_input(key="dyn_seed").set_value(next(seeds)).run()

    bandit = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5])
    train_seeds = iter(range(20_000, 30_000))

    def train_three():  # the page's three default runs, the same calls as its cached _run
        s = next(train_seeds)
        for name in ("REINFORCE", "REINFORCE + baseline", "RLOO"):
            objective, fixed = P.VARIANTS[name]
            P.train(bandit, objective, 100, 0.5, seed=s, exact=False, n=16, group_size=4, epsilon=0.2,
                    **({"advantage": "return", "lam": 1.0, "value_noise": 0.0} if objective == "reinforce" else {}), **fixed)

    rows, trains, refs = [], [], []
    changed()
    for _ in range(max(20, repeats)):  # interleaved, so that the split and the reference see the same load; ≥ 20 for the tail
        refs.append(timed(reference_loop)[0])
        rows.append(timed(changed)[0])
        trains.append(timed(train_three)[0])
    fresh = statistics.median(rows), min(rows), max(rows)
    tr = statistics.median(trains)
    ref = statistics.median(refs)
    local_script_runner.ScriptCache = fresh_cache

    def fmt(m):
        return f"{m[0]:6.1f} ms ({m[1]:.0f}–{m[2]:.0f}) = {m[0] / 150:.2f}x the 150 ms budget"

    print("\nDynamics page, default setup (bandit; REINFORCE, REINFORCE + baseline, RLOO; sampled; 100 steps), "
          f"median (min–max) of {repeats}, page compiled once as a server does:")
    print(f"  rerun, every run cached              {fmt(same)}")
    print(f"  rerun after PPO μ (not shown)        {fmt(knob)}")
    p90 = sorted(rows)[int(0.9 * (len(rows) - 1))]
    print(f"  rerun after a new seed (3 retrain)   {fmt(fresh)} over {len(rows)} reruns, 90th percentile {p90:.0f} ms; "
          f"of which training the three runs {tr:.1f} ms ({tr / ref:.1f}x the reference), the rest {fresh[0] - tr:.1f} ms")
    print(f"  compiling the page (AppTest does it on every run, a server once): {compile_ms[0]:.1f} ms")
    print(f"  reference (100 bare autograd steps), interleaved: {ref:.1f} ms; seed-change rerun = {fresh[0] / ref:.1f}x the reference")


if __name__ == "__main__":
    main()
