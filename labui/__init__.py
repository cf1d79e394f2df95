"""Shared pieces of the Streamlit pages: headers with sources, error display, worked-example loading, plots.

Pages stay thin: widgets in, ``lab`` calls, plotly figures out. Nothing here computes a formula.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Callable, Iterator

import plotly.graph_objects as go
import streamlit as st

REFERENCE = "definitions-and-worked-examples.txt"


def header(title: str, tags: str, citation: str, summary: str, reference: str = REFERENCE) -> None:
    """Page title, the reference tags and paper citation, and a short explanation."""
    st.title(title)
    st.caption(f"Reference: {tags} in `{reference}` · {citation}")
    st.markdown(summary)


@contextlib.contextmanager
def shows_errors(where=None) -> Iterator[None]:
    """Show a library ``ValueError`` as a message next to the widget, never a traceback; the page goes on."""
    try:
        yield
    except ValueError as exc:
        (where or st).error(f"⚠️ {exc}")


def parse_floats(text: str, name: str) -> list[float]:
    """'1, 0.5, 2' → [1.0, 0.5, 2.0]; a clear ValueError naming the field otherwise."""
    parts = [p for p in text.replace(";", ",").replace(" ", ",").split(",") if p.strip()]
    if not parts:
        raise ValueError(f"{name} must list at least one number")
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{name} must be numbers separated by commas; got {text!r}") from None


def example_button(label: str, values: dict, flag: str, help: str | None = None) -> None:
    """A button that loads a worked example's inputs into the widgets' session state before they render."""

    def load() -> None:
        st.session_state.update(values)
        st.session_state[flag] = True

    st.button(label, on_click=load, help=help, key=f"load_{flag}")


def example_note(flag: str, mod: ModuleType, computed: list[float] | None, fmt: Callable[[float], str] = lambda x: f"{x:.4g}") -> None:
    """After loading a worked example: the reference's stated values beside what this page computed."""
    if not st.session_state.get(flag):
        return
    stated = ", ".join(fmt(x) for x in mod.EXPECTED)
    got = ", ".join(fmt(x) for x in computed) if computed is not None else "—"
    ok = computed is not None and len(computed) == len(mod.EXPECTED) and all(abs(a - b) <= max(mod.TOLERANCE, 1e-9) for a, b in zip(computed, mod.EXPECTED))
    (st.success if ok else st.warning)(f"Worked example **{mod.ID}** [{mod.FTIP}] — reference states: **{stated}**; this page computes: **{got}**")


def figure(title: str, x_title: str, y_title: str, height: int = 340) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=height, margin=dict(l=40, r=20, t=50, b=40),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1))
    return fig


def mark_point(fig: go.Figure, x: float, y: float, name: str = "current", color: str = "crimson") -> None:
    fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name=name, marker=dict(size=12, color=color, symbol="circle")))


def route_through_app(page_file: str) -> None:
    """Make a deep link work on a freshly started server.

    Until some session has called ``st.navigation``, Streamlit's legacy router serves ``/name`` by running
    ``pages/name.py`` directly, without ``app.py`` and its navigation. A page that finds itself run that way
    runs ``app.py`` instead (which routes back to this page through ``st.navigation``) and stops. Under
    ``AppTest.from_file(page)`` the page is itself the main script, so nothing happens.
    """
    import runpy
    from pathlib import Path

    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or st.session_state.get("_lab_app_ran"):
        return
    main = Path(ctx.pages_manager.main_script_path).resolve()
    if main == Path(page_file).resolve() or main.name != "app.py":
        return
    runpy.run_path(str(main), run_name="__main__")
    st.stop()


def course_nav(page_file: str) -> None:
    """Previous / Next links at the end of a page, in the course order of ``lab.course`` (and its notebook)."""
    from pathlib import Path

    from lab.course import chapter, neighbours

    key = Path(page_file).stem
    here = chapter(key)
    prev, nxt = neighbours(key)
    st.divider()
    left, mid, right = st.columns([1, 1, 1])
    if prev is not None:
        left.markdown(f"[← Previous: {prev.title}](/{prev.key})")
    if here.notebook:
        mid.markdown(f"Notebook: `{here.notebook}`")
    if nxt is not None:
        right.markdown(f"[Next: {nxt.title} →](/{nxt.key})")
