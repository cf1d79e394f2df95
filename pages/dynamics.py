"""Dynamics: a tiny policy trained step by step under the lab's objectives (lab.playground)."""

import json

import plotly.graph_objects as go
import streamlit as st

from lab import playground as P
from labui import colors, course_nav, header, parse_floats, route_through_app, shows_errors
from labui.predict import predict_then_reveal
from labui.share import PROJECTOR, plain

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Dynamics: watch it move",
    "ftip-0036, ftip-003E, ftip-003F, ftip-003O, ftip-003R, ftip-004D, ftip-004J",
    "Schulman et al. 2017 (PPO), Rafailov et al. 2023 (DPO), Shao et al. 2024 (GRPO), Ahmadian et al. 2024 (RLOO), Schulman et al. 2016 (GAE)",
    "A policy small enough to enumerate trains for a few hundred steps in milliseconds under any of the lab's "
    "objectives. Pick a policy and up to three objectives, or a one-click phenomenon: you predict first, then it plays.",
)

DEFAULTS = dict(policy="bandit", rewards="1, 0.5, 0", init="0.2, 0.3, 0.5", chosen=0, rejected=1, task="count", vocab=2, length=3,
                variants=["REINFORCE", "REINFORCE + baseline", "RLOO"], exact=False, steps=100, lr=0.5, seed=0, beta=0.1, epochs=4,
                epsilon=0.2, n=16, group_size=4, advantage="return", lam=1.0, value_noise=0.0, preset="")
POLICIES = ["bandit", "sequence", "dpo3"]
POLICY_NAMES = {"bandit": "K-armed softmax bandit", "sequence": "tabular sequence policy", "dpo3": "three-outcome DPO policy (overview)"}
TYPES = dict(chosen=int, rejected=int, vocab=int, length=int, steps=int, seed=int, epochs=int, n=int, group_size=int,
             lr=float, beta=float, epsilon=float, lam=float, value_noise=float)
RANGES = dict(chosen=(0, 9), rejected=(0, 9), vocab=(2, 4), length=(2, 4), steps=(1, 1000), seed=(0, 10**6), epochs=(1, 50), n=(1, 512),
              group_size=(2, 16), lr=(0.0, 50.0), beta=(0.0, 20.0), epsilon=(0.01, 0.99), lam=(0.0, 1.0), value_noise=(0.0, 5.0))


def _apply(values: dict) -> None:
    store = st.session_state.setdefault("dyn_store", {})
    for k, v in {**DEFAULTS, **values}.items():
        store[k] = v
        st.session_state[f"dyn_{k}"] = v


def _from_query(qp) -> dict:
    """Validate a shared URL's setup; ValueError names the bad parameter."""
    out = {}
    for k, v in qp.items():
        if k == PROJECTOR:  # projector mode is the sidebar toggle's (labui.share), not part of the setup
            continue
        if k not in DEFAULTS:
            raise ValueError(f"unknown parameter {k!r}")
        if k == "variants":
            names = [x for x in v.split("|") if x]
            bad = [x for x in names if x not in P.VARIANTS]
            if bad or not 1 <= len(names) <= 3:
                raise ValueError(f"variants must be 1–3 of {list(P.VARIANTS)}; got {names}")
            out[k] = names
        elif k == "exact":
            if v not in ("0", "1"):
                raise ValueError(f"exact must be 0 or 1; got {v!r}")
            out[k] = v == "1"
        elif k in TYPES:
            try:
                out[k] = TYPES[k](v)
            except ValueError:
                raise ValueError(f"{k} must be a number; got {v!r}") from None
            lo, hi = RANGES[k]
            if not lo <= out[k] <= hi:  # the widget's own range
                raise ValueError(f"{k} must lie in [{lo}, {hi}]; got {v!r}")
        elif k in ("rewards", "init"):
            out[k] = v
            parse_floats(v, k)
        elif k == "policy" and v not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}; got {v!r}")
        elif k == "task" and v not in P.SEQUENCE_TASKS:
            raise ValueError(f"task must be one of {list(P.SEQUENCE_TASKS)}; got {v!r}")
        elif k == "preset" and v and v not in P.PRESETS:
            raise ValueError(f"preset must be one of {list(P.PRESETS)}; got {v!r}")
        else:
            out[k] = v
    return out


