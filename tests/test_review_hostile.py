"""Hostile links, as a reviewer met them: text echoed from a URL or a field is never rendered as a markdown link,
an image or HTML, and an over-long parameter gets a readable message (AppTest on the real pages)."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from labui.share import plain, text

PAGES = Path(__file__).resolve().parent.parent / "pages"
LINK = "[x](javascript:alert(1))"
IMAGE = "![t](http://example.invalid/t.png)"


def run(page: str, query: dict) -> AppTest:
    at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=90)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def messages(at: AppTest) -> list[str]:
    return [m.value for m in list(at.error) + list(at.warning)]


def test_plain_defuses_links_images_and_html_but_keeps_ordinary_text():
    assert "](" not in plain(LINK) and "](" not in plain(IMAGE)
    assert plain("<script>") == "\\<script>"
    assert plain("must lie in (0, 1]; step_entropy[1] = 3") == "must lie in (0, 1]; step_entropy[1] = 3"


@pytest.mark.parametrize("page,query", [
    ("credit", {"families": LINK}),  # a link parameter's parser echoes the raw value
    ("preferences", {"comparisons": LINK + "\nA > B"}),  # a library ValueError echoes the field
    ("credit_quiz", {"paper": IMAGE, "family": LINK}),  # the page's own warning
    ("recipes", {"presets": LINK}),
    ("dynamics", {"policy": IMAGE}),
])
def test_echoed_hostile_text_is_not_markdown(page, query):
    at = run(page, query)
    shown = messages(at)
    assert shown, "a hostile parameter must get a message"
    for m in shown:
        assert "](" not in m, m


def test_overlong_text_parameter_message_reads():
    with pytest.raises(ValueError, match="it has 401 characters, more than the 400 allowed"):
        text(400)("9" * 401)
    at = run("grpo", {"rewards": "9" * 10_000})
    assert any("link parameter `rewards` ignored: it has 10000 characters" in w.value for w in at.warning), messages(at)


def test_smallrun_run_name_echo_is_not_markdown(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(str(PAGES / "smallrun.py"), default_timeout=90)
    at.run()
    at.text_input(key="sr_name").set_value(LINK).run()
    assert not at.exception, [e.value for e in at.exception]
    errs = [e.value for e in at.error]
    assert any("run name must be a plain name" in e for e in errs), errs
    assert all("](" not in e for e in errs), errs


def test_agentic_decoded_argument_with_backticks_is_code_not_markdown():
    """A generated argument holding a backtick used to end the inline code span and render what followed as markdown."""
    action = '<action tool="python">print(1)` [x](http://example.invalid) `</action>'
    at = run("agentic", {"action": action})
    shown = [m.value for m in list(at.success) + list(at.caption) + list(at.markdown)]
    assert all("[x](http://example.invalid)" not in m for m in shown), shown
    codes = [c.value for c in at.code]
    assert any("argument = print(1)` [x](http://example.invalid) `" in c for c in codes), codes
    assert any(c.startswith('<action tool="python">') for c in codes), codes
