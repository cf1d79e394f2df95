"""Charts and sample views for small runs of every algorithm (SFT, DPO, GRPO, RLOO, reward model, PPO).

The Small-runs page (and the pipeline view SFT → RM → PPO) draws a run's ledger with four calls:

    df = metric_frame(events)                 # main-stage step and eval rows
    draw_charts(df, "live")                   # one chart per group of logged metrics that the run has
    show_samples(samples_event)               # the latest samples, in the view for their kind
    stage_summary(summary_event)              # "PPO: held-out accuracy 20.0% → 48.0%"

Nothing here computes a formula: the charts show numbers the events carry, under the names the trainers log them
(TRL's names where TRL has them). The one derived number, a reward model's margin when a samples event does not carry
it, comes from a ``lab`` call. Which charts exist is one table, ``CHARTS``; a chart is drawn when the run logged at
least one of its metrics that no earlier chart drew, so an algorithm this module has never heard of draws what it
has, and whatever no chart claims appears under "More logged metrics".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from labui import figure
from labui.colors import KEY, KEY_WIDTH, NEGATIVE, POSITIVE
from labui.share import projector_on


@dataclass(frozen=True)
class Chart:
    """One chart of the run view."""

    title: str
    """What a learner reads first; for the key comparisons it states the question the chart answers."""
    keys: tuple[str, ...]
    """Metric names drawn on the left y-axis, as the trainers log them (``eval/…`` keys are held-out evaluations)."""
    unit: str
    """Left y-axis title."""
    right: tuple[str, ...] = ()
    """Metric names drawn on a second, right-hand y-axis (different units on one chart)."""
    right_unit: str = ""
    """Right y-axis title."""
    when: Optional[str] = None
    """Drawn only when the run logged this metric (e.g. the proxy-vs-gold chart needs ``eval/proxy_reward``)."""
    note: str = ""
    """One line under the chart: what to look for."""
    wide: bool = False
    """Drawn across the full width, above the two-column grid (the headline chart of a run that has it)."""

    @property
    def all_keys(self) -> tuple[str, ...]:
        return self.keys + self.right


# Order matters: a chart is drawn when it has a logged metric that no chart above it drew (see ``plan_charts``).
CHARTS: list[Chart] = [
    Chart("loss", ("loss",), "loss"),
    Chart("Proxy vs gold: the proxy rises — does the gold?", ("eval/proxy_reward", "reward"), "reward-model score (proxy)",
          right=("eval/accuracy", "reward/verifier"), right_unit="verifier: fraction correct (gold)", when="eval/proxy_reward", wide=True,
          note="Left: the learned reward model's score (held-out greedy answers, and the training samples). Right: the task's "
               "verifier on the same kinds of answers. A proxy that keeps rising while the gold stalls or falls is "
               "over-optimization (Gao et al. 2022; ftip-003B)."),
    Chart("PPO loss: policy (left), value (right)", ("loss/policy_avg",), "policy loss", right=("loss/value_avg",),
          right_unit="value loss"),
    Chart("reward (mean, std) and zero-spread groups", ("reward", "reward_std", "frac_reward_zero_std"), "reward / fraction"),
    Chart("reward model: pairs ranked right", ("accuracy", "eval/preference_accuracy"), "fraction of pairs", when="accuracy",
          note="Training batch and held-out pairs: the fraction where r(chosen) > r(rejected)."),
    Chart("reward model: scores and margin", ("rewards/chosen", "rewards/rejected", "margin", "eval/rewards/margins"), "score",
          when="margin", note="Only the margin r(chosen) − r(rejected) enters the Bradley–Terry loss (ftip-002Q): a constant added "
                              "to both scores changes nothing."),
    Chart("held-out accuracy", ("eval/accuracy", "eval/preference_accuracy"), "fraction"),
    Chart("PPO: score (left), KL to reference (right)", ("objective/scores",), "score of sampled answers",
          right=("objective/kl",), right_unit="KL to the reference (nats)"),
    Chart("KL to the reference (k3)", ("kl",), "nats / token"),
    Chart("value model: explained variance", ("val/explained_variance",), "explained variance",
          note="1: the value model predicts the returns; 0 or below: no better than their mean."),
    Chart("clip fractions", ("clip_ratio/low_mean", "clip_ratio/high_mean"), "fraction of tokens"),
    Chart("PPO clip fractions: ratio and value", ("policy/clipfrac_avg", "val/clipfrac_avg"), "fraction of tokens"),
    Chart("PPO: approximate KL, old → new policy", ("policy/approxkl_avg",), "nats",
          note="Between the policy that sampled the batch and the policy after the update's epochs."),
    Chart("DPO implicit rewards", ("rewards/chosen", "rewards/rejected", "rewards/margins", "eval/rewards/margins"), "β·log π/π_ref",
          note="The loss sees only the margin, so it can fall while both rewards fall, the rejected one faster (ftip-003R)."),
    Chart("policy entropy", ("entropy", "policy/entropy_avg"), "nats / token"),
    Chart("gradient norm", ("grad_norm",), "‖∇θ‖₂"),
    Chart("mean completion length", ("completions/mean_length",), "tokens"),
]

# Bookkeeping columns of step/eval events: never drawn as "more logged metrics".
NOT_METRICS = {"type", "step", "total_steps", "step_time", "steps_per_second", "prev_sha256", "time", "phase", "stage"}

# Fixed colours for the curves whose meaning the app fixes (labui.colors); others take plotly's cycle.
_COLOURS = {"rewards/chosen": POSITIVE, "rewards/rejected": NEGATIVE, "rewards/margins": KEY, "margin": KEY, "eval/accuracy": KEY}
_PALETTE = ["#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]  # plotly's default cycle without the
# green and red that labui.colors reserves


def metric_frame(events: list[dict]) -> pd.DataFrame:
    """The main stage's step and eval events as one DataFrame sorted by step (base-stage events, ``"phase": "base"``,
    and events without a finite number as their step are left out: they have no place on a step axis).

    A resumed run logs again the steps after its checkpoint; the frame keeps the latest row per (type, step).
    A logged NaN is kept as the text ``"NaN"`` so that it stays apart from "not logged at this step" (an empty cell):
    the charts count it under "not drawn" (a diverged loss must not vanish silently).
    """
    if not isinstance(events, (list, tuple)):
        raise ValueError(f"events must be a list of event dicts; got {type(events).__name__}")
    rows = [e for e in events if isinstance(e, dict) and e.get("type") in ("step", "eval") and e.get("phase") is None
            and _is_number(e.get("step")) and not isinstance(e.get("step"), bool) and float("-inf") < e["step"] < float("inf")]
    if not rows:
        return pd.DataFrame()
    rows = [{k: ("NaN" if isinstance(v, float) and v != v else v) for k, v in e.items()} for e in rows]
    df = pd.DataFrame(rows).drop_duplicates(subset=["type", "step"], keep="last")
    return df.sort_values("step", kind="stable").reset_index(drop=True)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating, np.bool_))


def _numbers(col: pd.Series) -> pd.Series:
    """A column as floats: numbers (bools as 0/1) kept, anything else (text, a logged "NaN", not logged) NaN.
    Text that looks like a number stays text: a metric is drawn only as the trainer logged it."""
    if pd.api.types.is_numeric_dtype(col.dtype):  # the usual case: a column of numbers (and empty cells), no per-value look
        return col.astype(float)
    return col.map(lambda v: float(v) if _is_number(v) else float("nan")).astype(float)


def _present(df: pd.DataFrame, key: str) -> bool:
    """Whether the run logged ``key`` as a number at some step (a NaN counts: an all-NaN loss gets its chart, empty,
    with the count of values not drawn; a column of text is not a metric)."""
    if key not in df.columns:
        return False
    col = df[key]
    return bool(_numbers(col).notna().any() or col.isin(["NaN"]).any())


def plan_charts(df: pd.DataFrame) -> list[tuple[Chart, list[str]]]:
    """The charts ``draw_charts`` draws for ``df``, each with the metric names it will show, in order; then one
    chart per remaining numeric metric (titled by its name) for what no table entry claims.

    A table chart is drawn when its ``when`` metric (if any) was logged and it has a logged metric that no earlier
    chart drew; it then shows all its logged metrics (so "reward" can appear both beside the gold accuracy and
    beside its spread).
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame (from metric_frame); got {type(df).__name__}")
    if df.empty or "step" not in df.columns:
        return []
    drawn: set[str] = set()
    plan = []
    for chart in CHARTS:
        if chart.when is not None and not _present(df, chart.when):
            continue
        present = [k for k in chart.all_keys if _present(df, k)]
        if not any(k not in drawn for k in present):
            continue
        plan.append((chart, present))
        drawn.update(present)
    for k in df.columns:
        if isinstance(k, str) and k not in drawn and k not in NOT_METRICS and _present(df, k):
            plan.append((Chart(k, (k,), k), [k]))
    return plan


