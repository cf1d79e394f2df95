"""Cyclic preferences that no scalar ordering represents [ftip-002V]."""

import itertools

from lab.preference import Comparison, bradley_terry_probability, find_preference_cycle, fit_bradley_terry

ID = "preference-cycle"
FTIP = "ftip-002V"
SOURCE = "definitions ftip-002V; overview, 'Learned rewards from comparisons'"
INPUTS = {"pairs": [("A", "B"), ("B", "C"), ("C", "A")]}  # (winner, loser)
EXPECTED = [3]
TOLERANCE = 0


def comparisons() -> list[Comparison]:
    return [Comparison("x", w, l, "judge-1", "a") for w, l in INPUTS["pairs"]]


def scalar_order_exists() -> bool:
    """Brute force: does any strict ordering of the items satisfy every comparison?"""
    items = sorted({i for p in INPUTS["pairs"] for i in p})
    for order in itertools.permutations(items):
        rank = {it: -k for k, it in enumerate(order)}
        if all(rank[w] > rank[l] for w, l in INPUTS["pairs"]):
            return True
    return False


def compute() -> list[float]:
    cycle = find_preference_cycle(comparisons())
    return [len(cycle) if cycle else 0]


def explain() -> str:
    cycle = find_preference_cycle(comparisons())
    scores = fit_bradley_terry(comparisons())
    probs = [float(bradley_terry_probability(scores[w], scores[l])) for w, l in INPUTS["pairs"]]
    return (
        f"cycle found: {' > '.join(cycle)} > {cycle[0]}; a strict scalar order exists: {scalar_order_exists()}\n"
        f"best Bradley-Terry fit: scores {({k: round(v, 6) for k, v in scores.items()})}, "
        f"so every fitted win probability is {[round(p, 3) for p in probs]}: no score orders the cycle"
    )
