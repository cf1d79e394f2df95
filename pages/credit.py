"""Credit assignment: the same trajectory under many credit mechanisms [credit-bank]."""


import plotly.graph_objects as go
import streamlit as st

from lab.credit import FAMILIES, GUIDING_PROBLEM, GUIDING_STEPS, MECHANISMS, guiding_example, run, padded_tokens, step_credit, wrong_step_spans
from labui import course_nav, figure, header, outline_heatmap_cells, page_link, parse_floats, route_through_app, shows_errors
from labui.predict import ask_chapter
from labui.share import Param, flag, number, restore_from_url, text, write_to_url

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Credit assignment", "credit-bank (37 papers)",
    "Lightman et al. 2023; Wang et al. 2024 (Math-Shepherd); SCAR; CONCUR; MART-GRPO; MGE-PO; CARM; TACO; Rubric Dropout; TAG; "
    "SHARPO; Residual Advantage; T2SPO; KnowGPO",
    "One final score, many tokens: which of them deserve it? Below, a solution reasons well for two steps, "
    "makes an error at step three and still reaches the right answer. **Uniform outcome credit** gives every "
    "token the same advantage, so it reinforces the wrong step too. Pick mechanisms and compare the credit each "
    "one gives the same tokens; the wrong step is outlined. Each mechanism says what evidence it needs, what it "
    "conserves, and what it cannot tell.",
    reference="credit-assignment-question-bank.txt",
)


def _mechanisms(raw: str) -> list[str]:
    names = [x for x in text(400)(raw).replace("|", ",").split(",") if x]
    bad = [x for x in names if x not in MECHANISMS]
    if bad:
        raise ValueError(f"{bad[0]!r} is not one of {list(MECHANISMS)}")
    return names


def _families(raw: str) -> list[str]:
    names = [x for x in text(400)(raw).replace("|", ",").split(",") if x]
    bad = [x for x in names if x not in FAMILIES]
    if bad:
        raise ValueError(f"{bad[0]!r} is not one of {list(FAMILIES)}")
    return names


_yes = lambda v: "1" if v else "0"  # noqa: E731
PARAMS = {"outcome": Param("cr_outcome", number(-100, 100)), "peers": Param("cr_peers", text(200)), "timeout": Param("cr_timeout", flag, _yes),
          **{f"step{j + 1}_correct": Param(f"cr_ok{j}", flag, _yes) for j in range(4)},
          **{f"entropy{j + 1}": Param(f"cr_ent{j}", number(-100, 100)) for j in range(4)},
          "families": Param("cr_families", _families, ",".join), "mechanisms": Param("cr_mechs", _mechanisms, ",".join)}
DEFAULTS = {"cr_outcome": 1.0, "cr_peers": "1, 0, 0", "cr_timeout": False,
            **{f"cr_ok{j}": j != 2 for j in range(4)}, **{f"cr_ent{j}": h for j, h in enumerate((0.3, 0.4, 1.6, 0.9))}}
for k, v in DEFAULTS.items():
    st.session_state.setdefault(k, v)


def reset() -> None:
    st.session_state.update(DEFAULTS)


st.session_state.setdefault("cr_families", list(FAMILIES))
restore_from_url(PARAMS)
st.button("Reset to the guiding example", on_click=reset, key="cr_reset", help="the page opens on the guiding example; this undoes your edits")
st.markdown(f"**Problem:** {GUIDING_PROBLEM} Target answer **19**. Response 1 (edit it below) and three peers form a group.")

with st.expander("Edit the trajectory: step correctness, outcome, entropies, group peers", expanded=True):
    cols = st.columns(4)
    for j, (col, text) in enumerate(zip(cols, GUIDING_STEPS)):
        col.markdown(f"**step {j + 1}:** `{text}`")
        col.checkbox("step is correct", key=f"cr_ok{j}")
        col.number_input("sampling entropy (nats)", min_value=None, step=0.1, key=f"cr_ent{j}")
    c1, c2, c3 = st.columns(3)
    c1.number_input("outcome reward of response 1", step=0.5, key="cr_outcome")
    peers_text = c2.text_input("outcome rewards of the 3 peers", key="cr_peers",
                               help="peer 1 is a clean correct solution, peers 2 and 3 are wrong; their rewards set the group baseline")
    c3.checkbox("response 1 was cut by a time limit (not a terminal state)", key="cr_timeout")
    edit_errors = st.empty()  # a bad edit shows its message here, next to the controls

fam = st.multiselect("Family filter", list(FAMILIES), key="cr_families")
options = [k for k, m in MECHANISMS.items() if m.family in fam]
st.session_state.setdefault("cr_mechs", ["outcome", "process_labels", "math_shepherd", "shapley", "mart", "taco"])
st.session_state["cr_mechs"] = [k for k in st.session_state["cr_mechs"] if k in options]
chosen = st.multiselect("Mechanisms (several at once)", options, key="cr_mechs", format_func=lambda k: MECHANISMS[k].name)

