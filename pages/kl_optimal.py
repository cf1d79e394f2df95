"""KL and the optimal KL-regularized policy [ftip-006X, ftip-003C, ftip-003O, ftip-003P]."""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.dpo import dpo_metrics, log_partition, optimal_policy, reward_from_policy
from lab.kl import entropy, kl_regularized_objective
from labui import agrees, example_button, figure, header, mark_point, parse_floats, route_through_app, shows_errors
from worked_examples import dpo_relative as EXR

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "KL and the optimal policy",
    "ftip-006X, ftip-003C, ftip-003O, ftip-003P",
    "Rafailov et al. 2023, §3, eq. 3 and §4, eqs. 4–5",
    "Maximising expected reward minus β·KL(π ‖ π_ref) has a closed-form solution: reweight the reference "
    "by exp(r/β) and renormalise. Small β lets the policy chase reward far from the reference; large β keeps "
    "it close. Reading the identity backwards gives the reward from the policy up to a prompt-only constant: "
    "that is the step DPO builds on.",
)
st.latex(r"\max_\pi\ \mathbb E_{y\sim\pi}[r(y)]-\beta\,D_{\mathrm{KL}}(\pi\Vert\pi_{\mathrm{ref}})\quad\text{(ftip-003C)}")
st.latex(r"\pi^*(y)=\frac{\pi_{\mathrm{ref}}(y)\,e^{r(y)/\beta}}{Z},\qquad r(y)=\beta\log\frac{\pi^*(y)}{\pi_{\mathrm{ref}}(y)}+\beta\log Z,\qquad D_{\mathrm{KL}}(p\Vert q)=\sum_y p(y)\log\frac{p(y)}{q(y)}")

for k, v in {"klo_ref": "0.5, 0.3, 0.15, 0.05", "klo_r": "0, 1, 2, 3", "klo_beta": 1.0}.items():
    st.session_state.setdefault(k, v)
# rewards r = log(π/π_ref) (β = 1, log Z = 0) make the overview's DPO policy the optimum of this reference
EX_REF, EX_POL = EXR.INPUTS["reference"], EXR.INPUTS["policy"]
example_button(
    "Load the overview's three-outcome example (β = 1, π_ref = 0.4/0.4/0.2, π = 0.3/0.2/0.5)",
    {"klo_ref": ", ".join(f"{q:g}" for q in EX_REF), "klo_r": ", ".join(f"{x:.6f}" for x in reward_from_policy(EX_POL, EX_REF, 1.0).tolist()),
     "klo_beta": 1.0},
    "klo_example",
)
c1, c2 = st.columns(2)
ref_s = c1.text_input("reference distribution π_ref (sums to 1; zeros allowed)", key="klo_ref")
r_s = c1.text_input("rewards r(y), one per outcome", key="klo_r")
beta = c2.select_slider("β", options=[0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0], key="klo_beta")

with shows_errors():
    ref = parse_floats(ref_s, "reference distribution")
    r = parse_floats(r_s, "rewards")
    if len(ref) != len(r):
        raise ValueError(f"reference distribution and rewards must have one entry per outcome; got {len(ref)} and {len(r)}")
    pi = optimal_policy(ref, r, beta)
    obj = kl_regularized_objective(pi, ref, r, beta)
    kl, er = float(obj.kl), float(obj.expected_reward)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("KL(π* ‖ π_ref)", f"{kl:.4f}")
    m2.metric("E_π*[r]", f"{er:.4f}")
    m3.metric("objective E[r] − β·KL", f"{float(obj.objective):.4f}")
    m4.metric("H(π*)", f"{float(entropy(pi)):.4f}")
    if st.session_state.get("klo_example"):
        support = [i for i, q in enumerate(ref) if q > 0]
        rec = reward_from_policy(pi[support], torch.tensor(ref, dtype=torch.float64)[support], beta, log_partition(ref, r, beta))
        margin = dpo_metrics(rec[0:1], rec[1:2])["rewards/margins"]  # reward of outcome 1 minus outcome 2
        stated = EXR.EXPECTED[0]  # the overview's log 1.5
        ok = agrees(margin, stated, 1e-6)
        (st.success if ok else st.warning)(
            f"Overview, DPO section: the reward margin between the first two outcomes recovered from π* is "
            f"**{margin:.4f}**; the overview states log 1.5 = **{stated:.4f}**. π* = {[round(x, 3) for x in pi.tolist()]} "
            "(the overview's policy 0.30/0.20/0.50).")
    labels = [f"y{i + 1} (r={x:g})" for i, x in enumerate(r)]
    fig = figure(f"π* against π_ref at β = {beta:g}", "outcome", "probability")
    fig.add_trace(go.Bar(x=labels, y=ref, name="π_ref"))
    fig.add_trace(go.Bar(x=labels, y=pi.tolist(), name="π*"))
    fig.update_layout(barmode="group")
    st.plotly_chart(fig, width="stretch", key="klo_bars")
    betas = torch.logspace(-1.5, 1.5, 60, dtype=torch.float64)
    kls, ers = [], []
    for b in betas.tolist():
        o = kl_regularized_objective(optimal_policy(ref, r, b), ref, r, b)
        kls.append(float(o.kl))
        ers.append(float(o.expected_reward))
    fig2 = figure("Trade-off over β", "β  (log scale)", "nats / reward units")
    fig2.add_trace(go.Scatter(x=betas.tolist(), y=kls, name="KL(π* ‖ π_ref)  [nats]"))
    fig2.add_trace(go.Scatter(x=betas.tolist(), y=ers, name="E_π*[r]  [reward units]"))
    mark_point(fig2, beta, kl, name="current KL")
    mark_point(fig2, beta, er, name="current E[r]", color="darkorange")
    fig2.update_xaxes(type="log")
    st.plotly_chart(fig2, width="stretch", key="klo_sweep")
