"""KL and the optimal KL-regularized policy [ftip-006X, ftip-003C, ftip-003O, ftip-003P].

Link parameters: ``/kl_optimal?ref=0.5,0.3,0.15,0.05&rewards=0,1,2,3&beta=1``.
"""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.dpo import dpo_metrics, log_partition, optimal_policy, reward_from_policy
from lab.kl import entropy, kl_estimators, kl_regularized_objective
from lab.misconceptions import diagnose
from labui import agrees, colors, course_nav, example_button, figure, header, mark_point, parse_floats, route_through_app, shows_errors
from labui.cards import show_cards
from labui.predict import ask_chapter
from labui.share import Param, choice, restore_from_url, text, write_to_url
from worked_examples import dpo_relative as EXR

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "KL and the optimal policy",
    "ftip-006X, ftip-003C, ftip-003O, ftip-003P",
    "Rafailov et al. 2023, §3, eq. 3 and §4, eqs. 4–5",
    "Maximising expected reward minus $\\beta\\,\\mathrm{KL}(\\pi \\Vert \\pi_{\\mathrm{ref}})$ has a closed-form solution: reweight the reference "
    "by exp(r/β) and renormalise. Small β lets the policy chase reward far from the reference; large β keeps "
    "it close. Reading the identity backwards gives the reward from the policy up to a prompt-only constant: "
    "that is the step DPO builds on.",
)
st.latex(r"\max_\pi\ \mathbb E_{y\sim\pi}[r(y)]-\beta\,D_{\mathrm{KL}}(\pi\Vert\pi_{\mathrm{ref}})\quad\text{(ftip-003C)}")
st.latex(r"\pi^*(y)=\frac{\pi_{\mathrm{ref}}(y)\,e^{r(y)/\beta}}{Z},\qquad r(y)=\beta\log\frac{\pi^*(y)}{\pi_{\mathrm{ref}}(y)}+\beta\log Z,\qquad D_{\mathrm{KL}}(p\Vert q)=\sum_y p(y)\log\frac{p(y)}{q(y)}")

BETAS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0]
for k, v in {"klo_ref": "0.5, 0.3, 0.15, 0.05", "klo_r": "0, 1, 2, 3", "klo_beta": 1.0}.items():
    st.session_state.setdefault(k, v)
