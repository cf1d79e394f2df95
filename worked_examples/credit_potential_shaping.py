"""Potential shaping telescopes; a timeout is not terminal [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-potential-shaping"
FTIP = "credit-bank"
SOURCE = "credit-bank (PRM4RL entry: discounted potential differences, timeout not termination); Ng, Harada & Russell 1999; numbers are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"rewards": [0, 0, 0, 1], "potentials": [0.5, 0.75, 1.0, 0.5, 0.75], "gamma": 1.0}
EXPECTED = [0.25, 0.25, -0.5, 0.5, 0.25, 0.25, -0.5, 1.25, 0.5, 1.25]
TOLERANCE = 1e-12
MECHANISM = "potential_shaping"


def compute() -> list[float]:
    term = C.potential_shaping(INPUTS["rewards"], INPUTS["potentials"], INPUTS["gamma"], True)
    cut = C.potential_shaping(INPUTS["rewards"], INPUTS["potentials"], INPUTS["gamma"], False)
    return term.tolist() + cut.tolist() + [float(term.sum()), float(cut.sum())]


def explain() -> str:
    return ("r'_t = r_t + Phi(s_t+1) - Phi(s_t): 0.75-0.5, 1-0.75, 0.5-1, then terminal 1 + 0 - 0.5 = 0.5\n"
            "timeout keeps Phi(s_4) = 0.75: last 1 + 0.75 - 0.5 = 1.25\n"
            "sums telescope: 1 - 0.5 = 0.5 (terminal); 1 + 0.75 - 0.5 = 1.25 (timeout)")
