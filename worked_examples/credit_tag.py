"""TAG: a wrong answer gains nothing from brevity [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-tag"
FTIP = "credit-bank"
SOURCE = "credit-bank (TAG entries: 'brevity can't raise credit on an incorrect answer if correctness is the anchor'); scores are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"components": [{"correct": 0, "brevity": 1}, {"correct": 1, "brevity": 0}, {"correct": 1, "brevity": 1}]}
EXPECTED = [0.0, 1.0, 2.0, 1.0, 1.0, 2.0, -1.22474487, 0.0, 1.22474487]
TOLERANCE = 1e-8
MECHANISM = "tag"


def compute() -> list[float]:
    r = C.demo("tag")
    return r.metrics["gated_rewards"] + r.metrics["ungated_rewards"] + r.credit[:, 0].tolist()


def explain() -> str:
    return ("gated: [0 + 0, 1 + 0, 1 + 1] = [0, 1, 2]; ungated sum [1, 1, 2] ties the wrong short answer with a right one\n"
            "A = (r - 1)/sqrt(2/3) = [-1.2247, 0, 1.2247]")
