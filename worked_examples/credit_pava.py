"""CONCUR: PAVA projection keeps the primary order [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-pava"
FTIP = "credit-bank"
SOURCE = "credit-bank (CONCUR entries: primary [0.3, 0.3, 0.7], auxiliary [-1, 0, 1] is already feasible); the four-response group is the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"bank_auxiliary_sorted": [-1.0, 0.0, 1.0], "correct": [1, 1, 0, 0], "length": [2, 1, 3, 2], "aux_weight": 1.0}
EXPECTED = [-1.0, 0.0, 1.0, 1.0, -0.41421356237, 0.41421356237, -1.0, 1.0, 0.0, 0.0, -1.0]
TOLERANCE = 1e-9
MECHANISM = "pava"


def compute() -> list[float]:
    bank = C.pava(INPUTS["bank_auxiliary_sorted"]).tolist()
    r = C.demo("pava")
    return bank + r.metrics["combined"] + r.metrics["projected"]


def explain() -> str:
    return ("bank: sorted by (primary, auxiliary) the values [-1, 0, 1] are already non-decreasing: PAVA leaves them\n"
            "group: A_correct = [1, 1, -1, -1]; length [2, 1, 3, 2] has mean 2, std sqrt(0.5) -> [0, -1.414, 1.414, 0]\n"
            "combined [1, -0.414, 0.414, -1]; order by (correct, length): [-1, 0.414, -0.414, 1] -> pool the middle -> [-1, 0, 0, 1]")
