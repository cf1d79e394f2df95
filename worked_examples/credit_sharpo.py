"""SHARPO: bounded segment factors keep the sign of a failure [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-sharpo"
FTIP = "credit-bank"
SOURCE = "credit-bank (SHARPO entries: retrieval in a failed trace may resemble the successful path while synthesis diverges; 2 sigmoid lies in (0, 2)); log-probs are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"student": [-1, -1, -1, -1], "teacher": [0, 0, -2, -2], "segments": [0, 0, 1, 1], "outcomes": [0, 1]}
EXPECTED = [-0.53788284, -1.46211716, 1.0]
TOLERANCE = 1e-8
MECHANISM = "sharpo"


def compute() -> list[float]:
    r = C.demo("sharpo")
    return [float(r.credit[0, 0]), float(r.credit[0, 2]), float(r.credit[1, 0])]


def explain() -> str:
    return ("failed response A = -1; retrieval gap g = +1, synthesis g = -1; factor 2 sigma(-g) for a negative advantage\n"
            "retrieval: -2/(1+e) = -0.5379 (penalized less), synthesis: -2/(1+1/e) = -1.4621; the success (g = 0) keeps 1")
