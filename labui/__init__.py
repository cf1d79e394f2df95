"""Shared pieces of the Streamlit pages: headers with sources, error display, worked-example loading, plots.

Pages stay thin: widgets in, ``lab`` calls, plotly figures out. Nothing here computes a formula.
"""

from __future__ import annotations

import contextlib
import gc
from types import ModuleType
from urllib.parse import urlencode
from typing import Callable, Iterator

import plotly.graph_objects as go
import streamlit as st

REFERENCE = "definitions-and-worked-examples.txt"


def header(title: str, tags: str, citation: str, summary: str, reference: str = REFERENCE) -> None:
    """Page title, the reference tags and paper citation, and a short explanation.

    Also places the projector-mode toggle (``labui.share``); in projector mode the explanation is folded
    into an expander so the main control and chart fit the screen.
    """
    from labui.share import projector_on, projector_toggle

    projector_toggle()
    st.title(title)
    st.caption(f"Reference: {tags} in `{reference}` · {citation}")
    if projector_on():
        with st.expander("What this page shows"):
            st.markdown(summary)
    else:
        st.markdown(summary)


@contextlib.contextmanager
def shows_errors(where=None) -> Iterator[None]:
    """Show a library ``ValueError`` as a message next to the widget, never a traceback; the page goes on."""
    try:
        yield
    except ValueError as exc:
        from labui.share import plain

        (where or st).error(f"⚠️ {plain(exc)}")


# Input bounds: every rerun of a page stays well under a second and small in memory (tests/test_page_fuzz.py).
MAX_NUMBERS = 64  # numbers in one text field
MAX_CHARS = 4000  # characters in one text field


def parse_floats(text: str, name: str, max_count: int = MAX_NUMBERS, allow_nonfinite: bool = False) -> list[float]:
    """'1, 0.5, 2' → [1.0, 0.5, 2.0]; a clear ValueError naming the field otherwise.

    At most ``max_count`` numbers (a bound, so that no rerun is slow); NaN and ±inf are refused unless
    ``allow_nonfinite`` (a 5000-digit number overflows to inf and is refused the same way).
    """
    if len(text) > MAX_CHARS:
        raise ValueError(f"{name}: at most {MAX_CHARS} characters; got {len(text)}")
    parts = [p for p in text.replace(";", ",").replace(" ", ",").replace("\n", ",").split(",") if p.strip()]
    if not parts:
        raise ValueError(f"{name} must list at least one number")
    if len(parts) > max_count:
        raise ValueError(f"{name}: at most {max_count} numbers on this page; got {len(parts)}")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{name} must be numbers separated by commas; got {text[:80]!r}") from None
    if not allow_nonfinite:
        bad = [p for p, v in zip(parts, vals) if v != v or v in (float("inf"), float("-inf"))]
        if bad:
            raise ValueError(f"{name} must be finite numbers; got {bad[0][:40]!r}" + (" (too large for a float)" if len(bad[0]) > 20 else ""))
    return vals


def parse_ints(text: str, name: str, low: int, high: int, max_count: int = MAX_NUMBERS) -> list[int]:
    """'3, 7, 5' → [3, 7, 5], each a whole number in [low, high]; a clear ValueError naming the field otherwise."""
    vals = parse_floats(text, name, max_count)
    for v in vals:
        if v != int(v):
            raise ValueError(f"{name} must be whole numbers; got {v:g}")
        if not low <= v <= high:
            raise ValueError(f"{name} must lie in [{low}, {high}] on this page; got {v:.15g}")
    return [int(v) for v in vals]


def circle_layout(items: list) -> dict:
    """Positions of ``items`` evenly spaced on the unit circle, for drawing a graph (layout, not a formula of the lab)."""
    import math

    n = max(len(items), 1)
    return {it: (math.cos(2 * math.pi * k / n), math.sin(2 * math.pi * k / n)) for k, it in enumerate(items)}


def example_button(label: str, values: dict, flag: str, help: str | None = None) -> None:
    """A button that loads a worked example's inputs into the widgets' session state before they render."""

    def load() -> None:
        st.session_state.update(values)
        st.session_state[flag] = True

    st.button(label, on_click=load, help=help, key=f"load_{flag}")


def agrees(computed: float, stated: float, tol: float) -> bool:
    """Whether a computed number matches a stated one within ``tol`` (a check for display, not a formula)."""
    return abs(computed - stated) <= tol


