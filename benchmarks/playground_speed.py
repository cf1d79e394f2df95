"""Speed of lab.playground.train and of the Dynamics page's reruns.

    .venv/bin/python benchmarks/playground_speed.py [--repeats 7]

Budget (issue 14): 100 steps of any objective in under 100 ms; a page rerun for 100 steps under 150 ms.
Every time is the median of ``--repeats`` runs, with one thread. A reference is measured in the same run:
100 steps of the bare autograd loop a playground step cannot avoid (log-softmax, a weighted sum, autograd.grad,
an SGD update on the same tensors), so the ratio column says how much the lab's validated objectives cost on top
of torch's own floor on whatever this machine is doing right now.
"""

import argparse
import statistics
import time
from pathlib import Path

import torch

from lab import playground as P

torch.set_num_threads(1)
PAGE = Path(__file__).resolve().parent.parent / "pages" / "dynamics.py"


def median_ms(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


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
    args = ap.parse_args()
    ref = median_ms(reference_loop, args.repeats)
    print(f"reference: 100 bare autograd steps {ref:.1f} ms\n")
    bandit = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5])
    seq = P.sequence_task("count", 2, 3)
    print(f"{'policy':<9} {'objective':<16} {'mode':<8} {'ms / 100 steps':>15} {'x reference':>12} {'budget 100 ms':>14}")
    worst = (0.0, "")
    for pname, pol in (("bandit", bandit), ("sequence", seq)):
        for name, (objective, fixed) in P.VARIANTS.items():
            for exact in (False, True):
                kw = dict(fixed)
                if exact and objective in ("grpo", "rloo"):
                    kw["group_size"] = 2 if pname == "sequence" else 4
                ms = median_ms(lambda: P.train(pol, objective, 100, 0.5, exact=exact, **kw), args.repeats)
                ok = "ok" if ms < 100 else "OVER"
                print(f"{pname:<9} {name:<16} {'exact' if exact else 'sampled':<8} {ms:>15.1f} {ms / ref:>12.1f} {ok:>14}")
                worst = max(worst, (ms, f"{pname} {name} {'exact' if exact else 'sampled'}"))
    print(f"\nslowest: {worst[1]} {worst[0]:.1f} ms = {worst[0] / 100:.2f}x the 100 ms budget ({worst[0] / ref:.1f}x the reference)")
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
    print(f"\nDynamics page, default setup (3 objectives × 100 steps): rerun {same:.1f} ms (cached runs), "
          f"{fresh:.1f} ms after changing the seed (retrains) = {fresh / 150:.2f}x the 150 ms budget")


if __name__ == "__main__":
    main()
