"""GRPO and RLVR: group advantages, clipped terms, the four loss types, DAPO's interventions [ftip-004B … ftip-004N]."""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.grpo import dynamic_sampling, group_advantages, grpo_loss, overlong_penalty
from lab.ppo import clipped_surrogate
from labui import example_button, example_note, figure, header, parse_floats, route_through_app, shows_errors
from worked_examples import grpo_group_clip as EX

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "GRPO and RLVR",
    "ftip-004B, ftip-004C, ftip-004D, ftip-004H … ftip-004K, ftip-004N",
    "Shao et al. 2024, §4.1.2; Yu et al. 2025 (DAPO), §3.1–3.4; Lambert et al. 2024, §6",
    "GRPO samples a group of responses per prompt and uses the group itself as the baseline: each reward minus "
    "the group mean, usually divided by the group's spread. Every token of a response shares that advantage. "
    "The conventions the paper leaves open (std divisor, ε, what to do when all rewards are equal, how to "
    "average over tokens) are all controls here.",
)
st.latex(r"\hat A_i=\frac{R_i-\bar R}{S_R+\varepsilon},\qquad \ell_{i,t}=-\min\big(\rho_{i,t}\hat A_i,\ \mathrm{clip}(\rho_{i,t},1-\epsilon,1+\epsilon_{\mathrm{high}})\hat A_i\big)")

for k, v in {"grpo_rewards": "1, 0, 0, 1\n1, 1, 1, 1\n0, 0, 1, 0", "grpo_ddof": 1, "grpo_eps": 1e-4, "grpo_scale": "group", "grpo_zero": "zero",
             "grpo_ratios": "1.3, 0.7, 1.1, 0.9", "grpo_clip": 0.2, "grpo_clip_high": 0.28, "grpo_lengths": "3, 7, 5, 2",
             "grpo_maxlen": 20, "grpo_buffer": 5}.items():
    st.session_state.setdefault(k, v)
example_button("Load worked example ftip-004N (rewards 1,0,0,1; population std; ratios 1.3, 0.7, 1.1, 0.9)",
               {"grpo_rewards": "1, 0, 0, 1", "grpo_ddof": 0, "grpo_eps": 0.0, "grpo_scale": "group", "grpo_ratios": "1.3, 0.7, 1.1, 0.9",
                "grpo_clip": 0.2, "grpo_clip_high": 0.2}, "grpo_example")

c1, c2 = st.columns([2, 1])
rew_s = c1.text_area("rewards: one line per prompt group (same group size on every line)", key="grpo_rewards", height=110)
ddof = c2.radio("std divisor", [1, 0], key="grpo_ddof", format_func=lambda d: "g − 1 (sample, TRL)" if d == 1 else "g (population)", horizontal=True)
eps = c2.number_input("ε added to the std", 0.0, 1.0, step=1e-4, format="%.4f", key="grpo_eps")
scale = c2.selectbox("scale", ["group", "batch", "none"], key="grpo_scale")
zero = c2.selectbox("zero-spread group policy", ["zero", "raise"], key="grpo_zero")

adv = None
with shows_errors():
    rows = [parse_floats(line, f"rewards line {i + 1}") for i, line in enumerate(rew_s.strip().splitlines()) if line.strip()]
    if not rows:
        raise ValueError("rewards must have at least one group")
    g = len(rows[0])
    if any(len(r) != g for r in rows):
        raise ValueError(f"rewards: every group must have the same size; got sizes {[len(r) for r in rows]}")
    flat = [x for r in rows for x in r]
    adv = group_advantages(flat, g, scale=scale, ddof=ddof, eps=eps, zero_std=zero)  # (N,)
    A = adv.view(len(rows), g)
    st.dataframe({f"member {j + 1}": [f"R={rows[i][j]:g} → Â={A[i, j]:.4f}" for i in range(len(rows))] for j in range(g)}, width="stretch")
    st.metric("advantages, group 1", ", ".join(f"{a:.4f}" for a in A[0].tolist()))
    fig = figure("Group-relative advantages", "response", "Â  [std units]", height=300)
    for i in range(len(rows)):
        fig.add_trace(go.Bar(x=[f"g{i + 1}·{j + 1}" for j in range(g)], y=A[i].tolist(), name=f"group {i + 1}"))
    st.plotly_chart(fig, width="stretch", key="grpo_adv")
    ds = dynamic_sampling(flat, g)
    st.markdown(f"**Dynamic sampling** (DAPO, ftip-004I): keeps groups {[k + 1 for k in ds.kept_groups]}, drops "
                f"{[k + 1 for k in ds.dropped_groups]} (zero reward spread, no signal): {ds.num_dropped} dropped, "
                f"`frac_reward_zero_std` = {ds.frac_reward_zero_std:.2f}.")

