"""Small runs: start, watch, stop, resume and compare SFT / DPO / GRPO runs of a tiny GPT-2."""

import os
import time
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from lab.smallrun import TASKS, RunConfig, pick_device
from lab.smallrun.config import ALGORITHM_DEFAULTS
from lab.smallrun.data import validate_lines
from lab.misconceptions import diagnose, history_from_events
from lab.smallrun.live import get_run, read_ledger_metrics, start_run, store_upload
from labui.cards import show_cards
from labui.share import plain
from lab.smallrun.rundir import run_path
from labui import figure, header, route_through_app, shows_errors

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

RUNS = Path(os.environ.get("LAB_RUNS_DIR", "runs"))
header(
    "Small runs",
    "ftip-006Q (a fine-tuning run), ftip-002F, ftip-003R, ftip-004E",
    "Ouyang et al. 2022, §3.5; Rafailov et al. 2023, §4; Shao et al. 2024, §4.1",
    "Train a real tiny GPT-2 with the library's own losses and watch it learn. SFT imitates demonstrations; "
    "DPO learns from verifier-built preference pairs; GRPO samples groups and reinforces the verified-correct "
    "answers. Training runs in the background: the page stays usable, **Stop** leaves a resumable checkpoint, "
    "and **Resume** continues exactly where it stopped.",
)

dev = pick_device("auto")
badge = f"GPU · {torch.cuda.get_device_name(0)}" if dev.type == "cuda" else ("Apple GPU (mps)" if dev.type == "mps" else "CPU · 1 thread")
st.markdown(f"**Device:** `{badge}`")

# ------------------------------------------------------------------ controls
for k, v in {"sr_algo": "grpo", "sr_task": "reversal", "sr_size": "small", "sr_model": "", "sr_steps": 0, "sr_lr": 0.0,
             "sr_beta": 0.1, "sr_eps": 0.2, "sr_eps_high": 0.2, "sr_group": 8, "sr_scale": "group", "sr_loss": "dapo", "sr_kl": 0.0,
             "sr_base": 100, "sr_eval_every": 25, "sr_eval_size": 200, "sr_seed": 0, "sr_paste": "", "sr_batch": 0}.items():
    st.session_state.setdefault(k, v)

c1, c2, c3 = st.columns(3)
algo = c1.selectbox("algorithm", ["sft", "dpo", "grpo"], key="sr_algo")
task = c1.selectbox("task (supplies the verifier and held-out prompts)", list(TASKS), key="sr_task")
size = c2.selectbox("model size (fresh GPT-2)", ["tiny", "small", "medium"], key="sr_size")
model_path = c2.text_input("…or a local checkpoint directory to start from", key="sr_model", placeholder="runs/sft/final")
d = ALGORITHM_DEFAULTS[algo]
steps = c3.number_input(f"steps (0 = default {d['steps']})", 0, 100_000, key="sr_steps")
lr = c3.number_input(f"learning rate (0 = default {d['lr']:g})", 0.0, 1.0, format="%.5f", key="sr_lr")
batch = c3.number_input(f"batch size (0 = default {d['batch_size']})", 0, 4096, key="sr_batch")
k1, k2, k3, k4 = st.columns(4)
beta = k1.number_input("DPO β", 0.001, 10.0, key="sr_beta", disabled=algo != "dpo")
eps = k2.number_input("ε (clip)", 0.01, 0.99, key="sr_eps", disabled=algo != "grpo")
eps_high = k2.number_input("ε_high (clip-higher)", 0.01, 2.0, key="sr_eps_high", disabled=algo != "grpo")
group = k3.number_input("group size", 2, 64, key="sr_group", disabled=algo != "grpo")
scale = k3.selectbox("advantage scale", ["group", "batch", "none"], key="sr_scale", disabled=algo != "grpo")
loss_type = k4.selectbox("loss type", ["grpo", "bnpo", "dr_grpo", "dapo"], key="sr_loss", disabled=algo != "grpo")
kl = k4.number_input("KL coefficient β (k3 to the start)", 0.0, 1.0, key="sr_kl", disabled=algo != "grpo")
with st.expander("More: base stage, evaluation, seed, your own data"):
    a1, a2, a3, a4 = st.columns(4)
    base_steps = a1.number_input("base SFT steps (DPO/GRPO without a checkpoint)", 1, 10_000, key="sr_base")
    eval_every = a2.number_input("evaluate every", 1, 10_000, key="sr_eval_every")
    eval_size = a3.number_input("held-out prompts", 5, 2000, key="sr_eval_size")
    seed = a4.number_input("seed", 0, 1_000_000, key="sr_seed")
    kind = {"sft": "sft", "dpo": "preference", "grpo": "rl"}[algo]
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
    """Stop as a callback: it runs before the next rerun, so a click is never lost to a live-view refresh."""
    cur = get_run(st.session_state.get("sr_current") or RUNS)
    if cur is None or not cur.alive:
        st.session_state["sr_stop_msg"] = "no run is training in this session to stop"
    else:
        cur.stop()


