"""Predictions for the Compare chapter [overview, "Evidence of adaptation gains"; Chen et al. 2021, eq. 1]; answers from lab.evaluation."""

from lab import evaluation as ev
from lab.quiz import Question


def _paired_vs_separate() -> str:
    t = ev.synthetic_comparison(n_cases=200, gain=0.08, seed=0)
    paired = ev.paired_bootstrap(t["baseline"], t["candidate"])
    a, b = ev.mean_interval(t["baseline"]), ev.mean_interval(t["candidate"])
    overlap = a.high >= b.low and b.high >= a.low
    return f"{'overlap' if overlap else 'do not overlap'}; paired {'excludes' if paired.excludes_zero else 'includes'} 0"


QUESTIONS = [
    Question(
        "compare-pass-at-2", "compare",
        "A case was sampled n = 10 times and c = 3 samples are correct. What is the unbiased pass@2? (within ±0.005)",
        lambda: float(ev.pass_at_k(10, 3, 2)), tolerance=0.005,
        explanation="pass@k = 1 − C(n − c, k)/C(n, k) = 1 − C(7, 2)/C(10, 2) = 1 − 21/45 ≈ 0.533: the chance that at "
                    "least one of 2 samples drawn without replacement is correct (Chen et al. 2021, eq. 1).",
    ),
    Question(
        "compare-paired-interval", "compare",
        "Demo data: 200 cases, true gain 0.08, seed 0. Do the two separate 95% intervals overlap, and does the paired "
        "interval of the difference exclude 0?",
        _paired_vs_separate,
        choices=("overlap; paired excludes 0", "overlap; paired includes 0", "do not overlap; paired excludes 0",
                 "do not overlap; paired includes 0"),
        explanation="Hard cases are hard for both checkpoints, so the scores are correlated; resampling the cases as "
                    "pairs keeps that link and the interval of the difference is far narrower than the two separate "
                    "intervals suggest. Overlapping separate intervals do not mean 'no difference'.",
    ),
]
