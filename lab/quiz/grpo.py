"""Predictions for the GRPO chapter [ftip-004D, ftip-004I, ftip-004J]; answers from lab.grpo."""

from lab.grpo import dynamic_sampling, group_advantages, loss_types_from_ratios
from lab.quiz import Question

# four groups of four responses each (rewards from a 0/1 verifier, the last with partial credit): the lab's own example
_GROUPS = {"A": [1.0, 0.0, 0.0, 1.0], "B": [1.0, 1.0, 1.0, 1.0], "C": [0.0, 0.0, 1.0, 0.0], "D": [0.5, 0.2, 0.9, 0.1]}


def _no_signal() -> str:
    flat = [r for g in _GROUPS.values() for r in g]
    dropped = dynamic_sampling(flat, 4).dropped_groups  # zero reward spread: every advantage is 0
    names = list(_GROUPS)
    return ", ".join(names[i] for i in dropped)


def _loss_sign() -> str:
    # one group, rewards 1, 0, 0, 0; the rewarded (short) response has ratio 1.3, the others 1; lengths 2, 8, 8, 8
    adv = group_advantages([1.0, 0.0, 0.0, 0.0], 4)
    losses = loss_types_from_ratios([1.3, 1.0, 1.0, 1.0], adv, [2, 8, 8, 8], 0.2, 0.28)
    signs = {lt: float(v[0]) > 0 for lt, v in losses.items()}
    return "no" if len(set(signs.values())) > 1 else "yes"


QUESTIONS = [
    Question(
        "grpo-no-signal-group", "grpo",
        "Four groups of four responses get rewards A = (1, 0, 0, 1), B = (1, 1, 1, 1), C = (0, 0, 1, 0), "
        "D = (0.5, 0.2, 0.9, 0.1). Which group carries no learning signal?",
        _no_signal, choices=("A", "B", "C", "D"),
        explanation="Group B's rewards are all equal, so every reward minus the group mean is 0: all four advantages "
                    "vanish and the group contributes no gradient, whatever the std divisor or ε. A single success "
                    "(group C) is the most informative group, not a useless one. DAPO's dynamic sampling drops "
                    "groups like B and samples again [ftip-004I].",
    ),
    Question(
        "grpo-advantage-one-success", "grpo",
        "One group of four responses gets rewards 1, 0, 0, 0. With the sample std (divisor g − 1 = 3, as TRL) and "
        "ε = 10⁻⁴, what is the advantage Â₁ of the rewarded response? (within ±0.01)",
        lambda: float(group_advantages([1.0, 0.0, 0.0, 0.0], 4, ddof=1, eps=1e-4)[0]), tolerance=0.01,
        explanation="R̄ = 0.25 and the sample std is 0.5, so Â₁ = (1 − 0.25)/(0.5 + 10⁻⁴) ≈ 1.50; each of the three "
                    "failures gets ≈ −0.50. The advantages sum to zero within the group [ftip-004D].",
    ),
    Question(
        "grpo-loss-types-sign", "grpo",
        "Rewards 1, 0, 0, 0; ratios 1.3, 1, 1, 1; lengths 2, 8, 8, 8 tokens; ε = 0.2, ε_high = 0.28. Do the four loss "
        "types (grpo, bnpo, dr_grpo, dapo) all give a loss of the same sign?",
        _loss_sign, choices=("yes", "no"),
        explanation="No. 'grpo' averages each response's tokens first, so the short rewarded response counts as one of "
                    "four; 'bnpo'/'dapo' average over all 26 tokens, where its 2 tokens are outweighed by 24 tokens "
                    "with negative advantage; 'dr_grpo' divides the token sum by a constant. Same per-token terms, "
                    "different weights, so the aggregate can flip sign. The sign of the loss value is not a progress "
                    "signal; the gradient direction per token is the same under every type [ftip-004J].",
    ),
]
