"""Returns and advantages: discounted returns, TD residuals, GAE [ftip-0030, ftip-0032, ftip-0037, ftip-003E].

Link parameters: ``/returns?rewards=0,0,1,0,2&values=0.6,0.7,0.9,0.5,1&gamma=0.9&lambda=0.95``.
"""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.rl import advantage_from_baseline, discounted_returns, gae, td_residuals
from labui import colors, course_nav, example_button, example_note, figure, header, mark_point, parse_floats, route_through_app, shows_errors
from labui.predict import ask_chapter
from labui.share import Param, number, restore_from_url, text, write_to_url
from worked_examples import return_advantage as EX

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Returns, values and generalized advantage estimation",
    "ftip-0030, ftip-0032, ftip-0037, ftip-003E",
    "Sutton & Barto 2018, §3.3; Schulman et al. 2016, §2–3, eqs. 10 and 16",
    "A return adds up the rewards still to come, discounted by γ per step. An advantage compares it with a "
    "baseline such as a value estimate V. GAE mixes one-step TD residuals δ with weights $(\\gamma\\lambda)^l$: λ = 0 trusts "
    "V after a single step (low variance, biased by V), λ = 1 uses the whole Monte Carlo return minus V.",
)
st.latex(r"G_t=\sum_{k=t}^{N-1}\gamma^{k-t}R_{k+1},\quad \delta_t=R_{t+1}+\gamma V(H_{t+1})-V(H_t),\quad \hat A_t^{\mathrm{GAE}}=\sum_{l\ge0}(\gamma\lambda)^l\delta_{t+l}")

for k, v in {"ret_rewards": "0, 0, 1, 0, 2", "ret_values": "0.6, 0.7, 0.9, 0.5, 1.0", "ret_gamma": 0.9, "ret_lam": 0.95}.items():
    st.session_state.setdefault(k, v)
PARAMS = {  # shareable link: readable name → widget key (lists as comma-separated numbers)
    "rewards": Param("ret_rewards", text(400)),
    "values": Param("ret_values", text(400)),
    "gamma": Param("ret_gamma", number(0.0, 1.0)),
    "lambda": Param("ret_lam", number(0.0, 1.0)),
}
restore_from_url(PARAMS)
example_button("Load the reference's worked example (ftip-0037)", {"ret_rewards": "0, 1, 2", "ret_values": "0.4, 0, 0", "ret_gamma": 0.5, "ret_lam": 1.0}, "ret_example")

c1, c2 = st.columns(2)
rew_s = c1.text_input("rewards R₁ … R_N (one per step)", key="ret_rewards")
val_s = c1.text_input("value estimates $V(H_0), \\dots, V(H_{N-1})$  (V = 0 after the terminal step)", key="ret_values")
gamma = c2.slider("discount γ", 0.0, 1.0, step=0.01, key="ret_gamma")
lam = c2.slider("GAE λ", 0.0, 1.0, step=0.01, key="ret_lam")
write_to_url(PARAMS)
SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")  # plain-text subscripts for chart labels (plotly shows no TeX here)

with shows_errors():
    r = parse_floats(rew_s, "rewards")
    v = parse_floats(val_s, "value estimates")
    if len(r) != len(v):
        raise ValueError(f"rewards and value estimates must have the same length; got {len(r)} and {len(v)}")
    G = discounted_returns(r, gamma)
    delta = td_residuals(r, v, gamma)
    adv, lam_ret = gae(r, v, gamma, lam)
    mc = advantage_from_baseline(G, v)  # Monte Carlo advantage G_t − V(H_t), (N,)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("G₀", f"{float(G[0]):.4f}")
    m2.metric("Â₀ = G₀ − V(H₀)", f"{float(mc[0]):.4f}")
    m3.metric("GAE Â₀", f"{float(adv[0]):.4f}")
    m4.metric("δ₀", f"{float(delta[0]):.4f}")
    example_note("ret_example", EX, [float(G[0]), float(mc[0])])
    ask_chapter("returns")  # predict first; the charts below show why
    steps = [f"t={t}" for t in range(len(r))]
    fig = figure("Per-step quantities", "decision time t", "value  [reward units]")
    for name, y in (("return Gₜ", G), ("TD residual δₜ", delta), (f"GAE Âₜ (λ = {lam:.2f})", adv), ("Gₜ − V(Hₜ)", mc)):
        fig.add_trace(go.Bar(x=steps, y=y.tolist(), name=name))
    fig.update_layout(barmode="group")
    st.plotly_chart(fig, width="stretch", key="ret_bars")
    lams = torch.linspace(0, 1, 51, dtype=torch.float64).tolist()
    sweep = [gae(r, v, gamma, lam_)[0].tolist() for lam_ in lams]  # 51 lists of N advantages
    fig2 = figure("λ sweep: GAE advantage of each step", "λ", "Âₜ  [reward units]")
    for t in range(min(len(r), 6)):
        fig2.add_trace(go.Scatter(x=lams, y=[row[t] for row in sweep], name=f"Â{str(t).translate(SUB)}"))
    mark_point(fig2, lam, float(adv[0]), name="current Â₀", color=colors.CURRENT)
    st.plotly_chart(fig2, width="stretch", key="ret_sweep")
    st.caption("At λ = 1 every curve reaches Gₜ − V(Hₜ); at λ = 0 it is the one-step δₜ.")

course_nav(__file__)
