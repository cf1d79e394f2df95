"""Projector mode in headless Chromium at 1280×720 (issue 13): on the GRPO page the main control (the rewards box)
and the main chart (group-relative advantages) are both on the first screen, without scrolling."""

import time

import pytest

from tests.test_browser import _wait_rendered, server  # noqa: F401  (server is a fixture)
from tests.test_projector_browser import HEIGHT, WIDTH, projector_browser  # noqa: F401  (one 1280×720 browser fixture)

pytestmark = pytest.mark.browser


def test_grpo_projector_fits_1280x720(projector_browser, server, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By

    drv = projector_browser
    drv.get(f"{server}/grpo?projector=1")
    _wait_rendered(drv)
    end = time.time() + 30
    while time.time() < end and not drv.find_elements(By.CSS_SELECTOR, ".stPlotlyChart .main-svg"):
        time.sleep(0.5)
    drv.save_screenshot(str(tmp_path / "grpo_projector.png"))
    assert drv.execute_script("return [window.innerWidth, window.innerHeight]") == [WIDTH, HEIGHT]
    assert drv.execute_script("return window.scrollY") == 0
    assert not drv.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    chart = drv.find_elements(By.CSS_SELECTOR, ".stPlotlyChart")[0]  # the first chart is the advantage chart
    assert "Group-relative advantages" in chart.text
    assert chart.rect["y"] + chart.rect["height"] <= HEIGHT, chart.rect
    assert chart.rect["y"] >= 0 and chart.rect["width"] > 300
    box = drv.find_element(By.CSS_SELECTOR, "textarea")  # the rewards box, the page's main control
    assert box.is_displayed() and box.rect["y"] + box.rect["height"] <= HEIGHT, box.rect
    assert "1, 0, 0, 1" in box.get_attribute("value")
    # projector mode: the plotly toolbar is hidden
    bars = drv.find_elements(By.CSS_SELECTOR, ".modebar-container")
    assert all(not b.is_displayed() for b in bars)


@pytest.mark.parametrize("page", ["feedback", "agentic", "dynamics", "credit", "proxies", "compare"])
def test_projector_mode_renders_clean(projector_browser, server, page, tmp_path):  # noqa: F811
    """The other six pages of this set in projector mode: rendered, no exception, no traceback, toolbar hidden."""
    from selenium.webdriver.common.by import By

    drv = projector_browser
    drv.get(f"{server}/{page}?projector=1")
    _wait_rendered(drv)
    drv.save_screenshot(str(tmp_path / f"{page}_projector.png"))
    assert not drv.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    assert "Traceback" not in drv.find_element(By.TAG_NAME, "body").text
    assert all(not b.is_displayed() for b in drv.find_elements(By.CSS_SELECTOR, ".modebar-container"))
