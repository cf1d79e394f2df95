"""Preferences and reward models [ftip-002J … ftip-002V].

Link parameters: ``/preferences?chosen_score=2&rejected_score=0.5&offset=0&comparisons=A>B%0AB>C&ties=drop&abstentions=drop&l2=0.1``.
"""

import plotly.graph_objects as go
import streamlit as st
import torch

from lab.preference import (Comparison, bradley_terry_probability, find_preference_cycle, fit_bradley_terry, majority_edges,
                            reward_model_loss, to_observations)
from labui import circle_layout, colors, course_nav, example_button, example_note, figure, header, mark_point, route_through_app, shows_errors
from labui.predict import ask_chapter
from labui.share import Param, choice, number, restore_from_url, text, write_to_url
from worked_examples import bradley_terry as EX
from worked_examples import preference_cycle as EXC

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Preferences and reward models",
    "ftip-002K, ftip-002Q, ftip-002R, ftip-002S, ftip-002T, ftip-002V",
    "Bradley & Terry 1952, eq. 1; Ouyang et al. 2022, §3.5, eq. 1",
    "A judge picks one of two responses. The Bradley–Terry model explains such choices with one score per "
    "response: the win probability depends only on the **difference** of scores, so a common offset is "
    "invisible (scores are identified only up to a constant). A reward model is trained by maximising that "
    "probability on the observed choices.",
)
st.latex(r"\Pr(y^+\succ y^-)=\sigma\big(r(y^+)-r(y^-)\big),\qquad L_{\mathrm{rm}}=-\frac{\sum_o w_o\log\sigma\big(r(y^+_o)-r(y^-_o)\big)}{\sum_o w_o}")

# defaults differ from worked example ftip-002T (scores 2 and 0.5, no offset), so loading it visibly changes the page
for k, v in {"pref_rc": 1.0, "pref_rr": 0.0, "pref_offset": 1.5,
             "pref_table": "A > B\nB > C\nA > C\nA > B\nB = C\nC ? A", "pref_ties": "drop", "pref_abst": "drop", "pref_l2": 0.1}.items():
    st.session_state.setdefault(k, v)
PARAMS = {  # shareable link: readable name → widget key
    "chosen_score": Param("pref_rc", number(-10.0, 10.0)),
    "rejected_score": Param("pref_rr", number(-10.0, 10.0)),
    "offset": Param("pref_offset", number(-5.0, 5.0)),
    "comparisons": Param("pref_table", text(2000)),
    "ties": Param("pref_ties", choice(["raise", "drop", "split"])),
    "abstentions": Param("pref_abst", choice(["raise", "drop"])),
    "l2": Param("pref_l2", number(0.0, 10.0)),
}
restore_from_url(PARAMS)

b1, b2 = st.columns(2)
with b1:
    example_button("Load worked example ftip-002T (scores 2 and 0.5)", {"pref_rc": 2.0, "pref_rr": 0.5, "pref_offset": 0.0}, "pref_example")
with b2:
    example_button("Load worked example ftip-002V (a cycle)", {"pref_table": "A > B\nB > C\nC > A", "pref_l2": 0.0}, "pref_cycle_example")

st.subheader("Two scores → one probability")
c1, c2, c3 = st.columns(3)
rc = c1.number_input("score r(y⁺)", -10.0, 10.0, step=0.1, key="pref_rc")
rr = c2.number_input("score r(y⁻)", -10.0, 10.0, step=0.1, key="pref_rr")
off = c3.slider("common offset c added to both", -5.0, 5.0, step=0.5, key="pref_offset")
p = float(bradley_terry_probability(rc + off, rr + off))
q = float(bradley_terry_probability(rr + off, rc + off))
m1, m2, m3 = st.columns(3)
m1.metric("P(y⁺ ≻ y⁻)", f"{p:.4f}")
m2.metric("P(y⁻ ≻ y⁺)", f"{q:.4f}")
m3.metric("reward-model loss −log σ(Δ)", f"{float(reward_model_loss([rc + off], [rr + off])):.4f}")
example_note("pref_example", EX, [p, q])
ask_chapter("preferences")  # predict first; the charts below show why
g1, g2 = st.columns(2)
d = torch.linspace(-8, 8, 161, dtype=torch.float64)
fig = figure("Bradley–Terry link: probability against score difference", "Δ = r(y⁺) − r(y⁻)  [score units]", "P(y⁺ ≻ y⁻)")
fig.add_trace(go.Scatter(x=d.tolist(), y=bradley_terry_probability(d, 0.0).tolist(), name="σ(Δ)",
                         line=dict(color=colors.KEY, width=colors.KEY_WIDTH)))
