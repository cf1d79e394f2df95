"""Credit-assignment quiz: predict first, then see the answer, why, an example and (where the lab implements it) the mechanism.

Questions come from lab.credit_bank (lab/data/credit_questions.json); links such as ``credit_quiz?paper=scar`` or
``credit_quiz?family=masks`` open the quiz filtered. The page only lays out widgets: checking and scoring are in the library.
"""

import plotly.graph_objects as go
import streamlit as st

from lab import credit_bank as cb
from labui import figure, route_through_app, shows_errors
from labui.share import plain

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

ALL = "(all)"
PER_PAGE = 10  # questions per screen in list mode
PAPERS = cb.papers()
QS = cb.load_questions()

st.title("Credit-assignment quiz")
st.caption(f"{len(QS)} questions on the {len(PAPERS)} papers of `credit-assignment-question-bank.txt`, written in the lab's own words; "
           "each cites its paper. Numbers in examples are the lab's own illustrations unless marked as the bank's.")
st.markdown("Which steps deserve a good final score? Commit to a prediction, press **Check**, then read why. "
            "Your first committed prediction on each question counts toward the session score.")

# ---- filters: widgets, seeded once from the query parameters (?paper=KEY, ?family=NAME)
paper_opts = [ALL, *PAPERS]
family_opts = [ALL, *cb.families()]
qp_paper, qp_family = st.query_params.get("paper"), st.query_params.get("family")
if st.session_state.get("cq_seeded_from") != (qp_paper, qp_family):  # a first visit, or a new link in this session
    st.session_state["cq_paper"] = qp_paper if qp_paper in PAPERS else ALL
    st.session_state["cq_family"] = qp_family if qp_family in family_opts[1:] else ALL
    st.session_state["cq_seeded_from"] = (qp_paper, qp_family)
st.session_state.setdefault("cq_answers", {})  # id -> bool, first committed prediction
st.session_state.setdefault("cq_revealed", {})  # id -> bool, latest check
st.session_state.setdefault("cq_idx", 0)

if qp_paper is not None and qp_paper not in PAPERS:
    st.warning(f"The link asks for paper {plain(repr(qp_paper[:80]))}, which is not a paper key of the bank (e.g. 'scar', 'mart', "
               "'math_shepherd'); showing all papers instead.")
if qp_family is not None and qp_family not in family_opts[1:]:
    st.warning(f"The link asks for family {plain(repr(qp_family[:80]))}, which is not a family of the bank; showing all families instead.")


def paper_label(key: str) -> str:
    if key == ALL:
        return "All papers"
    p = PAPERS[key]
    if not p["title"]:
        return p["name"]
    return p["title"] if p["title"].startswith(p["name"]) else f"{p['name']} — {p['title']}"


c1, c2, c3 = st.columns([3, 2, 2])
paper = c1.selectbox("Paper", paper_opts, format_func=paper_label, key="cq_paper")
family = c2.selectbox("Family", family_opts, format_func=lambda f: "All families" if f == ALL else f, key="cq_family")
mode = c3.radio("Show", ["One at a time", "All as a list"], key="cq_mode", horizontal=True)

with shows_errors():
    questions = cb.filter_questions(QS, paper=None if paper == ALL else paper, family=None if family == ALL else family)


def _fmt(v) -> str:
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and len(v) <= 16:
        return ", ".join(_fmt(x) for x in v)
    return str(v)


def show_mechanism(key: str, qid: str) -> None:
    """The mechanism this question is about, on the gallery's small example (lab.credit.demo)."""
    try:
        from lab.credit import demo
    except ImportError:
        st.info(f"The mechanism gallery (`lab.credit`) is not part of this build, so `{key}` cannot be drawn here.")
        return
    with shows_errors():
        res = demo(key)
        z = res.credit.detach().cpu().double()
        z = (z.unsqueeze(0) if z.dim() == 1 else z).tolist()  # one row per response
        tokens = getattr(res, "tokens", None)
        x = list(range(len(z[0])))
        fig = figure(f"Mechanism '{key}' on a small example: credit per token", "token position", "response", height=200 + 40 * len(z))
        labels = [[f"{v:.2f}" if v else "" for v in row] for row in z]  # blank cells: no credit (or padding)
        fig.add_trace(go.Heatmap(z=z, x=x, y=[f"response {i + 1}" for i in range(len(z))], colorscale="RdBu", zmid=0,
                                 text=labels, texttemplate="%{text}", colorbar=dict(title="credit")))
        if isinstance(tokens, (list, tuple)) and tokens and isinstance(tokens[0], str) and len(tokens) == len(x):
            fig.update_xaxes(tickmode="array", tickvals=x, ticktext=list(tokens))
        st.plotly_chart(fig, width="stretch", key=f"cq_mech_{qid}")
        st.caption("Drawn on the chapter's guiding example (a solution that errs at step 3 and still ends right, with its group "
                   "peers), not on this question's numbers. The Credit assignment page lets you edit that example.")
        metrics = getattr(res, "metrics", {}) or {}
        if metrics:
            st.dataframe({"metric": list(metrics), "value": [_fmt(v) for v in metrics.values()]}, hide_index=True, width="stretch")


