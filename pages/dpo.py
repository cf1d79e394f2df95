"""Direct Preference Optimization [ftip-003M … ftip-003S]; overview, DPO section.

Link parameters: ``/dpo?policy_chosen=0.6&ref_chosen=0.3&policy_rejected=0.2&ref_rejected=0.4&beta=0.5``.
"""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.dpo import dpo_gradient_weight, dpo_loss, dpo_metrics, log_ratio, preference_probability
from lab.kl import log_probabilities
from lab.misconceptions import diagnose
from labui import colors, course_nav, example_button, example_note, figure, header, mark_point, route_through_app, shows_errors
from labui.cards import show_cards
from labui.predict import ask_chapter
from labui.share import Param, number, projector_on, restore_from_url, write_to_url
from worked_examples import dpo_log_ratio as EX
from worked_examples import dpo_relative as EXR

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Direct Preference Optimization",
    "ftip-003M, ftip-003Q, ftip-003R, ftip-003S",
    "Rafailov et al. 2023, §4, eqs. 6–7",
    "DPO scores each response by how much the policy has raised its probability relative to the frozen "
    "reference ($\\ell = \\log \\pi/\\pi_{\\mathrm{ref}}$). The loss asks the chosen response's ℓ to exceed the rejected one's. It is "
    "relative: the chosen probability can fall while the loss falls, as long as the rejected one falls faster.",
)
PROJ = projector_on()
FORMULA = r"L_{\mathrm{DPO}}=-\log\sigma\big(\beta[\ell(y^+)-\ell(y^-)]\big),\qquad \ell(y)=\log\frac{\pi_\theta(y\mid x)}{\pi_{\mathrm{ref}}(y\mid x)}"
if not PROJ:  # projector: formula and example button go below the main chart, so controls and chart fit 1280×720
    st.latex(FORMULA)

# defaults differ from the worked example (0.6, 0.3, 0.2, 0.4, β 0.5): here both probabilities fall, the rejected faster
for k, v in {"dpo_pc": 0.25, "dpo_rc": 0.3, "dpo_pr": 0.1, "dpo_rr": 0.4, "dpo_beta": 0.5}.items():
    st.session_state.setdefault(k, v)
PARAMS = {  # shareable link: readable name → widget key and the range it accepts
    "policy_chosen": Param("dpo_pc", number(0.0, 1.0)),
    "ref_chosen": Param("dpo_rc", number(0.0, 1.0)),
    "policy_rejected": Param("dpo_pr", number(0.0, 1.0)),
    "ref_rejected": Param("dpo_rr", number(0.0, 1.0)),
    "beta": Param("dpo_beta", number(0.0, 2.0)),
}
restore_from_url(PARAMS)


def example_buttons() -> None:
    example_button("Load worked example ftip-003S", {k: EX.INPUTS[n] for k, n in [("dpo_pc", "policy_chosen"), ("dpo_rc", "ref_chosen"),
                   ("dpo_pr", "policy_rejected"), ("dpo_rr", "ref_rejected"), ("dpo_beta", "beta")]}, "dpo_example")


if not PROJ:
    example_buttons()

left, right = st.columns([1, 2]) if PROJ else (st.container(), None)  # None: the chart follows in page order
c1, c2, c3 = (left, left, left) if PROJ else left.columns(3)
beta = c3.slider("β", 0.0, 2.0, step=0.05, key="dpo_beta")
pc = c1.number_input(r"$\pi_\theta(y^+\mid x)$", 0.0, 1.0, step=0.05, key="dpo_pc", format="%.3f")
rc = c1.number_input(r"$\pi_{\mathrm{ref}}(y^+\mid x)$", 0.0, 1.0, step=0.05, key="dpo_rc", format="%.3f")
pr = c2.number_input(r"$\pi_\theta(y^-\mid x)$", 0.0, 1.0, step=0.05, key="dpo_pr", format="%.3f")
rr = c2.number_input(r"$\pi_{\mathrm{ref}}(y^-\mid x)$", 0.0, 1.0, step=0.05, key="dpo_rr", format="%.3f")
write_to_url(PARAMS)