if "dyn_store" not in st.session_state:  # first run of this session: restore a shared setup
    _apply({})
    if len(st.query_params):
        try:
            _apply(_from_query(st.query_params.to_dict()))
        except ValueError as exc:
            st.session_state["dyn_url_error"] = str(exc)
            _apply({})
if st.session_state.get("dyn_url_error"):
    st.warning(f"⚠️ The shared link could not be restored ({plain(st.session_state['dyn_url_error'])}); showing the default setup.")

# Streamlit forgets the value of a widget that was not drawn in the last run (the bandit's fields while the
# sequence policy is shown): keep the setup in a store and give every widget its stored value back
for _k, _v in st.session_state["dyn_store"].items():
    st.session_state.setdefault(f"dyn_{_k}", _v)

st.markdown("**Phenomena** (one click loads the setup; you predict before it plays)")
pcols = st.columns(3) + st.columns(3)
for col, (pk, pr) in zip(pcols, P.PRESETS.items()):
    col.button(pr.title, key=f"dyn_preset_{pk}", on_click=_apply, args=({**pr.setup, "preset": pk},), width="stretch")

c_pol, c_obj, c_conv = st.columns([1.1, 1.1, 1.3])
with c_pol:
    policy = st.radio("policy", POLICIES, format_func=POLICY_NAMES.get, key="dyn_policy")
    if policy == "bandit":
        st.text_input("rewards r(y), one per response", key="dyn_rewards")
        st.text_input("starting policy = reference (sums to 1)", key="dyn_init")
        a, b = st.columns(2)
        a.number_input("DPO chosen index", 0, 9, key="dyn_chosen")
        b.number_input("DPO rejected index", 0, 9, key="dyn_rejected")
    elif policy == "sequence":
        st.selectbox("task", list(P.SEQUENCE_TASKS), format_func=lambda k: f"{k}: {P.SEQUENCE_TASKS[k]}", key="dyn_task")
        a, b = st.columns(2)
        a.number_input("vocabulary", 2, 4, key="dyn_vocab")
        b.number_input("length", 2, 4, key="dyn_length")
    else:
        st.caption("π_ref = (0.40, 0.40, 0.20) over (chosen, rejected, other); one shared parameter along log(π/π_ref) "
                   "toward the overview's (0.30, 0.20, 0.50) (the lab's construction).")
    policy_box = st.empty()
with c_obj:
    variants = st.multiselect("objectives (1–3, side by side)", list(P.VARIANTS), max_selections=3, key="dyn_variants")
    st.toggle("exact expected gradient (off: sampled)", key="dyn_exact")
    a, b = st.columns(2)
    a.number_input("steps", 1, 1000, key="dyn_steps")
    b.number_input("learning rate", 0.0, 50.0, step=0.1, key="dyn_lr")
    a.number_input("seed", 0, 10**6, key="dyn_seed")
    b.number_input("β (KL, DPO)", 0.0, 20.0, step=0.05, key="dyn_beta")
with c_conv:
    a, b = st.columns(2)
    a.number_input("samples n per step", 1, 512, key="dyn_n")
    b.number_input("group size", 2, 16, key="dyn_group_size")
    a.number_input("PPO epochs μ", 1, 50, key="dyn_epochs")
    b.number_input("clip ε", 0.01, 0.99, step=0.05, key="dyn_epsilon")
    st.radio("advantage (REINFORCE, PPO)", ["return", "gae"], horizontal=True, key="dyn_advantage")
    a, b = st.columns(2)
    a.number_input("GAE λ", 0.0, 1.0, step=0.1, key="dyn_lam")
    b.number_input("value noise σ", 0.0, 5.0, step=0.1, key="dyn_value_noise")
    conv_box = st.empty()

