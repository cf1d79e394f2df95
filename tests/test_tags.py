"""docs/TAGS.md is generated from the code and never stale; the index finds functions, pages and notebooks."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from lab import tags

ROOT = Path(__file__).resolve().parent.parent


def test_docs_tags_is_fresh():
    assert tags.main(["--check"]) == 0, "docs/TAGS.md is stale: run `python -m lab.tags --write`"


def test_index_links_a_known_definition_to_code_pages_and_notebooks():
    entry = next(e for e in tags.build_index() if e.tag == "ftip-002R")
    assert entry.kind == "Definition" and entry.name
    assert any("lab.preference.reward_model_loss" in f and "lab/preference.py:" in f for f in entry.functions)
    assert "pages/preferences.py" in entry.pages and any("02_preferences" in n for n in entry.notebooks)
    # every file:line points at the function it names
    for e in tags.build_index():
        for f in e.functions:
            name = f.split("`")[1].rsplit(".", 1)[1]
            path, line = f.rsplit("(", 1)[1].rstrip(")").split(":")
            src = (ROOT / path).read_text().splitlines()[int(line) - 1]
            assert f"def {name}" in src or f"class {name}" in src, f


def test_every_tag_the_project_cites_is_in_the_index_with_a_name():
    entries = {e.tag: e for e in tags.build_index()}
    known = tags.known_tags()
    for e in entries.values():
        if e.tag in known:
            assert e.name and e.kind


def test_reference_index_page_filters():
    at = AppTest.from_file(str(ROOT / "pages" / "reference_index.py"), default_timeout=60).run()
    assert not at.exception
    at.text_input(key="tags_filter").set_value("004D").run()
    assert not at.exception
    assert any("ftip-004D" in md.value for md in at.markdown)
    at.text_input(key="tags_filter").set_value("no such thing ((").run()
    assert not at.exception and any("No tag matches" in i.value for i in at.info)
