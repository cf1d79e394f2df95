"""KnowGPO compares actions from the same known facts [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-knowgpo"
FTIP = "credit-bank"
SOURCE = "credit-bank (KnowGPO entries: group by pre-action knowledge; singleton process advantage is zero; answer steps keep only the terminal term); facts are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"knowledge": [[[], ["year"], ["year"]], [[], [], []], [["person"], ["person"], ["person"]]], "outcomes": [1, 0, 0]}
EXPECTED = [0.5, -0.5, 0.0, 1.5, 1.0]
TOLERANCE = 1e-12
MECHANISM = "knowgpo"


def compute() -> list[float]:
    r = C.demo("knowgpo")
    return [p[0] for p in r.metrics["process_advantages"]] + r.credit[0].tolist()


def explain() -> str:
    return ("pre-state {}: rewards 1 (finds 'year') and 0 (misses) -> [+0.5, -0.5]; pre-state {person} is a singleton -> 0\n"
            "response 0: terminal 1 + 0.5 on the search step, the answer step keeps 1")
