"""Uniform outcome credit reinforces the error step of the guiding example [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-outcome"
FTIP = "credit-bank"
SOURCE = "credit-bank: the bank's topic guide example (two good steps, an error at step 3, right answer); GRPO outcome advantages, Shao et al. 2024 §4.1.2; group peers and numbers are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"outcomes": [1.0, 1.0, 0.0, 0.0], "ddof": 0, "eps": 0.0, "error_step": 3}
EXPECTED = [1.0, 1.0, -1.0, -1.0, 1.0]
TOLERANCE = 1e-12
MECHANISM = "outcome"


def compute() -> list[float]:
    r = C.demo("outcome")
    g, _ = C.example_inputs("outcome")
    first_err = int(torch.nonzero(g[0].step_slices()[2])[0])
    return r.metrics["advantages"] + [float(r.credit[0, first_err])]


def explain() -> str:
    return ("group outcomes [1, 1, 0, 0]: mean 0.5, population std 0.5 -> A = (r - 0.5)/0.5 = [1, 1, -1, -1]\n"
            "every generated token of response 0 gets A = +1, including the wrong step '17 + 2 = 18'")