def example_note(flag: str, mod: ModuleType, computed: list[float] | None, fmt: Callable[[float], str] = lambda x: f"{x:.4g}") -> None:
    """After loading a worked example: its expected values beside what this page computed.

    Says who states the expected values (``worked_examples.kind``): the reference's Example, the lab's own
    illustration of a construction the reference gives without numbers, or a Definition applied to the
    lab's inputs.
    """
    if not st.session_state.get(flag):
        return
    import worked_examples

    stated = ", ".join(fmt(x) for x in mod.EXPECTED)
    got = ", ".join(fmt(x) for x in computed) if computed is not None else "—"
    ok = computed is not None and len(computed) == len(mod.EXPECTED) and all(agrees(a, b, max(mod.TOLERANCE, 1e-9)) for a, b in zip(computed, mod.EXPECTED))
    k = worked_examples.kind(mod)
    if k == "illustration":
        text = (f"Lab's own illustration **{mod.ID}** of [{mod.FTIP}] (the reference states no numbers here) — "
                f"hand-computed: **{stated}**; this page computes: **{got}**")
    elif k == "definition":
        text = f"Definition [{mod.FTIP}] applied to the lab's inputs (**{mod.ID}**) — it gives: **{stated}**; this page computes: **{got}**"
    else:
        text = f"Worked example **{mod.ID}** [{mod.FTIP}] — reference states: **{stated}**; this page computes: **{got}**"
    (st.success if ok else st.warning)(text)


def _projector_template() -> go.layout.Template:
    """Large fonts, thick lines and big markers for traces that do not set their own."""
    t = go.layout.Template()
    t.layout.font = dict(size=20)
    t.layout.title = dict(font=dict(size=24))
    t.data.scatter = [go.Scatter(line=dict(width=5), marker=dict(size=12))]
    t.data.bar = [go.Bar(marker=dict(line=dict(width=1)))]
    return t


def figure(title: str, x_title: str, y_title: str, height: int = 340) -> go.Figure:
    from labui.share import projector_on

    fig = go.Figure()
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=height, margin=dict(l=40, r=20, t=50, b=40),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1))
    if projector_on():
        fig.update_layout(template=_projector_template(), height=max(height, 380))
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
        page_link(left, prev.key, f"← Previous: {prev.title}")
    if here.notebook:
        mid.markdown(f"Notebook: `{here.notebook}`")
    if nxt is not None:
        page_link(right, nxt.key, f"Next: {nxt.title} →")


def page_link(where, key: str, label: str, query_params: dict | None = None) -> None:
    """A link to ``pages/<key>.py`` that stays in this tab and this session (so predictions answered so far count).

    A markdown link opens a new tab, i.e. a new session that has forgotten the learner's answers; under app.py's
    navigation ``st.page_link`` switches pages in place. Run alone (``AppTest.from_file(page)``) there is no
    navigation to link into, so the page falls back to the markdown link (same target, same query).
    """
    if st.session_state.get("_lab_app_ran"):
        where.page_link(f"pages/{key}.py", label=label, query_params=query_params)
    else:
        query = "?" + urlencode(query_params) if query_params else ""
        where.markdown(f"[{label}](/{key}{query})")


def outline_heatmap_cells(fig: go.Figure, spans: list[tuple[int, int]], n_rows: int, color: str = "black") -> None:
    """Outline columns first..last (inclusive) of a heatmap across all ``n_rows`` rows (cell edges sit at ±0.5)."""
    for first, last in spans:
        fig.add_shape(type="rect", x0=first - 0.5, x1=last + 0.5, y0=-0.5, y1=n_rows - 0.5, line=dict(color=color, width=3))


_startup_objects_frozen = False


def freeze_startup_objects() -> None:
    """Once per server process, before any page runs (``app.py`` calls it after importing the libraries): hide the
    objects alive at that moment from the cyclic garbage collector. They are modules, classes and functions of torch,
    plotly, streamlit and the lab, about 200 000 of them.

    Without it, the occasional full collection walks all of them, and the rerun that triggers it takes about twice
    as long. On the Dynamics page a seed change normally takes about 90 ms, and about one rerun in ten took 200–217 ms
    instead (``benchmarks/playground_speed.py``).

    Call it before a page runs, never inside one. A page's namespace is a reference cycle (its functions point back
    at its globals). Once frozen, that cycle would never be collected, and with it everything the page computed.
    Objects created after the freeze are collected as usual.
    """
    global _startup_objects_frozen
    if not _startup_objects_frozen:
        gc.collect()
        gc.freeze()
        _startup_objects_frozen = True
