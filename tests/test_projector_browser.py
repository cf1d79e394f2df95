"""Projector mode at classroom size (issue 13): in headless Chromium with a 1280×720 viewport, ``?projector=1``
shows the main control and the main chart of the PPO and DPO pages without scrolling.

Uses the server fixture of tests/test_browser.py (the real ``streamlit run app.py``); its own browser has the
projector's viewport (window 1280×720, and the viewport pinned to exactly 1280×720 CSS pixels).
"""

import os
from pathlib import Path

import pytest

from tests.test_browser import CHROMIUM, DRIVER, _wait_rendered, server  # noqa: F401  (server is a fixture)

pytestmark = pytest.mark.browser
WIDTH, HEIGHT = 1280, 720
MAIN = {"ppo": "ratio ρ", "dpo": "β"}  # the label the page's main slider starts with


@pytest.fixture(scope="module")
def projector_browser(server):  # noqa: F811
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", f"--window-size={WIDTH},{HEIGHT}"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    # the window size includes the browser's own frame: pin the page's viewport to the projector's 1280×720
    drv.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


@pytest.mark.parametrize("page", ["ppo", "dpo"])
def test_main_control_and_chart_fit_the_projector_screen(projector_browser, server, page, tmp_path):  # noqa: F811
    import time

    from selenium.webdriver.common.by import By

    drv = projector_browser
    drv.get(f"{server}/{page}?projector=1")
    _wait_rendered(drv)
    assert drv.execute_script("return [window.innerWidth, window.innerHeight]") == [WIDTH, HEIGHT]
    end = time.time() + 30
    while time.time() < end and not drv.find_elements(By.CSS_SELECTOR, ".stPlotlyChart .js-plotly-plot"):
        time.sleep(0.3)
    time.sleep(1.0)  # let plotly lay out
    out = Path(os.environ.get("LAB_SCREENSHOTS", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"projector-{page}.png").write_bytes(drv.get_screenshot_as_png())
    assert drv.execute_script("return window.scrollY") == 0
    chart = drv.find_elements(By.CSS_SELECTOR, ".stPlotlyChart")[0]  # the page's main chart comes first
    box = chart.rect
    assert box["height"] > 200, box
    assert box["y"] + box["height"] <= HEIGHT, f"main chart ends at {box['y'] + box['height']:.0f} px > {HEIGHT}"
    slider = next(s for s in drv.find_elements(By.CSS_SELECTOR, '[data-testid="stSlider"]') if s.text.startswith(MAIN[page]))
    assert slider.is_displayed()
    sb = slider.rect
    assert 0 <= sb["y"] and sb["y"] + sb["height"] <= HEIGHT, sb
    assert "Traceback" not in drv.page_source
