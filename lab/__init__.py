"""Post-Training Lab core library: one module per chapter of the reference.

sft · preference · rl · kl · ppo · dpo (response-level formulas), and the second half of the
reference in feedback · rlvr · grpo · agentic · replay. Pure functions, torch in and out; plain
floats and lists are accepted and become float64 tensors.
"""

__version__ = "0.1.0"
