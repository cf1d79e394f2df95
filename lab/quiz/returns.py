"""Predictions for the returns and advantages chapter [ftip-0030, ftip-0037, ftip-003E]; answers from lab.rl."""

from lab.rl import discounted_returns, gae
from lab.quiz import Question


def _return0() -> float:
    return float(discounted_returns([0.0, 0.0, 1.0], 0.5)[0])


def _gae_lambda0() -> float:
    adv, _ = gae([1.0, 0.0, 2.0], [0.5, 0.5, 0.5], 0.9, 0.0)
    return float(adv[0])


QUESTIONS = [
    Question(
        "returns-discounted-g0", "returns",
        "Rewards R₁, R₂, R₃ = 0, 0, 1 and discount γ = 0.5. What is the return G₀?",
        _return0, tolerance=1e-3,
        explanation="G₀ = R₁ + γR₂ + γ²R₃ = 0 + 0 + 0.25·1 = 0.25: a reward two steps later counts γ² as much. "
                    "With γ = 1 it would count fully (answers within 0.001 count).",
    ),
    Question(
        "returns-gae-lambda-zero", "returns",
        "Rewards 1, 0, 2; value estimates V(H₀), V(H₁), V(H₂) = 0.5, 0.5, 0.5 (V = 0 after the last step); γ = 0.9, "
        "GAE λ = 0. What is the advantage Â₀?",
        _gae_lambda0, tolerance=1e-3,
        explanation="With λ = 0 GAE keeps only the first TD residual: Â₀ = δ₀ = R₁ + γV(H₁) − V(H₀) = 1 + 0.45 − 0.5 = 0.95. "
                    "It trusts V after one step; the later reward 2 enters only through V(H₁) (answers within 0.001 count).",
    ),
]
