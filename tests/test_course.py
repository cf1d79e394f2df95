"""lab.course: the course order, prerequisites and files are consistent; the home page draws the map."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab import course

ROOT = Path(__file__).resolve().parent.parent


def test_chapters_point_at_real_files_and_earlier_prerequisites():
    seen = set()
    for c in course.CHAPTERS:
        assert (ROOT / c.page).exists(), c.page
        assert c.notebook is None or (ROOT / c.notebook).exists(), c.notebook
        assert c.page == f"pages/{c.key}.py"
        assert set(c.prerequisites) <= seen, f"{c.key} needs a chapter that comes later"
        assert c.questions and c.minutes > 0
        seen.add(c.key)
    assert len(seen) == len(course.CHAPTERS)


def test_kl_comes_before_ppo_and_neighbours():
    keys = [c.key for c in course.CHAPTERS]
    assert keys.index("kl_optimal") < keys.index("ppo")
    prev, nxt = course.neighbours("ppo")
    assert prev.key == "kl_optimal" and nxt.key == keys[keys.index("ppo") + 1]
    assert course.neighbours(keys[0])[0] is None and course.neighbours(keys[-1])[1] is None
    with pytest.raises(ValueError, match="key"):
        course.neighbours("nope")
    assert course.duration_text().endswith("min")


def test_home_shows_the_course_map_in_order():
    at = AppTest.from_file(str(ROOT / "pages" / "home.py"), default_timeout=120).run()
    assert not at.exception
    text = "\n".join(m.value for m in at.markdown)
    positions = [text.index(f"[{c.title}](/{c.key})") for c in course.CHAPTERS]
    assert positions == sorted(positions)
    assert course.duration_text() in text


def test_streamlit_config_hides_deploy_and_binds_localhost():
    import tomllib

    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["client"]["toolbarMode"] == "viewer"  # no Deploy button or developer menu
    assert cfg["server"]["address"] == "127.0.0.1"


def test_sidebar_lists_the_chapters_in_course_order():
    import re

    order = re.findall(r'st\.Page\("pages/(\w+)\.py"', (ROOT / "app.py").read_text())
    chapters = [c.key for c in course.CHAPTERS]
    assert [k for k in order if k in chapters] == chapters
