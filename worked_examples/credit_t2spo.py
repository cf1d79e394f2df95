"""T2SPO: a failure's last step is not zero distance from success [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-t2spo"
FTIP = "credit-bank"
SOURCE = "credit-bank (T2SPO entries: successor distance 0 at success, progress 0 at failure; GRPO zeroes truncated credit, PPO uses the predicted successor); distances are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"distances": [3, 2, 2, 1], "cases": ["success", "failure", "truncated"]}
EXPECTED = [1.0, 0.0, 2.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
TOLERANCE = 1e-12
MECHANISM = "t2spo"


def compute() -> list[float]:
    r = C.demo("t2spo")
    g, kw = C.example_inputs("t2spo")
    ppo = C.t2spo_credit(g[2:], **{**kw, "truncation": "ppo"})
    return sum(r.metrics["progress"], []) + ppo.metrics["progress"][0]


def explain() -> str:
    return ("progress d_j-1 - d_j = [1, 0, ...]; last step: success 2 - 0 = 2; failure 0; truncated (grpo) 0; truncated (ppo) 2 - 1 = 1")