st.subheader("Ratios and clipping for group 1")
c1, c2, c3 = st.columns(3)
ratio_s = c1.text_input("ratios ρᵢ of group 1's responses", key="grpo_ratios")
clip = c2.slider("ε (low)", 0.01, 0.99, step=0.01, key="grpo_clip")
clip_high = c3.slider("ε_high (clip-higher)", 0.01, 1.0, step=0.01, key="grpo_clip_high")
with shows_errors():
    if adv is None:
        raise ValueError("fix the rewards above first")
    ratios = torch.tensor(parse_floats(ratio_s, "ratios"), dtype=torch.float64)
    if ratios.numel() != g:
        raise ValueError(f"ratios: need one per member of group 1 ({g}); got {ratios.numel()}")
    terms = clipped_surrogate(ratios, adv[:g], clip, clip_high)
    st.metric("clipped terms ℓᵢ (objective)", ", ".join(f"{t:.4f}" for t in terms.tolist()))
    st.metric("group mean of the terms", f"{float(terms.mean()):.4f}")
    example_note("grpo_example", EX, adv[:g].tolist() + terms.tolist() + [float(terms.mean())])

st.subheader("Credit per token and the four loss types on one batch")
lens_s = st.text_input("response lengths in tokens for group 1 (different lengths show how aggregation weighs them)", key="grpo_lengths")
with shows_errors():
    if adv is None:
        raise ValueError("fix the rewards above first")
    lens = [int(x) for x in parse_floats(lens_s, "lengths")]
    if len(lens) != g or min(lens) < 1:
        raise ValueError(f"lengths: need {g} positive integers")
    T = max(lens)
    mask = torch.zeros(g, T, dtype=torch.float64)
    for i, n in enumerate(lens):
        mask[i, :n] = 1
    credit = adv[:g].unsqueeze(-1) * mask  # (g, T): every token shares its response's advantage
    fig = figure("Per-token credit strip (group 1)", "token position", "response", height=260)
    fig.add_trace(go.Heatmap(z=credit.tolist(), x=list(range(T)), y=[f"resp {i + 1} (L={n})" for i, n in enumerate(lens)],
                             colorscale="RdBu", zmid=0, colorbar=dict(title="Â")))
    st.plotly_chart(fig, width="stretch", key="grpo_strip")
    logps = torch.full((g, T), -1.0, dtype=torch.float64) + ratios.log().unsqueeze(-1)  # (g, T): ratio ρᵢ on every token
    old = torch.full((g, T), -1.0, dtype=torch.float64)
    cols = st.columns(4)
    for col, lt in zip(cols, ["grpo", "bnpo", "dr_grpo", "dapo"]):
        loss, m = grpo_loss(logps, old, adv[:g], mask, epsilon=clip, epsilon_high=clip_high, loss_type=lt, max_completion_length=T)
        col.metric(f"loss: {lt}", f"{float(loss):.4f}", help=f"clip_ratio/region_mean = {m['clip_ratio/region_mean']:.3f}")
    st.caption("grpo: mean per response, then over responses · bnpo/dapo: mean over all active tokens (long responses weigh more) · "
               "dr_grpo: sum over tokens / (responses × max length).")

st.subheader("Overlong reward shaping (DAPO, ftip-004K)")
c1, c2 = st.columns(2)
maxlen = c1.number_input("max length L_max", 2, 4096, step=1, key="grpo_maxlen")
buf = c2.number_input("buffer L_cache", 1, 4096, step=1, key="grpo_buffer")
with shows_errors():
    L = torch.arange(0, int(maxlen) + int(buf) + 1)
    pen = overlong_penalty(L, int(maxlen), int(buf))
    fig = figure("Length penalty added to the reward", "response length  [tokens]", "penalty  [reward units]", height=280)
    fig.add_trace(go.Scatter(x=L.tolist(), y=pen.tolist(), name="penalty"))
    lens_now = [int(x) for x in parse_floats(lens_s, "lengths")]
    fig.add_trace(go.Scatter(x=lens_now, y=overlong_penalty(lens_now, int(maxlen), int(buf)).tolist(), mode="markers",
                             marker=dict(size=11, color="crimson"), name="group 1 responses"))
    st.plotly_chart(fig, width="stretch", key="grpo_overlong")
