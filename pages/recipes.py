"""Same batch, many recipes: what TRL, verl, OpenRLHF, open-instruct and nanochat compute on one batch (lab.presets)."""

import plotly.graph_objects as go
import streamlit as st

from lab.presets import (
    DEMO_GROUPS,
    DEMO_LOGPS,
    DEMO_RATIOS,
    PREFERENCE_PRESETS,
    PRESETS,
    RL_PRESETS,
    PreferencePairs,
    differing_quantities,
    make_batch,
    masked_rows,
    preset_differences,
    run_preference_preset,
    run_preset,
    simulate_presets,
)
from labui import figure, header, parse_floats, route_through_app, shows_errors
from labui.share import Param, number, plain, restore_from_url, text, write_to_url

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Same batch, many recipes",
    "ftip-004D, ftip-004G, ftip-004J, ftip-003E, ftip-0039",
    "Shao et al. 2024 (GRPO, §4.1.2); Yu et al. 2025 (DAPO, §3.1, §3.3); Liu et al. 2025 (Dr. GRPO); "
    "Hu et al. 2025 (REINFORCE++); Ye et al. 2020 (dual-clip); Zheng et al. 2025 (GSPO); MiniMax 2025 (CISPO)",
    "The same algorithm name computes different numbers in different frameworks: the std divisor and its eps, "
    "whether advantages are whitened over tokens, how token losses are averaged, dual-clip, KL clamps. Type one "
    "batch, pick two to four framework presets, and compare the advantages, the per-token gradient weight "
    "∂loss/∂log π (autograd on the lab's loss), the loss and the clip fractions. Every difference in the "
    "settings comes with its one-line reason.",
)


def _rows(rows) -> str:
    return "\n".join(", ".join(f"{v:g}" for v in r) for r in rows)


DEFAULTS = {"rec_groups": _rows(DEMO_GROUPS), "rec_logps": _rows(DEMO_LOGPS), "rec_ratios": _rows(DEMO_RATIOS),
            "rec_presets": ["trl-1.16-grpo", "verl-grpo", "nanochat-rl"], "rec_ref_shift": 0.1}
for k, v in DEFAULTS.items():
    st.session_state.setdefault(k, v)
PARAMS = {
    "groups": Param("rec_groups", text(2000)),
    "logps": Param("rec_logps", text(2000)),
    "ratios": Param("rec_ratios", text(2000)),
    "presets": Param("rec_presets", lambda raw: [p for p in raw.split("|") if p], lambda v: "|".join(v)),
    "ref_shift": Param("rec_ref_shift", number(0.0, 1.0)),
}
restore_from_url(PARAMS)
if not set(st.session_state["rec_presets"]) <= set(RL_PRESETS):  # a link's unknown preset names: keep the page usable
    st.warning(f"link parameter `presets` names unknown presets {plain(st.session_state['rec_presets'])}; using the defaults")
    st.session_state["rec_presets"] = DEFAULTS["rec_presets"]


def _lines(raw: str, name: str) -> list[list[float]]:
    """One list of numbers per non-empty line (parsing text; no formula)."""
    lines = [ln for ln in raw.splitlines() if ln.strip()]
    if not lines:
        raise ValueError(f"{name} must have at least one line of numbers")
    return [parse_floats(ln, f"{name} (line {i + 1})") for i, ln in enumerate(lines)]


st.subheader("The batch")
c1, c2, c3 = st.columns([1, 2, 2])
c1.text_area("Rewards, one line per prompt group", key="rec_groups", height=140,
             help="Each line is one prompt's group of answers; groups may differ in size (a group of one is a singleton).")
c2.text_area("Token log-probs log π(y_t), one line per response (its length = the response length)", key="rec_logps", height=140)
c3.text_area("Token ratios ρ = π/π_old, one line per response (same lengths; 1 = on-policy)", key="rec_ratios", height=140)
ref_shift = st.slider("reference log-probs = old log-probs − this shift (so KL terms are non-zero)", 0.0, 1.0, step=0.05, key="rec_ref_shift")
batch = None
with shows_errors():
    groups = _lines(st.session_state["rec_groups"], "rewards")
    logps = _lines(st.session_state["rec_logps"], "log-probs")
    ratios = _lines(st.session_state["rec_ratios"], "ratios")
    batch = make_batch(groups, logps, ratios=ratios, ref_shift=ref_shift)

chosen = st.multiselect("Presets to compare (two to four)", list(RL_PRESETS), key="rec_presets", max_selections=4)
write_to_url(PARAMS)
with st.expander("What each preset is, and what was verified in the framework's code"):
    for name in chosen:
        p = PRESETS[name]
        st.markdown(f"**{name}** · {p.framework} {p.version} · mirrors `{p.mirrors}`  \n{p.verified}")

if batch is not None and len(chosen) < 2:
    st.info("Pick at least two presets to compare.")
