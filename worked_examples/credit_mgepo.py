"""MGE-PO quadrants and recentring move a truncated reply [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-mgepo"
FTIP = "credit-bank"
SOURCE = "credit-bank (MGE-PO entries: outcome and entropy are separate axes; a truncated reply shifts through recentring); the quadrant corrections are the lab's own parameters"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"outcomes": [1, 1, 0, 0], "mean_entropy": [2.0, 0.2, 0.2, 2.0], "truncated": [False, False, True, False], "beta": 0.5}
EXPECTED = [1.375, 0.875, -1.125, -1.125]
TOLERANCE = 1e-12
MECHANISM = "mgepo"


def compute() -> list[float]:
    r = C.demo("mgepo")
    return r.credit[:, 0].tolist()


def explain() -> str:
    return ("A = [1, 1, -1, -1]; threshold = mean entropy 1.1 -> success/high, success/low, failure/low (truncated), failure/high\n"
            "corrections [+0.5, 0, 0 (truncated: none), 0] -> [1.5, 1, -1, -1], mean 0.125 -> [1.375, 0.875, -1.125, -1.125]")
