"""Home: what the lab is for, the chapter map, notebooks and small runs."""

import streamlit as st

import worked_examples
from labui import route_through_app

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

st.title("Post-Training Lab")
st.markdown(
    """
Compute LLM post-training instead of only reading about it. Every number on these pages comes from
the tested library in `lab/`, the same code the notebooks and the tests call. Change an input and
watch the losses, probabilities and advantages move. Each page shows its formula, the tag of the
definition in the reference (`definitions-and-worked-examples.txt`) and the paper it comes from, and
has a button that loads the reference's worked example and puts the stated value beside the computed one
(where the reference gives a construction without numbers, the page says the numbers are the lab's own).

| page | what you can vary | library | reference |
|---|---|---|---|
| SFT and loss masks | mask mode, per-token probabilities, normalization | `lab.sft` | ftip-002A … 002I |
| Preferences and reward models | scores, offset, a comparison table with ties | `lab.preference` | ftip-002J … 002V |
| Returns and advantages | rewards, values, γ, λ | `lab.rl` | ftip-0030 … 003E |
| PPO clipping | ε, ε_high, sign of A, ratio; β of the shaped reward | `lab.ppo` | ftip-003D … 003J |
| KL and the optimal policy | reference distribution, rewards, β | `lab.kl`, `lab.dpo` | ftip-006X, 003O, 003P |
| DPO | four probabilities, β | `lab.dpo` | ftip-003M … 003S |
| GRPO and RLVR | group rewards, std divisor, ε, scale, zero-std policy, ratios, lengths | `lab.grpo` | ftip-004B … 004N |
| Outcome vs process feedback | the steps of two traces, label timing | `lab.feedback`, `lab.grpo` | ftip-003W … 0041 |
| Agentic training and replay | actions, sandbox runs, rounds, replay, gradient gate | `lab.agentic`, `lab.replay` | ftip-004P … 006B |
| Small runs | train a tiny GPT-2 with SFT, DPO or GRPO live; stop, resume, compare | `lab.smallrun` | ftip-006Q |

**Notebooks**: `.venv/bin/jupyter lab notebooks/` opens one notebook per chapter, built on the same library.

**Small runs from a terminal**: `.venv/bin/python -m lab.smallrun grpo --out runs/my-grpo` (SFT, DPO, GRPO; `--help` lists the knobs).

**From a terminal**: `python -m worked_examples --explain` recomputes every worked example of the reference (and says where the lab supplied its own numbers).
"""
)


@st.cache_data(show_spinner="recomputing the worked examples (one runs in the sandbox)…")
def example_table() -> list[dict]:
    return [{"id": r["id"], "ftip": r["ftip"], "computed": ", ".join(f"{x:.4g}" for x in r["computed"]),
             "expected": ", ".join(f"{x:.4g}" for x in r["expected"]), "expected values from": worked_examples.STATED_BY[r["kind"]],
             "ok": "yes" if r["ok"] else "MISMATCH"} for r in worked_examples.run_all()]


st.subheader("Worked examples, recomputed by the library")
st.caption("\"expected values from\": reference = an Example of the reference states them; lab's own illustration = the "
           "reference gives the construction without numbers and the lab chose the inputs; definition + lab's inputs = a "
           "Definition applied to inputs the lab chose.")
st.dataframe(example_table(), hide_index=True, width="stretch")
