"""The InstructGPT-style RLHF pipeline's shaped scalar [ftip-003J]."""

import math

from lab.ppo import kl_shaped_reward

ID = "rlhf-shaped-reward"
FTIP = "ftip-003J"
SOURCE = "definitions ftip-003J, ftip-003D (Ouyang et al. 2022, §3.5, eq. 2)"
INPUTS = {"score": 0.8, "policy_prob": 0.2, "ref_prob": 0.1, "beta": 0.1}  # policy gives twice the reference probability
EXPECTED = [0.8 - 0.1 * math.log(2)]  # ≈ 0.731
TOLERANCE = 1e-12


def compute() -> list[float]:
    lp, rlp = math.log(INPUTS["policy_prob"]), math.log(INPUTS["ref_prob"])
    return [float(kl_shaped_reward(INPUTS["score"], lp, rlp, INPUTS["beta"]))]


def explain() -> str:
    return f"0.8 - 0.1 * log(pi/pi_ref) = 0.8 - 0.1 * log 2 = {compute()[0]:.4f}"