setup = {k: st.session_state.get(f"dyn_{k}", st.session_state["dyn_store"][k]) for k in DEFAULTS}
st.session_state["dyn_store"].update(setup)
st.query_params.from_dict({**{k: ("|".join(v) if k == "variants" else str(int(v)) if isinstance(v, bool) else str(v)) for k, v in setup.items()},
                           **({PROJECTOR: st.query_params[PROJECTOR]} if PROJECTOR in st.query_params else {})})


def _policy(s: dict):
    if s["policy"] == "bandit":
        return P.Bandit(rewards=parse_floats(s["rewards"], "rewards"), init_probs=parse_floats(s["init"], "starting policy"),
                        chosen=int(s["chosen"]), rejected=int(s["rejected"]))
    if s["policy"] == "sequence":
        return P.sequence_task(s["task"], int(s["vocab"]), int(s["length"]))
    return P.dpo_three_outcome_bandit()


def _run_keys(spec: str) -> dict[str, str]:
    """Each shown objective's cache key: exactly what its run depends on. The seed only where the run samples
    (exact mode and DPO draw nothing), so a new seed retrains only the sampled runs."""
    s = json.loads(spec)
    out = {}
    for name in s["variants"]:
        objective, fixed = P.VARIANTS[name]
        conv = dict(n=s["n"], group_size=s["group_size"], epsilon=s["epsilon"])
        if objective in ("reinforce", "ppo"):
            conv.update(advantage=s["advantage"], lam=s["lam"], value_noise=s["value_noise"])
        if objective == "ppo":
            conv["epochs"] = s["epochs"]
        if objective in ("dpo", "kl_regularized"):
            conv["beta"] = s["beta"]
        conv.update(fixed)
        seed = s["seed"] if P.draws_samples(objective, bool(s["exact"])) else 0
        out[name] = json.dumps(dict(name=name, policy={k: s[k] for k in POLICY_FIELDS}, steps=s["steps"], lr=s["lr"],
                                    seed=seed, exact=s["exact"], conv=conv), sort_keys=True)
    return out


POLICY_FIELDS = ("policy", "rewards", "init", "chosen", "rejected", "task", "vocab", "length")


# cache_resource, not cache_data: a run holds hundreds of small tensors, and unpickling a copy on every rerun
# costs more than the page's drawing. The page only reads the runs.
@st.cache_resource(max_entries=192, show_spinner=False)
def _run(key: str):
    """One objective's run, cached by exactly what it depends on: adding an objective, or changing another
    objective's knob, trains nothing that is already cached."""
    k = json.loads(key)
    objective = P.VARIANTS[k["name"]][0]
    return P.train(_policy(k["policy"]), objective, int(k["steps"]), float(k["lr"]), seed=int(k["seed"]), exact=bool(k["exact"]), **k["conv"])


@st.cache_data(max_entries=16, show_spinner=False)
def _gae_sweep(spec: str) -> dict:
    s = json.loads(spec)
    seq = _policy(s) if s["policy"] == "sequence" else P.sequence_task("steps", 2, 4)
    return P.gae_sweep(seq, [1.0, 0.75, 0.5, 0.25, 0.0], value_noise=max(float(s["value_noise"]), 0.5))


runs = None
with shows_errors(policy_box):
    pol = _policy(setup)
    P.build_space(pol)
    with shows_errors(conv_box):
        if not variants:
            raise ValueError("objectives: choose at least one")
        run_keys = _run_keys(json.dumps(setup, sort_keys=True))
        runs = {name: _run(key) for name, key in run_keys.items()}

preset = P.PRESETS.get(setup["preset"])
show = runs is not None
if preset is not None and runs is not None:
    st.subheader(preset.title)
    st.markdown(preset.explanation)
    show = predict_then_reveal(f"dyn_{setup['preset']}", preset.question, preset.choices,
                               answer=lambda: preset.answer(runs), tolerance=preset.tolerance, chapter="dynamics")
    if not show:
        st.info("Commit a prediction to play this phenomenon.")


def _fig(title: str, x_title: str, y_title: str, data: list, height: int = 300, **layout) -> go.Figure:
    """A plotly figure built in one call from plain dicts: plotly validates add_trace/update_layout calls one by
    one, which costs several times more than one constructor call, and reruns must stay fast."""
    base = dict(title=title, xaxis_title=x_title, yaxis_title=y_title, height=height, margin=dict(l=40, r=20, t=50, b=40),
                legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1))
    return go.Figure(data=data, layout={**base, **layout})