mark_point(fig, rc - rr, p, color=colors.CURRENT)  # the current pair: x is the widgets' score difference
g1.plotly_chart(fig, width="stretch", key="pref_sigmoid")
# offset invariance as curves: both scores move with the offset c, the probability stays flat
cs = torch.linspace(-5, 5, 41, dtype=torch.float64)
of = figure("Offset invariance: add c to both scores", "common offset c  [score units]", "score  [score units]")
of.add_trace(go.Scatter(x=cs.tolist(), y=(cs + rc).tolist(), name="r(y⁺) + c", line=dict(color=colors.POSITIVE, width=colors.REFERENCE_WIDTH, dash="dash")))
of.add_trace(go.Scatter(x=cs.tolist(), y=(cs + rr).tolist(), name="r(y⁻) + c", line=dict(color=colors.NEGATIVE, width=colors.REFERENCE_WIDTH, dash="dash")))
of.add_trace(go.Scatter(x=cs.tolist(), y=bradley_terry_probability(cs + rc, cs + rr).tolist(), name="P(y⁺ ≻ y⁻)  [right axis]", yaxis="y2",
                        line=dict(color=colors.KEY, width=colors.KEY_WIDTH)))
of.add_trace(go.Scatter(x=[off], y=[p], mode="markers", name="current c", yaxis="y2", marker=dict(size=12, color=colors.CURRENT)))
of.update_layout(yaxis2=dict(title="P(y⁺ ≻ y⁻)", overlaying="y", side="right", range=[0, 1], showgrid=False,
                             tickvals=[0, 0.25, 0.5, 0.75, 1]),
                 legend=dict(orientation="h", yanchor="top", y=-0.25, xanchor="left", x=0), height=400, margin=dict(l=50, r=60, t=50, b=40))
g2.plotly_chart(of, width="stretch", key="pref_offset_curves")
st.caption(f"Scores shown to the model: {rc + off:.2f} and {rr + off:.2f}. Move the offset: the scores change, the probability does not.")

st.subheader("A comparison table → fitted scores")
st.markdown("One comparison per line: `A > B` (A chosen), `A = B` (tie), `A ? B` (abstain), `A ! B` (invalid record).")
c1, c2 = st.columns([2, 1])
table = c1.text_area("comparisons", key="pref_table", height=160)
ties = c2.selectbox("tie policy", ["raise", "drop", "split"], key="pref_ties")
abst = c2.selectbox("abstention policy", ["raise", "drop"], key="pref_abst")
l2 = c2.number_input("l2 prior strength (0 = pure maximum likelihood)", 0.0, 10.0, step=0.05, key="pref_l2")

