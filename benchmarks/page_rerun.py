"""Median rerun time of every page under streamlit.testing.v1.AppTest.

    .venv/bin/python benchmarks/page_rerun.py [--reruns 15]

A rerun is what happens when a learner moves a widget. Target: under 150 ms per formula page on a
2-core CPU. The last line prints the slowest formula page as a ratio to that 150 ms budget.
"""

import argparse
import statistics
import time
from pathlib import Path

import torch
from streamlit.testing.v1 import AppTest

torch.set_num_threads(1)
PAGES = Path(__file__).resolve().parent.parent / "pages"
FORMULA = ["sft", "preferences", "returns", "ppo", "kl_optimal", "dpo", "grpo", "feedback", "agentic"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reruns", type=int, default=15)
    args = ap.parse_args()
    rows = []
    for page in ["home"] + FORMULA:
        at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=60).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        times = []
        for _ in range(args.reruns):
            t0 = time.perf_counter()
            at.run()
            times.append((time.perf_counter() - t0) * 1000)
        rows.append((page, statistics.median(times), min(times)))
    print(f"{'page':<14} {'median ms':>10} {'min ms':>8}")
    for page, med, mn in rows:
        print(f"{page:<14} {med:>10.1f} {mn:>8.1f}")
    worst = max((r for r in rows if r[0] in FORMULA), key=lambda r: r[1])
    print(f"slowest formula page {worst[0]}: {worst[1]:.1f} ms = {worst[1] / 150:.2f}x the 150 ms budget")


if __name__ == "__main__":
    main()
