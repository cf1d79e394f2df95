"""The PPO clipping cases for positive and negative advantage [ftip-003I]; overview, PPO section."""

from lab.ppo import clipped_surrogate

ID = "ppo-clip"
FTIP = "ftip-003I"
SOURCE = "definitions ftip-003I (Schulman et al. 2017, §3, eq. 7); overview, 'Reference regularization and PPO clipping'"
INPUTS = {"epsilon": 0.2, "cases": [(2.0, 1.4), (-2.0, 0.6), (-2.0, 1.4)]}  # (A, rho)
EXPECTED = [2.4, -1.6, -2.8]
UNCLIPPED = [2.8, -1.2, -2.8]
TOLERANCE = 1e-12


def compute() -> list[float]:
    return [float(clipped_surrogate(rho, A, INPUTS["epsilon"])) for A, rho in INPUTS["cases"]]


def explain() -> str:
    rows = [
        f"A={A:+g}, rho={rho:g}: min(rho*A, clip(rho)*A) = {v:g}   (unclipped rho*A = {rho * A:g})"
        for (A, rho), v in zip(INPUTS["cases"], compute())
    ]
    return "\n".join(rows)
