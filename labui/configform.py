"""Inputs for an algorithm's own options, generated from ``RunConfig`` (one source for the CLI and the page).

``lab.smallrun.config.ALGORITHMS[algo]["fields"]`` lists the fields an algorithm reads; each field's type, default
and docstring come from ``RunConfig`` itself (``field_types``, ``field_docs``). So a new option added to the config
appears here, with its description as help, without touching the page. Nothing is validated here: the page builds a
``RunConfig`` from the values and its ``ValueError`` (naming the field) is shown next to the controls.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any, Optional

import streamlit as st

from lab.smallrun.config import ALGORITHMS, RunConfig, field_docs, field_types

# Fields the page asks for in its own controls (task, model, data file, the step/lr/batch trio, evaluation, seed,
# hardware); every other field an algorithm lists is drawn by ``algorithm_options``.
COMMON = {"algorithm", "task", "data", "steps", "seed", "lr", "batch_size", "model", "model_size", "eval_every", "eval_size",
          "save_every", "keep", "device", "threads", "bf16", "warmup_steps", "weight_decay", "max_grad_norm", "max_new_tokens"}
NO_REWARD_MODEL = "(none: the task's verifier)"


def defaults() -> dict[str, Any]:
    """Every RunConfig field's dataclass default (None where the algorithm's table fills it in)."""
    return {f.name: f.default for f in dataclasses.fields(RunConfig)}


def own_fields(algorithm: str) -> list[str]:
    """The options specific to ``algorithm``, in the table's order (the page draws these)."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(ALGORITHMS)}; got {algorithm!r}")
    return [f for f in ALGORITHMS[algorithm]["fields"] if f not in COMMON]


def label(name: str) -> str:
    return name.replace("_", " ")


def algorithm_options(algorithm: str, where=None, reward_models: Optional[list[str]] = None, key_prefix: str = "sr_opt_",
                      columns: int = 4) -> dict[str, Any]:
    """One input per own field of ``algorithm``; returns ``{field: value}`` to pass to ``RunConfig``.

    Literal fields → select box; bool → checkbox; int → integer input; float → number input; Optional[float] → a number
    input that may be left empty (None: the field's documented meaning, e.g. ε_high = ε); ``reward_model`` → a select
    box over ``reward_models`` (reward-model checkpoints found under the runs directory) or the verifier.
    """
    where = where or st
    for k in [k for k in st.session_state if str(k).startswith(key_prefix)]:
        st.session_state[k] = st.session_state[k]  # keep options of algorithms not drawn in this run (Streamlit drops them)
    types, docs, dflt = field_types(), field_docs(), defaults()
    fields = own_fields(algorithm)
    values: dict[str, Any] = {}
    if not fields:
        where.caption(f"{algorithm} has no options beyond the common ones above.")
        return values
    cols = where.columns(min(columns, len(fields)))
    for i, name in enumerate(fields):
        col, key, typ, doc = cols[i % len(cols)], f"{key_prefix}{name}", types[name], docs.get(name, "")
        origin, args = typing.get_origin(typ), typing.get_args(typ)
        optional = origin is typing.Union and type(None) in args
        base = next((a for a in args if a is not type(None)), typ) if optional else typ
        if name == "reward_model":
            choices = [NO_REWARD_MODEL] + list(reward_models or [])
            if st.session_state.get(key) not in choices:
                st.session_state[key] = NO_REWARD_MODEL
            picked = col.selectbox("reward model", choices, key=key, help=doc,
                                   format_func=lambda p: p if p == NO_REWARD_MODEL else str(Path(p).parent.name) + "/" + Path(p).name)
            values[name] = None if picked == NO_REWARD_MODEL else picked
        elif typing.get_origin(base) is typing.Literal:
            st.session_state.setdefault(key, dflt[name])
            values[name] = col.selectbox(label(name), list(typing.get_args(base)), key=key, help=doc)
        elif base is bool:
            st.session_state.setdefault(key, bool(dflt[name]))
            values[name] = col.checkbox(label(name), key=key, help=doc)
        elif base is int:
            st.session_state.setdefault(key, int(dflt[name]))
            values[name] = int(col.number_input(label(name), step=1, key=key, help=doc))
        elif base is float:
            st.session_state.setdefault(key, None if dflt[name] is None else float(dflt[name]))
            v = col.number_input(label(name), value=None, format="%.4g", key=key, help=doc + (" Leave empty for None." if optional else ""),
                                 placeholder="None")
            values[name] = None if v is None else float(v)
        else:  # a path or text option
            st.session_state.setdefault(key, dflt[name] or "")
            text = col.text_input(label(name), key=key, help=doc).strip()
            values[name] = text or None
    return values
