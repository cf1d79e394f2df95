"""Compare checkpoints with real uncertainty: paired bootstrap, pass@k, selective answering, retention
[overview, "Evidence of adaptation gains" and "Behavioral gains and competing requirements"]."""

import os
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from lab import evaluation as ev
from lab.smallrun import evaluate as se
from lab.smallrun.tasks import TASKS
from labui import colors, course_nav, figure, header, route_through_app, shows_errors
from labui.predict import ask_chapter
from labui.share import Param, choice, flag, number, plain, restore_from_url, write_to_url

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Compare checkpoints",
    'sections "Evidence of adaptation gains", "Behavioral gains and competing requirements"',
    "Efron and Tibshirani 1993 (bootstrap); Chen et al. 2021, §2.1, eq. 1 (pass@k); El-Yaniv and Wiener 2010 (risk–coverage)",
    "Two checkpoints scored on the *same* cases are not two independent samples: a hard case is hard for both. "
    "Resampling the cases as pairs keeps that link, so the interval of the difference is far narrower than the two "
    "separate intervals suggest. Below: the paired interval beside the separate ones, pass@k with uncertainty, "
    "coverage beside accuracy among answered for a variant that may abstain, retention on an older task, and the "
    "bounded claim these numbers support — nothing more.",
    reference="post-training-overview.txt",
)
st.latex(r"\hat\Delta=\frac1N\sum_i (b_i-a_i),\qquad \Delta^{*}_r=\frac1N\sum_{i\in S_r}(b_i-a_i),\ S_r\sim\text{cases with replacement}")
st.latex(r"\text{pass@}k=1-\binom{n-c}{k}\Big/\binom{n}{k}")

CASES = [20, 50, 100, 200, 500, 1000]
SOURCES = ["demo", "upload CSV", "run checkpoints"]
RUNS = Path(os.environ.get("LAB_RUNS_DIR", "runs"))
RUN_CASES = [20, 50, 100, 200]
RUN_SAMPLES = [4, 8, 16]


@st.cache_data(show_spinner="Evaluating the checkpoint on the held-out cases …", max_entries=32)
def evaluate_cached(path: str, fingerprint: str, task: str, n_cases: int, n_samples: int, seed: int) -> se.CaseEvaluation:
    """One checkpoint on one task's held-out cases; the weights' hash is in the key, so retrained weights re-evaluate."""
    return se.evaluate_checkpoint(path, task=task, n_cases=n_cases, n_samples=n_samples, seed=seed)


PARAMS = {"source": Param("cmp_source", choice(SOURCES)), "gain": Param("cmp_gain", number(-0.2, 0.3)),
          "cases": Param("cmp_n", choice(CASES)), "seed": Param("cmp_seed", number(0, 10_000, integer=True)),
          "threshold": Param("cmp_threshold", number(0.0, 1.0)), "by_cluster": Param("cmp_cluster", flag, lambda v: "1" if v else "0")}
for k, v in {"cmp_source": "demo", "cmp_gain": 0.08, "cmp_n": 200, "cmp_seed": 0, "cmp_threshold": 0.5, "cmp_cluster": False}.items():
    st.session_state.setdefault(k, v)
restore_from_url(PARAMS)
source = st.radio("per-case scores", SOURCES, horizontal=True, key="cmp_source",
                  help="demo: the lab's own synthetic cases (not measurements). CSV: a header row, one row per case. "
                       "run checkpoints: two checkpoints of your small runs, evaluated here on the same held-out cases.")
