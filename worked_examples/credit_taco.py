"""TACO damps positive credit of risky tokens only [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-taco"
FTIP = "credit-bank"
SOURCE = "credit-bank (TACO entries: reduce only positive credit of high tail-risk tokens, smooth weights in [0, 1]); risk scores are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"risk_correct": [0.0, 0.5, 1.0], "risk_failed": [1, 1, 1], "outcomes": [1, 0]}
EXPECTED = [1.0, 0.5, 0.0, -1.0, -1.0, -1.0]
TOLERANCE = 1e-12
MECHANISM = "taco"


def compute() -> list[float]:
    r = C.demo("taco")
    return r.credit[0].tolist() + r.credit[1].tolist()


def explain() -> str:
    return "A = [+1, -1]; correct response: 1 * (1 - risk) = [1, 0.5, 0]; failed response keeps -1 on every token"
