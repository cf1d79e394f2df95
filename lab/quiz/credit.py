"""Predictions for the credit-assignment chapter [credit bank]; answers from lab.credit on the guiding example."""

from lab.credit import guiding_example, run, step_credit
from lab.quiz import Question

_ORDER = ("lower", "the same", "higher")


def _step3_vs_step1(mechanism: str) -> str:
    group, evidence = guiding_example()  # step 3 wrong, outcome 1, peers 1, 0, 0
    per_step = step_credit(run(mechanism, group, evidence).credit[0], group[0])
    d = per_step[2] - per_step[0]
    return "the same" if abs(d) <= 1e-9 else ("lower" if d < 0 else "higher")


def _outcome_value() -> float:
    group, evidence = guiding_example()
    return float(step_credit(run("outcome", group, evidence).credit[0], group[0])[0])


QUESTIONS = [
    Question(
        "credit-outcome-wrong-step", "credit",
        "The guiding solution of 3 × 4 + 5 + 2 makes an error at step 3 and still reaches 19 (reward 1); its peers "
        "score 1, 0, 0. Under uniform outcome credit, is step 3's credit lower than, the same as, or higher than step 1's?",
        lambda: _step3_vs_step1("outcome"), choices=_ORDER,
        explanation="The same: outcome credit gives every token of a response the response's group advantage, so the "
                    "wrong step is reinforced exactly as much as the right ones.",
    ),
    Question(
        "credit-process-wrong-step", "credit",
        "Same solution and group, but credit from process labels (a PRM that marks step 3 wrong). Is step 3's credit "
        "lower than, the same as, or higher than step 1's?",
        lambda: _step3_vs_step1("process_labels"), choices=_ORDER,
        explanation="Lower: process labels add evidence per step, so the wrong step's tokens get less credit than the "
                    "correct steps' even though the final answer is right. The price is the labels themselves, and "
                    "a PRM's errors become credit errors (Lightman et al. 2023).",
    ),
    Question(
        "credit-outcome-value", "credit",
        "Rewards of the group are 1 (guiding), 1, 0, 0. With the sample std (divisor 3) and ε = 10⁻⁴, what outcome "
        "credit does each token of the guiding solution get? (within ±0.01)",
        _outcome_value, tolerance=0.01,
        explanation="R̄ = 0.5 and the sample std is √(1/3) ≈ 0.577, so Â = 0.5/0.577 ≈ 0.866 on every token of the "
                    "guiding solution, its wrong step included.",
    ),
]
