"""Every worked example of the reference, recomputed by calling ``lab``.

Each example is a module with ``ID``, ``FTIP``, ``SOURCE``, ``INPUTS`` (the inputs ``compute()`` really
uses, also loaded by the pages' "load the worked example" controls), ``EXPECTED``, ``TOLERANCE`` (how far
the stated values were rounded), ``compute()`` → list of numbers and ``explain()`` → the steps.

``KIND`` says where ``EXPECTED`` comes from (default ``"example"``):

- ``"example"``: an Example of the reference that states these numbers;
- ``"illustration"``: the reference gives the construction but no numbers; ``EXPECTED`` are the lab's own
  hand-computed values for inputs the lab chose (``NOTE`` says so);
- ``"definition"``: a Definition (not an example) applied to inputs the lab chose; ``EXPECTED`` follow from
  the definition and the constants it states.

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


KINDS = ("example", "illustration", "definition")
STATED_BY = {"example": "reference", "illustration": "lab's own illustration", "definition": "definition + lab's inputs"}


def kind(mod: ModuleType) -> str:
    """``"example"``, ``"illustration"`` or ``"definition"``: who states the module's ``EXPECTED`` values."""
    k = getattr(mod, "KIND", "example")
    if k not in KINDS:
        raise ValueError(f"{mod.__name__}.KIND must be one of {KINDS}; got {k!r}")
    return k


def check(mod: ModuleType) -> dict:
    """Run one example: ``{"id", "ftip", "kind", "computed", "expected", "ok"}``."""
    computed = [float(x) for x in mod.compute()]
    expected = [float(x) for x in mod.EXPECTED]
    ok = len(computed) == len(expected) and all(
        math.isclose(c, e, rel_tol=0.0, abs_tol=mod.TOLERANCE) for c, e in zip(computed, expected)
    )
    return {"id": mod.ID, "ftip": mod.FTIP, "kind": kind(mod), "computed": computed, "expected": expected, "ok": ok}


def run_all() -> list[dict]:
    return [check(m) for m in examples()]
