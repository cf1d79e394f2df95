"""GRPO and RLVR: group advantages, clipped terms, the four loss types, DAPO's interventions [ftip-004B … ftip-004N]."""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.grpo import dynamic_sampling, group_advantages, group_surrogate, length_mask, loss_types_from_ratios, overlong_penalty, token_advantages
from lab.misconceptions import diagnose
from labui import colors, course_nav, example_button, example_note, figure, header, parse_floats, parse_ints, route_through_app, shows_errors
from labui.predict import ask_chapter
from labui.share import Param, choice, number, projector_on, restore_from_url, text, write_to_url
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
FORMULA = (r"\hat A_i=\frac{R_i-\overline{R}}{S_R+\varepsilon},\qquad J_{i,t}=\min\big(\rho_{i,t}\hat A_i,\ \mathrm{clip}(\rho_{i,t},1-\epsilon,1+\epsilon_{\mathrm{high}})\hat A_i\big),"
           r"\qquad \mathcal L=-\sum_{i,t} w_{i,t}\,J_{i,t}")
if not projector_on():  # projector mode shows it under the main chart, so that the control and the chart fit the screen
    st.latex(FORMULA)


def _lines(raw: str) -> str:
    """URL form of the rewards box: groups separated by '|' (a newline in the box)."""
    return text(400)(raw).replace("|", "\n")


# shareable link parameters (README: /grpo?rewards=1,0,0,1|1,1,1,1&ddof=0&ratios=1.3,0.7,1.1,0.9)
PARAMS = {
    "rewards": Param("grpo_rewards", _lines, lambda v: v.strip().replace("\n", "|")),
    "ddof": Param("grpo_ddof", choice([1, 0])),
    "eps": Param("grpo_eps", number(0.0, 1.0)),
    "scale": Param("grpo_scale", choice(["group", "batch", "none"])),
    "zero_std": Param("grpo_zero", choice(["zero", "raise"])),
    "ratios": Param("grpo_ratios", text(400)),
    "epsilon": Param("grpo_clip", number(0.01, 0.99)),
    "epsilon_high": Param("grpo_clip_high", number(0.01, 1.0)),
    "lengths": Param("grpo_lengths", text(400)),
    "max_length": Param("grpo_maxlen", number(2, 4096, integer=True)),
    "buffer": Param("grpo_buffer", number(1, 4096, integer=True)),
}

for k, v in {"grpo_rewards": "1, 0, 0, 1\n1, 1, 1, 1\n0, 0, 1, 0", "grpo_ddof": 1, "grpo_eps": 1e-4, "grpo_scale": "group", "grpo_zero": "zero",
             "grpo_ratios": "1.3, 0.7, 1.1, 0.9", "grpo_clip": 0.2, "grpo_clip_high": 0.28, "grpo_lengths": "3, 7, 5, 2",
             "grpo_maxlen": 20, "grpo_buffer": 5}.items():
    st.session_state.setdefault(k, v)
restore_from_url(PARAMS)
MAX_GROUPS, MAX_GROUP_SIZE, MAX_TOKENS = 16, 32, 256  # bounds that keep a rerun under a second

# projector mode: the rewards box and the advantage chart side by side, so both fit a 1280×720 screen
if projector_on():
    c1, chart_box = st.columns([1, 2])
else:
    c1, c2 = st.columns([2, 1])
    chart_box = st.container()
rew_s = c1.text_area("rewards, one line per prompt group", key="grpo_rewards", height=110, help="the same group size on every line")
if projector_on():
    c2 = c1.expander("conventions (std divisor, ε, scale, zero spread)")
ddof = c2.radio("std divisor", [1, 0], key="grpo_ddof", format_func=lambda d: "g − 1 (sample, TRL)" if d == 1 else "g (population)", horizontal=True)
eps = c2.number_input("ε added to the std", 0.0, 1.0, step=1e-4, format="%.4f", key="grpo_eps")
scale = c2.selectbox("scale", ["group", "batch", "none"], key="grpo_scale")
zero = c2.selectbox("zero-spread group policy", ["zero", "raise"], key="grpo_zero")

