"""Predictions for the preferences chapter [ftip-002Q, ftip-002T, ftip-002V]; answers from lab.preference."""

from lab.preference import Comparison, bradley_terry_probability, fit_bradley_terry
from lab.quiz import Question


def _offset_changes() -> str:
    before = float(bradley_terry_probability(1.5, 0.5))
    after = float(bradley_terry_probability(1.5 + 3.0, 0.5 + 3.0))
    return "yes" if abs(after - before) > 1e-12 else "no"


def _cycle_score() -> float:
    comps = [Comparison("x", a, b, "judge", "a") for a, b in (("A", "B"), ("B", "C"), ("C", "A"))]
    return float(fit_bradley_terry(comps)["A"])


QUESTIONS = [
    Question(
        "pref-probability", "preferences",
        "Bradley–Terry scores r(y⁺) = 1.5 and r(y⁻) = 0.5. What is P(y⁺ ≻ y⁻)?",
        lambda: float(bradley_terry_probability(1.5, 0.5)), tolerance=0.01,
        explanation="Only the difference counts: σ(1.5 − 0.5) = σ(1) = 1/(1 + e⁻¹) ≈ 0.731 (answers within 0.01 count).",
    ),
    Question(
        "pref-offset", "preferences",
        "Scores 1.5 and 0.5 as before. Add 3 to both (4.5 and 3.5). Does P(y⁺ ≻ y⁻) change?",
        _offset_changes, choices=("yes", "no"),
        explanation="No: σ(4.5 − 3.5) = σ(1) again. A common offset cancels in the difference, so comparisons can never "
                    "identify it; the fit fixes it by convention (mean 0 here). The offset chart shows the flat line.",
    ),
    Question(
        "pref-cycle-score", "preferences",
        "Three comparisons, one each: A ≻ B, B ≻ C, C ≻ A. Fit Bradley–Terry scores (no prior, mean fixed at 0). "
        "What is A's score?",
        _cycle_score, tolerance=1e-3,
        explanation="0: every item wins once and loses once, so the likelihood is largest when all scores are equal, and "
                    "the mean-zero convention makes them all 0. No scalar score can express a cycle; the fit averages it "
                    "away (answers within 0.001 count).",
    ),
]