ids = {}  # column → checkpoint name, for the claim
claim_metric = None  # what the compared column measures, when the page knows it
population, conditions, old_task = "the lab's synthetic demo cases", "the conditions recorded with the scores", "the old task"
with shows_errors():
    if source == "run checkpoints":
        cks = [c for c in se.list_checkpoints(RUNS) if not c.is_reward_model]  # policies only: a reward model writes no answers
        if not cks:
            st.info(f"No run checkpoints in `{RUNS}/` yet. Make two with one command: "
                    f"`.venv/bin/python -m lab.smallrun grpo --out {RUNS}/grpo` trains a base SFT stage, then GRPO; "
                    f"this page then compares the base stage's final checkpoint with the run's final one.")
            write_to_url(PARAMS)
            course_nav(__file__)
            st.stop()
        names = [f"{c.run} · {c.label}" for c in cks]
        runs = list(dict.fromkeys(c.run for c in cks if "/" not in c.run)) or list(dict.fromkeys(c.run for c in cks))
        run = st.selectbox("run", runs, key="cmp_run", help=f"Runs under `{RUNS}/` (set LAB_RUNS_DIR to look elsewhere).")
        pair = se.default_pair(cks, run)
        c1, c2 = st.columns(2)
        pick_a = c1.selectbox("checkpoint A (baseline)", names, index=cks.index(pair[0]) if pair[0] else 0, key=f"cmp_ck_a_{run}")
        pick_b = c2.selectbox("checkpoint B (candidate)", names, index=cks.index(pair[1]) if pair[1] else 0, key=f"cmp_ck_b_{run}")
        ck_a, ck_b = cks[names.index(pick_a)], cks[names.index(pick_b)]
        c1, c2, c3, c4 = st.columns(4)
        n_run = c1.select_slider("held-out cases", RUN_CASES, value=100, key="cmp_run_n")
        n_samp = c2.select_slider("samples per case (pass@k)", RUN_SAMPLES, value=8, key="cmp_run_samples")
        run_seed = c3.number_input("sampling seed", 0, 10_000, value=0, key="cmp_run_seed")
        others = [t for t in TASKS if t != ck_a.task] or list(TASKS)
        other = c4.selectbox("retention on task", others, key="cmp_run_other", help="Another built-in task: did training on one task cost the other?")
        task = ck_a.task
        eval_a = evaluate_cached(ck_a.path, se.checkpoint_fingerprint(ck_a.path), task, int(n_run), int(n_samp), int(run_seed))
        eval_b = evaluate_cached(ck_b.path, se.checkpoint_fingerprint(ck_b.path), task, int(n_run), int(n_samp), int(run_seed))
        old_a = evaluate_cached(ck_a.path, se.checkpoint_fingerprint(ck_a.path), other, int(n_run), 0, int(run_seed))
        old_b = evaluate_cached(ck_b.path, se.checkpoint_fingerprint(ck_b.path), other, int(n_run), 0, int(run_seed))
        table = se.comparison_table(eval_a, eval_b, old_a, old_b)
        ids = {"baseline": pick_a, "candidate": pick_b}
        claim_metric = f"greedy held-out accuracy ({eval_a.verifier} verifier)"
        population = f"the {task} task's fixed held-out prompts (never trained on)"
        conditions = (f"greedy decoding with at most {eval_a.max_new_tokens} new tokens and the {eval_a.verifier} verifier; pass@k from "
                      f"{eval_a.n_samples} samples per case at temperature {eval_a.temperature:g}, sampling seed {eval_a.seed}")
        old_task = f"the {other} task ({old_a.n_cases} held-out cases, greedy)"
        st.caption(f"Evaluated here: A {plain(pick_a)}, B {plain(pick_b)}, on the same {eval_a.n_cases} held-out {task} cases. Greedy accuracy "
                   f"A {eval_a.accuracy:.1%}, B {eval_b.accuracy:.1%}. Confidence for the abstaining variant: the per-token "
                   "geometric-mean probability of the candidate's greedy answer.")
    elif source == "demo":
        c1, c2, c3 = st.columns(3)
        gain = c1.slider("true gain in solve probability (demo)", -0.2, 0.3, step=0.01, key="cmp_gain")
        n_cases = c2.select_slider("cases", CASES, key="cmp_n")
        seed = c3.number_input("seed", 0, 10_000, key="cmp_seed")
        table = ev.synthetic_comparison(n_cases=int(n_cases), gain=float(gain), seed=int(seed))
        st.caption("Demo columns: baseline, candidate (0/1 correct), n / c_baseline / c_candidate (samples, correct samples), "
                   "confidence, old_before / old_after (old task), cluster (source document).")
    else:
        up = st.file_uploader("CSV with a header row; one row per case (≤ 100000 rows, ≤ 20 MB)", type=["csv"], key="cmp_file")
        if up is None:
            st.info("Upload a CSV, e.g. columns `baseline,candidate` with 0/1 per case; optional `cluster`, `confidence`, "
                    "`n`, `c_baseline`, `c_candidate`, `old_before`, `old_after`.")
            write_to_url(PARAMS)
            course_nav(__file__)
            st.stop()
        if up.size > 20_000_000:
            raise ValueError(f"the CSV is {up.size} bytes; at most 20 MB is accepted")
        try:
            text = up.getvalue().decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("the CSV must be UTF-8 text") from None
        table = ev.read_score_table(text)
    numeric = [k for k in table if k != "cluster"]
    if len(numeric) < 2:
        raise ValueError(f"the table needs at least two numeric columns; got {numeric}")
    c1, c2, c3 = st.columns(3)
    col_a = c1.selectbox("baseline column", numeric, index=numeric.index("baseline") if "baseline" in numeric else 0, key="cmp_a")
    col_b = c2.selectbox("candidate column", numeric, index=numeric.index("candidate") if "candidate" in numeric else 1, key="cmp_b")
    use_cluster = c3.checkbox("resample by cluster", key="cmp_cluster", disabled="cluster" not in table,
                              help="Needs a `cluster` column: cases from one source are resampled together.")

    paired = ev.paired_bootstrap(table[col_a], table[col_b], cluster=table["cluster"] if use_cluster and "cluster" in table else None)
    sep_a, sep_b = ev.mean_interval(table[col_a]), ev.mean_interval(table[col_b])
    m1, m2, m3 = st.columns(3)
    m1.metric("mean difference (candidate − baseline)", f"{paired.mean_difference:+.3f}")
    m2.metric(f"paired {paired.confidence:.0%} interval", f"[{paired.low:+.3f}, {paired.high:+.3f}]")
    m3.metric("interval excludes 0", "yes" if paired.excludes_zero else "no",
              help=f"{paired.n_cases} cases, {paired.n_units} sampling units, {paired.n_resamples} resamples")
    fig = figure("Separate intervals overlap; the paired interval of the difference is what the claim needs",
                 "", "score (mean over cases)")
    fig.add_trace(go.Scatter(x=[f"{col_a} (separate)", f"{col_b} (separate)"], y=[sep_a.mean_difference, sep_b.mean_difference],
                             mode="markers", marker=dict(size=12, color=colors.REFERENCE), name="separate intervals",
                             error_y=dict(type="data", symmetric=False, array=[sep_a.above, sep_b.above], arrayminus=[sep_a.below, sep_b.below])))
    fig.add_trace(go.Scatter(x=["difference (paired)"], y=[paired.mean_difference], mode="markers", marker=dict(size=14, color=colors.KEY),
                             name="paired difference", error_y=dict(type="data", symmetric=False, array=[paired.above], arrayminus=[paired.below])))
    fig.add_hline(y=0, line_dash="dot")
    st.plotly_chart(fig, width="stretch", key="cmp_intervals")

    if {"n", "c_baseline", "c_candidate"} <= set(table):
        st.subheader("pass@k with uncertainty over cases")
        fig2 = figure("pass@k (unbiased estimator), 95% bootstrap band over cases", "k", "pass@k")
        for name, col in (("baseline", "c_baseline"), ("candidate", "c_candidate")):
            curve = ev.pass_at_k_curve(table["n"], table[col])
            fig2.add_trace(go.Scatter(x=curve.k, y=curve.mean, mode="lines+markers", name=name,
                                      error_y=dict(type="data", symmetric=False, array=curve.above, arrayminus=curve.below)))
        st.plotly_chart(fig2, width="stretch", key="cmp_passk")

    if "confidence" in table:
        st.subheader("An abstaining variant: coverage beside accuracy among answered")
        threshold = st.slider("answer only when confidence ≥", 0.0, 1.0, step=0.05, key="cmp_threshold")
        answered = ev.abstain_below(table["confidence"], threshold)
        sel = ev.selective_metrics(table[col_b], answered, confidence=table["confidence"])
        s1, s2, s3 = st.columns(3)
        s1.metric("coverage", f"{sel.coverage:.1%}")
        s2.metric("accuracy among answered", "—" if sel.selective_accuracy != sel.selective_accuracy else f"{sel.selective_accuracy:.1%}")
        s3.metric("correct over all requests", f"{sel.overall_accuracy:.1%}")
        st.caption("Fewer wrong answers can simply mean fewer answers: read the two numbers together.")
        fig3 = figure("Risk–coverage curve", "coverage", "error rate among answered")
        fig3.add_trace(go.Scatter(x=sel.curve_coverage, y=sel.curve_risk, mode="lines", name="risk"))
        st.plotly_chart(fig3, width="stretch", key="cmp_risk")

    ret = None
    if {"old_before", "old_after"} <= set(table):
        ret = ev.retention(table["old_before"], table["old_after"])
        st.subheader("Retention on the old task" if source != "run checkpoints" else f"Retention on {old_task}")
        r1, r2, r3 = st.columns(3)
        r1.metric("old task before", f"{ret.before:.3f}")
        r2.metric("old task after", f"{ret.after:.3f}", delta=f"{ret.change:+.3f}")
        r3.metric("retained fraction", "—" if ret.retained_fraction != ret.retained_fraction else f"{ret.retained_fraction:.1%}")

    st.subheader("The claim these numbers support")
    if source == "upload CSV":
        population = "the uploaded cases"
    if claim_metric is None or (col_a, col_b) != ("baseline", "candidate"):
        claim_metric = f"mean of {col_b} − {col_a}"
    st.info(plain(ev.bounded_claim(ids.get(col_b, col_b), ids.get(col_a, col_a), claim_metric, paired, population,
                                   conditions, old_task if ret else "no old task", ret,
                                   "training-seed variation, other populations, safety behaviour")))  # names from uploads and runs
write_to_url(PARAMS)

st.subheader("Predict, then reveal")
ask_chapter("compare")
course_nav(__file__)
