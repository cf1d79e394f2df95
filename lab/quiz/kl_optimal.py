"""Predictions for the KL and optimal-policy chapter [ftip-003O, ftip-006X]; answers from lab.dpo and lab.kl."""

from lab.dpo import optimal_policy
from lab.kl import kl_estimators
from lab.quiz import Question


def _optimal_first() -> float:
    return float(optimal_policy([0.5, 0.5], [1.0, 0.0], 1.0)[0])


def _k1_negative() -> str:
    est = kl_estimators([0.2, 0.8], [0.4, 0.6])  # sampling response 1: π = 0.2, π_ref = 0.4
    return "yes" if float(est.values[0, 0]) < 0 else "no"


QUESTIONS = [
    Question(
        "kl-optimal-two-outcomes", "kl_optimal",
        "π_ref = (0.5, 0.5), rewards r = (1, 0), β = 1. What probability does the optimal policy π* give the first "
        "response?",
        _optimal_first, tolerance=0.01,
        explanation="π*(y) ∝ π_ref(y)·e^{r(y)/β}: the weights are 0.5e and 0.5, so π*(y₁) = e/(e + 1) ≈ 0.731 "
                    "(answers within 0.01 count). A smaller β would push it towards 1, a larger one back towards 0.5.",
    ),
    Question(
        "kl-k1-negative-sample", "kl_optimal",
        "π = (0.2, 0.8) and π_ref = (0.4, 0.6). The sampler draws response 1. Is the k1 estimate of "
        "KL(π ‖ π_ref) from this one sample negative?",
        _k1_negative, choices=("yes", "no"),
        explanation="k1 = log π(y)/π_ref(y) = log 0.5 < 0 for this sample, although the true KL is positive. k1 is "
                    "right only on average over samples from π; k2 and k3 are never negative (see the estimator chart).",
    ),
]