def _series(df: pd.DataFrame, key: str) -> tuple[pd.Series, pd.Series, int]:
    """(steps, values, n_skipped) of one metric: rows where it is a finite number (NaN, ±inf and text are skipped
    and counted, so the chart says so instead of breaking or hiding them silently)."""
    vals = _numbers(df[key])
    logged = df[key].notna()
    finite = vals.notna() & (vals > float("-inf")) & (vals < float("inf"))
    steps = _numbers(df["step"])
    keep = finite & steps.notna()
    return steps[keep], vals[keep], len(vals[logged & ~keep])


def _add(fig: go.Figure, df: pd.DataFrame, key: str, right: bool, name: str, colour: str, dotted: bool) -> int:
    x, y, skipped = _series(df, key)
    if len(y) == 0:
        return skipped
    mode = "lines+markers" if key.startswith("eval/") or len(y) < 3 else "lines"
    line: dict[str, Any] = {"color": colour, **({"dash": "dot"} if dotted else {})}
    if key == "eval/accuracy" and not dotted and not projector_on():  # the key curve, bold (projector draws all bold)
        line["width"] = KEY_WIDTH
    fig.add_trace(go.Scatter(x=x.to_numpy(), y=y.to_numpy(), name=name, mode=mode, line=line, yaxis="y2" if right else "y"))
    return skipped