group = None
with shows_errors(edit_errors):
    peers = parse_floats(peers_text, "peer outcomes")
    if len(peers) != 3:
        raise ValueError(f"peer outcomes must list 3 numbers (one per peer); got {len(peers)}")
    group, evidence = guiding_example(
        step_correct=[st.session_state[f"cr_ok{j}"] for j in range(4)], outcome=st.session_state["cr_outcome"],
        step_entropy=[st.session_state[f"cr_ent{j}"] for j in range(4)], peer_outcomes=peers,
        terminal=not st.session_state["cr_timeout"])

if group is not None and not chosen:
    st.info("Pick at least one mechanism (the family filter may have hidden them all).")
if group is not None and chosen:
    traj = group[0]
    results = {}
    for k in chosen:
        with shows_errors():
            results[k] = run(k, group, evidence)
    keys = list(results)
    if keys:
        tokens = list(traj.tokens)
        z = [results[k].credit[0, : traj.n_tokens].tolist() for k in keys]
        fig = figure("Per-token credit of response 1 (rows: mechanisms; outlined: steps marked wrong)", "", "", height=170 + 48 * len(keys))
        fig.add_trace(go.Heatmap(z=z, x=list(range(len(tokens))), y=[MECHANISMS[k].name for k in keys], colorscale="RdBu", zmid=0,
                                 text=[tokens] * len(keys), colorbar=dict(title="credit"),
                                 hovertemplate="%{y}<br>token %{x}: %{text}<br>credit %{z:.3f}<extra></extra>"))
        outline_heatmap_cells(fig, wrong_step_spans(traj), len(keys))
        fig.update_yaxes(autorange="reversed")
        fig.update_xaxes(tickvals=list(range(len(tokens))), ticktext=tokens, tickangle=-60, tickfont=dict(size=13))
        st.plotly_chart(fig, width="stretch", key="cr_heatmap")

        table = {"mechanism": [MECHANISMS[k].name for k in keys]}
        per_step = {k: step_credit(results[k].credit[0], traj) for k in keys}
        for j in range(traj.n_steps):
            table[f"step {j + 1}{' ✗' if traj.step_labels[j] < 0.5 else ''}"] = [round(per_step[k][j], 4) for k in keys]
        table["total before"] = [round(results[k].metrics["total_before"], 4) for k in keys]
        table["total after"] = [round(results[k].metrics["total_after"], 4) for k in keys]
        table["conserved"] = ["yes" if results[k].metrics["conserved"] else "no" for k in keys]
        table["masked tokens"] = [results[k].metrics["n_masked"] for k in keys]
        st.markdown("**Mean credit per step of response 1**, and what each mechanism did to the whole group "
                    "(totals over all generated tokens of the group; *before* is uniform outcome credit).")
        st.dataframe(table, hide_index=True, width="stretch", key="cr_table")

        st.markdown("**The whole group under one mechanism** — group-relative mechanisms (CONCUR, Rubric Dropout, TAG, "
                    "MGE-PO, CARM, KnowGPO) act across responses, not only along one.")
        focus = st.selectbox("mechanism", keys, key="cr_focus", format_func=lambda k: MECHANISMS[k].name)
        res = results[focus]
        names = ["response 1 (guiding)", "peer 1 (clean, correct)", "peer 2 (wrong at step 2)", "peer 3 (wrong from step 1)"]
        fig2 = figure(f"{MECHANISMS[focus].name}: credit of every response in the group (padding is blank)", "token position", "", height=300)
        fig2.add_trace(go.Heatmap(z=[[v if on else None for v, on in zip(r, mk)] for r, mk in zip(res.credit.tolist(), res.mask.tolist())],
                                  y=names, colorscale="RdBu", zmid=0, colorbar=dict(title="credit"),
                                  text=padded_tokens(group, res.credit.shape[1]),
                                  hovertemplate="%{y}<br>%{text}: %{z:.3f}<extra></extra>"))
        fig2.update_yaxes(autorange="reversed")
        st.plotly_chart(fig2, width="stretch", key="cr_group_heatmap")

        for k in keys:
            m = MECHANISMS[k]
            with st.container(border=True):
                st.markdown(f"**{m.name}** · family: *{m.family}* · {m.paper}")
                a, b, c = st.columns(3)
                a.markdown("**Needs**\n\n" + "\n".join(f"- {n}" for n in m.needs))
                b.markdown(f"**Conserves**\n\n{m.conserves}")
                c.markdown(f"**Cannot tell**\n\n{m.cannot_tell}")
                if m.bank_papers:
                    st.markdown("Question bank (opens the quiz filtered to this paper):")
                    for col, p in zip(st.columns(len(m.bank_papers)), m.bank_papers):
                        page_link(col, "credit_quiz", p.replace("_", " "), {"paper": p})
                with st.expander("what it did (metrics for the whole group)"):
                    st.json({n: v for n, v in results[k].metrics.items() if n != "masked_tokens"}, expanded=False)
write_to_url(PARAMS)

st.subheader("Predict, then reveal")
ask_chapter("credit")
course_nav(__file__)
