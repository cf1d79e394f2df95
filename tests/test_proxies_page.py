"""The "Proxies and over-optimization" page under AppTest: numbers from lab.proxy, the prediction, bad input."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab import proxy

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "proxies.py")


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def test_defaults_show_lab_values_and_a_peak():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    clean(at)
    e = proxy.synthetic_experiment()
    here = e.at(1.0)
    assert metric(at, "gold score") == f"{here.gold[0]:.3f}"
    assert metric(at, "proxy score") == f"{here.proxy[0]:.3f}"
    assert metric(at, "gold peaks at √KL") == f"{e.curve.d[e.curve.peak_index]:.3f}"
    assert metric(at, "proxy margin per unit of feature") == f"{proxy.paired_length_drift(e.proxy, e.feature).slope:+.3f}"


def test_changing_strength_and_bias_changes_numbers():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    before = metric(at, "gold score")
    at.select_slider(key="px_strength").set_value(20.0).run()
    clean(at)
    assert metric(at, "gold score") == f"{proxy.synthetic_experiment().at(20.0).gold[0]:.3f}"
    assert metric(at, "gold score") != before
    at.slider(key="px_bias").set_value(-0.5).run()  # proxy == gold: nothing to exploit
    clean(at)
    assert metric(at, "proxy score") == metric(at, "gold score")


@pytest.mark.parametrize("choice", ["yes", "no"])
def test_prediction_then_reveal_shows_lab_computed_answer(choice):
    """The best-of-N question lives in lab.quiz.proxies; its answer is computed by lab.proxy from the stated inputs."""
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.radio(key="predict_proxies-bon-gold_guess").set_value(choice).run()
    at.button(key="predict_proxies-bon-gold_commit").click().run()
    clean(at)
    e = proxy.synthetic_experiment()
    bon = proxy.best_of_n_curve(e.proxy, e.gold, [16, 256])
    want = "yes" if bon.gold[1] > bon.gold[0] else "no"
    shown = [m.value for m in at.success] + [m.value for m in at.warning]
    assert any(f"lab computes **{want}**" in v for v in shown), shown
    assert any("Right" in m.value for m in at.success) == (choice == want)


def test_nothing_is_revealed_before_a_prediction():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert at.button(key="predict_proxies-bon-gold_commit").disabled
    assert not any("lab computes" in m.value for m in list(at.success) + list(at.warning))
