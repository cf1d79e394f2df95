"""Small runs: start, watch, stop, resume and compare SFT / DPO / GRPO runs of a tiny GPT-2."""

import os
import time
from pathlib import Path
from typing import Optional

import streamlit as st
import torch

from lab.smallrun import TASKS, RunConfig, pick_device
from lab.smallrun.config import ALGORITHM_DEFAULTS, ALGORITHMS
from lab.smallrun.evaluate import list_checkpoints
from labui.configform import algorithm_options
from lab.smallrun.data import validate_lines
from lab.misconceptions import diagnose, history_from_events
from lab.smallrun.live import find_live_runs, ledger_summary, rlhf_pipeline, stage_finished, start_pipeline, read_ledger_metrics, read_status, request_stop, start_run, store_upload
from lab.smallrun.rundir import MARKER
from lab.smallrun.worker import STATUS
from labui.cards import show_cards
from labui.share import plain
from lab.smallrun.rundir import run_path
from labui import header, route_through_app, shows_errors
from labui.runcharts import draw_charts, metric_frame, show_samples, stage_summary

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

RUNS = Path(os.environ.get("LAB_RUNS_DIR", "runs"))
header(
    "Small runs",
    "ftip-006Q (a fine-tuning run), ftip-002F, ftip-002R, ftip-003A, ftip-003E, ftip-003R, ftip-004E",
    "Ouyang et al. 2022, §3.5; Rafailov et al. 2023, §4; Shao et al. 2024, §4.1; Ahmadian et al. 2024, §3.2; Schulman et al. 2017",
    "Train a real tiny GPT-2 with the library's own losses and watch it learn. SFT imitates demonstrations; "
    "a reward model (rm) learns to rank verifier-built preference pairs; DPO learns from such pairs directly; "
    "GRPO and RLOO sample groups and reinforce the verified-correct answers; PPO adds a value model, GAE and a KL "
    "penalty, against the verifier or a learned reward model. Training runs in its own process: the page only reads "
    "its progress and stays usable, **Stop** leaves a resumable checkpoint, "
    "and **Resume** continues exactly where it stopped.",
)

dev = pick_device("auto")
badge = f"GPU · {torch.cuda.get_device_name(0)}" if dev.type == "cuda" else ("Apple GPU (mps)" if dev.type == "mps" else "CPU · 1 thread")
st.markdown(f"**Device:** `{badge}`")

# ------------------------------------------------------------------ controls
RUNNING = ("starting", "running", "stopping")
if not st.session_state.get("sr_current"):  # a reload, a new tab or a restarted server: show the run that is training
    live_runs = find_live_runs(RUNS)
    if live_runs:
        st.session_state["sr_current"] = str(live_runs[0][0])


def _use_algorithm_defaults() -> None:
    """Steps, learning rate and batch size start at the chosen algorithm's own defaults (``ALGORITHM_DEFAULTS``)."""
    d = ALGORITHM_DEFAULTS[st.session_state["sr_algo"]]
    st.session_state.update(sr_steps=int(d["steps"]), sr_lr=float(d["lr"]), sr_batch=int(d["batch_size"]))


for k, v in {"sr_algo": "grpo", "sr_task": "reversal", "sr_size": "small", "sr_model": "", "sr_eval_every": 25, "sr_eval_size": 200,
             "sr_seed": 0, "sr_paste": ""}.items():
    st.session_state.setdefault(k, v)
if "sr_steps" not in st.session_state:
    _use_algorithm_defaults()

c1, c2, c3 = st.columns(3)
algo = c1.selectbox("algorithm", list(ALGORITHMS), key="sr_algo", on_change=_use_algorithm_defaults,
                    help="Changing it puts steps, learning rate and batch size at the new algorithm's defaults.")
