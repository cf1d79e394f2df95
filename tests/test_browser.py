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
# "dpo" first: the first request to a fresh server is a deep link, which must still get app.py's navigation
PAGES = ["dpo", "", "sft", "preferences", "returns", "ppo", "kl_optimal", "grpo", "feedback", "agentic", "smallrun", "proxies", "compare", "reference_index", "credit_quiz", "dynamics",
         "credit", "check_yourself",
         "recipes"]
NO_CHART = {"smallrun", "reference_index", "credit_quiz", "check_yourself"}
RUNS_DIR: Path | None = None  # where the served app keeps its runs (a temporary folder)
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


def start_server(script: str | Path = "app.py", env: dict | None = None) -> tuple[str, subprocess.Popen]:
    """A real Streamlit server for ``script`` on a free localhost port (``env`` added to this environment); returns
    ``(url, process)`` once it answers its health check, or fails the test with the server's output."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script), "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.headless", "true", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            if urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                return url, proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    pytest.fail("streamlit server did not start: " + proc.stdout.read().decode()[-2000:])


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=20)


def start_browser(window: str = "1400,1800"):
    """Headless Chromium driven through the local chromedriver (never fetched)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", f"--window-size={window}"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    drv.set_page_load_timeout(60)
    return drv


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    _require_browser()
    runs = tmp_path_factory.mktemp("runs")
    global RUNS_DIR
    RUNS_DIR = runs
    url, proc = start_server(env={"LAB_RUNS_DIR": str(runs)})
    yield url
    stop_server(proc)


@pytest.fixture(scope="module")
def browser(server):
    drv = start_browser()
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
    nav = browser.find_element(By.CSS_SELECTOR, '[data-testid="stSidebar"]').text
    assert "SFT and loss masks" in nav and "Small runs" in nav, f"grouped navigation missing: {nav[:200]!r}"
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
    # a formula page draws at least one plotly chart (smallrun draws once a run starts; the index and quiz are text)
    if page and page not in NO_CHART:
        assert browser.find_elements(By.CSS_SELECTOR, ".js-plotly-plot, .stPlotlyChart, [data-testid='stPlotlyChart']")


def _loss_points(drv) -> int:
    return drv.execute_script("""
        for (const d of document.querySelectorAll('.js-plotly-plot')) {
            const t = String((d.layout && d.layout.title && (d.layout.title.text || d.layout.title)) || '').replace(/<[^>]*>/g, '');
            // plotly decodes the (base64, typed-array) figure data into _fullData
            const full = d._fullData && d._fullData[0];
            if (t === 'loss' && full && full.x) return full.x.length;
        }
        return 0;""")


@pytest.fixture
def stop_runs_after():
    """A failed check leaves no 5000-step worker training on the shared machine (training has its own process)."""
    yield
    from lab.smallrun.live import request_stop

    for d in Path(RUNS_DIR).iterdir():
        request_stop(d)


def test_smallrun_start_chart_grows_stop(browser, server, stop_runs_after):
    from selenium.webdriver.common.by import By

    from selenium.webdriver.common.keys import Keys

    browser.get(f"{server}/smallrun")
    _wait_rendered(browser)
    # a long run (5000 GRPO steps), so it is still training when Stop is clicked even on a slow, loaded machine
    steps = next(e for e in browser.find_elements(By.CSS_SELECTOR, "input") if (e.get_attribute("aria-label") or "").startswith("steps"))
    steps.send_keys(Keys.CONTROL, "a")
    steps.send_keys("5000", Keys.TAB)
    time.sleep(1.0)
    _wait_rendered(browser)
    buttons = {b.text.strip(): b for b in browser.find_elements(By.CSS_SELECTOR, "button")}
    start = next(b for t, b in buttons.items() if "Start" in t)
    start.click()
    end, first = time.time() + 120, 0
    while time.time() < end and not first:
        time.sleep(1.0)
        first = _loss_points(browser)
    assert first > 0, "the loss chart never appeared"
    end, later = time.time() + 60, first
    while time.time() < end and later <= first:
        time.sleep(1.0)
        later = _loss_points(browser)
    assert later > first, "the loss chart did not gain points"
    stop = next(b for b in browser.find_elements(By.CSS_SELECTOR, "button") if "Stop" in b.text)
    stop.click()
    end = time.time() + 120
    while time.time() < end and "state: stopped" not in browser.find_element(By.TAG_NAME, "body").text:
        time.sleep(0.5)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "state: stopped" in body, body[-1500:]
    assert list(Path(RUNS_DIR).glob("*/checkpoints/step-*")), "Stop left no checkpoint"
    assert "Traceback" not in browser.page_source
    out = Path(os.environ.get("LAB_SCREENSHOTS", "/tmp"))
    if os.environ.get("LAB_SCREENSHOTS"):
        (out / "smallrun-live.png").write_bytes(browser.get_screenshot_as_png())


def test_smallrun_bad_upload_is_refused(browser, server, tmp_path):
    from selenium.webdriver.common.by import By

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "rev ab=", "answer": "ba"}\n{"prompt": 3}\nnope\n')
    browser.get(f"{server}/smallrun")
    _wait_rendered(browser)
    browser.find_element(By.XPATH, "//*[contains(text(), 'More: evaluation')]").click()
    time.sleep(0.5)
    browser.find_element(By.CSS_SELECTOR, "input[type=file]").send_keys(str(bad))
    end = time.time() + 30
    while time.time() < end and "bad line" not in browser.find_element(By.TAG_NAME, "body").text:
        time.sleep(0.5)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "bad line" in body and "line 2" in body and "line 3" in body
    start = next(b for b in browser.find_elements(By.CSS_SELECTOR, "button") if "Start" in b.text)
    assert not start.is_enabled()


def test_compare_page_uploads_a_csv(browser, server, tmp_path):
    """What a person does: pick "upload CSV", choose a file, read the paired interval; a bad cell is a message."""
    from selenium.webdriver.common.by import By

    from lab import evaluation as ev

    good = tmp_path / "scores.csv"
    good.write_text("baseline,candidate\n" + "".join(f"{i % 2},{(i % 3 > 0):d}\n" for i in range(30)))
    table = ev.read_score_table(good.read_text())
    want = ev.paired_bootstrap(table["baseline"], table["candidate"])
    browser.get(f"{server}/compare")
    _wait_rendered(browser)
    next(lab for lab in browser.find_elements(By.CSS_SELECTOR, "label") if lab.text.strip() == "upload CSV").click()
    for _ in range(60):
        inputs = browser.find_elements(By.CSS_SELECTOR, "input[type=file]")
        if inputs:
            break
        time.sleep(0.3)
    inputs[0].send_keys(str(good))
    expected = f"{want.mean_difference:+.3f}"
    for _ in range(60):
        if expected in browser.find_element(By.TAG_NAME, "body").text and "[" in browser.page_source:
            break
        time.sleep(0.5)
    body = browser.find_element(By.TAG_NAME, "body").text
    assert expected in body and f"[{want.low:+.3f}, {want.high:+.3f}]" in body
    assert "Traceback" not in browser.page_source
