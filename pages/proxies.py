"""Proxies and over-optimization: a synthetic proxy/gold world that trains in milliseconds
[overview, "Proxy optimization and reward failures"; Gao et al. 2022, §2–3]."""

import plotly.graph_objects as go
import streamlit as st

from lab import proxy
from lab.misconceptions import diagnose
from labui import colors, course_nav, figure, header, mark_point, route_through_app, shows_errors
from labui.predict import ask_chapter
from labui.share import Param, choice, number, restore_from_url, write_to_url

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

STRENGTHS = [0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0]
SIZES = [200, 500, 1000, 2000, 5000]
PARAMS = {"bias": Param("px_bias", number(-1.0, 2.0)), "harm": Param("px_harm", number(0.0, 2.0)),
          "strength": Param("px_strength", choice(STRENGTHS)), "responses": Param("px_n", choice(SIZES)),
          "seed": Param("px_seed", number(0, 10_000, integer=True))}
defaults = {"px_bias": 0.5, "px_harm": 0.5, "px_seed": 0, "px_n": 2000, "px_strength": 1.0}
for k, v in defaults.items():
    st.session_state.setdefault(k, v)
restore_from_url(PARAMS)
c1, c2, c3 = st.columns(3)
bias = c1.slider("proxy's pay for the nuisance feature (bias)", -1.0, 2.0, step=0.1, key="px_bias",
                 help="proxy = quality + bias · feature. At bias = −harm the proxy equals the gold score.")
harm = c1.slider("gold score's dislike of the feature (harm)", 0.0, 2.0, step=0.1, key="px_harm",
                 help="gold = quality − harm · feature")
strength = c2.select_slider("optimization strength 1/β", options=STRENGTHS, key="px_strength")
n_resp = c2.select_slider("responses of the starting policy (M)", options=SIZES, key="px_n")
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

    fig = figure("KL-regularized optimum of the proxy: proxy and gold against √KL", "d = √KL(π ‖ π<sub>init</sub>)  [√nats]", "score (units of quality)")
    fig.add_trace(go.Scatter(x=curve.d, y=curve.proxy, name="proxy score", mode="lines+markers",
                             line=dict(width=colors.REFERENCE_WIDTH, color=colors.REFERENCE)))
    fig.add_trace(go.Scatter(x=curve.d, y=curve.gold, name="gold score", mode="lines+markers", line=dict(width=colors.KEY_WIDTH, color=colors.KEY)))
    try:
        alpha, beta_g, fitted = curve.gao_fit("rl")
        fig.add_trace(go.Scatter(x=curve.d, y=fitted, name=f"Gao RL fit (α={alpha:.2f}, β={beta_g:.2f})",
                                 line=dict(dash="dot", width=colors.REFERENCE_WIDTH, color=colors.REFERENCE)))
    except ValueError as exc:  # too few informative points to fit: say so beside the chart
        st.info(f"Gao fit not shown: {exc}")
    mark_point(fig, here.d[0], here.gold[0], name="gold at this strength", color=colors.CURRENT)
    st.plotly_chart(fig, width="stretch", key="px_curve")
    upto = [k for k, d in enumerate(curve.d) if d <= here.d[0]]  # the optimization so far: strengths up to this one
    for card in diagnose({"reward": [curve.proxy[k] for k in upto], "eval/accuracy": [curve.gold[k] for k in upto]}, window=2):
        st.info(f"**{card.title}** (here: proxy = reward, gold = held-out score) — {card.explanation}")

    st.subheader("Best-of-N with the same proxy")
    st.markdown("Best-of-N never updates the model: draw N samples and keep the one the proxy likes most. "
                "Its distance from the starting policy is known in closed form, KL = log N − (N−1)/N.")
    ns = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    bon = proxy.best_of_n_curve(exp.proxy, exp.gold, ns)
    fig2 = figure("Best-of-N: expected score of the proxy's pick against √KL", "d = √(log N − (N−1)/N)", "score")
    fig2.add_trace(go.Scatter(x=bon.d, y=bon.proxy, name="proxy of pick", mode="lines+markers", text=[f"N={k}" for k in ns],
                              line=dict(width=colors.REFERENCE_WIDTH, color=colors.REFERENCE)))
    fig2.add_trace(go.Scatter(x=bon.d, y=bon.gold, name="gold of pick", mode="lines+markers", line=dict(width=colors.KEY_WIDTH, color=colors.KEY),
                              text=[f"N={k}" for k in ns]))
    st.plotly_chart(fig2, width="stretch", key="px_bon")

    st.subheader("Length drift")
    st.markdown("Take pairs of responses and ask how much the proxy's preference margin grows per unit of the nuisance "
                "feature. A slope far from the gold score's slope means the proxy is paying for the feature itself.")
    drift_proxy = proxy.paired_length_drift(exp.proxy, exp.feature)
    drift_gold = proxy.paired_length_drift(exp.gold, exp.feature)
    d1, d2 = st.columns(2)
    d1.metric("proxy margin per unit of feature", f"{drift_proxy.slope:+.3f}")
    d2.metric("gold margin per unit of feature", f"{drift_gold.slope:+.3f}")

write_to_url(PARAMS)

st.subheader("Predict, then reveal")
ask_chapter("proxies")
st.caption("The small-run version of this demonstration (a learned reward model over-optimized by GRPO/PPO on the tiny GPT-2) "
           "needs the reward-model trainer, which is not built yet.")
course_nav(__file__)
