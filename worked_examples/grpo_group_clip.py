"""Four rollout rewards, group advantages, and clipping [ftip-004N], with the lab's own numbers.

ftip-004N defines Â_i = (r_i − r̄)/s and ℓ_i = min(ρ_i Â_i, clip(ρ_i, 1−ε, 1+ε) Â_i) but states no rewards,
ratios, scale or ε. The rewards (1, 0, 0, 1), the population std as the scale, ε = 0.2 and the ratios
(1.3, 0.7, 1.1, 0.9) are this lab's illustration, and EXPECTED are values computed by hand for them.
"""

import torch

from lab.grpo import group_advantages
from lab.ppo import clipped_surrogate

ID = "grpo-group-clip"
FTIP = "ftip-004N"
KIND = "illustration"
NOTE = ("ftip-004N states the construction but no numbers: these rewards, ratios, ε = 0.2 and the population std "
        "are the lab's own illustration; the expected values are hand-computed for them")
SOURCE = "definitions ftip-004N (Shao et al. 2024, §4.1; Schulman et al. 2017, §3)"
INPUTS = {"rewards": [1.0, 0.0, 0.0, 1.0], "ratios": [1.3, 0.7, 1.1, 0.9], "epsilon": 0.2, "ddof": 0, "eps": 0.0}
EXPECTED = [1, -1, -1, 1, 1.2, -0.8, -1.1, 0.9, 0.05]  # by hand: mean 0.5, population std 0.5; min(ρÂ, clip(ρ)Â)
TOLERANCE = 1e-12


def compute() -> list[float]:
    i = INPUTS
    A = group_advantages(i["rewards"], group_size=4, scale="group", ddof=i["ddof"], eps=i["eps"])
    terms = clipped_surrogate(torch.tensor(i["ratios"], dtype=torch.float64), A, i["epsilon"])
    return A.tolist() + terms.tolist() + [float(terms.mean())]


def explain() -> str:
    v = compute()
    return (f"(the lab's own numbers; ftip-004N states none) mean 0.5, population std 0.5 -> A = {v[:4]}\n"
            f"terms min(rho*A, clip(rho, 0.8, 1.2)*A) = {[round(x, 4) for x in v[4:8]]}; group mean = {v[8]:.4f}")
