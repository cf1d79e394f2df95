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


@pytest.mark.parametrize("choice", [0, 1])
def test_prediction_then_reveal_shows_lab_computed_answer(choice):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.radio[0].set_value(at.radio[0].options[choice])
    at.button[0].click().run()
    clean(at)
    e = proxy.synthetic_experiment()
    bon = proxy.best_of_n_curve(e.proxy, e.gold, [16, 256])
    helps = bon.gold[1] > bon.gold[0]
    shown = (at.success or at.warning)[0].value
    assert f"{bon.gold[0]:.3f}" in shown and f"{bon.gold[1]:.3f}" in shown
    assert (len(at.success) == 1) == ((choice == 0) == helps)


def test_reveal_without_a_prediction_asks_for_one():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.button[0].click().run()
    clean(at)
    assert any("Pick an answer" in i.value for i in at.info)
