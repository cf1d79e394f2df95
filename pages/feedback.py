"""Outcome vs process feedback [ftip-003W … ftip-0041, ftip-004E, ftip-004F]."""

import plotly.graph_objects as go
import streamlit as st

from lab.feedback import EXAMPLE_STEPS, is_online_measurable, label_trace
from lab.grpo import group_advantages, length_mask, process_advantages, step_end_positions, token_advantages
from labui import course_nav, example_button, example_note, figure, header, route_through_app, shows_errors
from labui.predict import ask_chapter
from labui.share import Param, flag, restore_from_url, text, write_to_url
from worked_examples import process_labels as EX

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Outcome vs process feedback",
    "ftip-003W, ftip-003X, ftip-003Z, ftip-0040, ftip-0041, ftip-004F",
    "Lightman et al. 2023, §2.5–2.6; Shao et al. 2024, §4.1.2–4.1.3",
    "An outcome label judges the finished answer; process labels judge each step. They can disagree: a right "
    "answer reached through a wrong step. They also differ in timing: a label is usable online at step t only "
    "if it was computed from what existed at step t, not by a reviewer who had already seen the ending.",
)
st.latex(r"\text{outcome: }\hat A_{i,t}=\frac{r_i-\operatorname{mean}(\mathbf r)}{\operatorname{std}(\mathbf r)}\ \text{for every token } t")
st.latex(r"\text{process: }\hat A_{i,t}=\sum_{j:\ \mathrm{end}(j)\ge t}\tilde r_i^{(j)},\quad"
         r"\tilde r_i^{(j)}=\frac{r_i^{(j)}-\operatorname{mean}(\mathbf R)}{\operatorname{std}(\mathbf R)}")
st.caption("Shao et al. 2024, §4.1.2 (outcome supervision) and §4.1.3 (process supervision): r is the outcome label of each "
           "response of the group, R every step label of the group, end(j) the last token of step j.")
# response 1 starts all correct, so that loading the worked example (a faulty step 3) visibly changes it
START = ["3 × 4 = 12", "12 + 5 = 17", "17 + 2 = 19", "so the answer is 19"]
ALT = ["3 × 4 = 12", "12 + 5 = 18", "18 + 2 = 20", "so the answer is 20"]
for i, s in enumerate(START):
    st.session_state.setdefault(f"fb_step{i}", s)
for i, s in enumerate(ALT):
    st.session_state.setdefault(f"fb_alt{i}", s)
st.session_state.setdefault("fb_answer", "19")
st.session_state.setdefault("fb_alt_answer", "20")
st.session_state.setdefault("fb_hindsight", False)
PARAMS = {**{f"r1_step{i + 1}": Param(f"fb_step{i}", text(120)) for i in range(4)}, "r1_answer": Param("fb_answer", text(120)),
          **{f"r2_step{i + 1}": Param(f"fb_alt{i}", text(120)) for i in range(4)}, "r2_answer": Param("fb_alt_answer", text(120)),
          "hindsight": Param("fb_hindsight", flag, lambda v: "1" if v else "0")}
restore_from_url(PARAMS)
example_button("Load worked example ftip-0041", {**{f"fb_step{i}": s for i, s in enumerate(EXAMPLE_STEPS)}, "fb_answer": "19", "fb_hindsight": False}, "fb_example")

st.markdown("**Problem:** Compute 3 × 4 + 5 + 2. Target answer: **19**. Two sampled responses form a group.")
c1, c2 = st.columns(2)
steps = [c1.text_input(f"response 1, step {i + 1}", key=f"fb_step{i}") for i in range(4)]
ans = c1.text_input("response 1, final answer", key="fb_answer")
alt = [c2.text_input(f"response 2, step {i + 1}", key=f"fb_alt{i}") for i in range(4)]
alt_ans = c2.text_input("response 2, final answer", key="fb_alt_answer")
hind = st.checkbox("process labels come from a reviewer who read the whole response (hindsight)", key="fb_hindsight")

MAX_STEP_CHARS = 120  # a step is one line of arithmetic; the bound keeps every rerun fast
with shows_errors():
    for name, text in [(f"response 1, step {i + 1}", x) for i, x in enumerate(steps)] + [(f"response 2, step {i + 1}", x) for i, x in enumerate(alt)] + \
            [("response 1, final answer", ans), ("response 2, final answer", alt_ans)]:
        if len(text) > MAX_STEP_CHARS:
            raise ValueError(f"{name}: at most {MAX_STEP_CHARS} characters on this page; got {len(text)}")
    out1, proc1 = label_trace("response-1", steps, ans, "19", reviewer_hindsight=hind)
    out2, proc2 = label_trace("response-2", alt, alt_ans, "19", reviewer_hindsight=hind)
    computed = [out1.value] + [p.value for p in proc1]
    m = st.columns(5)
    m[0].metric("f_out (response 1)", f"{out1.value:g}")
    for k, p in enumerate(proc1):
        m[k + 1].metric(f"f{k + 1}", f"{p.value:g}")
    example_note("fb_example", EX, computed, fmt=lambda x: f"{x:g}")
    st.markdown("**Online measurability** (ftip-003Z): can the learner use this label at step t?")
    table = {"label": ["f_out"] + [f"f{p.step}" for p in proc1]}
    for t in range(1, 5):
        table[f"at step {t}"] = ["yes" if is_online_measurable(lab, t) else "no" for lab in [out1] + proc1]
    st.dataframe(table, hide_index=True, width="stretch")

    # token-level credit: words are tokens (an empty step still takes one position, so every step has an end)
    words = [[w for s in st_ for w in (s.split() or [""])] for st_ in (steps, alt)]
    ends = [step_end_positions([len(s.split() or [""]) for s in st_]) for st_ in (steps, alt)]
    T = max(e[-1] for e in ends) + 1
    outcome_adv = group_advantages([out1.value, out2.value], 2, eps=1e-4)
    proc_adv = process_advantages([[p.value for p in proc1], [p.value for p in proc2]], ends, length=T)
    oc = token_advantages(outcome_adv, length_mask([len(w) for w in words], max_length=T))  # (2, T) one advantage per response
    # full width, one chart under the other: each word gets a cell wide enough to read (blue positive, red negative)
    for z, title in ((oc, "Outcome GRPO: one advantage per response"), (proc_adv, "Process GRPO: sum over this and later steps")):
        fig = figure(title, "token position (one word per cell)", "", height=240)
        fig.add_trace(go.Heatmap(z=z.tolist(), x=list(range(T)), y=["response 1", "response 2"], colorscale="RdBu", zmid=0, xgap=2, ygap=2,
                                 text=[w + [""] * (T - len(w)) for w in words], texttemplate="%{text}", textfont=dict(size=15),
                                 colorbar=dict(title="Â"), hovertemplate="%{y}, token %{x}: %{text}<br>Â = %{z:.3f}<extra></extra>"))
        fig.update_yaxes(autorange="reversed", tickfont=dict(size=14))
        st.plotly_chart(fig, width="stretch", key=f"fb_{title[:7]}")
    st.markdown(
        "**Why a correct step can get negative credit.** Outcome credit is one number per response: the response's "
        "reward minus the group's mean, shared by every token. Response 2's first step (3 × 4 = 12) is right, but the "
        "response ends wrong, so that step gets the same negative credit as its wrong steps; likewise response 1's "
        "faulty step gets the same positive credit as its good ones when the answer is right. Only process labels "
        "judge each step by itself: process credit drops at a faulty step even when the outcome is correct [ftip-004F].")
write_to_url(PARAMS)

st.subheader("Predict, then reveal")
ask_chapter("feedback")
course_nav(__file__)
