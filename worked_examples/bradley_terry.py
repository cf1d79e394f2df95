"""A Bradley–Terry comparison calculation [ftip-002T]."""

from lab.preference import bradley_terry_probability

ID = "bradley-terry"
FTIP = "ftip-002T"
SOURCE = "definitions ftip-002T (Bradley & Terry 1952, eq. 1)"
INPUTS = {"r_chosen": 2.0, "r_rejected": 0.5}
EXPECTED = [0.8176, 0.1824]
TOLERANCE = 5e-5  # the reference rounds to four decimals


def compute() -> list[float]:
    p = float(bradley_terry_probability(INPUTS["r_chosen"], INPUTS["r_rejected"]))
    q = float(bradley_terry_probability(INPUTS["r_rejected"], INPUTS["r_chosen"]))
    return [p, q]


def explain() -> str:
    p, q = compute()
    return f"sigma(2 - 0.5) = sigma(1.5) = {p:.4f}; the reversed pair: sigma(-1.5) = {q:.4f} = 1 - {p:.4f}"