with shows_errors(left):
    # policy chosen, policy rejected, reference chosen, reference rejected: validated log-probabilities
    lp = [log_probabilities(val, name) for val, name in ((pc, "π_θ(y⁺|x)"), (pr, "π_θ(y⁻|x)"), (rc, "π_ref(y⁺|x)"), (rr, "π_ref(y⁻|x)"))]
    losses, cr, rj = dpo_loss(*lp, beta=beta)
    z = dpo_metrics(cr, rj)["rewards/margins"]  # β·[ℓ(y⁺) − ℓ(y⁻)]
    prob = float(preference_probability(*lp, beta=beta))
    w = float(dpo_gradient_weight(*lp, beta=beta))
    m1, m2, m3, m4 = (left,) * 4 if PROJ else left.columns(4)
    m1.metric("β·margin z", f"{z:.4f}")
    m2.metric("loss −log σ(z)", f"{float(losses):.4f}")
    m3.metric("P_θ(y⁺ ≻ y⁻) = σ(z)", f"{prob:.4f}")
    m4.metric("gradient weight σ(−z)", f"{w:.4f}")
    left.caption(f"Implicit rewards (TRL's rewards/chosen, rewards/rejected): {float(cr):.4f} and {float(rj):.4f}.")
    with left:
        example_note("dpo_example", EX, [z, prob, float(losses)])
    # before training the policy is the reference (both implicit rewards 0); now: the learner's inputs
    cards = diagnose({"rewards/chosen": [0.0, float(cr)], "rewards/margins": [0.0, z]}, {"algorithm": "dpo"}, window=1)
    show_cards(cards, left)
    if not PROJ:
        ask_chapter("dpo")  # predict first; the heatmap below and the section at the bottom show why

    lc, lr_ = float(log_ratio(lp[0], lp[2])), float(log_ratio(lp[1], lp[3]))  # ℓ(y⁺), ℓ(y⁻)
    # policy log-probs from −6.5 to −0.5 against a reference log-prob of −3.5: ℓ runs from −3 to 3
    pol = torch.linspace(-6.5, -0.5, 61, dtype=torch.float64)
    grid = log_ratio(pol, -3.5)  # (61,) the ℓ axis
    C, R = torch.meshgrid(pol, pol, indexing="xy")  # (61, 61) policy log-probs of chosen (x) and rejected (y)
    ref = torch.full_like(C, -3.5)  # (61, 61) reference log-probs
    L, _, _ = dpo_loss(C, R, ref, ref, beta=beta)  # (61, 61) the lab's own loss over the grid
    fig = figure(f"DPO loss over the two log-ratios (β = {beta:g})", "ℓ(y⁺) = log π/π<sub>ref</sub> of chosen", "ℓ(y⁻) = log π/π<sub>ref</sub> of rejected",
                 height=380 if PROJ else 420)
    fig.add_trace(go.Heatmap(x=grid.tolist(), y=grid.tolist(), z=L.tolist(), colorscale="Viridis", colorbar=dict(title="loss")))
    mark_point(fig, lc, lr_, color=colors.CURRENT)
    (right or st).plotly_chart(fig, width="stretch", key="dpo_heat")
if PROJ:
    st.latex(FORMULA)
    example_buttons()
    ask_chapter("dpo")

st.subheader("The loss falls while the chosen probability falls")
ref3, pol3 = EXR.INPUTS["reference"], EXR.INPUTS["policy"]
margin3, before, after, _, _ = EXR.compute()  # the worked example's own lab calls (dpo_loss before and after)
c1, c2 = st.columns([1, 1])
fig = figure("Three outcomes, β = 1 (overview, DPO section)", "outcome", "probability", height=320)
fig.add_trace(go.Bar(x=EXR.INPUTS["outcomes"], y=ref3, name="reference (= policy before)", marker_color=colors.REFERENCE))
fig.add_trace(go.Bar(x=EXR.INPUTS["outcomes"], y=pol3, name="policy after", marker_color=colors.KEY))
fig.update_layout(barmode="group")
c1.plotly_chart(fig, width="stretch", key="dpo_three")
c2.metric("loss before → after", f"{before:.3f} → {after:.3f}")
c2.metric("chosen probability before → after", f"{ref3[0]:.2f} → {pol3[0]:.2f}")
c2.metric("margin", f"{margin3:.4f}", help="log 1.5: the chosen response gained relative to the rejected one")

course_nav(__file__)
