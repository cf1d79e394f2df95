"""What a person sees in Chromium when small runs exist: Compare evaluates two run checkpoints and fills the claim;
Proxies draws the measured proxy/gold curve and best-of-N with the learned proxy. The real server, headless Chromium."""

import os
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.test_browser import _require_browser, _wait_rendered, start_browser, start_server, stop_server
from tests.test_eval_pages_runs import make_runs

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    _require_browser()
    runs = make_runs(tmp_path_factory.mktemp("runs"))
    url, proc = start_server(env={"LAB_RUNS_DIR": str(runs)})
    drv = start_browser()
    yield url, drv
    drv.quit()
    stop_server(proc)


def _body_contains(drv, text: str, timeout: float = 120) -> str:
    from selenium.webdriver.common.by import By

    end = time.time() + timeout
    body = ""
    while time.time() < end:
        body = drv.find_element(By.TAG_NAME, "body").text
        if text in body:
            return body
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never appeared; the page shows: {body[-1500:]!r}")


def _no_exception(drv) -> None:
    from selenium.webdriver.common.by import By

    assert "Traceback" not in drv.page_source
    assert not drv.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')


def test_compare_run_checkpoints_in_chromium(served):
    url, drv = served
    drv.get(f"{url}/compare?source={quote('run checkpoints')}")
    _wait_rendered(drv, timeout=120)
    body = _body_contains(drv, "Checkpoint g · final, compared with g/base · final")
    assert "100 independent cases" in body and "Retention on the addition task" in body
    assert "paired 95% interval" in body and "pass@k with uncertainty" in body
    _no_exception(drv)
    if os.environ.get("LAB_SCREENSHOTS"):
        (Path(os.environ["LAB_SCREENSHOTS"]) / "compare-runs.png").write_bytes(drv.get_screenshot_as_png())


def test_proxies_measured_curves_in_chromium(served):
    from selenium.webdriver.common.by import By

    url, drv = served
    drv.get(f"{url}/proxies")
    _wait_rendered(drv, timeout=120)
    body = _body_contains(drv, "samples each drawn once")
    assert "hacked" in body and "gold accuracy, last eval" in body
    titles = drv.execute_script("""
        return Array.from(document.querySelectorAll('.js-plotly-plot')).map(
            d => String((d.layout && d.layout.title && (d.layout.title.text || d.layout.title)) || '').replace(/<[^>]*>/g, ''));""")
    assert any("hacked: proxy reward (left) and gold accuracy (right)" in t for t in titles), titles
    assert any("Best-of-N against the learned proxy" in t for t in titles), titles
    assert drv.find_elements(By.CSS_SELECTOR, ".js-plotly-plot")
    _no_exception(drv)
    if os.environ.get("LAB_SCREENSHOTS"):
        drv.execute_script("document.querySelector('[data-testid=\"stMain\"]') && window.scrollTo(0, 0);")
        el = next(e for e in drv.find_elements(By.CSS_SELECTOR, ".js-plotly-plot") if "learned proxy" in e.text)
        drv.execute_script("arguments[0].scrollIntoView();", el)
        time.sleep(1.0)
        (Path(os.environ["LAB_SCREENSHOTS"]) / "proxies-runs.png").write_bytes(drv.get_screenshot_as_png())
