"""PPO clipping and the KL-shaped reward [ftip-003D, ftip-003F, ftip-003I, ftip-003J].

Link parameters: ``/ppo?epsilon=0.2&advantage=-2&ratio=0.7`` (also ``epsilon_high``, ``score``, ``kl_ratio``, ``beta``).
"""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.misconceptions import diagnose
from lab.ppo import clipped_surrogate, clipping_effect, kl_shaped_reward_from_ratio
from labui import colors, course_nav, example_button, example_note, figure, header, mark_point, route_through_app, shows_errors
from labui.cards import show_cards
from labui.predict import ask_chapter
from labui.share import Param, number, projector_on, restore_from_url, write_to_url
from worked_examples import ppo_clip as EX
from worked_examples import rlhf_shaped_reward as EXR

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "PPO clipping and the KL-shaped reward",
    "ftip-003D, ftip-003F, ftip-003H, ftip-003I, ftip-003J",
    "Schulman et al. 2017, §3, eq. 7; Ouyang et al. 2022, §3.5, eq. 2",
    "PPO takes the smaller of the plain and the clipped term. Once the ratio has moved past the band in the "
    "direction the advantage favours, the objective goes flat: no more incentive. Moves the advantage dislikes "
    "are never clipped away. DAPO's clip-higher widens only the upper edge ($\\epsilon_{\\mathrm{high}}$).",
)
PROJ = projector_on()
FORMULA = r"L^{\mathrm{CLIP}}=\hat{\mathbb E}_t\big[\min\big(\rho_t\hat A_t,\ \mathrm{clip}(\rho_t,1-\epsilon,1+\epsilon_{\mathrm{high}})\hat A_t\big)\big]"
if not PROJ:  # projector: the formula and the example buttons go below the main chart, so controls and chart fit 1280×720
    st.latex(FORMULA)

# defaults differ from both worked examples, so that loading one visibly changes the page
for k, v in {"ppo_eps": 0.2, "ppo_eps_high": 0.2, "ppo_adv": -1.5, "ppo_rho": 0.7,
             "kl_score": 1.5, "kl_ratio": 3.0, "kl_beta": 0.2}.items():
    st.session_state.setdefault(k, v)
PARAMS = {  # shareable link: readable name → widget key and the range it accepts
    "epsilon": Param("ppo_eps", number(0.01, 0.99)),
    "epsilon_high": Param("ppo_eps_high", number(0.01, 1.5)),
    "advantage": Param("ppo_adv", number(-10.0, 10.0)),
    "ratio": Param("ppo_rho", number(0.0, 2.5)),
    "score": Param("kl_score", number(-10.0, 10.0)),
    "kl_ratio": Param("kl_ratio", number(0.01, 100.0)),
    "beta": Param("kl_beta", number(0.0, 1.0)),
}
restore_from_url(PARAMS)



def example_buttons() -> None:
    b1, b2 = st.columns(2)
    with b1:
        example_button("Load worked example ftip-003I (ε = 0.2, A = 2, ρ = 1.4)",
                       {"ppo_eps": 0.2, "ppo_eps_high": 0.2, "ppo_adv": 2.0, "ppo_rho": 1.4}, "ppo_example")
    with b2:
        example_button("Load worked example ftip-003J (score 0.8, ratio 2, β = 0.1)", {"kl_score": 0.8, "kl_ratio": 2.0, "kl_beta": 0.1}, "kl_example")


if not PROJ:
    example_buttons()
# projector: controls beside the chart so both fit a 1280×720 screen; otherwise controls in a row above it
left, right = st.columns([1, 2]) if PROJ else (st.container(), None)  # None: the chart follows in page order
c1, c2, c3 = (left, left, left) if PROJ else left.columns(3)
rho = c3.slider(r"ratio ρ = $\pi_\theta / \pi_{\mathrm{old}}$", 0.0, 2.5, step=0.05, key="ppo_rho")
A = c2.number_input("advantage A (signed)", -10.0, 10.0, step=0.5, key="ppo_adv")
eps = c1.slider("ε (lower width)", 0.01, 0.99, step=0.01, key="ppo_eps")
eps_high = c1.slider(r"$\epsilon_{\mathrm{high}}$ (upper width; = ε for symmetric PPO)", 0.01, 1.5, step=0.01, key="ppo_eps_high")

