"""DPO is relative: the loss falls while the chosen probability falls (overview, DPO section)."""

import math

from lab.dpo import dpo_loss

ID = "dpo-relative"
FTIP = "ftip-003R"
SOURCE = "overview, 'Direct preference optimization' (Rafailov et al. 2023, §4, eq. 7)"
INPUTS = {
    "beta": 1.0,
    "outcomes": ["chosen", "rejected", "other"],
    "reference": [0.40, 0.40, 0.20],
    "policy": [0.30, 0.20, 0.50],
}
EXPECTED = [math.log(1.5), math.log(2), math.log(5 / 3), 0.40, 0.30]  # loss ≈ 0.693 → 0.511
TOLERANCE = 1e-12


def compute() -> list[float]:
    ref, pol, beta = INPUTS["reference"], INPUTS["policy"], INPUTS["beta"]
    lr = [math.log(ref[0]), math.log(ref[1])]
    before, _, _ = dpo_loss(lr[0], lr[1], lr[0], lr[1], beta=beta)  # the policy starts at the reference
    after, rc, rr = dpo_loss(math.log(pol[0]), math.log(pol[1]), lr[0], lr[1], beta=beta)
    return [float(rc - rr) / beta, float(before), float(after), ref[0], pol[0]]


def explain() -> str:
    m, b, a, p0, p1 = compute()
    return (
        f"margin = log(0.30/0.40) - log(0.20/0.40) = {m:.4f} (= log 1.5)\n"
        f"loss {b:.3f} -> {a:.3f} while the chosen probability goes {p0:.2f} -> {p1:.2f}: the chosen response gains "
        "relative to the rejected one, not in absolute probability"
    )
