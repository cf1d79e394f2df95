"""SFT and loss masks [ftip-002A … ftip-002I].

Link parameters: ``/sft?mask=completion&example1=…&example2=…&include_example2=1`` (probabilities comma-separated).
"""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.kl import log_probabilities
from lab.sft import loss_mask, sft_loss
from labui.demo_data import SFT_EXAMPLE_1, SFT_EXAMPLE_2, SFT_P1, SFT_P2
from lab.sft import sft_token_weights
from labui import colors, course_nav, example_button, example_note, figure, header, parse_floats, route_through_app, shows_errors
from labui.predict import ask_chapter
from labui.share import Param, choice, flag, restore_from_url, text, write_to_url
from worked_examples import sft_response_only as EX

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Supervised fine-tuning and loss masks",
    "ftip-002A, ftip-002F, ftip-002G, ftip-002H",
    "Ouyang et al. 2022, §3.5 and App. C.1; Wei et al. 2022, §2",
    "Teacher forcing gives every token a log-probability, but only the tokens selected by the **loss mask** are "
    "supervised. The prompt stays visible as context either way. How the selected terms are averaged is a second, "
    "separate choice: per token, per example, or a plain sum, and it decides how much long answers weigh.",
)
st.latex(r"L_{\mathrm{sft}}=-\sum_{z}\sum_{t} w_t(z)\,m_t(z)\,\log\pi_\theta(y_t\mid s_{\mathrm{pr}}(x)\Vert y_{<t}),\qquad w_t=\tfrac1{N_{\mathrm{resp}}}\ \text{(token normalization)}")

EX1, EX2 = SFT_EXAMPLE_1, SFT_EXAMPLE_2
DEFAULTS = {"sft_mode": "completion", "sft_p1": SFT_P1, "sft_p2": SFT_P2, "sft_use2": True}
for k, v in DEFAULTS.items():
    st.session_state.setdefault(k, v)
PARAMS = {  # shareable link: readable name → widget key
    "mask": Param("sft_mode", choice(["completion", "assistant", "full"])),
    "example1": Param("sft_p1", text(400)),
    "example2": Param("sft_p2", text(400)),
    "include_example2": Param("sft_use2", flag, lambda v: "1" if v else "0"),
}
restore_from_url(PARAMS)

example_button("Load the reference's worked example (ftip-002H)",
               {"sft_mode": "completion", "sft_p1": ", ".join(f"{p:g}" for p in EX.INPUTS["probs"]), "sft_use2": False}, "sft_example")

c1, c2 = st.columns([1, 2])
mode = c1.radio("Loss mask", ["completion", "assistant", "full"], key="sft_mode",
                help="completion: last assistant turn · assistant: every assistant turn · full: every real token")
use2 = c1.checkbox("Include example 2 (multi-turn, longer)", key="sft_use2")
p1 = c2.text_input("Example 1: probability of each next token  (USER ping ASSISTANT OK END)", key="sft_p1")
p2 = c2.text_input("Example 2: probability of each next token  (SYS USER add 2 3 ASSISTANT 5 END USER times 4 ASSISTANT 2 0 END)", key="sft_p2")
write_to_url(PARAMS)

examples = [EX1, EX2] if use2 else [EX1]
computed = None
with shows_errors():
    probs = [parse_floats(p1, "Example 1 probabilities")] + ([parse_floats(p2, "Example 2 probabilities")] if use2 else [])  # ≤ 64 each
    batch = loss_mask(examples, mode)
    T = batch.loss_mask.shape[1]
    for i, (p, ex) in enumerate(zip(probs, examples)):
        n = sum(len(s.tokens) for s in ex)
        if len(p) != n:
            raise ValueError(f"Example {i + 1} probabilities: need {n} values (one per token), got {len(p)}")
    logp = torch.zeros(len(examples), T, dtype=torch.float64)
    for i, p in enumerate(probs):
        logp[i, : len(p)] = log_probabilities(p, f"Example {i + 1} probabilities")  # padding keeps 0 (masked out)
    losses = {n: float(sft_loss(logp, batch.loss_mask, n)) for n in ("token", "sequence", "sum")}
    computed = [losses["sum"], losses["token"]]

    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Loss, token mean", f"{losses['token']:.4f}")
    m2.metric("Loss, sequence mean", f"{losses['sequence']:.4f}")
    m3.metric("Loss, sum", f"{losses['sum']:.4f}")
    m4.metric("Supervised tokens N_resp", f"{sum(int(x) for row in batch.loss_mask.tolist() for x in row)}")
    example_note("sft_example", EX, computed)
    ask_chapter("sft")  # predict first; the charts below show why

    # the three normalizations side by side: the loss each gives, and the weight each puts on every supervised token
    n1, n2 = st.columns(2)
    names = ["token mean", "sequence mean", "sum"]
    lf = figure("Loss under each normalization", "normalization", "loss  [nats]", height=300)
    lf.add_trace(go.Bar(x=names, y=[losses["token"], losses["sequence"], losses["sum"]], text=[f"{losses[k]:.3f}" for k in ("token", "sequence", "sum")],
                        marker_color=[colors.KEY, colors.POSITIVE, colors.REFERENCE], name="loss"))
    n1.plotly_chart(lf, width="stretch", key="sft_norms")
    sup = [(i, t) for i in range(len(examples)) for t in range(T) if batch.loss_mask[i, t] > 0]  # supervised positions
    labels = [f"ex{i + 1}:{batch.tokens[i][t]}" for i, t in sup]
    wf = figure("Weight wₜ of each supervised token", "supervised token", "weight", height=300)
    for norm, color in (("token", colors.KEY), ("sequence", colors.POSITIVE)):
        w = sft_token_weights(batch.loss_mask, norm)  # (B, T)
        wf.add_trace(go.Bar(x=labels, y=[float(w[i, t]) for i, t in sup], name=f"{norm} mean", marker_color=color))
    wf.update_layout(barmode="group")
    n2.plotly_chart(wf, width="stretch", key="sft_weights")
    st.caption("Sum normalization puts weight 1 on every supervised token (not drawn: the loss then grows with length). "
               "Token mean: every supervised token of the batch weighs the same, so an example with more answer tokens "
               "weighs more in total. Sequence mean: each example's tokens share 1/B, so a short answer's tokens weigh more each.")

    for i in range(len(examples)):
        n = sum(1 for role in batch.roles[i] if role != "pad")  # real tokens of example i
        toks = [str(t) for t in batch.tokens[i][:n]]
        nll = (-logp[i, :n]).tolist()
        counted = batch.loss_mask[i, :n].tolist()
        fig = figure(f"Example {i + 1}: −log p of each token (green: counted in the loss)", "token (role)", "−log p  [nats]", height=300)
        labels = [f"{k}:{t} ({r[0]})" for k, (t, r) in enumerate(zip(toks, batch.roles[i][:n]))]
        fig.add_trace(go.Bar(x=labels, y=nll, marker_color=[colors.KEY if c else colors.REFERENCE for c in counted],
                             text=[f"{v:.2f}" for v in nll], name="−log p"))
        st.plotly_chart(fig, width="stretch", key=f"sft_fig_{i}")
    st.caption("Grey tokens are context only (still attended to, never supervised); green tokens enter the loss. "
               "With example 2 included, compare the token and sequence means: the token mean lets the longer answer dominate.")

course_nav(__file__)
