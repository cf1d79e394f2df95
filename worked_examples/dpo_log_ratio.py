"""A Direct Preference Optimization log-ratio calculation [ftip-003S]."""

import math

from lab.dpo import dpo_loss, preference_probability

ID = "dpo-log-ratio"
FTIP = "ftip-003S"
SOURCE = "definitions ftip-003S (Rafailov et al. 2023, §4, eq. 7)"
INPUTS = {"policy_chosen": 0.6, "ref_chosen": 0.3, "policy_rejected": 0.2, "ref_rejected": 0.4, "beta": 0.5}
EXPECTED = [math.log(2), 2 / 3, math.log(1.5)]
TOLERANCE = 1e-12


def _logps():
    i = INPUTS
    return [math.log(i["policy_chosen"]), math.log(i["policy_rejected"]), math.log(i["ref_chosen"]), math.log(i["ref_rejected"])]


def compute() -> list[float]:
    lp = _logps()
    beta = INPUTS["beta"]
    losses, rc, rr = dpo_loss(*lp, beta=beta)
    z = float(rc - rr)  # beta * Delta
    return [z, float(preference_probability(*lp, beta=beta)), float(losses)]


def explain() -> str:
    z, p, loss = compute()
    return f"z = 1/2 [log 2 - log 1/2] = {z:.4f} (= log 2); sigma(z) = {p:.4f}; -log sigma(z) = {loss:.4f}"