elif batch is not None:
    results = []
    with shows_errors():
        results = [run_preset(name, batch) for name in chosen]
    if len(results) == len(chosen):
        differs = differing_quantities(results)
        st.subheader("Loss and clip fraction")
        cols = st.columns(len(results))
        for col, r in zip(cols, results):
            col.metric(f"loss · {r.preset}", f"{r.loss:+.5f}")
            col.metric(f"clip fraction · {r.preset}", f"{r.clip_fraction:.3f}")
        flags = " · ".join(f"**{q}**: {'differs' if d else 'same'}" for q, d in differs.items())
        st.markdown(f"Across the chosen presets — {flags}")

        st.subheader("Why they differ")
        diffs = preset_differences(chosen)
        if not diffs:
            st.caption("These presets share every setting.")
        table = [{"setting": d.setting, **d.values, "reason": " · ".join(f"{k}: {v}" for k, v in d.reasons.items()) or "(default)"}
                 for d in diffs]
        if table:
            st.dataframe(table, hide_index=True, width="stretch")

        st.subheader("Advantages and per-token gradient weights")
        st.caption("Rows: responses (group after group); columns: token positions; blank: padding (masked). "
                   "Gradient weight = ∂loss/∂log π(y_t): negative pushes the token's probability up under gradient descent.")
        width = len(batch.mask[0])  # token positions of the batch
        xlabels = [f"{r.preset} · t{t}" if t < width else f"{r.preset} ·" for r in results for t in range(width + 1)]
        for quantity, title, scale, key in (("advantages", "advantage", "RdBu", "rec_heat"), ("grad", "∂loss/∂log π", "PiYG", "rec_heat_grad")):
            z = [[] for _ in batch.group_ids]  # one row per response: the presets side by side, a blank column between
            for r in results:
                for i, row in enumerate(masked_rows(getattr(r, quantity), batch.mask)):
                    z[i] += row + [None]
            fig = figure(f"{title}: {' | '.join(r.preset for r in results)}", "preset · token position", "response")
            fig.add_trace(go.Heatmap(z=z, x=xlabels, colorscale=scale, colorbar=dict(title=title), name=title))
            fig.update_yaxes(autorange="reversed")
            st.plotly_chart(fig, width="stretch", key=key)
        first = {r.preset: masked_rows(r.advantages, batch.mask) for r in results}  # advantage at each response's first token
        st.caption("Advantage at each response's first token (REINFORCE++ and PPO vary along the response):")
        st.dataframe([{"response": i, "group": g, **{name: rows[i][0] for name, rows in first.items()}} for i, g in enumerate(batch.group_ids)],
                     hide_index=True, width="stretch")

st.subheader("How the recipes diverge over a few steps")
if st.toggle("Train the playground's tiny sequence policy under each chosen preset", key="rec_diverge",
             help="lab.playground: tabular policy, task short_or_long (right answers have length 1 or 3), 16 samples per step, same seed."):
    sc1, sc2 = st.columns(2)
    steps = sc1.slider("steps", 5, 60, 30, key="rec_steps")
    lr = sc2.slider("learning rate", 0.1, 3.0, 1.0, step=0.1, key="rec_sim_lr")
    with shows_errors():
        sims = simulate_presets(chosen, steps=steps, lr=lr)
        fig = figure("Expected reward E_π[r] per step", "step", "E_π[r]")
        for name, (run, notes) in sims.items():
            if run is not None:
                fig.add_trace(go.Scatter(y=run.expected_reward.tolist(), name=name, mode="lines"))
            if notes:
                st.caption(f"**{name}** — not simulated: " + "; ".join(notes))
        st.plotly_chart(fig, width="stretch", key="rec_sim")

st.subheader("Preference presets on one set of pairs")
if st.toggle("Compare the preference presets (DPO, cDPO, IPO, SimPO)", key="rec_pref_on"):
    st.caption("Sequence log-probs of each pair (comma lists, one number per pair); SimPO uses the lengths and no reference.")
    p1, p2, p3 = st.columns(3)
    for k, v in {"rec_pc": "-5, -8, -3", "rec_pr": "-6, -7, -9", "rec_rc": "-5.5, -7.5, -4", "rec_rr": "-5.5, -7.5, -8",
                 "rec_lc": "5, 8, 3", "rec_lr": "6, 7, 9"}.items():
        st.session_state.setdefault(k, v)
    p1.text_input("policy log π(y⁺)", key="rec_pc")
    p1.text_input("policy log π(y⁻)", key="rec_pr")
    p2.text_input("reference log π_ref(y⁺)", key="rec_rc")
    p2.text_input("reference log π_ref(y⁻)", key="rec_rr")
    p3.text_input("length |y⁺| (tokens)", key="rec_lc")
    p3.text_input("length |y⁻| (tokens)", key="rec_lr")
    with shows_errors():
        pairs = PreferencePairs(*(parse_floats(st.session_state[k], n) for k, n in
                                  (("rec_pc", "chosen_logps"), ("rec_pr", "rejected_logps"), ("rec_rc", "ref_chosen_logps"),
                                   ("rec_rr", "ref_rejected_logps"), ("rec_lc", "chosen_lengths"), ("rec_lr", "rejected_lengths"))))
        pref = [run_preference_preset(n, pairs) for n in PREFERENCE_PRESETS]
        st.dataframe([{"preset": r.preset, "loss": r.loss, "∂loss/∂log π(y⁺)": r.grad_chosen.tolist(), "∂loss/∂log π(y⁻)": r.grad_rejected.tolist(),
                       "reason": "; ".join(PRESETS[r.preset].reasons.values())} for r in pref], hide_index=True, width="stretch")