b2.button("■ Stop", key="sr_stop", on_click=_stop_current)
resume = b3.button("⟳ Resume", key="sr_resume", disabled=not name_ok)

with shows_errors():
    if start:
        if data_bytes.strip():  # kept under the runs directory by content hash, never inside another run
            data_path = store_upload(RUNS, data_bytes if data_bytes.endswith(b"\n") else data_bytes + b"\n")
        cfg = RunConfig(algorithm=algo, task=task, data=str(data_path) if data_path else None, steps=int(steps) or None, lr=float(lr) or None,
                        batch_size=int(batch) or None, model=model_path.strip() or None, model_size=size, base_steps=int(base_steps),
                        beta=float(beta), epsilon=float(eps), epsilon_high=float(eps_high), group_size=int(group), scale=scale,
                        loss_type=loss_type, kl_beta=float(kl), eval_every=int(eval_every), eval_size=int(eval_size), seed=int(seed),
                        save_every=max(25, int(eval_every)))
        start_run(cfg, out)  # checks everything first: a refusal is shown here and nothing is created
        st.session_state["sr_current"] = str(out)
    if resume:
        start_run(RunConfig(), out, resume=True)
        st.session_state["sr_current"] = str(out)
    if st.session_state.get("sr_stop_msg"):
        raise ValueError(st.session_state.pop("sr_stop_msg"))

# ------------------------------------------------------------------ live view

SERIES = [
    ("loss", ["loss"], "loss"),
    ("reward (mean, std) and zero-spread groups", ["reward", "reward_std", "frac_reward_zero_std"], "reward / fraction"),
    ("held-out accuracy", ["eval/accuracy", "eval/preference_accuracy"], "fraction"),
    ("KL to the reference (k3)", ["kl"], "nats / token"),
    ("clip fractions", ["clip_ratio/low_mean", "clip_ratio/high_mean"], "fraction of tokens"),
    ("DPO implicit rewards: chosen falls, margin grows", ["rewards/chosen", "rewards/rejected", "rewards/margins"], "β·log π/π_ref"),
    ("mean completion length", ["completions/mean_length"], "tokens"),
]


def metric_frame(events: list[dict]) -> pd.DataFrame:
    rows = [e for e in events if e.get("type") in ("step", "eval") and e.get("phase") is None]
    return pd.DataFrame(rows) if rows else pd.DataFrame()


def draw_charts(df: pd.DataFrame, key: str, other: pd.DataFrame | None = None, other_name: str = "") -> int:
    n = 0
    cols = st.columns(2)
    for title, keys, unit in SERIES:
        present = [k for k in keys if k in df.columns and df[k].notna().any()]
        if not present:
            continue
        fig = figure(title, "step", unit, height=280)
        for k in present:
            sub = df[["step", k]].dropna()
            fig.add_trace(go.Scatter(x=sub["step"], y=sub[k], name=k, mode="lines+markers" if k.startswith("eval") else "lines"))
            if other is not None and k in other.columns:
                o = other[["step", k]].dropna()
                fig.add_trace(go.Scatter(x=o["step"], y=o[k], name=f"{k} ({other_name})", line=dict(dash="dot")))
        cols[n % 2].plotly_chart(fig, width="stretch", key=f"{key}_{title}")
        n += 1
    return n


