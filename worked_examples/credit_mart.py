"""MART masks failure credit after the last unrecovered error, keeping the denominator [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-mart"
FTIP = "credit-bank"
SOURCE = "credit-bank (MART-GRPO entries: keep original advantages and the valid-action denominator; the interval includes its upper end); trajectories are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"failed_step_labels": [1, 0, 1, 1], "outcomes": [0, 1], "tokens_per_step": 2}
EXPECTED = [-1.0, -1.0, -1.0, -1.0, 0.0, 0.0, 0.0, 0.0, 16.0]
TOLERANCE = 1e-12
MECHANISM = "mart"


def compute() -> list[float]:
    r = C.demo("mart")
    return r.credit[0].tolist() + [r.metrics["denominator"]]


def explain() -> str:
    return ("A = [-1, +1]; last unrecovered error = step index 1; its tokens keep -1, steps 2-3 are masked to 0\n"
            "denominator stays 16 generated tokens (not 12): retained gradients are not amplified")
