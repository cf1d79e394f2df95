"""Advantages from a mean baseline (overview, 'Reinforcement learning for response policies')."""

from lab.rl import advantage_from_baseline

ID = "policy-gradient-baseline"
FTIP = "ftip-0033"
SOURCE = "overview, 'Reinforcement learning for response policies'; definitions ftip-0032, ftip-0033"
INPUTS = {"rewards": [0.0, 1.0, 1.0], "baseline": 2 / 3}
EXPECTED = [-2 / 3, 1 / 3, 1 / 3]
TOLERANCE = 1e-12


def compute() -> list[float]:
    return advantage_from_baseline(INPUTS["rewards"], INPUTS["baseline"]).tolist()


def explain() -> str:
    return f"rewards {INPUTS['rewards']} minus baseline 2/3 -> {[round(a, 4) for a in compute()]}"
