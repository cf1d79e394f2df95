"""Residual Advantage: the student expectation is subtracted, then centred [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-residual-advantage"
FTIP = "credit-bank"
SOURCE = "credit-bank (Residual Advantage entries: subtract the student-distribution expectation, centre per response, add to the verifier advantage); distributions are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"student": [[0.5, 0.5], [0.5, 0.5]], "teacher": [[0.8, 0.2], [0.5, 0.5]], "token_ids": [0, 0], "outcomes": [1, 0]}
EXPECTED = [0.34657359, -0.34657359, 1.34657359, 0.65342641]
TOLERANCE = 1e-8
MECHANISM = "residual_advantage"


def compute() -> list[float]:
    r = C.demo("residual_advantage")
    return r.metrics["residuals"][0] + r.credit[0].tolist()


def explain() -> str:
    return ("token 1: rho = [ln 1.6, ln 0.4], E_student rho = 0.5 ln 0.64 = ln 0.8, delta = ln 1.6 - ln 0.8 = ln 2; token 2: delta = 0\n"
            "centred: [ln2/2, -ln2/2] = [0.3466, -0.3466]; credit = A (+1) + delta = [1.3466, 0.6534]")