def draw_charts(df: pd.DataFrame, key: str, other: Optional[pd.DataFrame] = None, other_name: str = "", where=st) -> int:
    """Draw every chart of ``CHARTS`` whose metrics ``df`` has (two per row), then, folded, one chart per remaining
    metric; returns the number of charts drawn.

    ``key`` prefixes the Streamlit element keys (use a different one for each view on a page). ``other`` (another
    run's ``metric_frame``) is drawn dotted on the same charts, named ``"<metric> (<other_name>)"``.
    Values that are not finite numbers are not drawn; a caption under the chart counts them.
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty string (it prefixes the chart keys); got {key!r}")
    if other is not None and not isinstance(other, pd.DataFrame):
        raise ValueError(f"other must be a pandas DataFrame (from metric_frame) or None; got {type(other).__name__}")
    plan = plan_charts(df)
    if not plan:
        return 0
    wide = [(c, p) for c, p in plan if c in CHARTS and c.wide]
    main = [(c, p) for c, p in plan if c in CHARTS and not c.wide]
    extra = [(c, p) for c, p in plan if c not in CHARTS]
    for chart, present in wide:
        _draw_one(where, chart, present, df, f"{key}_{chart.title}", other, other_name)
    n_cols = 1 if projector_on() else 2  # projector: one chart per row, so large titles and legends fit
    cols = where.columns(n_cols)
    for i, (chart, present) in enumerate(main):
        _draw_one(cols[i % n_cols], chart, present, df, f"{key}_{chart.title}", other, other_name)
    if extra:
        names = [c.title for c, _ in extra]
        label = ", ".join(names[:8]) + (f" and {len(names[8:])} more" if names[8:] else "")
        more = where.expander(f"More logged metrics ({len(extra)}): {label}").columns(n_cols)
        for i, (chart, present) in enumerate(extra):
            _draw_one(more[i % n_cols], chart, present, df, f"{key}_more_{chart.title}", other, other_name)
    return len(plan)


def _draw_one(where, chart: Chart, present: list[str], df: pd.DataFrame, element_key: str,
              other: Optional[pd.DataFrame], other_name: str) -> None:
    fig = figure(chart.title, "step", chart.unit, height=320)
    # legend under the plot, below the axis title: a run chart can carry six curves (two runs), which on top would
    # cover the title (one update_layout per chart: each costs plotly ~20 ms of validation)
    layout: dict[str, Any] = dict(legend=dict(orientation="h", yanchor="top", y=-0.42 if projector_on() else -0.3, xanchor="left", x=0),
                                  margin=dict(b=10))
    if chart.right:
        layout.update(yaxis2=dict(title=chart.right_unit, overlaying="y", side="right", showgrid=False, tickmode="auto"),
                      margin=dict(b=10, r=60))
    fig.update_layout(**layout)
    skipped = {}
    for i, k in enumerate(present):
        right = k in chart.right
        colour = _COLOURS.get(k, _PALETTE[i % len(_PALETTE)])  # the other run's curve takes the same colour, dotted
        skipped[k] = _add(fig, df, k, right, k, colour, dotted=False)
        if other is not None and k in other.columns and "step" in other.columns:
            _add(fig, other, k, right, f"{k} ({other_name or 'other run'})", colour, dotted=True)
    where.plotly_chart(fig, width="stretch", key=element_key)
    lost = [f"{k}: {n}" for k, n in skipped.items() if n]
    if chart.note:
        where.caption(chart.note)
    if lost:
        where.caption("Not drawn (not a finite number): " + ", ".join(lost))


# ------------------------------------------------------------------ samples

def _code(text: Any) -> str:
    """Inline code that shows any text as typed (a fence longer than any backtick run inside it)."""
    s = str(text).replace("\n", "⏎")
    longest, run = 0, 0
    for ch in s:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    return f"{fence} {s} {fence}" if s else "(empty)"


def _num(x: Any, fmt: str = ".3f") -> str:
    if isinstance(x, bool) or x is None:
        return "n/a" if x is None else str(x)
    if isinstance(x, (int, float)):
        return format(x, fmt)
    return str(x)


def _shown(x: Any) -> Any:
    """A value as a heatmap cell: a finite number, else None (drawn empty)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and float("-inf") < x < float("inf"):
        return x
    return None


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else []