task = c1.selectbox("task (supplies the verifier and held-out prompts)", list(TASKS), key="sr_task")
size = c2.selectbox("model size (fresh GPT-2)", ["tiny", "small", "medium"], key="sr_size")
model_path = c2.text_input("…or a local checkpoint directory to start from", key="sr_model", placeholder="runs/sft/final")
d = ALGORITHM_DEFAULTS[algo]
steps = c3.number_input(f"steps ({algo} default: {d['steps']})", 1, 100_000, key="sr_steps")
lr = c3.number_input(f"learning rate ({algo} default: {d['lr']:g})", 1e-6, 1.0, step=1e-5, format="%.6f", key="sr_lr")
batch = c3.number_input(f"batch size ({algo} default: {d['batch_size']})", 1, 4096, key="sr_batch")
st.markdown(f"**{algo} options** — {ALGORITHMS[algo]['description']} (hover an option for its description)")
rm_dirs = [c.path for c in list_checkpoints(RUNS) if c.algorithm == "rm" and c.label == "final"] if RUNS.exists() else []
options = algorithm_options(algo, reward_models=rm_dirs)  # generated from RunConfig: the CLI's flags, the same defaults
with st.expander("More: evaluation, seed, your own data"):
    a2, a3, a4 = st.columns(3)
    eval_every = a2.number_input("evaluate every", 1, 10_000, key="sr_eval_every")
    eval_size = a3.number_input("held-out prompts", 5, 2000, key="sr_eval_size")
    seed = a4.number_input("seed", 0, 1_000_000, key="sr_seed")
    kind = ALGORITHMS[algo]["data"]
    up = st.file_uploader(f"JSONL training file ({kind} format, TRL's fields)", type=["jsonl", "json", "txt"], key="sr_upload")
    paste = st.text_area("…or paste JSONL lines", key="sr_paste", height=90)

data_bytes = up.getvalue() if up is not None else paste.encode("utf-8")
data_path, data_ok = None, True
if data_bytes.strip():
    recs, bad = validate_lines(data_bytes.split(b"\n"), kind)  # bytes: bad UTF-8 is reported with its line
    if bad:
        data_ok = False
        st.error(f"The data file has {len(bad)} bad line(s); nothing will train on it:\n\n" + "\n".join(f"- {plain(b)}" for b in bad[:50]))
    else:
        st.success(f"Data file OK: {len(recs)} {kind} records.")

name = st.text_input("run name", value=st.session_state.get("sr_name_default") or f"{algo}-{task}-{time.strftime('%H%M%S')}", key="sr_name")
try:  # a name, not a path: nothing is created or deleted outside the runs directory
    out, name_ok = run_path(RUNS, name), True
except ValueError as exc:
    out, name_ok = None, False
    st.error(f"⚠️ {plain(exc)}")
b1, b2, b3 = st.columns(3)
start = b1.button("▶ Start", type="primary", key="sr_start", disabled=not (data_ok and name_ok))
def _stop_current() -> None:
    """Stop as a callback: it runs before the next rerun, so a click is never lost to a live-view refresh.
    It writes the run's STOP file (and signals a worker this server started); the page itself trains nothing."""
    cur = st.session_state.get("sr_current")
    if not cur or not request_stop(cur):
        st.session_state["sr_stop_msg"] = "no run is training to stop"


b2.button("■ Stop", key="sr_stop", on_click=_stop_current)
resume = b3.button("⟳ Resume", key="sr_resume", disabled=not name_ok)

with shows_errors():
    if start:
        if data_bytes.strip():  # kept under the runs directory by content hash, never inside another run
            data_path = store_upload(RUNS, data_bytes if data_bytes.endswith(b"\n") else data_bytes + b"\n")
        cfg = RunConfig(algorithm=algo, task=task, data=str(data_path) if data_path else None, steps=int(steps), lr=float(lr),
                        batch_size=int(batch), model=model_path.strip() or None, model_size=size, eval_every=int(eval_every),
                        eval_size=int(eval_size), seed=int(seed), save_every=max(25, int(eval_every)), **options)
        start_run(cfg, out)  # checks everything first: a refusal is shown here and nothing is created
        st.session_state["sr_current"] = str(out)
    if resume:
        start_run(RunConfig(), out, resume=True)
        st.session_state["sr_current"] = str(out)
    if st.session_state.get("sr_stop_msg"):
        raise ValueError(st.session_state.pop("sr_stop_msg"))

# ------------------------------------------------------------------ live view

def show_status(cur_dir: str) -> str:
    """State, progress, failure or result of one run, read from its directory's status file; returns the state."""
    s = read_status(cur_dir)
    state = s["state"] if s["known"] else "finished earlier"
    st.markdown(f"**Run** `{cur_dir}` — state: **{state}**")
    step, total, sps = s.get("step") or 0, s.get("total"), s.get("steps_per_second")
    if state == "failed":
        st.error(f"The run failed: {plain(s.get('error') or 'no message')}. Its newest checkpoint is kept: **Resume** continues "
                 f"from it (the training process's output is in `{cur_dir}/worker.log`).")
    if state == "starting":
        st.progress(0.0, text="starting the training process…")
    elif s.get("phase") == "base" and state in RUNNING:
        st.progress(min(1.0, step / total) if total else 0.0,
                    text=f"base SFT stage: step {step} / {total or '?'} — building a starting policy that sometimes succeeds")
    elif state in RUNNING or state in ("stopped", "failed", "done") and total:
        done_part = min(1.0, step / total) if total else 0.0
        rate = f" · {sps:.1f} steps/s" if sps else ""
        eta = f" · ETA {s['eta_s']:.0f} s" if state == "running" and s.get("eta_s") is not None else ""  # no ETA once stopping
        where = "base stage, " if s.get("phase") == "base" else ""
        st.progress(done_part, text=f"{where}step {step} / {total or '?'}{rate}{eta}" + (" · stopping after this step…" if state == "stopping" else ""))
    if state == "stopped":
        st.info(f"Stopped at {'base-stage ' if s.get('phase') == 'base' else ''}step {step}; a checkpoint was kept. **Resume** continues exactly from it.")
    # the run's own result only: the base stage's summary is kept apart (status "base_summary", its own ledger)
    summary = (s.get("summary") or ledger_summary(cur_dir)) if state in ("done", "finished earlier") else None
    if summary and not summary.get("stopped") and summary.get("phase") is None:
        st.success(f"Finished: {plain(stage_summary(summary))}")
    return state


