"""Selecting a historical rollout under a current policy stamp [ftip-0059]."""

import copy
import math

from lab.replay import CurrentPolicy, RolloutRecord, annotate

ID = "replay-annotation"
FTIP = "ftip-0059"
SOURCE = "definitions ftip-0059 (Miao et al. 2026, §3)"
INPUTS = {"behavior_prob": 0.25, "current_prob": 0.50, "collected_at": 0, "update_index": 3, "prior_uses": 2}
EXPECTED = [2, 3, 2]  # ratio, age, prior uses
TOLERANCE = 1e-12


def compute() -> list[float]:
    i = INPUTS
    rec = RolloutRecord("r-1", "q", "stamp-b", ("y",), (math.log(i["behavior_prob"]),), ("evidence",), i["collected_at"])
    before = copy.deepcopy(rec)
    cur = CurrentPolicy("stamp-n", lambda r: [math.log(i["current_prob"])])
    a = annotate(rec, cur, update_index=i["update_index"], prior_uses=i["prior_uses"])
    if rec != before:
        raise AssertionError("annotate mutated the stored rollout record")
    return [a.ratios[0], a.age, a.prior_uses]


def explain() -> str:
    r, age, uses = compute()
    return f"ratio 0.50/0.25 = {r:g}; age {age:g}; prior uses {uses:g}; the stored record compares equal to its copy from before"
