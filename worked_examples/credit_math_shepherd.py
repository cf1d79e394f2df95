"""Math-Shepherd hard and soft labels from continuations [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-math-shepherd"
FTIP = "credit-bank"
SOURCE = "credit-bank (Math-Shepherd entry: 'a prefix with mostly correct continuations receives a higher success estimate'); Wang et al. 2024, §3; the continuation outcomes are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"continuation_outcomes": [[1, 1, 1, 0], [1, 1, 0, 1], [0, 1, 0, 0], [1, 1, 1, 1]]}
EXPECTED = [1.0, 1.0, 1.0, 1.0, 0.75, 0.75, 0.25, 1.0, -0.5]
TOLERANCE = 1e-12
MECHANISM = "math_shepherd"


def compute() -> list[float]:
    c = INPUTS["continuation_outcomes"]
    hard, soft = C.math_shepherd_labels(c, "hard"), C.math_shepherd_labels(c, "soft")
    r = C.demo("math_shepherd")
    g, _ = C.example_inputs("math_shepherd")
    return hard.tolist() + soft.tolist() + [float(r.credit[0][g[0].step_slices()[2]][0])]


def explain() -> str:
    return ("hard = 1 if any continuation succeeds: [1, 1, 1, 1] (one repaired continuation hides the error at step 3)\n"
            "soft = fraction: [3/4, 3/4, 1/4, 4/4]; step 3's credit 2 * 0.25 - 1 = -0.5")
