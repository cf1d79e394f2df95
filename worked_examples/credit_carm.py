"""CARM: opposite shifts cancel in the signed mean, not in the absolute mean [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-carm"
FTIP = "credit-bank"
SOURCE = "credit-bank (CARM entries: 'a sharp rise at one token and equal fall at another can average to zero'); numbers are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"old_logprobs": [-1, -1, -1, -1], "current_logprobs": [-0.5, -0.5, -1.5, -1.5], "threshold": 0.2}
EXPECTED = [0.0, 0.5, 1.0, 0.0, -1.0]
TOLERANCE = 1e-12
MECHANISM = "carm"


def compute() -> list[float]:
    r = C.demo("carm")
    return [r.metrics["mean_log_ratio"][0], r.metrics["mean_abs_log_ratio"][0], float(r.metrics["masked_responses"][0]),
            float(r.credit[0, 0]), float(r.credit[1, 0])]


def explain() -> str:
    return "log-ratios [+0.5, +0.5, -0.5, -0.5]: signed mean 0, absolute mean 0.5 > 0.2 -> response 0 masked; response 1 keeps A = -1"