PARAMS = {  # shareable link: readable name → widget key (lists as comma-separated numbers)
    "ref": Param("klo_ref", text(200)),
    "rewards": Param("klo_r", text(200)),
    "beta": Param("klo_beta", choice(BETAS)),
}
restore_from_url(PARAMS)
# rewards r = log(π/π_ref) (β = 1, log Z = 0) make the overview's DPO policy the optimum of this reference
EX_REF, EX_POL = EXR.INPUTS["reference"], EXR.INPUTS["policy"]
example_button(
    "Load the overview's three-outcome example (β = 1, π_ref = 0.4/0.4/0.2, π = 0.3/0.2/0.5)",
    {"klo_ref": ", ".join(f"{q:g}" for q in EX_REF), "klo_r": ", ".join(f"{x:.6f}" for x in reward_from_policy(EX_POL, EX_REF, 1.0).tolist()),
     "klo_beta": 1.0},
    "klo_example",
)
c1, c2 = st.columns(2)
ref_s = c1.text_input(r"reference distribution $\pi_{\mathrm{ref}}$ (sums to 1; zeros allowed)", key="klo_ref")
r_s = c1.text_input(r"rewards $r(y)$, one per outcome", key="klo_r")
beta = c2.select_slider("β", options=BETAS, key="klo_beta")
write_to_url(PARAMS)

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
    ask_chapter("kl_optimal")  # predict first; the charts below show why
    labels = [f"y{i + 1} (r={x:g})" for i, x in enumerate(r)]
    fig = figure(f"π* against π<sub>ref</sub> at β = {beta:g}", "outcome", "probability")
    fig.add_trace(go.Bar(x=labels, y=ref, name="π<sub>ref</sub>", marker_color=colors.REFERENCE))
    fig.add_trace(go.Bar(x=labels, y=pi.tolist(), name="π*", marker_color=colors.KEY))
    fig.update_layout(barmode="group")
    st.plotly_chart(fig, width="stretch", key="klo_bars")
    betas = torch.logspace(-1.5, 1.5, 60, dtype=torch.float64)
    kls, ers = [], []
    for b in betas.tolist():
        o = kl_regularized_objective(optimal_policy(ref, r, b), ref, r, b)
        kls.append(float(o.kl))
        ers.append(float(o.expected_reward))
    fig2 = figure("Trade-off over β", "β  (log scale)", "KL(π* ‖ π<sub>ref</sub>)  [nats]")
    fig2.add_trace(go.Scatter(x=betas.tolist(), y=kls, name="KL(π* ‖ π<sub>ref</sub>)  [nats, left axis]",
                              line=dict(color=colors.KEY, width=colors.KEY_WIDTH)))
    fig2.add_trace(go.Scatter(x=betas.tolist(), y=ers, name="E_π*[r]  [reward units, right axis]", yaxis="y2",
                              line=dict(color=colors.REFERENCE, width=colors.REFERENCE_WIDTH, dash="dash")))
    mark_point(fig2, beta, kl, name="current KL", color=colors.CURRENT)
    fig2.add_trace(go.Scatter(x=[beta], y=[er], mode="markers", name="current E[r]", yaxis="y2",
                              marker=dict(size=12, color=colors.CURRENT, symbol="diamond")))
    ticks = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20]  # one label per tick, at the 1-2-5 steps (no crowded minor labels)
    fig2.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks], minor=dict(showgrid=False))
    fig2.update_layout(yaxis2=dict(title="E_π*[r]  [reward units]", overlaying="y", side="right", showgrid=False, tickformat=".2f"),
                       margin=dict(l=50, r=60, t=50, b=40))
    st.plotly_chart(fig2, width="stretch", key="klo_sweep")

    st.subheader("Sampled KL estimators k1, k2, k3")
    st.latex(r"r=\frac{\pi_{\mathrm{ref}}(y)}{\pi^*(y)},\quad k_1=-\log r,\quad k_2=\tfrac12(\log r)^2,\quad k_3=(r-1)-\log r,\qquad y\sim\pi^*")
    est = kl_estimators(pi, ref)  # values (3, K) if y were the sample; means (3,) exact expectations under π*
    e1, e2, e3, e4 = st.columns(4)
    e1.metric("exact KL(π* ‖ π_ref)", f"{kl:.4f}")
    for col, name, m in zip((e2, e3, e4), ("k1", "k2", "k3"), est.means.tolist()):
        col.metric(f"E[{name}] over y ∼ π*", f"{m:.4f}")
    fig3 = figure("Each estimator's value when the sample is y (ftip-006X; Schulman 2020)", "sampled outcome y", "estimate  [nats]",
                  height=300)
    for row, name, color in zip(est.values.tolist(), ("k1 = log π*/π<sub>ref</sub>", "k2", "k3"), (colors.NEGATIVE, colors.REFERENCE, colors.KEY)):
        fig3.add_trace(go.Bar(x=labels, y=row, name=name, marker_color=color))
    fig3.update_layout(barmode="group")
    st.plotly_chart(fig3, width="stretch", key="klo_estimators")
    st.caption("k1 is negative for every outcome π* makes rarer than π_ref, yet its π*-weighted mean is the exact KL. k3 is never "
               "negative and has the same mean when π_ref puts no mass where π* has none; k2 is never negative but biased.")
    # one k1 value per outcome π* can sample: a negative one is the pattern the card explains
    show_cards(diagnose({"kl": [v for v, q in zip(est.values[0].tolist(), pi.tolist()) if q > 0]}, {"kl_estimator": "k1"}))

course_nav(__file__)