def _table(columns: dict[str, list]) -> pd.DataFrame:
    """Columns of unequal length padded with None (a samples event whose lists disagree still shows); a column of
    numbers shows them rounded for reading, any other column shows text."""
    n = max((len(v) for v in columns.values()), default=0)
    return pd.DataFrame({k: _column(v) + [None] * (n - len(v)) for k, v in columns.items()})


def _column(values: list) -> list:
    if all(_shown(x) is not None or x is None for x in values):
        return [None if x is None else round(float(x), 4) for x in values]
    return [None if x is None else str(x) for x in values]


def _prompt_line(event: dict, where) -> None:
    parts = []
    if "prompt" in event:
        parts.append(f"Prompt {_code(event['prompt'])}")
    if "answer" in event:
        parts.append(f"correct answer {_code(event['answer'])}")
    if parts:
        where.markdown(" · ".join(parts))


def _token_strip(title: str, z_rows: list, tokens: list, hover_rows: Optional[list], labels: list[str], colorbar: str,
                 key: str, where) -> None:
    """A heatmap with one row per completion and one cell per token (its text written in the cell)."""
    width = max([len(_as_list(r)) for r in z_rows] + [len(_as_list(t)) for t in tokens] + [1])
    n = max(len(z_rows), len(tokens))
    z, text, custom = [], [], []
    for i in range(n):
        zr = [_shown(v) for v in (_as_list(z_rows[i]) if i < len(z_rows) else [])]
        tr = [str(t) for t in (_as_list(tokens[i]) if i < len(tokens) else [])]
        z.append(zr + [None] * (width - len(zr)))
        text.append(tr + [""] * (width - len(tr)))
        if hover_rows is not None:
            hr = [_shown(v) for v in (_as_list(hover_rows[i]) if i < len(hover_rows) else [])]
            custom.append([("n/a" if v is None else f"{v:.3f}") for v in hr] + ["n/a"] * (width - len(hr)))
    ylabels = [labels[i] if i < len(labels) else f"#{i + 1}" for i in range(n)]
    fig = figure(title, "token", "completion", height=max(220, 60 + 34 * n))
    hover = "token %{text}<br>Â = %{z:.3f}"
    kwargs: dict[str, Any] = {}
    if hover_rows is not None:
        hover += "<br>V = %{customdata}"
        kwargs["customdata"] = custom
    fig.add_trace(go.Heatmap(z=z, text=text, y=ylabels, texttemplate="%{text}", colorscale="RdBu", zmid=0,
                             colorbar=dict(title=colorbar), hovertemplate=hover + "<extra></extra>", **kwargs))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(dtick=1)
    where.plotly_chart(fig, width="stretch", key=key)


def _rewards(event: dict) -> tuple[str, list]:
    """The per-completion rewards and their column name: ``rewards`` (verifier), else ``scores`` (a reward model)."""
    if "rewards" in event:
        return "reward", _as_list(event["rewards"])
    return ("score", _as_list(event["scores"])) if "scores" in event else ("reward", [])


def _row_labels(event: dict) -> list[str]:
    name, rewards = _rewards(event)
    return [f"#{i + 1} {name[0]}={_num(r, '.2f')}" for i, r in enumerate(rewards)]