def show_details(cur_dir: str) -> None:
    """Charts (from the ledger), misconception cards and the latest samples (from the status file) of one run."""
    events, cfg = read_ledger_metrics(cur_dir)
    df = metric_frame(events)
    if not df.empty:
        draw_charts(df, "live")
    if cfg:  # the run's config; cards need the algorithm and μ
        show_cards(diagnose(history_from_events(events), {"algorithm": cfg.get("algorithm"), "num_iterations": cfg.get("num_iterations", 1)}))
    smp = read_status(cur_dir).get("samples")
    if smp:
        st.subheader(f"Latest samples (step {smp.get('step', '?')})")
        show_samples(smp, key="live")


def _stop_pipeline() -> None:
    """Stop as a callback: the stage that is training stops with a checkpoint; later stages then never start."""
    try:
        stages = rlhf_pipeline(RUNS, st.session_state.get("sr_pipe_name") or "", task=st.session_state["sr_task"])
    except ValueError as exc:
        st.session_state["sr_stop_msg"] = str(exc)
        return
    if not any(read_status(out)["state"] in RUNNING and request_stop(out) for _, out, _ in stages):
        st.session_state["sr_stop_msg"] = "no stage of this pipeline is training"


STAGE_TITLES = {"sft": "1 · SFT", "rm": "2 · reward model", "ppo": "3 · PPO against the reward model"}


def show_stage(stage: str, out: Path, previous: Optional[Path]) -> str:
    """One stage of the pipeline: its state, step, result and checkpoint; returns its state."""
    s = read_status(out) if out.exists() else {"state": "not started", "known": False}
    state = s["state"] if s.get("known") else ("finished earlier" if stage_finished(out) else "not started")
    before = read_status(previous) if previous is not None else {}
    if state == "not started" and before.get("next") == str(out.resolve()):
        state = "starting"  # the stage before started this one's worker; it has not reported yet
    elif state == "not started" and before.get("next_error"):
        state = "could not start"  # the stage before checked this one and refused to start it
    st.markdown(f"**{STAGE_TITLES[stage]}** — `{out.name}` — {state}")
    if state in RUNNING and s.get("total"):
        where = "base stage, " if s.get("phase") == "base" else ""
        st.progress(min(1.0, (s.get("step") or 0) / s["total"]), text=f"{where}step {s.get('step') or 0} / {s['total']}")
    elif state == "failed":
        st.error(f"failed: {plain(s.get('error') or 'no message')} (output in `{out}/worker.log`)")
    elif state == "could not start":
        st.error(plain(before["next_error"]))
    summary = ledger_summary(out) if (out / "ledger.jsonl").exists() else None
    if summary:
        st.caption(plain(stage_summary(summary)) + (f" · checkpoint `{out / 'final'}`" if (out / "final").exists() else ""))
    return state


def pipeline_view(stages: list) -> bool:
    """The three stages side by side, then the PPO stage's charts (proxy vs gold) once it has metrics; True while a
    stage trains or is about to."""
    states, previous = [], None
    for col, (stage, out, _) in zip(st.columns(3), stages):
        with col:
            states.append(show_stage(stage, out, previous))
        previous = out
    ppo_dir = stages[-1][1]
    if (ppo_dir / "ledger.jsonl").exists():
        df = metric_frame(read_ledger_metrics(ppo_dir)[0])
        if not df.empty:
            draw_charts(df, "pipe")
    return any(x in RUNNING for x in states)


@st.fragment(run_every=3.0)
def live_pipeline(stages: list) -> None:
    """Refreshes while a stage trains; once none does, one full rerun shows the pipeline at rest."""
    if not pipeline_view(stages):
        st.rerun(scope="app")