@st.cache_resource(max_entries=192, show_spinner=False)
def _bars_figure(key: str) -> go.Figure:
    """The animated bars of one run, built once per run (plotly validates frames and slider steps slowly)."""
    run, name = _run(key), json.loads(key)["name"]
    T = run.steps
    stride = max(1, T // 30)
    idx = list(range(0, T + 1, stride)) + ([T] if T % stride else [])
    ymax = min(1.0, float(run.probs.max()) * 1.1 + 0.02)
    data = [dict(type="bar", x=run.labels, y=run.probs[0].tolist(), name="π", marker_color=colors.KEY),
            dict(type="bar", x=run.labels, y=run.ref_probs.tolist(), name="π_ref", marker_color=colors.REFERENCE)]
    if run.conventions.beta > 0 and name == "KL-regularized":
        data.append(dict(type="scatter", x=run.labels, y=P.optimal_policy_of(run, run.conventions.beta).tolist(), mode="markers",
                         name="closed-form optimum", marker=dict(symbol="line-ew-open", size=30, color="crimson")))
    fig = _fig(
        "policy over steps (press play)", "", "probability", data, height=400,
        barmode="group", yaxis_range=[0, ymax], margin=dict(l=40, r=20, t=50, b=130),
        updatemenus=[dict(type="buttons", direction="left", showactive=False, x=0, y=-0.42, xanchor="left", yanchor="top", buttons=[
            dict(label="play", method="animate", args=[None, dict(frame=dict(duration=60, redraw=True), fromcurrent=True)]),
            dict(label="pause", method="animate", args=[[None], dict(mode="immediate", frame=dict(duration=0))])])],
        sliders=[dict(active=0, x=0.45, len=0.55, y=-0.12, yanchor="top", currentvalue=dict(prefix="step "), steps=[
            dict(label=str(i), method="animate", args=[[str(i)], dict(mode="immediate", frame=dict(duration=0, redraw=True))]) for i in idx])],
    )
    fig.frames = [dict(data=[dict(type="bar", y=run.probs[i].tolist())], traces=[0], name=str(i)) for i in idx]
    return fig


@st.cache_resource(max_entries=192, show_spinner=False)
def _simplex_figure(key: str) -> go.Figure:
    """The K = 3 simplex trajectory of one run, built once per run."""
    run = _run(key)
    pr = run.probs
    return go.Figure(
        data=[dict(type="scatterternary", a=pr[:, 0].tolist(), b=pr[:, 1].tolist(), c=pr[:, 2].tolist(),
                   mode="lines+markers", marker=dict(size=3), name="trajectory"),
              dict(type="scatterternary", a=[float(pr[0, 0])], b=[float(pr[0, 1])], c=[float(pr[0, 2])],
                   mode="markers", marker=dict(size=10, color="gray"), name="start")],
        layout=dict(title="simplex trajectory", height=300, margin=dict(l=30, r=30, t=50, b=30),
                    ternary=dict(aaxis_title=run.labels[0], baxis_title=run.labels[1], caxis_title=run.labels[2])))


@st.cache_resource(max_entries=64, show_spinner=False)
def _curves_figures(keys: str) -> tuple[go.Figure, go.Figure, go.Figure]:
    """Loss, KL and gradient norm per step of the shown runs (``keys``: JSON list of run keys), built once per set."""
    shown = [(json.loads(k)["name"], _run(k)) for k in json.loads(keys)]
    # a third of the page is too narrow for a legend of up to three objectives above the plot (it covers the title)
    below = dict(height=360, legend=dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0),
                 margin=dict(l=40, r=20, t=50, b=40))
    return (_fig("loss per step", "step", "loss", [dict(type="scatter", y=r.loss.tolist(), name=n) for n, r in shown], **below),
            _fig("KL(π ‖ π_ref) per step", "step", "nats", [dict(type="scatter", y=r.kl.tolist(), name=n) for n, r in shown], **below),
            _fig("gradient norm per step", "step", "‖∇θ‖", [dict(type="scatter", y=r.grad_norm.tolist(), name=n) for n, r in shown], **below))