def _per_token(event: dict) -> bool:
    """Whether the event carries per-token credit (PPO): ``token_advantages``, or ``advantages`` as one list per completion."""
    if "token_advantages" in event or "token_values" in event:
        return True
    advs = event.get("advantages")
    return isinstance(advs, (list, tuple)) and any(isinstance(a, (list, tuple)) for a in advs)


def _show_group(event: dict, key: str, where) -> None:
    """GRPO / RLOO: one advantage per response, shared by all its tokens."""
    _prompt_line(event, where)
    cols = {"completion": _as_list(event.get("completions"))}
    name, rewards = _rewards(event)
    if rewards:
        cols[name] = rewards
    if "advantages" in event:
        cols["advantage"] = _as_list(event["advantages"])
    where.dataframe(_table(cols), hide_index=True, width="stretch")
    tokens = _as_list(event.get("tokens"))
    advs = _as_list(event.get("advantages"))
    if tokens and advs:
        rows = [[a] * len(_as_list(t)) for a, t in zip(advs, tokens)]  # every token of a response carries its advantage
        _token_strip("Credit each token received (every token of a response shares its advantage)", rows, tokens, None,
                     _row_labels(event), "Â", f"{key}_strip", where)


def _show_ppo(event: dict, key: str, where) -> None:
    """PPO: an advantage per token from GAE over the value model's estimates (``token_advantages`` / ``token_values``,
    or the same lists under ``advantages`` / ``values``)."""
    _prompt_line(event, where)
    cols = {"completion": _as_list(event.get("completions"))}
    name, rewards = _rewards(event)
    if rewards:
        cols[name] = rewards
    where.dataframe(_table(cols), hide_index=True, width="stretch")
    advs = _as_list(event.get("token_advantages", event.get("advantages")))
    tokens = _as_list(event.get("tokens"))
    if advs or tokens:
        v = event.get("token_values", event.get("values"))
        values = _as_list(v) if v is not None else None
        _token_strip("PPO's credit per token: GAE advantage Â_t (hover: value V_t)", advs, tokens, values,
                     _row_labels(event), "Â_t", f"{key}_gae", where)
    where.caption("PPO's value model estimates V_t at every token, so GAE gives each token its own advantage "
                  "Â_t = Σₗ (γλ)ˡ δₜ₊ₗ [ftip-003E; Schulman et al. 2016, eq. 16] and credit changes token by token; "
                  "GRPO and RLOO give every token of a response the same number, the response's advantage in its group [ftip-004E].")


def _pair_margin(event: dict, chosen: str, rejected: str) -> Optional[float]:
    """The event's margin, or chosen − rejected by a lab call (lab.dpo.dpo_metrics' rewards/margins); None if not numbers."""
    if isinstance(event.get("margin"), (int, float)) and not isinstance(event.get("margin"), bool):
        return float(event["margin"])
    a, b = event.get(chosen), event.get(rejected)
    if _shown(a) is None or _shown(b) is None:
        return None
    from lab.dpo import dpo_metrics

    return dpo_metrics([float(a)], [float(b)])["rewards/margins"]


def _show_pair(event: dict, score_name: str, chosen: str, rejected: str, key: str, where) -> None:
    """DPO (implicit rewards) or a reward model (scores): the pair, its scores, and which one wins."""
    if "prompt" in event:
        where.markdown(f"Prompt {_code(event['prompt'])}")
    where.dataframe(_table({"answer": ["chosen", "rejected"], "text": [event.get("chosen"), event.get("rejected")],
                            score_name: [event.get(chosen), event.get(rejected)]}), hide_index=True, width="stretch")
    a, b = _shown(event.get(chosen)), _shown(event.get(rejected))
    if a is None or b is None:
        return
    margin = _pair_margin(event, chosen, rejected)
    who = "the reward model" if score_name == "score" else "the policy's implicit reward"
    if a > b:
        verdict = f"{who} prefers the **chosen** answer (agrees with the pair's label)"
    elif b > a:
        verdict = f"{who} prefers the **rejected** answer (disagrees with the pair's label)"
    else:
        verdict = f"{who} scores both answers the same"
    from lab.preference import bradley_terry_probability

    p = float(bradley_terry_probability(a, b))
    where.markdown(f"{verdict[0].upper()}{verdict[1:]}: margin {_num(margin)}, "
                   f"P(chosen ≻ rejected) = σ(margin) = {p:.3f} (Bradley–Terry, ftip-002Q).")