with shows_errors(left):
    now = clipping_effect(rho, A, eps, eps_high)
    val = float(now.clipped)
    m1, m2, m3 = (left, left, left) if PROJ else left.columns(3)
    m1.metric("clipped objective min(ρA, clip(ρ)A)", f"{val:.4f}")
    m2.metric("unclipped ρA", f"{float(now.unclipped):.4f}")
    m3.metric("incentive removed", f"{float(now.removed):.4f}")
    if rho == 1.0:  # the first update on fresh samples (μ = 1): π_θ = π_old, so nothing is ever clipped
        show_cards(diagnose({"clip_ratio": [float(bool(now.removed > 0))]}, {"num_iterations": 1}, window=1), left)
    if st.session_state.get("ppo_example"):
        ex = [clipping_effect(r_, a_, 0.2) for a_, r_ in EX.INPUTS["cases"]]
        cases = [float(e.clipped) for e in ex]
        with left:
            example_note("ppo_example", EX, cases)
        left.caption("The three reference cases: " + "; ".join(f"A={a_:+g}, ρ={r_:g} → {float(e.clipped):g} (unclipped {float(e.unclipped):g})"
                                                                for (a_, r_), e in zip(EX.INPUTS["cases"], ex)))
    if not PROJ:
        ask_chapter("ppo")  # predict first; the figure below shows why
    grid = torch.linspace(0, 2.5, 251, dtype=torch.float64)
    curve = clipping_effect(grid, A, eps, eps_high)  # (251,) unclipped, clipped and their gap along the ratio axis
    fig = figure(f"Objective against the ratio, A = {A:+g}", "ratio ρ  [dimensionless]", "objective  [advantage units]")
    fig.add_vrect(x0=1 - eps, x1=1 + eps_high, fillcolor=colors.BAND, line_width=0, annotation_text="trust band")  # widget values
    flat = curve.removed > 0  # the clip binds: the objective no longer follows ρA
    if A != 0 and bool(flat.any()):
        xs = grid[flat]
        fig.add_vrect(x0=float(xs.min()), x1=float(xs.max()), fillcolor="gray", opacity=0.15, line_width=0, annotation_text="flat: clipped",
                      annotation_position="bottom left")
    # the key curve (PPO's objective) bold and solid; the unclipped reference thin and dashed
    fig.add_trace(go.Scatter(x=grid.tolist(), y=curve.unclipped.tolist(), name="unclipped ρA",
                             line=dict(dash="dash", color=colors.REFERENCE, width=colors.REFERENCE_WIDTH)))
    fig.add_trace(go.Scatter(x=grid.tolist(), y=curve.clipped.tolist(), name="PPO min(ρA, clip(ρ)A)",
                             line=dict(color=colors.KEY, width=colors.KEY_WIDTH + (2 if PROJ else 0))))
    for a_, r_ in EX.INPUTS["cases"]:
        if (a_ > 0) == (A > 0) and abs(abs(a_) - abs(A)) < 1e-9:
            fig.add_trace(go.Scatter(x=[r_], y=[float(clipped_surrogate(r_, a_, eps, eps_high))], mode="markers+text",
                                     text=[f"ref case ρ={r_:g}"], textposition="top center",
                                     marker=dict(size=10, symbol="diamond", color=colors.REFERENCE), name=f"reference case ρ={r_:g}"))
    mark_point(fig, rho, val, color=colors.CURRENT)
    (right or st).plotly_chart(fig, width="stretch", key="ppo_curve")
if PROJ:
    st.latex(FORMULA)
    example_buttons()
    ask_chapter("ppo")
write_to_url(PARAMS)

st.subheader("KL-shaped reward (RLHF)")
st.latex(r"R=r_\phi(x,y)-\beta\log\frac{\pi_\theta(y\mid x)}{\pi_{\mathrm{ref}}(y\mid x)}")
c1, c2, c3 = st.columns(3)
score = c1.number_input(r"reward-model score $r_\phi$", -10.0, 10.0, step=0.1, key="kl_score")
ratio = c2.number_input(r"$\pi_\theta(y\mid x) / \pi_{\mathrm{ref}}(y\mid x)$", 0.01, 100.0, step=0.1, key="kl_ratio")
beta = c3.slider("β", 0.0, 1.0, step=0.01, key="kl_beta")
with shows_errors():
    shaped = float(kl_shaped_reward_from_ratio(score, ratio, beta))
    st.metric("shaped reward", f"{shaped:.4f}")
    example_note("kl_example", EXR, [shaped])
    betas = torch.linspace(0.01, 1.0, 100, dtype=torch.float64)
    ys = [float(kl_shaped_reward_from_ratio(score, ratio, b)) for b in betas.tolist()]
    fig = figure("Shaped reward against β", "β", "shaped reward  [reward units]", height=300)
    fig.add_trace(go.Scatter(x=betas.tolist(), y=ys, name="R(β)", line=dict(color=colors.KEY, width=colors.KEY_WIDTH)))
    mark_point(fig, beta, shaped, color=colors.CURRENT)
    st.plotly_chart(fig, width="stretch", key="kl_curve")

course_nav(__file__)
