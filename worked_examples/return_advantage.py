"""Return and advantage on a three-step episode [ftip-0037]."""

from lab.rl import advantage_from_baseline, discounted_returns

ID = "return-advantage"
FTIP = "ftip-0037"
SOURCE = "definitions ftip-0037 (Sutton & Barto 2018, §3.3; Schulman et al. 2016, §2)"
INPUTS = {"rewards": [0.0, 1.0, 2.0], "gamma": 0.5, "baseline": 0.4}
EXPECTED = [1.0, 0.6]
TOLERANCE = 1e-12


def compute() -> list[float]:
    G = discounted_returns(INPUTS["rewards"], INPUTS["gamma"])
    A0 = advantage_from_baseline(G[0], INPUTS["baseline"])
    return [float(G[0]), float(A0)]


def explain() -> str:
    G0, A0 = compute()
    return f"G_0 = 0 + 1/2 * 1 + 1/4 * 2 = {G0:g}; A_0 = G_0 - V(s_0) = {G0:g} - 0.4 = {A0:g}"
