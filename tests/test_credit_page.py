"""The Credit assignment page under streamlit.testing.v1.AppTest: every number is the library's, edits move
them, bad input shows a message next to the controls, the family filter filters."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab.credit import MECHANISMS, guiding_example, run, step_credit

PAGE = Path(__file__).resolve().parent.parent / "pages" / "credit.py"


def load() -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=60).run()
    clean(at)
    return at


def clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Traceback" in (e.value or "") for e in at.error)


def table(at: AppTest):
    return at.dataframe[0].value


def row(at: AppTest, key: str) -> list[float]:
    df = table(at)
    r = df[df["mechanism"] == MECHANISMS[key].name].iloc[0]
    return [float(r[c]) for c in df.columns if c.startswith("step ")]


def expected(key: str, **edits) -> list[float]:
    group, ev = guiding_example(**edits)
    return [round(x, 4) for x in step_credit(run(key, group, ev).credit[0], group[0])]


def test_defaults_are_the_guiding_example_and_library_values():
    at = load()
    assert not at.error
    cols = list(table(at).columns)
    assert "step 3 ✗" in cols  # the error step is marked
    for key in at.multiselect(key="cr_mechs").value:
        assert row(at, key) == pytest.approx(expected(key), abs=1e-9), key
    u = row(at, "outcome")
    assert u[2] > 0 and u[2] == u[0]  # uniform outcome credit reinforces the wrong step
    assert row(at, "process_labels")[2] < 0
    assert len(at.get("plotly_chart")) == 2  # the aligned heatmap and the whole-group heatmap
    text = " ".join(m.value for m in at.markdown)
    for key in at.multiselect(key="cr_mechs").value:
        m = MECHANISMS[key]
        assert m.cannot_tell in text and m.conserves in text
    assert "credit_quiz?paper=scar" in text and "credit_quiz?paper=math_shepherd" in text


def test_edits_change_numbers_to_the_library_values():
    at = load()
    at.multiselect(key="cr_mechs").set_value(["outcome", "mgepo", "potential_shaping", "t2spo", "carm"]).run()
    at.checkbox(key="cr_ok2").check().run()
    at.number_input(key="cr_ent2").set_value(0.2).run()
    at.text_input(key="cr_peers").set_value("1, 1, 0").run()
    at.checkbox(key="cr_timeout").check().run()
    clean(at)
    assert not at.error
    edits = dict(step_correct=[True, True, True, True], step_entropy=[0.3, 0.4, 0.2, 0.9], peer_outcomes=[1, 1, 0], terminal=False)
    for key in ("outcome", "mgepo", "potential_shaping", "t2spo", "carm"):
        assert row(at, key) == pytest.approx(expected(key, **edits), abs=1e-9), key
    assert "step 3" in table(at).columns  # no longer marked wrong
    at.number_input(key="cr_outcome").set_value(0.0).run()
    assert row(at, "outcome") == pytest.approx(expected("outcome", **{**edits, "outcome": 0.0}), abs=1e-9)
    assert row(at, "outcome")[0] < 0


@pytest.mark.parametrize("peers, needle", [("1, x, 0", "peer outcomes"), ("1, 0", "3 numbers"), ("", "peer outcomes")])
def test_bad_peer_input_shows_message(peers, needle):
    at = load()
    at.text_input(key="cr_peers").set_value(peers).run()
    clean(at)
    assert any(needle in e.value for e in at.error), [e.value for e in at.error]
    assert not at.dataframe  # nothing computed from bad input
    at.text_input(key="cr_peers").set_value("0, 0, 1").run()
    assert not at.error and at.dataframe


def test_negative_entropy_shows_message():
    at = load()
    at.number_input(key="cr_ent1").set_value(-0.5).run()
    clean(at)
    assert any("step_entropy[1]" in e.value for e in at.error)


def test_family_filter_limits_the_choices():
    at = load()
    at.multiselect(key="cr_families").set_value(["masks"]).run()
    clean(at)
    opts = at.multiselect(key="cr_mechs").options
    names = {MECHANISMS[k].name for k in MECHANISMS if MECHANISMS[k].family == "masks"}
    assert set(opts) == names
    assert {MECHANISMS[k].family for k in at.multiselect(key="cr_mechs").value} <= {"masks"}
    at.multiselect(key="cr_mechs").set_value(["mart", "carm", "taco"]).run()
    assert list(table(at)["mechanism"]) == [MECHANISMS[k].name for k in ("mart", "carm", "taco")]
    at.multiselect(key="cr_families").set_value([]).run()
    clean(at)
    assert not at.dataframe and any("Pick at least one" in i.value for i in at.info)


def test_every_mechanism_renders_on_the_page():
    at = load()
    at.multiselect(key="cr_mechs").set_value(list(MECHANISMS)).run()
    clean(at)
    assert not at.error
    assert len(table(at)) == len(MECHANISMS)
    for key in MECHANISMS:
        assert row(at, key) == pytest.approx(expected(key), abs=1e-9), key


def test_reset_button_restores_the_guiding_example():
    at = load()
    at.checkbox(key="cr_ok2").check().run()
    at.button(key="cr_reset").click().run()
    assert at.checkbox(key="cr_ok2").value is False
    assert "step 3 ✗" in table(at).columns


def test_group_heatmap_shows_the_library_credit_of_every_response():
    import json

    at = load()
    at.multiselect(key="cr_mechs").set_value(["tag", "pava"]).run()
    at.selectbox(key="cr_focus").set_value("pava").run()
    clean(at)
    spec = json.loads(at.get("plotly_chart")[1].proto.spec)
    z = spec["data"][0]["z"]
    group, ev = guiding_example()
    want = run("pava", group, ev)
    for i, t in enumerate(group):
        assert z[i][: t.n_tokens] == pytest.approx(want.credit[i, : t.n_tokens].tolist(), abs=1e-12)
        assert all(v is None for v in z[i][t.n_tokens:])  # padding is blank, not 0