adv = None
with shows_errors(c1):
    lines = [line for line in rew_s.strip().splitlines() if line.strip()]
    if len(lines) > MAX_GROUPS:
        raise ValueError(f"rewards: at most {MAX_GROUPS} groups on this page; got {len(lines)}")
    rows = [parse_floats(line, f"rewards line {i + 1}", max_count=MAX_GROUP_SIZE) for i, line in enumerate(lines)]
    if not rows:
        raise ValueError("rewards must have at least one group")
    g = len(rows[0])
    if any(len(r) != g for r in rows):
        raise ValueError(f"rewards: every group must have the same size; got sizes {[len(r) for r in rows]}")
    flat = [x for r in rows for x in r]
    adv = group_advantages(flat, g, scale=scale, ddof=ddof, eps=eps, zero_std=zero)  # (N,)
    A = adv.view(len(rows), g).tolist()
    fig = figure("Group-relative advantages (blue: positive, red: negative)", "response", "Â  [std units]", height=300)
    xs = [f"g{i + 1}·{j + 1}" for i in range(len(rows)) for j in range(g)]
    ys = [a for row in A for a in row]
    fig.add_trace(go.Bar(x=xs, y=ys, name="Â", marker_color=[colors.NEGATIVE if a < 0 else colors.POSITIVE for a in ys],
                         text=[f"{a:.2f}" for a in ys], textposition="outside", cliponaxis=False))
    fig.update_layout(showlegend=False)
    chart_box.plotly_chart(fig, width="stretch", key="grpo_adv")
    if projector_on():
        st.latex(FORMULA)
    st.metric("advantages, group 1", ", ".join(f"{a:.4f}" for a in A[0]))
    with st.expander("every group: reward → advantage", expanded=not projector_on()):
        st.dataframe({f"member {j + 1}": [f"R={rows[i][j]:g} → Â={A[i][j]:.4f}" for i in range(len(rows))] for j in range(g)}, width="stretch")
    ds = dynamic_sampling(flat, g)
    st.markdown(f"**Dynamic sampling** (DAPO, ftip-004I): keeps groups {[k + 1 for k in ds.kept_groups]}, drops "
                f"{[k + 1 for k in ds.dropped_groups]} (zero reward spread, no signal): {ds.num_dropped} dropped, "
                f"`frac_reward_zero_std` = {ds.frac_reward_zero_std:.2f}.")
    for card in diagnose({"frac_reward_zero_std": [ds.frac_reward_zero_std]}, window=1):
        st.info(f"**{card.title}** — {card.explanation}")

example_button("Load the lab's illustration of ftip-004N (rewards 1,0,0,1; population std; ratios 1.3, 0.7, 1.1, 0.9)",
               {"grpo_rewards": "1, 0, 0, 1", "grpo_ddof": 0, "grpo_eps": 0.0, "grpo_scale": "group", "grpo_ratios": "1.3, 0.7, 1.1, 0.9",
                "grpo_clip": 0.2, "grpo_clip_high": 0.2}, "grpo_example",
               help="ftip-004N defines the group advantage and the clipped terms but states no numbers; "
                    "these rewards, ratios and the population std are the lab's own illustration")

st.subheader("Ratios and clipping for group 1")
c1, c2, c3 = st.columns(3)
ratio_s = c1.text_input("ratios ρᵢ of group 1's responses", key="grpo_ratios")
clip = c2.slider("ε (low)", 0.01, 0.99, step=0.01, key="grpo_clip")
clip_high = c3.slider("ε_high (clip-higher)", 0.01, 1.0, step=0.01, key="grpo_clip_high")
ratios = None
with shows_errors(c1):
    if adv is None:
        raise ValueError("fix the rewards above first")
    ratios = parse_floats(ratio_s, "ratios", max_count=MAX_GROUP_SIZE)
    if len(ratios) != g:
        raise ValueError(f"ratios: need one per member of group 1 ({g}); got {len(ratios)}")
    surr = group_surrogate(ratios, adv[:g], clip, clip_high)
    st.metric("objective terms Jᵢ = min(ρᵢÂᵢ, clip(ρᵢ)Âᵢ)", ", ".join(f"{t:.4f}" for t in surr.terms.tolist()),
              help="the objective the update increases; the loss a trainer minimizes is its negative, −Jᵢ")
    st.metric("group mean of the objective terms", f"{float(surr.mean):.4f}")
    example_note("grpo_example", EX, adv[:g].tolist() + surr.terms.tolist() + [float(surr.mean)])

