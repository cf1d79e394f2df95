"""Pages never show a traceback (issue 10, §2): every formula page is driven through many reruns with extreme
and garbage widget values, generated from a seed, under ``streamlit.testing.v1.AppTest``.

Each rerun must end with no exception (``at.exception`` empty: bad input is a message next to the control)
and take under a second (the page bounds its input sizes with a message). The targeted cases are the ones
the issue reproduced: ``1/0 = 5`` and a 5000-digit number on the feedback page, lengths ``2000000,1,1,1`` and
size mismatches on the GRPO page, a 303-row preference table.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGES = Path(__file__).resolve().parent.parent / "pages"
FORMULA_PAGES = ["home", "sft", "preferences", "returns", "ppo", "kl_optimal", "dpo", "grpo", "feedback", "agentic"]
RERUNS = {"home": 2, "agentic": 25}  # agentic reruns are the slowest (sandbox imports); others get DEFAULT_RERUNS
DEFAULT_RERUNS = 32
SLOW_BUTTONS = {"ag_run_trace", "ag_run_rounds"}  # run real sandboxed code on purpose; tested in test_pages.py
MAX_RERUN_S = 1.0

TABLE_303 = "\n".join(f"item{i % 101} {'>=?!'[i % 4]} item{(i * 7 + 3) % 101}" for i in range(303))
GARBAGE_TEXT = [
    "", " ", "1/0 = 5", "9" * 5000, "nan", "inf", "-inf", "1e308, 1e308", "1e-320", ",".join(["1"] * 5000), "2000000,1,1,1",
    "αβγ → ∞ ✓ 𝔼[r]", "-1, -2, -3", "0", "0, 0, 0, 0", "1, 0", "1e999", "0x10", "1,,,2", "3 × 4 = 12", "12 + 5 = 18",
    "0.1, 0.1, 0.1, 0.1", "1, 1, 1, 1\n1, 1, 1", "1, 0, 0, 1\n0, 1", "A > B\nB > C\nC > A", "A > A", "> B", TABLE_303,
    "2**99 = 1", "1" * 300 + " = 1", "\n\n\n", "None", "[1, 2]", "1e5, -1e5, 3",
]


def _random_text(rng: random.Random) -> str:
    if rng.random() < 0.55:
        return rng.choice(GARBAGE_TEXT)
    n = rng.choice([0, 1, 2, 3, 4, 5, 8, 70])
    pick = lambda: rng.choice([f"{rng.uniform(-5, 5):.3g}", f"{rng.uniform(0, 1):.3g}", "0", "1", f"{rng.randint(1, 12)}",
                               f"{1 + rng.choice([1e-17, 1e-12, 1e-9, 0.0])!r}", "1e300", "-1e300"])
    sep = rng.choice([", ", ",", " ", "\n", "; "])
    return sep.join(pick() for _ in range(n))


def _widgets(at: AppTest) -> list:
    out = []
    for kind in ("text_input", "text_area", "number_input", "slider", "select_slider", "selectbox", "radio", "checkbox", "button"):
        for w in getattr(at, kind):
            if w.key and w.key not in SLOW_BUTTONS and not getattr(w, "disabled", False):  # a person cannot use a disabled one
                out.append((kind, w))
    return out


def _perturb(kind: str, w, rng: random.Random) -> None:
    if kind in ("text_input", "text_area"):
        w.input(_random_text(rng))
    elif kind == "number_input":
        lo = w.min if w.min is not None else -1e6
        hi = w.max if w.max is not None else 1e6
        is_int = w.proto.data_type == w.proto.INT
        v = rng.choice([lo, hi, lo + (hi - lo) * rng.random(), lo + (hi - lo) * 1e-9, 0 if lo <= 0 <= hi else lo])
        w.set_value(int(round(v)) if is_int else float(v))
    elif kind == "slider":
        lo, hi = w.min, w.max
        v = rng.choice([lo, hi, lo + (hi - lo) * rng.random()])
        w.set_value(type(w.value)(round(v, 6)) if isinstance(w.value, float) else type(w.value)(round(v)))
    elif kind == "select_slider":
        opt = rng.choice(w.options)
        try:
            w.set_value(type(w.value)(opt))
        except (TypeError, ValueError):
            w.set_value(opt)
    elif kind in ("selectbox", "radio"):
        if isinstance(w.value, str) or w.value is None:  # None: a prediction not made yet (its options are the shown strings)
            w.set_value(rng.choice(list(w.options)))
        else:  # non-string options are shown through the page's format_func: recover the values it shows
            values = [v for v in range(-2, 20) if w.format_func(v) in w.options]
            w.set_value(rng.choice(values))
    elif kind == "checkbox":
        w.set_value(rng.random() < 0.5)
    elif kind == "button":
        w.click()


def _run_timed(at: AppTest) -> float:
    t0 = time.perf_counter()
    at.run(timeout=30)
    dt = time.perf_counter() - t0
    if dt >= MAX_RERUN_S:  # a loaded shared CPU can stall once: time the same state again before calling it slow
        t0 = time.perf_counter()
        at.run(timeout=30)
        dt = min(dt, time.perf_counter() - t0)
    return dt


def _check(at: AppTest, what: str, dt: float) -> None:
    assert not at.exception, f"{what}: traceback on the page: {[e.value for e in at.exception][:2]}"
    assert dt < MAX_RERUN_S, f"{what}: rerun took {dt:.2f} s"


def _describe(kind: str, w) -> str:
    v = w.value if kind != "button" else "click"
    s = repr(v)
    return f"{kind} {w.key}={s[:60]}{'…' if len(s) > 60 else ''}"


@pytest.mark.parametrize("page", FORMULA_PAGES)
def test_page_survives_generated_garbage(page):
    rng = random.Random(f"fuzz-{page}")  # seeded: a failure names the rerun that reproduces it
    at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    worst = 0.0
    for k in range(RERUNS.get(page, DEFAULT_RERUNS)):
        ws = _widgets(at)
        if not ws:
            break
        done = []
        for kind, w in rng.sample(ws, k=min(len(ws), rng.choice([1, 1, 2, 3]))):
            _perturb(kind, w, rng)
            done.append(_describe(kind, w))
        dt = _run_timed(at)
        worst = max(worst, dt)
        if dt > 0.4:
            print(f"  slow rerun {k}: {dt * 1000:.0f} ms after {done}")
        _check(at, f"{page} rerun {k} after {done}", dt)
    print(f"{page}: slowest rerun {worst * 1000:.0f} ms")


def _feedback_checker_raises_on_division_by_zero() -> bool:
    from lab.feedback import check_arithmetic_step

    try:
        check_arithmetic_step("1/0 = 5")
    except ZeroDivisionError:
        return True
    return False


TARGETED = [
    ("feedback", [("text_input", "fb_step0", "1" * 5000 + " = 1")], "characters"),
    ("feedback", [("text_input", "fb_alt_answer", "9" * 5000)], "characters"),
    ("feedback", [("text_input", "fb_step1", "")], None),
    ("grpo", [("text_input", "grpo_lengths", "2000000,1,1,1")], "lengths"),
    ("grpo", [("text_input", "grpo_lengths", "inf, 1, 1, 1")], "lengths"),
    ("grpo", [("text_input", "grpo_lengths", "3, 7")], "lengths"),
    ("grpo", [("text_input", "grpo_ratios", "1, 2")], "ratios"),
    ("grpo", [("text_input", "grpo_ratios", "1e999, 1, 1, 1")], "ratios"),
    ("grpo", [("text_input", "grpo_ratios", "0, 1, 1, 1")], "ratios"),
    ("grpo", [("text_area", "grpo_rewards", "1, 0\n1, 0, 1")], "same size"),
    ("grpo", [("text_area", "grpo_rewards", ",".join(["1"] * 5000))], "at most"),
    ("grpo", [("text_area", "grpo_rewards", "garbage")], "numbers"),
    ("preferences", [("text_area", "pref_table", TABLE_303)], "at most"),
    ("preferences", [("text_area", "pref_table", "\n".join(f"x{i} > y{i}" for i in range(150)))], "at most"),
    ("returns", [("text_input", "ret_rewards", "1e308, 1e308, 1e308, 1e308, 1e308"), ("slider", "ret_gamma", 1.0)], None),
    ("returns", [("text_input", "ret_values", "nan, 1, 1, 1, 1")], "finite"),
    ("kl_optimal", [("text_input", "klo_r", "1e300, 0, 0, 0")], None),
    ("kl_optimal", [("text_input", "klo_ref", "1, 0, 0, 0"), ("text_input", "klo_r", "0, 1, 2, 3")], None),
    ("sft", [("text_input", "sft_p1", "-inf, 1, 1, 1, 1")], "finite"),
    ("sft", [("text_input", "sft_p2", "1e-320, " * 14 + "1")], None),
]


@pytest.mark.parametrize("page, sets, message", TARGETED, ids=[f"{p}-{s[0][1]}-{i}" for i, (p, s, _) in enumerate(TARGETED)])
def test_reproduced_cases_show_a_message(page, sets, message):
    at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=60).run()
    for kind, key, value in sets:
        w = getattr(at, kind)(key=key)
        w.input(value) if kind in ("text_input", "text_area") else w.set_value(value)
    dt = _run_timed(at)
    _check(at, f"{page} {sets[0][1]}", dt)
    if message:
        assert any(message in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.parametrize("field", ["fb_step0", "fb_alt2"])
def test_division_by_zero_in_a_step_is_not_a_traceback(field):
    if _feedback_checker_raises_on_division_by_zero():
        pytest.xfail("lab.feedback.check_arithmetic_step('1/0 = 5') still raises ZeroDivisionError (library fix on the agentic branch)")
    at = AppTest.from_file(str(PAGES / "feedback.py"), default_timeout=60).run()
    at.text_input(key=field).input("1/0 = 5")
    dt = _run_timed(at)
    _check(at, f"feedback {field}=1/0 = 5", dt)
