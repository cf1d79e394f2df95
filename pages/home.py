"""Home: what the lab is for and how it is organised."""

import streamlit as st

import worked_examples

st.title("Post-Training Lab")
st.markdown(
    """
Compute LLM post-training instead of only reading about it. Every number on these pages comes from
the tested library in `lab/`, the same code the notebooks and the small-run engine call.
Change an input and watch the losses, probabilities and advantages move.

**Chapters** (tags point into the reference, `definitions-and-worked-examples.txt`):

| chapter | library module | reference |
|---|---|---|
| Supervised fine-tuning and loss masks | `lab.sft` | ftip-0029 … ftip-002I |
| Preferences and reward models | `lab.preference` | ftip-002J … ftip-002V |
| RL foundations: returns, advantages, GAE | `lab.rl` | ftip-002W … ftip-003E |
| KL, RLHF and PPO | `lab.kl`, `lab.ppo` | ftip-006X, ftip-0039 … ftip-003K |
| Direct Preference Optimization | `lab.dpo` | ftip-003L … ftip-003U |
"""
)
st.subheader("The reference's worked examples, recomputed now")
st.dataframe(
    [{"id": r["id"], "ftip": r["ftip"], "computed": ", ".join(f"{x:.4g}" for x in r["computed"]),
      "stated": ", ".join(f"{x:.4g}" for x in r["expected"]), "ok": "✅" if r["ok"] else "❌"} for r in worked_examples.run_all()],
    hide_index=True, use_container_width=True,
)
st.caption("The same table in a terminal: `python -m worked_examples` (or `--json`).")