st.subheader("Credit per token and the four loss types on one batch")
lens_s = st.text_input(f"response lengths in tokens for group 1 (different lengths show how aggregation weighs them; at most {MAX_TOKENS})",
                       key="grpo_lengths")
lens = None
with shows_errors():
    lens = parse_ints(lens_s, "lengths", 1, MAX_TOKENS, max_count=MAX_GROUP_SIZE)
    if adv is None:
        raise ValueError("fix the rewards above first")
    if len(lens) != g:
        raise ValueError(f"lengths: need {g} positive integers (one per member of group 1); got {len(lens)}")
    mask = length_mask(lens)  # (g, T)
    credit = token_advantages(adv[:g], mask)  # (g, T): every token shares its response's advantage
    T = mask.shape[1]
    fig = figure("Per-token credit strip (group 1)", "token position", "response", height=260)
    fig.add_trace(go.Heatmap(z=credit.tolist(), x=list(range(T)), y=[f"resp {i + 1} (L={n})" for i, n in enumerate(lens)],
                             colorscale="RdBu", zmid=0, colorbar=dict(title="Â")))
    st.plotly_chart(fig, width="stretch", key="grpo_strip")
    if ratios is None:
        raise ValueError("fix the ratios above to compare the loss types")
    losses = loss_types_from_ratios(ratios, adv[:g], lens, clip, clip_high)
    cols = st.columns(4)
    for col, (lt, (loss, m)) in zip(cols, losses.items()):
        col.metric(f"loss: {lt}", f"{float(loss):.4f}", help=f"clip_ratio/region_mean = {m['clip_ratio/region_mean']:.3f}")
    st.markdown(
        "**Why the signs can differ.** Every loss type is minus a weighted average of the same per-token terms J; only "
        "the weights w differ. *grpo* averages each response's tokens first, so every response counts the same; "
        "*bnpo* and *dapo* average over all tokens of the batch, so a long response counts in proportion to its length; "
        "*dr_grpo* sums the tokens and divides by a constant (responses × longest length). When a short response has a "
        "positive advantage and long ones negative (or the reverse), one weighting can make the sum positive and another "
        "negative. The per-token gradient points the same way under all four; only its size per token changes, so the "
        "loss value (and its sign) is not a progress signal [ftip-004J].")
    if all(r == 1.0 for r in ratios):
        for card in diagnose({"clip_ratio/region_mean": [m["clip_ratio/region_mean"] for _, m in losses.values()]},
                             {"num_iterations": 1}, window=1):
            st.info(f"**{card.title}** — {card.explanation}")

st.subheader("Overlong reward shaping (DAPO, ftip-004K)")
c1, c2 = st.columns(2)
maxlen = c1.number_input(r"max length $L_{\max}$", 2, 4096, step=1, key="grpo_maxlen")
buf = c2.number_input(r"buffer $L_{\text{cache}}$", 1, 4096, step=1, key="grpo_buffer")
with shows_errors():
    L = torch.arange(0, int(maxlen) + int(buf) + 1)
    pen = overlong_penalty(L, int(maxlen), int(buf))
    fig = figure("Length penalty added to the reward", "response length  [tokens]", "penalty  [reward units]", height=280)
    fig.add_trace(go.Scatter(x=L.tolist(), y=pen.tolist(), name="penalty", line=dict(color=colors.KEY, width=colors.KEY_WIDTH)))
    if lens is not None:
        fig.add_trace(go.Scatter(x=lens, y=overlong_penalty(lens, int(maxlen), int(buf)).tolist(), mode="markers",
                                 marker=dict(size=11, color=colors.CURRENT), name="group 1 responses"))
    st.plotly_chart(fig, width="stretch", key="grpo_overlong")
write_to_url(PARAMS)

st.subheader("Predict, then reveal")
ask_chapter("grpo")
course_nav(__file__)
