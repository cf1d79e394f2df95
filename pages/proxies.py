"""Proxies and over-optimization: a synthetic proxy/gold world that trains in milliseconds
[overview, "Proxy optimization and reward failures"; Gao et al. 2022, §2–3]."""

import os
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from lab import proxy
from lab.smallrun import evaluate as se
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

RUNS = Path(os.environ.get("LAB_RUNS_DIR", "runs"))


@st.cache_data(show_spinner="Sampling and scoring best-of-N …", max_entries=16)
def best_of_n_cached(policy: str, policy_hash: str, reward_model: str, rm_hash: str, n_cases: int, n_max: int, seed: int):
    """Best-of-N with the learned proxy; both weights' hashes are in the key."""
    return se.best_of_n_with_proxy(policy, reward_model, n_cases=n_cases, n_max=n_max, seed=seed)


st.header("Measured on the tiny GPT-2")
st.markdown("The same story with a real, learned proxy: a small reward model trained on biased pairs (it never saw a "
            "longer answer lose), then optimized by RL on the tiny GPT-2 (`lab.smallrun`). Gold is the task's verifier on "
            "held-out prompts.")
with shows_errors():
    measured = proxy.proxy_runs(str(RUNS))
    if measured:
        pick = st.selectbox("run trained against a reward model", measured, key="px_run",
                            help=f"Runs under `{RUNS}/` whose evaluations logged eval/proxy_reward.")
        rc = proxy.run_curves(os.path.join(RUNS, pick))
        fig3 = figure(f"{pick}: proxy reward (left) and gold accuracy (right) on held-out prompts", "training step", "proxy score")
        fig3.add_trace(go.Scatter(x=rc.eval_steps, y=rc.proxy, name="proxy (reward model, eval)", mode="lines+markers",
                                  line=dict(width=colors.REFERENCE_WIDTH, color=colors.REFERENCE)))
        fig3.add_trace(go.Scatter(x=rc.eval_steps, y=rc.gold, name="gold (verifier accuracy, eval)", mode="lines+markers", yaxis="y2",
                                  line=dict(width=colors.KEY_WIDTH, color=colors.KEY)))
        if rc.steps:
            fig3.add_trace(go.Scatter(x=rc.steps, y=rc.reward, name="reward trained on (per step)", mode="lines",
                                      line=dict(dash="dot", color=colors.REFERENCE), opacity=0.5))
            fig3.add_trace(go.Scatter(x=rc.steps, y=rc.reward_verifier, name="verifier on the same samples (per step)", mode="lines",
                                      yaxis="y2", line=dict(dash="dot", color=colors.KEY), opacity=0.5))
        # the proxy's scale is the reward model's (any real number), gold is an accuracy: one axis each
        fig3.update_layout(yaxis2=dict(title="gold accuracy", overlaying="y", side="right", range=[0, 1.02], tickmode="linear", tick0=0,
                                       dtick=0.25, showgrid=False))
        st.plotly_chart(fig3, width="stretch", key="px_run_curve")
        try:
            fd, fgold, fa, fb, ffit = rc.gao_fit("rl")
            fig5 = figure(f"{pick}: gold accuracy against √KL, with Gao's RL form fitted", "d = √KL (logged at the eval step)", "gold accuracy")
            fig5.add_trace(go.Scatter(x=fd, y=fgold, name="gold (measured)", mode="markers", marker=dict(size=10, color=colors.KEY)))
            fig5.add_trace(go.Scatter(x=fd, y=ffit, name=f"Gao RL fit (α={fa:.2f}, β={fb:.2f})", mode="lines",
                                      line=dict(dash="dot", width=colors.REFERENCE_WIDTH, color=colors.REFERENCE)))
            st.plotly_chart(fig5, width="stretch", key="px_run_gao")
        except ValueError as exc:
            st.caption(f"No √KL chart for this run: {exc}")
        r1, r2, r3 = st.columns(3)
        r1.metric("eval records", f"{len(rc.eval_steps)}")
        r2.metric("gold accuracy, last eval", f"{rc.gold[-1]:.3f}" if rc.gold else "—")
        r3.metric("proxy reward, last eval", f"{rc.proxy[-1]:.3f}" if rc.proxy else "—")
        for card in diagnose({"reward": rc.proxy, "eval/accuracy": rc.gold}, window=2):
            st.info(f"**{card.title}** (measured: proxy = reward-model score, gold = verifier accuracy) — {card.explanation}")
    else:
        st.info(f"No run in `{RUNS}/` was trained against a reward model yet. The demo recipe (about 4 minutes): "
                f"`.venv/bin/python -m lab.smallrun rm --rm-bias length --base-steps 200 --out {RUNS}/rm-biased` (a reward "
                f"model that never saw a longer answer lose), then `.venv/bin/python -m lab.smallrun grpo --reward-model "
                f"{RUNS}/rm-biased/final --base-steps 200 --lr 1e-4 --steps 400 --eval-every 25 --out {RUNS}/hacked`; its proxy and gold curves appear here. "
                "`benchmarks/overoptimization.py --out DIR` runs it on seeds 0–2.")

    st.subheader("Best-of-N with the learned proxy")
    cks = se.list_checkpoints(RUNS)
    rms = [c for c in cks if c.is_reward_model]
    policies = [c for c in cks if not c.is_reward_model]
    if rms and policies:
        pnames = [f"{c.run} · {c.label}" for c in policies]
        rnames = [f"{c.run} · {c.label}" for c in rms]
        finals = [k for k, c in enumerate(policies) if c.label == "final"]
        # by default the policy whose samples the (last) reward model was trained on: its run's base stage, as
        # benchmarks/overoptimization.py does; a policy already optimized against the proxy has nothing left to pick
        own_base = [k for k in finals if policies[k].run == f"{rms[-1].run}/base"]
        b1, b2, b3, b4 = st.columns(4)
        pol_name = b1.selectbox("policy checkpoint", pnames, index=(own_base or finals or [0])[0], key="px_bon_policy")
        rm_name = b2.selectbox("reward-model checkpoint", rnames, index=len(rnames) - 1, key="px_bon_rm")
        bon_cases = b3.select_slider("held-out prompts", [10, 20, 50], value=20, key="px_bon_cases")
        bon_max = b4.select_slider("N max (samples per prompt)", [16, 32, 64], value=64, key="px_bon_max")
        pol, rmc = policies[pnames.index(pol_name)], rms[rnames.index(rm_name)]
        res = best_of_n_cached(pol.path, se.checkpoint_fingerprint(pol.path), rmc.path, se.checkpoint_fingerprint(rmc.path),
                               int(bon_cases), int(bon_max), 0)
        mc = res.curve
        fig4 = figure("Best-of-N against the learned proxy: the pick's proxy score and gold accuracy (95% interval over prompts)",
                      "d = √(log N − (N−1)/N)", "proxy score of the pick")
        fig4.add_trace(go.Scatter(x=mc.d, y=mc.proxy, name="proxy of pick", mode="lines+markers", text=[f"N={k}" for k in mc.n],
                                  line=dict(width=colors.REFERENCE_WIDTH, color=colors.REFERENCE),
                                  error_y=dict(type="data", symmetric=False, array=mc.proxy_above, arrayminus=mc.proxy_below)))
        fig4.add_trace(go.Scatter(x=mc.d, y=mc.gold, name="gold accuracy of pick", mode="lines+markers", yaxis="y2",
                                  text=[f"N={k}" for k in mc.n], line=dict(width=colors.KEY_WIDTH, color=colors.KEY),
                                  error_y=dict(type="data", symmetric=False, array=mc.gold_above, arrayminus=mc.gold_below)))
        fig4.update_layout(yaxis2=dict(title="gold accuracy of pick", overlaying="y", side="right", range=[0, 1], tickmode="linear", tick0=0, dtick=0.25))
        st.plotly_chart(fig4, width="stretch", key="px_bon_measured")
        st.caption(f"{res.n_cases} held-out {res.task} prompts, {res.n_max} samples each drawn once (seed {res.seed}); "
                   f"for each N the proxy's favourite among the first N. N = {mc.n[0]} … {mc.n[-1]}.")
    else:
        st.info(f"This chart needs a policy run and a reward-model run under `{RUNS}/`"
                f" (have: {len(policies)} policy checkpoints, {len(rms)} reward-model checkpoints). "
                f"`.venv/bin/python -m lab.smallrun rm --out {RUNS}/rm` trains the reward model.")

st.subheader("Predict, then reveal")
ask_chapter("proxies")
course_nav(__file__)