def reveal(q: dict, ok: bool) -> None:
    answer = cb.answer_text(q)
    if ok:
        st.success(f"Right. The answer is **{answer}**.")
    else:
        st.warning(f"Not quite. The answer is **{answer}**.")
    st.markdown(f"**Why.** {q['answer_explanation']}")
    source = "numbers from the bank" if q["example_source"] == "bank" else "the lab's own illustration"
    st.markdown(f"**Example** ({source}). {q['example']}")
    if q.get("mechanism"):
        st.markdown(f"**The mechanism in the lab:** `{q['mechanism']}`")
        show_mechanism(q["mechanism"], q["id"])


def render(q: dict) -> None:
    qid = q["id"]
    with st.container(border=True):
        p = PAPERS[q["paper"]]
        st.markdown(f"**{qid}** · {p['name']} · *{q['family']}*")
        st.markdown(q["question"])
        st.caption("Source: " + cb.format_citation(q))
        if "choices" in q:
            pred = st.radio("Your prediction", list(range(len(q["choices"]))), format_func=lambda i: q["choices"][i],
                            index=None, key=f"cq_pred_{qid}")
        else:
            pred = st.number_input("Your prediction (a number)", value=None, format="%.4f", key=f"cq_pred_{qid}")
        if st.button("Check", key=f"cq_check_{qid}"):
            if pred is None:
                st.info("Commit a prediction first: pick a choice or type a number, then press Check.")
            else:
                with shows_errors():
                    ok = cb.check_answer(q, pred)
                    st.session_state["cq_answers"].setdefault(qid, ok)
                    st.session_state["cq_revealed"][qid] = ok
        if qid in st.session_state["cq_revealed"]:
            reveal(q, st.session_state["cq_revealed"][qid])


if not questions:
    st.info("No question matches this paper and family together; widen one of the filters.")
elif mode == "One at a time":
    if st.session_state.get("cq_last_filter") != (paper, family):
        st.session_state["cq_last_filter"] = (paper, family)
        st.session_state["cq_idx"] = 0
    n = len(questions)
    idx = min(st.session_state["cq_idx"], n - 1)

    def step(delta: int) -> None:
        st.session_state["cq_idx"] = cb.cycle_index(idx, delta, n)

    b1, b2, b3 = st.columns([1, 1, 4])
    b1.button("◀ Previous", on_click=step, args=(-1,), key="cq_prev")
    b2.button("Next ▶", on_click=step, args=(1,), key="cq_next")
    b3.markdown(f"Question **{idx + 1}** of **{n}**")
    render(questions[idx])
else:
    # ten at a time keeps a rerun quick (every question carries its own widgets)
    starts = list(range(0, len(questions), PER_PAGE))
    if len(starts) > 1:
        start = st.selectbox(f"{len(questions)} questions; showing", starts, key="cq_list_start",
                             format_func=lambda i: f"{i + 1}–{min(i + PER_PAGE, len(questions))}")
    else:
        start = 0
        st.markdown(f"**{len(questions)}** questions")
    for q in cb.page_of(questions, start, PER_PAGE):
        render(q)

# ---- session score, per family (from the library)
with shows_errors():
    s = cb.score(st.session_state["cq_answers"], QS)
    st.divider()
    st.subheader("Session score")
    t = s["total"]
    cols = st.columns(4)
    cols[0].metric("All families", f"{t['correct']} / {t['answered']}")
    for i, (fam, v) in enumerate(sorted(s["by_family"].items())):
        cols[(i + 1) % 4].metric(fam, f"{v['correct']} / {v['answered']}")
    if st.button("Reset score", key="cq_reset"):
        st.session_state["cq_answers"] = {}
        st.session_state["cq_revealed"] = {}
        st.rerun()
