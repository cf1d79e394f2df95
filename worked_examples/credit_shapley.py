"""Exact Shapley credit of three spans, negatives kept (SCAR) [credit-bank]."""

import torch  # noqa: F401  (some examples index tensors)

from lab import credit as C

ID = "credit-shapley"
FTIP = "credit-bank"
SOURCE = "credit-bank (SCAR entry: 'an explanation can help only when its premise is also present'; 'three spans permit all coalitions'); the value table and the guiding example's value rule are the lab's own"
KIND = "illustration"  # the bank states the mechanism; these numbers are the lab\'s own
NOTE = "The credit bank describes this mechanism in words; the inputs and expected values here are the lab\'s own illustration, worked out by hand."
INPUTS = {"value": {"()": 0.0, "(0,)": 0.2, "(1,)": 0.0, "(2,)": -0.1, "(0, 1)": 0.6, "(0, 2)": 0.1, "(1, 2)": -0.1, "(0, 1, 2)": 0.5}}
EXPECTED = [0.4, 0.2, -0.1, 0.5, 0.25, 0.25, -0.25, 0.25]
TOLERANCE = 1e-12
MECHANISM = "shapley"


def compute() -> list[float]:
    import ast
    table = {ast.literal_eval(k): v for k, v in INPUTS["value"].items()}
    phi = C.shapley_credit(table, 3)
    return phi.tolist() + [float(phi.sum())] + C.demo("shapley").metrics["shapley_values"][0]


def explain() -> str:
    return ("phi_0 = 1/3(0.2) + 1/6(0.6) + 1/6(0.1+0.1) + 1/3(0.5+0.1) = 0.4\n"
            "phi_1 = 1/3(0) + 1/6(0.6-0.2) + 1/6(-0.1+0.1) + 1/3(0.5-0.1) = 0.2\n"
            "phi_2 = 1/3(-0.1) + 1/6(0.1-0.2) + 1/6(-0.1) + 1/3(0.5-0.6) = -0.1; sum 0.5 = v(all) - v(none)\n"
            "guiding example, v(S) = |S good|/3 * 0.5^|S wrong|: the wrong step gets -0.5 * E|S good|/3 = -0.25, each good step (0.5+0.25)/3 = 0.25")
