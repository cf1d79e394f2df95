"""Rubric Dropout: one shared subset re-ranks a group that ties on the full rubric [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-rubric-dropout"
FTIP = "credit-bank"
SOURCE = "credit-bank (Rubric Dropout entries: share one subset within a group; log it); the criteria scores are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"scores": [{"correct": 1, "format": 1, "brevity": 0}, {"correct": 0, "format": 1, "brevity": 1}, {"correct": 1, "format": 0, "brevity": 1}], "subset": ["correct", "brevity"]}
EXPECTED = [0.5, 0.5, 1.0, -0.70710678, -0.70710678, 1.41421356, 0.0, 0.0, 0.0]
TOLERANCE = 1e-8
MECHANISM = "rubric_dropout"


def compute() -> list[float]:
    r = C.demo("rubric_dropout")
    return r.metrics["rewards"] + r.credit[:, 0].tolist() + r.baseline[:, 0].tolist()


def explain() -> str:
    return ("visible {correct, brevity}: rewards (1+0)/2, (0+1)/2, (1+1)/2 = [0.5, 0.5, 1]; mean 2/3, std sqrt(1/18)\n"
            "A = [-0.7071, -0.7071, 1.4142]; on the full rubric all three score 2/3: zero spread, no signal")
