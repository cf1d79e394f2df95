"""Predictions for the Dynamics chapter: two of the page's phenomena [ftip-003R, ftip-004J], answered by
training the lab's tiny policies with lab.playground (the same setups the page's preset buttons load)."""

from lab import playground as P
from lab.quiz import Question

_DPO, _LENGTH = P.PRESETS["dpo"], P.PRESETS["length"]


def _dpo_answer() -> str:
    s = _DPO.setup  # three-outcome DPO policy, 40 exact steps, lr 0.5, β = 1
    run = P.train(P.dpo_three_outcome_bandit(), "dpo", s["steps"], s["lr"], seed=0, exact=s["exact"], beta=s["beta"])
    return _DPO.answer({"DPO": run})


def _length_answer() -> float:
    return float(_LENGTH.answer({}))  # the ratio of the bnpo weights of a 4-token and a 1-token response


QUESTIONS = [
    Question("dynamics-dpo-chosen", "dynamics", _DPO.question + " (three outcomes, π_ref = (0.4, 0.4, 0.2), β = 1, 40 exact steps)",
             _dpo_answer, choices=_DPO.choices, explanation=_DPO.explanation),
    Question("dynamics-length-weight", "dynamics", _LENGTH.question + f" (within ±{_LENGTH.tolerance:g})", _length_answer, tolerance=_LENGTH.tolerance,
             explanation=_LENGTH.explanation),
]