@st.fragment(run_every=1.0)
def live_view() -> None:
    cur_dir = st.session_state.get("sr_current")
    if not cur_dir:
        st.info("Start a run to see it train live. Defaults learn visibly within a minute on a CPU.")
        return
    run = get_run(cur_dir)
    events = run.buffer.since(0) if run is not None else read_ledger_metrics(cur_dir)[0]
    state = run.state if run is not None else "finished earlier"
    df = metric_frame(events)
    steps = [e for e in events if e.get("type") == "step" and e.get("phase") is None]
    base = [e for e in events if e.get("type") == "step" and e.get("phase") == "base"]
    st.markdown(f"**Run** `{cur_dir}` — state: **{state}**")
    if run is not None and run.error:
        st.error(f"The run failed: {run.error}")
    if steps:
        last = steps[-1]
        total = last.get("total_steps") or last["step"]
        sps = last.get("steps_per_second", 0.0)
        eta = (total - last["step"]) / sps if sps > 0 else float("nan")
        st.progress(min(1.0, last["step"] / total), text=f"step {last['step']} / {total} · {sps:.1f} steps/s · ETA {eta:.0f} s")
    elif base:
        st.progress(0.0, text=f"base SFT stage: step {base[-1]['step']} — building a starting policy that sometimes succeeds")
    else:
        st.progress(0.0, text="starting…")
    if not df.empty:
        draw_charts(df, "live")
    cfg = run.cfg if run is not None else None  # the live run's config; cards need the algorithm and μ
    if cfg is not None:
        show_cards(diagnose(history_from_events(events), {"algorithm": cfg.algorithm, "num_iterations": cfg.num_iterations}))
    samples = [e for e in events if e.get("type") == "samples"]
    if samples:
        s = samples[-1]
        st.subheader(f"Latest samples (step {s['step']})")
        if "completions" in s:
            st.markdown(f"Prompt `{s['prompt']}` · correct answer `{s['answer']}`")
            st.dataframe(pd.DataFrame({"completion": s["completions"], "reward": s["rewards"], "advantage": [round(a, 3) for a in s["advantages"]]}),
                         hide_index=True, width="stretch")
            toks = s["tokens"]
            T = max((len(t) for t in toks), default=1)
            z = [[a] * len(t) + [None] * (T - len(t)) for a, t in zip(s["advantages"], toks)]
            text = [t + [""] * (T - len(t)) for t in toks]
            fig = figure("Credit each token received (every token of a response shares its advantage)", "token", "completion", height=260)
            fig.add_trace(go.Heatmap(z=z, text=text, texttemplate="%{text}", colorscale="RdBu", zmid=0, colorbar=dict(title="Â")))
            st.plotly_chart(fig, width="stretch", key="live_strip")
        else:
            st.markdown(f"Prompt `{s['prompt']}` · chosen `{s['chosen']}` (implicit reward {s['reward_chosen']:.3f}) · "
                        f"rejected `{s['rejected']}` (implicit reward {s['reward_rejected']:.3f})")
    done = [e for e in events if e.get("type") == "done" and e.get("phase") is None]  # not the base stage's
    if done:
        e = done[-1]
        fmt = lambda x: "n/a" if x is None else f"{100 * x:.1f}%"
        st.success(f"Finished: {e['metric'].removeprefix('eval/')} {fmt(e['before'])} → {fmt(e['after'])}")


live_view()

# ------------------------------------------------------------------ earlier runs

st.header("Earlier runs")
runs = sorted([p.parent.name for p in RUNS.glob("*/ledger.jsonl")]) if RUNS.exists() else []
if not runs:
    st.caption(f"No runs in `{RUNS}/` yet.")
else:
    c1, c2 = st.columns(2)
    first = c1.selectbox("run", runs, key="sr_cmp_a")
    second = c2.selectbox("compare with", ["(none)"] + runs, key="sr_cmp_b")
    with shows_errors():
        ev_a, cfg_a = read_ledger_metrics(RUNS / first)
        df_a = metric_frame(ev_a)
        df_b = metric_frame(read_ledger_metrics(RUNS / second)[0]) if second != "(none)" else None
        st.caption(f"{first}: {cfg_a.get('algorithm', '?')} on {cfg_a.get('task', '?')}, lr {cfg_a.get('lr')}, seed {cfg_a.get('seed')}")
        if not df_a.empty:
            draw_charts(df_a, "cmp", df_b, second)
            st.download_button("Download metrics as CSV", df_a.to_csv(index=False), file_name=f"{first}-metrics.csv", mime="text/csv", key="sr_csv")
