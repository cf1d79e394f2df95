"""Every worked example of the reference, recomputed by calling ``lab``.

Each example is a module with ``ID``, ``FTIP``, ``SOURCE``, ``INPUTS`` (also used by the pages'
"load the worked example" controls), ``EXPECTED`` (the reference's stated values), ``TOLERANCE``
(how far the reference rounded), ``compute()`` → list of numbers and ``explain()`` → the steps.

``python -m worked_examples`` prints a table; ``--json`` prints the machine-readable list.
"""

from __future__ import annotations

import importlib
import math
from types import ModuleType

# Order: the reference's chapter order.
MODULES = [
    "sft_response_only",
    "bradley_terry",
    "preference_cycle",
    "return_advantage",
    "policy_gradient_baseline",
    "ppo_clip",
    "rlhf_shaped_reward",
    "dpo_log_ratio",
    "dpo_relative",
    "process_labels",
    "verifiable_reward",
    "rlvr_round",
    "grpo_group_clip",
    "code_agent_trace",
    "replay_annotation",
    "dgg_gate",
    "sign_invariant_forecast",
    "credit_outcome",
    "credit_process_labels",
    "credit_math_shepherd",
    "credit_potential_shaping",
    "credit_shapley",
    "credit_pava",
    "credit_mart",
    "credit_mgepo",
    "credit_carm",
    "credit_taco",
    "credit_rubric_dropout",
    "credit_tag",
    "credit_sharpo",
    "credit_residual_advantage",
    "credit_t2spo",
    "credit_knowgpo",
]


def examples() -> list[ModuleType]:
    return [importlib.import_module(f"worked_examples.{m}") for m in MODULES]


def by_id(example_id: str) -> ModuleType:
    for mod in examples():
        if mod.ID == example_id:
            return mod
    raise KeyError(f"no worked example with id {example_id!r}")


def check(mod: ModuleType) -> dict:
    """Run one example: ``{"id", "ftip", "computed", "expected", "ok"}``."""
    computed = [float(x) for x in mod.compute()]
    expected = [float(x) for x in mod.EXPECTED]
    ok = len(computed) == len(expected) and all(
        math.isclose(c, e, rel_tol=0.0, abs_tol=mod.TOLERANCE) for c, e in zip(computed, expected)
    )
    return {"id": mod.ID, "ftip": mod.FTIP, "computed": computed, "expected": expected, "ok": ok}


def run_all() -> list[dict]:
    return [check(m) for m in examples()]
