"""Process labels judge each step of the guiding example [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-process-labels"
FTIP = "credit-bank"
SOURCE = "credit-bank (process supervision entry); Lightman et al. 2023, Let's Verify Step by Step, §2; labels and the 2l-1 mapping are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"step_labels": [1, 1, 0, 1]}
EXPECTED = [1.0, 1.0, -1.0, 1.0]
TOLERANCE = 1e-12
MECHANISM = "process_labels"


def compute() -> list[float]:
    r = C.demo("process_labels")
    g, _ = C.example_inputs("process_labels")
    return [float(r.credit[0][s][0]) for s in g[0].step_slices()]


def explain() -> str:
    return "labels [1, 1, 0, 1] -> step credit 2l - 1 = [1, 1, -1, 1]: the wrong step is penalized although the answer is right"
