"""Shareable links and projector mode: page inputs live in the URL, and a classroom display mode.

Shareable links. A page declares its parameters once, as readable names mapped to widget keys and parsers::

    PARAMS = {"epsilon": Param("ppo_eps", number(0.01, 0.99)), "advantage": Param("ppo_adv", number(-10, 10))}
    restore_from_url(PARAMS)   # before the widgets: a link's values become the widgets' values
    ...widgets...
    write_to_url(PARAMS)       # after the widgets: the URL shows the current values

A parameter that does not parse, or is out of range, shows one clear message and falls back to the widget's
default; it never raises. A link is applied when its value differs from what this session last applied or
wrote, so moving a widget is never undone by the (now older) URL.

Projector mode (sidebar toggle, or ``?projector=1``): larger text and plot fonts, thicker lines and markers,
no plotly toolbar, and the page's long explanation folded away so the main control and chart fit a
1280×720 screen. :func:`figure` in ``labui`` reads :func:`projector_on` to pick the template.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import streamlit as st

_SEEN = "_lab_url_seen"  # {param name: the URL string this session last applied or wrote}
PROJECTOR = "projector"  # session key of the toggle (and the URL parameter)


@dataclass(frozen=True)
class Param:
    key: str  # the widget's session-state key
    parse: Callable[[str], Any]  # URL string → widget value; raises ValueError with a reason
    show: Callable[[Any], str] = lambda v: f"{v:g}" if isinstance(v, float) else str(v)  # widget value → URL string


def number(low: float, high: float, integer: bool = False) -> Callable[[str], Any]:
    """A parser for a number in [low, high] (an int when ``integer``)."""

    def parse(raw: str) -> Any:
        try:
            v = float(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not a number") from None
        if not math.isfinite(v) or not low <= v <= high:
            raise ValueError(f"{raw!r} is outside [{low:g}, {high:g}]")
        if integer:
            if v != int(v):
                raise ValueError(f"{raw!r} is not a whole number")
            return int(v)
        return v

    return parse


def choice(options: Sequence[Any]) -> Callable[[str], Any]:
    """A parser for one of ``options`` (matched by their string form; numbers also by value)."""

    def parse(raw: str) -> Any:
        for o in options:
            if str(o) == raw:
                return o
            if isinstance(o, (int, float)) and not isinstance(o, bool):
                try:
                    if float(raw) == float(o):
                        return o
                except ValueError:
                    pass
        raise ValueError(f"{raw!r} is not one of {list(options)}")

    return parse


def text(max_chars: int = 400) -> Callable[[str], str]:
    """A parser for free text (e.g. a list of numbers a field parses itself), bounded in length."""

    def parse(raw: str) -> str:
        if len(raw) > max_chars:
            raise ValueError(f"it has {len(raw)} characters, more than the {max_chars} allowed")
        return raw

    return parse


def flag(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{raw!r} is not 0/1")


def plain(message: str) -> str:
    """Defuse markdown link/image syntax and raw HTML in a message that echoes user text (a URL parameter, a field).

    Streamlit renders st.error/st.warning bodies as markdown, so an echoed ``[x](javascript:…)`` or ``![](http://…)``
    would become a link or a remote image. Only ``](`` and ``<`` are escaped, so the text reads the same.
    """
    return str(message).replace("](", "]\\(").replace("<", "\\<")


def restore_from_url(params: dict[str, Param], where=None) -> list[str]:
    """Before the widgets: set each widget from the URL where the link brings a new, valid value.

    Returns the messages shown for parameters that were ignored (bad or out of range).
    """
    seen = st.session_state.setdefault(_SEEN, {})
    problems = []
    for name, p in params.items():
        raw = st.query_params.get(name)
        if raw is None or seen.get(name) == raw:
            continue
        seen[name] = raw
        try:
            st.session_state[p.key] = p.parse(raw)
        except ValueError as exc:
            problems.append(f"link parameter `{name}` ignored: {plain(exc)}; using the page's value instead")
    for msg in problems:
        (where or st).warning(msg)
    return problems


def write_to_url(params: dict[str, Param]) -> None:
    """After the widgets: the URL carries every declared parameter's current value (a shareable link)."""
    seen = st.session_state.setdefault(_SEEN, {})
    for name, p in params.items():
        if p.key in st.session_state:
            value = p.show(st.session_state[p.key])
            seen[name] = value
            if st.query_params.get(name) != value:
                st.query_params[name] = value


# ---- projector mode ---------------------------------------------------------------------------------------------

_CSS = """
<style>
html, body, [class*="css"], .stMarkdown p, .stMarkdown li, label, .stRadio, .stSlider, .stSelectbox { font-size: 20px !important; }
h1 { font-size: 34px !important; } h2, h3 { font-size: 26px !important; }
[data-testid="stMetricValue"] { font-size: 34px !important; }
.modebar, .modebar-container { display: none !important; }
.block-container { padding-top: 1rem !important; padding-bottom: 1rem !important; max-width: 100% !important; }
</style>
"""


def projector_on() -> bool:
    return bool(st.session_state.get(PROJECTOR, False))


def projector_toggle() -> None:
    """The sidebar toggle; ``?projector=1`` turns it on (and a bad value is ignored with a message)."""
    restore_from_url({PROJECTOR: Param(PROJECTOR, flag, lambda v: "1" if v else "0")}, where=st.sidebar)
    st.sidebar.toggle("Projector mode", key=PROJECTOR, help="Large fonts, thick lines, no chart toolbar: for classroom projection.")
    if projector_on():
        st.markdown(_CSS, unsafe_allow_html=True)
        st.query_params[PROJECTOR] = "1"
    elif PROJECTOR in st.query_params:
        del st.query_params[PROJECTOR]
