"""Proxies and over-optimization: a synthetic proxy/gold world that trains in milliseconds
[overview, "Proxy optimization and reward failures"; Gao et al. 2022, §2–3]."""

import plotly.graph_objects as go
import streamlit as st

from lab import proxy
from labui import figure, header, mark_point, route_through_app, shows_errors

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Proxies and over-optimization",
    "section \"Proxy optimization and reward failures\"",
    "Gao, Schulman and Hilton 2022, Scaling Laws for Reward Model Overoptimization, §2–3, eqs. 1–2",
    "A reward model is a *proxy*: a measurable stand-in for what we want (the *gold* score). Optimizing a "
    "proxy harder first finds responses that are genuinely better, then finds the proxy's mistakes. Here the "
    "proxy also pays for a nuisance feature (think: extra length) that the gold score dislikes. Move the "
    "optimization strength and watch the proxy keep rising while the gold score peaks and falls. The world "
    "below is the lab's own illustration, not data from the paper.",
    reference="post-training-overview.txt",
)
st.latex(r"\pi_\beta(y)\propto\pi_{\text{init}}(y)\,e^{\text{proxy}(y)/\beta},\qquad d=\sqrt{\mathrm{KL}(\pi_\beta\Vert\pi_{\text{init}})}")
st.latex(r"R_{\text{bon}}(d)=d(\alpha-\beta_g d),\qquad R_{\text{RL}}(d)=d(\alpha-\beta_g\log d),\qquad \mathrm{KL}_{\text{BoN}}=\log N-\tfrac{N-1}{N}")

defaults = {"px_bias": 0.5, "px_harm": 0.5, "px_seed": 0, "px_n": 2000, "px_strength": 1.0}
for k, v in defaults.items():
    st.session_state.setdefault(k, v)
c1, c2, c3 = st.columns(3)
bias = c1.slider("proxy's pay for the nuisance feature (bias)", -1.0, 2.0, step=0.1, key="px_bias",
                 help="proxy = quality + bias · feature. At bias = −harm the proxy equals the gold score.")
harm = c1.slider("gold score's dislike of the feature (harm)", 0.0, 2.0, step=0.1, key="px_harm",
                 help="gold = quality − harm · feature")
strength = c2.select_slider("optimization strength 1/β", options=[0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0],
                            key="px_strength")
n_resp = c2.select_slider("responses of the starting policy (M)", options=[200, 500, 1000, 2000, 5000], key="px_n")
seed = c3.number_input("seed", min_value=0, max_value=10_000, step=1, key="px_seed")

with shows_errors():
    exp = proxy.synthetic_experiment(n_responses=int(n_resp), bias=float(bias), harm=float(harm), seed=int(seed))
    curve = exp.curve
    here = exp.at(float(strength))
    peak = curve.peak_index
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("√KL at this strength", f"{here.d[0]:.3f}")
    m2.metric("proxy score", f"{here.proxy[0]:.3f}")
    m3.metric("gold score", f"{here.gold[0]:.3f}")
    m4.metric("gold peaks at √KL", f"{curve.d[peak]:.3f}", help=f"gold there: {curve.gold[peak]:.3f}")

    fig = figure("KL-regularized optimum of the proxy: proxy and gold against √KL", "d = √KL(π ‖ π_init)  [√nats]", "score (units of quality)")
    fig.add_trace(go.Scatter(x=curve.d, y=curve.proxy, name="proxy score", mode="lines+markers", line=dict(width=3)))
    fig.add_trace(go.Scatter(x=curve.d, y=curve.gold, name="gold score", mode="lines+markers", line=dict(width=4, color="darkorange")))
    try:
        alpha, beta_g, fitted = curve.gao_fit("rl")
        fig.add_trace(go.Scatter(x=curve.d, y=fitted, name=f"Gao RL fit (α={alpha:.2f}, β={beta_g:.2f})",
                                 line=dict(dash="dash", width=2)))
    except ValueError as exc:  # too few informative points to fit: say so beside the chart
        st.info(f"Gao fit not shown: {exc}")
    mark_point(fig, here.d[0], here.gold[0], name="gold at this strength")
    st.plotly_chart(fig, width="stretch", key="px_curve")

    st.subheader("Best-of-N with the same proxy")
    st.markdown("Best-of-N never updates the model: draw N samples and keep the one the proxy likes most. "
                "Its distance from the starting policy is known in closed form, KL = log N − (N−1)/N.")
    with st.form("px_predict"):
        guess = st.radio("Predict first: with this proxy, will going from N = 16 to N = 256 candidates raise the gold score of the chosen sample?",
                         ["yes, more candidates always help", "no, the gold score of the pick falls"], index=None)
        submitted = st.form_submit_button("Reveal")
    ns = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    bon = proxy.best_of_n_curve(exp.proxy, exp.gold, ns)
    if submitted and guess is not None:
        helps = bon.gold[ns.index(256)] > bon.gold[ns.index(16)]
        right = (guess.startswith("yes")) == helps
        (st.success if right else st.warning)(
            f"{'Right' if right else 'Not this time'}: the gold score of the pick goes from {bon.gold[ns.index(16)]:.3f} (N = 16) "
            f"to {bon.gold[ns.index(256)]:.3f} (N = 256) while the proxy goes from {bon.proxy[ns.index(16)]:.3f} to "
            f"{bon.proxy[ns.index(256)]:.3f}. More candidates expose rarer proxy mistakes; whether that hurts depends on "
            "the bias and harm you set.")
    elif submitted:
        st.info("Pick an answer first, then reveal.")
    fig2 = figure("Best-of-N: expected score of the proxy's pick against √KL", "d = √(log N − (N−1)/N)", "score")
    fig2.add_trace(go.Scatter(x=bon.d, y=bon.proxy, name="proxy of pick", mode="lines+markers", text=[f"N={k}" for k in ns]))
    fig2.add_trace(go.Scatter(x=bon.d, y=bon.gold, name="gold of pick", mode="lines+markers", line=dict(width=4, color="darkorange"), text=[f"N={k}" for k in ns]))
    st.plotly_chart(fig2, width="stretch", key="px_bon")

    st.subheader("Length drift")
    st.markdown("Take pairs of responses and ask how much the proxy's preference margin grows per unit of the nuisance "
                "feature. A slope far from the gold score's slope means the proxy is paying for the feature itself.")
    drift_proxy = proxy.paired_length_drift(exp.proxy, exp.feature)
    drift_gold = proxy.paired_length_drift(exp.gold, exp.feature)
    d1, d2 = st.columns(2)
    d1.metric("proxy margin per unit of feature", f"{drift_proxy.slope:+.3f}")
    d2.metric("gold margin per unit of feature", f"{drift_gold.slope:+.3f}")

st.caption("The small-run version of this demonstration (a learned reward model over-optimized by GRPO/PPO on the tiny GPT-2) "
           "needs the reward-model trainer, which is not built yet.")