MAX_ROWS, MAX_ITEMS = 200, 40  # bounds that keep a rerun under a second (tests/test_page_fuzz.py)
with shows_errors(c1):
    lines = table.splitlines()
    if len(lines) > MAX_ROWS or len(table) > 40 * MAX_ROWS:
        raise ValueError(f"comparisons: at most {MAX_ROWS} lines on this page; got {len(lines)}")
    comps = []
    for n, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        for sym, outcome in ((">", "a"), ("=", "tie"), ("?", "abstain"), ("!", "invalid")):
            if sym in line:
                a, b = (s.strip() for s in line.split(sym, 1))
                if not a or not b:
                    raise ValueError(f"comparisons line {n}: need an item on each side of {sym!r}")
                if len(a) > 40 or len(b) > 40:
                    raise ValueError(f"comparisons line {n}: item names of at most 40 characters")
                comps.append(Comparison("x", a, b, "judge", outcome))
                break
        else:
            raise ValueError(f"comparisons line {n}: expected 'A > B', 'A = B', 'A ? B' or 'A ! B'; got {line[:60]!r}")
    n_items = len({x for c in comps for x in (c.response_a, c.response_b)})
    if n_items > MAX_ITEMS:
        raise ValueError(f"comparisons: at most {MAX_ITEMS} distinct items on this page; got {n_items}")
    cycle = find_preference_cycle(comps)
    if cycle:
        st.warning(f"Preference cycle: {' ≻ '.join(map(str, cycle))} ≻ {cycle[0]}. No scalar score orders all of these strictly.")
    else:
        st.info("No strict majority cycle: a scalar order can respect every majority preference.")
    obs = to_observations(comps, ties=ties, abstentions=abst, invalid="drop")
    scores = fit_bradley_terry(obs, l2=l2)
    items = list(scores)
    # a split tie is two half-weight observations: the loss weighs them as the fit does
    loss = reward_model_loss([scores[o.chosen] for o in obs], [scores[o.rejected] for o in obs], weights=[o.weight for o in obs])
    st.metric("reward-model loss of the fitted scores on these observations", f"{float(loss):.4f}",
              help="weighted mean over observations; a split tie counts 0.5 each way, exactly as in the fit")
    g1, g2 = st.columns(2)
    fig = figure("Fitted Bradley–Terry scores (mean fixed at 0)", "item", "score")
    fig.add_trace(go.Bar(x=items, y=[scores[i] for i in items], text=[f"{scores[i]:.2f}" for i in items], marker_color=colors.KEY, name="score"))
    # markers too: a score of exactly 0 is a bar of zero height, which otherwise looks like a missing chart
    fig.add_trace(go.Scatter(x=items, y=[scores[i] for i in items], mode="markers", marker=dict(size=10, color=colors.KEY), showlegend=False))
    fig.add_hline(y=0, line=dict(color=colors.REFERENCE, width=1))
    g1.plotly_chart(fig, width="stretch", key="pref_scores")
    if items and all(abs(scores[i]) < 1e-6 for i in items):
        g1.info("Every fitted score is 0: each item wins as often as it loses (in a balanced cycle, for instance), so the "
                "likelihood is highest with all scores equal, and the mean-zero convention puts them at 0. The bars have "
                "zero height; nothing is missing. A scalar score cannot express the cycle.")
    # preference graph: items on a circle, an arrow from winner to loser for each majority edge
    pos = circle_layout(items)
    gfig = figure("Preference graph (arrow: majority winner → loser)", "", "", height=340)
    # labels inside the nodes: arrows stop at the node's edge (standoff), so no arrow can cover a label
    gfig.add_trace(go.Scatter(x=[pos[i][0] for i in items], y=[pos[i][1] for i in items], mode="markers+text", text=items,
                              textposition="middle center", textfont=dict(color="white", size=14),
                              marker=dict(size=34, color=colors.POSITIVE), name="items"))
    on_cycle = set(zip(cycle, cycle[1:] + cycle[:1])) if cycle else set()
    # one update with every arrow: add_annotation per edge re-validates the layout each time (~15 ms per arrow)
    gfig.update_layout(annotations=[dict(x=pos[b][0], y=pos[b][1], ax=pos[a][0], ay=pos[a][1], xref="x", yref="y", axref="x", ayref="y",
                                         showarrow=True, arrowhead=3, arrowwidth=2, standoff=19, startstandoff=19,
                                         arrowcolor=colors.NEGATIVE if (a, b) in on_cycle else colors.REFERENCE) for a, b in majority_edges(obs)])
    gfig.update_xaxes(visible=False, range=[-1.6, 1.6])
    gfig.update_yaxes(visible=False, range=[-1.4, 1.5])
    g2.plotly_chart(gfig, width="stretch", key="pref_graph")
    example_note("pref_cycle_example", EXC, [len(cycle) if cycle else 0])
write_to_url(PARAMS)

course_nav(__file__)