if show:
    cols = st.columns(len(runs))
    for col, (name, run) in zip(cols, runs.items()):
        with col:
            st.markdown(f"**{name}**")
            T = run.steps
            st.plotly_chart(_bars_figure(run_keys[name]), width="stretch", key=f"dyn_bars_{name}")
            if len(run.labels) == 3:
                st.plotly_chart(_simplex_figure(run_keys[name]), width="stretch", key=f"dyn_simplex_{name}")
            m1, m2 = st.columns(2)
            m1.metric("E[r] at end", f"{float(run.expected_reward[-1]):.3f}",
                      delta=f"{float(run.expected_reward[-1] - run.expected_reward[0]):+.3f} from start", delta_color="off")
            m2.metric("KL(π‖π_ref) at end", f"{float(run.kl[-1]):.4f}")
            if run.ratios[0] is not None and P.VARIANTS[name][0] == "ppo":
                step = st.slider("PPO batch (step)", 0, T - 1, 0, key=f"dyn_ppo_step_{name}") if T > 1 else 0
                r = run.ratios[step]  # (μ, B)
                lo, hi = run.conventions.clip_band
                labels = [run.labels[int(i)] for i in (run.samples[step] if run.samples[step] is not None else range(r.shape[1]))]
                first = {}  # one line per distinct response: its first column
                for j in range(r.shape[1]):
                    first.setdefault(labels[j], j)
                lines = [dict(type="scatter", x=list(range(r.shape[0])), y=r[:, j].tolist(), mode="lines+markers", name=name)
                         for name, j in first.items()]
                rf = _fig(f"ratios within the epochs of batch {step}", "epoch", "π_θ / π_old", lines,
                          shapes=[dict(type="rect", xref="paper", x0=0, x1=1, y0=lo, y1=hi, fillcolor="seagreen", opacity=0.15, line_width=0)],
                          annotations=[dict(xref="paper", x=0.01, y=hi, text="clip band [1−ε, 1+ε]", showarrow=False, yanchor="bottom")])
                st.plotly_chart(rf, width="stretch", key=f"dyn_ratio_{name}")

    a, b, c = st.columns(3)
    loss_fig, kl_fig, grad_fig = _curves_figures(json.dumps(list(run_keys.values())))
    a.plotly_chart(loss_fig, width="stretch", key="dyn_loss")
    b.plotly_chart(kl_fig, width="stretch", key="dyn_kl")
    c.plotly_chart(grad_fig, width="stretch", key="dyn_grad")

    if any(P.VARIANTS[n][0] in ("grpo", "rloo") for n in runs) and setup["policy"] == "sequence":
        lengths = list(range(1, int(setup["length"]) + 1))
        with shows_errors():
            bars = [dict(type="bar", x=[str(x) for x in lengths], y=P.length_weights(lengths, lt).tolist(), name=lt)
                    for lt in ("grpo", "bnpo", "dr_grpo", "dapo")]
            st.plotly_chart(_fig(f"weight of one response in a batch of responses of lengths {lengths} (per loss type)", "response length",
                                 "weight", bars, barmode="group"), width="stretch", key="dyn_lengthw")

    if setup["preset"] == "gae" or setup["advantage"] == "gae":
        with shows_errors():
            sweep = _gae_sweep(json.dumps(setup, sort_keys=True))
            lines = [dict(type="scatter", x=sweep["lam"], y=sweep["variance"], mode="lines+markers", name="variance"),
                     dict(type="scatter", x=sweep["lam"], y=sweep["bias2"], mode="lines+markers", name="bias²")]
            st.plotly_chart(_fig("GAE advantage error over 6 seeds × 64 samples (value noise σ ≥ 0.5)", "λ", "squared error", lines, height=320),
                            width="stretch", key="dyn_gae")

if preset is None:
    st.caption("Two of these phenomena (DPO's falling chosen probability, length weighting) are also on the Check yourself page.")
course_nav(__file__)
