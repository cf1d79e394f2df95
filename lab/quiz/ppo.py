"""Predictions for the PPO clipping chapter [ftip-003F, ftip-003I]; answers from lab.ppo.clipping_effect."""

from lab.ppo import clipping_effect
from lab.quiz import Question


def _changes(rho: float, a: float, eps: float) -> str:
    return "yes" if float(clipping_effect(rho, a, eps).removed) != 0.0 else "no"


QUESTIONS = [
    Question(
        "ppo-clip-negative-inside", "ppo",
        "A = −2, ρ = 0.6, ε = 0.2: will clipping change the objective min(ρA, clip(ρ, 1−ε, 1+ε)A)?",
        lambda: _changes(0.6, -2.0, 0.2), choices=("yes", "no"),
        explanation="For A < 0 the pessimistic minimum picks the clipped term once ρ < 1 − ε: ρA = −1.2 but "
                    "clip(ρ)A = 0.8·(−2) = −1.6 is smaller, so the objective is −1.6 and flat in ρ. Lowering the "
                    "probability of a bad action further earns nothing more.",
    ),
    Question(
        "ppo-clipped-value", "ppo",
        "A = +2, ρ = 1.4, ε = 0.2: what is the clipped objective?",
        lambda: float(clipping_effect(1.4, 2.0, 0.2).clipped), tolerance=1e-3,
        explanation="ρ is past 1 + ε in the direction A favours, so the clipped term clip(1.4)·2 = 1.2·2 = 2.4 is "
                    "the smaller one: the incentive to push ρ further is gone.",
    ),
]
