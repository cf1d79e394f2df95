"""The "Compare checkpoints" page under AppTest: demo data, CSV upload, numbers from lab.evaluation."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from lab import evaluation as ev

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "compare.py")


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_demo_shows_paired_interval_selective_metrics_and_claim():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    d = ev.synthetic_comparison()
    p = ev.paired_bootstrap(d["baseline"], d["candidate"])
    assert metric(at, "mean difference (candidate − baseline)") == f"{p.mean_difference:+.3f}"
    assert metric(at, "paired 95% interval") == f"[{p.low:+.3f}, {p.high:+.3f}]"
    sel = ev.selective_metrics(d["candidate"], ev.abstain_below(d["confidence"], 0.5))
    assert metric(at, "coverage") == f"{sel.coverage:.1%}"
    assert metric(at, "accuracy among answered") == f"{sel.selective_accuracy:.1%}"
    assert any("200 independent cases" in i.value for i in at.info)


def test_cluster_resampling_and_threshold_follow_the_library():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.checkbox(key="cmp_cluster").check().run()
    at.slider(key="cmp_threshold").set_value(0.8).run()
    assert not at.exception
    d = ev.synthetic_comparison()
    p = ev.paired_bootstrap(d["baseline"], d["candidate"], cluster=d["cluster"])
    assert metric(at, "paired 95% interval") == f"[{p.low:+.3f}, {p.high:+.3f}]"
    sel = ev.selective_metrics(d["candidate"], ev.abstain_below(d["confidence"], 0.8))
    assert metric(at, "coverage") == f"{sel.coverage:.1%}"


def test_same_column_twice_gives_zero_difference_not_an_error():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="cmp_b").set_value("baseline").run()
    assert not at.exception
    assert metric(at, "mean difference (candidate − baseline)") == "+0.000"
    assert metric(at, "interval excludes 0") == "no"


def test_upload_mode_without_file_explains_the_format():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.radio(key="cmp_source").set_value("upload CSV").run()
    assert not at.exception
    assert any("Upload a CSV" in i.value for i in at.info)