def show_samples(event: dict, where=st, key: str = "samples") -> str:
    """The "Latest samples" view of one samples event; returns the kind it recognised.

    Kinds, by the keys present: ``"ppo"`` (``token_advantages``, or ``advantages`` as one list per completion: the
    per-token GAE strip with ``token_values`` / ``values`` on hover),
    ``"group"`` (GRPO / RLOO: ``completions`` with ``rewards`` (or ``scores``) and ``advantages``, one per response),
    ``"rm"`` (``score_chosen`` / ``score_rejected``: which answer the reward model prefers and by what margin),
    ``"dpo"`` (``chosen`` / ``rejected`` with implicit rewards), or ``"other"`` (the event as JSON).
    Missing or extra keys never raise: the view shows what is there.
    """
    if not isinstance(event, dict):
        raise ValueError(f"event must be a samples event dict; got {type(event).__name__}")
    step = event.get("step")
    where.subheader(f"Latest samples (step {step})" if step is not None else "Latest samples")
    if _per_token(event):
        kind = "ppo"
        _show_ppo(event, key, where)
    elif "completions" in event:
        kind = "group"
        _show_group(event, key, where)
    elif "score_chosen" in event or "score_rejected" in event:
        kind = "rm"
        _show_pair(event, "score", "score_chosen", "score_rejected", key, where)
    elif "chosen" in event or "rejected" in event:
        kind = "dpo"
        _show_pair(event, "implicit reward", "reward_chosen", "reward_rejected", key, where)
    else:
        kind = "other"
        where.json({k: v for k, v in event.items() if k != "type"}, expanded=False)
    return kind


# ------------------------------------------------------------------ stage summaries

STAGE_NAMES = {"sft": "SFT", "dpo": "DPO", "grpo": "GRPO", "rloo": "RLOO", "ppo": "PPO", "rm": "reward model"}
METRIC_NAMES = {"eval/accuracy": "held-out accuracy", "eval/preference_accuracy": "held-out preference accuracy"}


def _pct(x: Any) -> str:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return format(x, ".1%")
    return "n/a" if x is None else _one_line(x)


def _one_line(x: Any) -> str:
    return " ".join(str(x).split())


def stage_summary(summary_event: dict) -> str:
    """One plain-text line for a finished stage's summary (a ledger ``summary`` or a ``done`` event), e.g.
    ``"reward model: held-out preference accuracy 71.0% → 93.5%"``. A base SFT stage (``"phase": "base"`` or
    ``"stage": "base"``) is named "base SFT"; DPO adds the held-out answer accuracy; a run against a proxy adds the
    proxy's score before and after; a stopped stage says where it stopped.
    The line echoes names from the run's config: pass it through ``labui.share.plain`` before rendering as markdown.
    """
    if not isinstance(summary_event, dict):
        raise ValueError(f"summary_event must be a summary dict; got {type(summary_event).__name__}")
    algo = summary_event.get("algorithm")
    if summary_event.get("phase") == "base" or summary_event.get("stage") == "base":
        name = "base SFT"
    else:
        name = STAGE_NAMES.get(algo, _one_line(algo) if algo is not None else "stage") if isinstance(algo, (str, type(None))) else _one_line(algo)
    metric = summary_event.get("metric")
    line = f"{name}:"
    if metric is not None or "before" in summary_event or "after" in summary_event:
        label = METRIC_NAMES.get(metric, _one_line(metric).removeprefix("eval/") if metric is not None else "result") \
            if isinstance(metric, (str, type(None))) else _one_line(metric)
        line += f" {label} {_pct(summary_event.get('before'))} → {_pct(summary_event.get('after'))}"
    if metric != "eval/accuracy" and (summary_event.get("accuracy_before") is not None or summary_event.get("accuracy_after") is not None):
        line += (f"; held-out accuracy {_pct(summary_event.get('accuracy_before'))} → "
                 f"{_pct(summary_event.get('accuracy_after'))}")
    proxy = summary_event.get("proxy_before"), summary_event.get("proxy_after")
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in proxy):  # a proxy's score beside the gold
        line += "; proxy score " + " → ".join(format(v, ".3f") if isinstance(v, (int, float)) and not isinstance(v, bool)
                                              else ("n/a" if v is None else _one_line(v)) for v in proxy)
    if line == f"{name}:":
        line += " finished" + (f" after {summary_event['steps']} steps" if "steps" in summary_event else "")
    if summary_event.get("stopped"):
        line += f" (stopped at step {summary_event.get('steps', '?')})"
    return line