# Refresh intervals of the live view. Every redraw costs CPU in the server and the browser, which on a small machine
# is taken from training (benchmarks/page_training.py measures it): the status line is cheap, charts are not.
STATUS_REFRESH_S = 2.0
CHART_REFRESH_S = 6.0


@st.fragment(run_every=STATUS_REFRESH_S)
def live_status(cur_dir: str) -> None:
    """Refreshes every STATUS_REFRESH_S seconds while the run trains; once it has ended, one full rerun shows it (and the runs list) at rest."""
    if show_status(cur_dir) not in RUNNING:
        st.rerun(scope="app")


@st.fragment(run_every=CHART_REFRESH_S)
def live_details(cur_dir: str) -> None:
    show_details(cur_dir)


cur_dir = st.session_state.get("sr_current")
if not cur_dir:
    st.info("Start a run to see it train live. Defaults learn visibly within a minute on a CPU.")
elif read_status(cur_dir)["state"] in RUNNING:
    live_status(cur_dir)
    live_details(cur_dir)
else:
    show_status(cur_dir)
    show_details(cur_dir)

# ------------------------------------------------------------------ the RLHF pipeline: SFT → reward model → PPO

st.header("The RLHF pipeline: SFT → reward model → PPO")
st.markdown("One click runs the classic pipeline as three runs, each starting when the one before it finished "
            "(ftip-003A; Ouyang et al. 2022, §3.5): **SFT** imitates demonstrations; a **reward model** learns from "
            "preference pairs sampled from the SFT policy; **PPO** then optimizes the SFT policy against that *learned* "
            "reward, with a value model and a KL penalty to the SFT policy. The PPO stage logs the proxy (the reward "
            "model's score) beside the gold (the verifier's held-out accuracy). Pressing it again resumes a stopped "
            "stage and keeps finished ones.")
p1, p2, p3 = st.columns([2, 1, 1])
pipe_name = p1.text_input("pipeline name (its runs are NAME-sft, NAME-rm, NAME-ppo)", key="sr_pipe_name",
                          value=st.session_state.get("sr_pipe_name") or f"rlhf-{task}-s{int(seed)}")
pipe_run = p2.button("▶ Run SFT → RM → PPO", key="sr_pipe_start")
p3.button("■ Stop the pipeline", key="sr_pipe_stop", on_click=_stop_pipeline)
with shows_errors():
    stages = rlhf_pipeline(RUNS, pipe_name, task=task, seed=int(seed), model_size=size)
    if pipe_run and start_pipeline(stages) is None:
        st.info("Every stage of this pipeline has finished; its results are below.")
    if any(read_status(out)["state"] in RUNNING for _, out, _ in stages) or pipe_run:
        live_pipeline(stages)
    else:
        pipeline_view(stages)

# ------------------------------------------------------------------ earlier runs

st.header("Earlier runs")
runs = sorted(p.parent.name for p in RUNS.glob(f"*/{MARKER}") if (p.parent / "ledger.jsonl").exists() or (p.parent / STATUS).exists()) if RUNS.exists() else []
training = {r for r in runs if read_status(RUNS / r)["state"] in RUNNING}
if not runs:
    st.caption(f"No runs in `{RUNS}/` yet.")
else:
    label = lambda r: f"{r} (training now)" if r in training else r
    c1, c2 = st.columns(2)
    first = c1.selectbox("run", runs, key="sr_cmp_a", format_func=label)
    second = c2.selectbox("compare with", ["(none)"] + runs, key="sr_cmp_b", format_func=lambda r: r if r == "(none)" else label(r))
    with shows_errors():
        ev_a, cfg_a = read_ledger_metrics(RUNS / first)
        df_a = metric_frame(ev_a)
        df_b = metric_frame(read_ledger_metrics(RUNS / second)[0]) if second != "(none)" else None
        st.caption(f"{plain(first)}: {plain(str(cfg_a.get('algorithm', '?')))} on {plain(str(cfg_a.get('task', '?')))}, "
                   f"lr {plain(str(cfg_a.get('lr')))}, seed {plain(str(cfg_a.get('seed')))}"
                   + (" — training now; its charts grow as you rerun" if first in training else ""))
        if first in training and second == "(none)" and cur_dir and Path(cur_dir).resolve() == (RUNS / first).resolve():
            st.caption("Its charts are the live ones above (drawn once: every chart costs the training machine CPU).")
        elif not df_a.empty:
            draw_charts(df_a, "cmp", df_b, second)
            st.download_button("Download metrics as CSV", df_a.to_csv(index=False), file_name=f"{first}-metrics.csv", mime="text/csv", key="sr_csv")
        elif first in training:
            st.caption("No metrics yet: the run is in its base stage or starting.")
