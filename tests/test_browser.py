"""Browser smoke test: the real server, every page in headless Chromium, a screenshot each.

Fails when a page does not render, shows a Streamlit exception or a traceback, or screenshots blank.
Chromium is installed by `./lab.sh test` (Debian's chromium + chromium-driver) when missing and possible;
without it the test is skipped locally but fails under CI=true.
"""

import io
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["", "sft", "preferences", "returns", "ppo", "kl_optimal", "dpo", "grpo", "feedback", "agentic"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.browser


def _require_browser():
    if CHROMIUM and DRIVER:
        return
    msg = "headless Chromium and chromedriver are needed (apt-get install chromium chromium-driver)"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="module")
def server():
    _require_browser()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.headless", "true", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            if urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit server did not start: " + proc.stdout.read().decode()[-2000:])
    yield url
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser(server):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", "--window-size=1400,1800"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


def _wait_rendered(drv, timeout=60):
    from selenium.webdriver.common.by import By

    end = time.time() + timeout
    while time.time() < end:
        h1 = drv.find_elements(By.CSS_SELECTOR, "h1")
        running = drv.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]')
        if h1 and not running:
            time.sleep(1.0)  # let plotly draw
            if not drv.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'):
                return
        time.sleep(0.3)
    raise AssertionError("page did not finish rendering")


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_in_chromium(browser, server, page, tmp_path):
    from PIL import Image
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/{page}")
    _wait_rendered(browser)
    src = browser.page_source
    assert "Traceback" not in src
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')
    png = browser.get_screenshot_as_png()
    out = Path(os.environ.get("LAB_SCREENSHOTS", tmp_path))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{page or 'home'}.png").write_bytes(png)
    img = Image.open(io.BytesIO(png)).convert("L")
    lo, hi = img.getextrema()
    assert hi - lo > 50, "screenshot is blank"
    colours = len(set(img.resize((200, 260)).getdata()))
    assert colours > 20, f"screenshot has too little content ({colours} grey levels)"
    if page:  # a formula page draws at least one plotly chart
        assert browser.find_elements(By.CSS_SELECTOR, ".js-plotly-plot, .stPlotlyChart, [data-testid='stPlotlyChart']")
