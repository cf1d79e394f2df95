"""GRPO training speed with the Small-runs page open in a browser, against the CLI in the same run.

    .venv/bin/python benchmarks/page_training.py [--steps 200] [--base-steps 100] [--reload-every 5] [--rounds 1]

What it does, per round: (1) the CLI, ``python -m lab.smallrun grpo --out ...`` in a subprocess, with the
config the page uses; (2) the page: a Streamlit server on a free port, headless Chromium (``--no-sandbox
--disable-gpu``, selenium with /usr/bin/chromedriver) opens /smallrun, sets steps and base steps, clicks Start and
stays open as a person would: the page's own live refresh (status 2 s, charts 6 s) plus a full reload every ``--reload-every`` seconds
(each reload must find the live run again). Both runs' main-stage GRPO throughput comes from their ledgers:

- ``steps/s``: the engine's own ``steps_per_second`` at the last step (main-stage steps over its wall time,
  evaluations and checkpoints included: what a person waits for);
- ``step-only steps/s``: steps over the summed ``step_time`` (training steps alone).

The last line prints the page's steps/s as a ratio of the CLI's (the mean over rounds); target >= 0.85.
The machine is shared: run it when it is quiet, and read the per-round numbers, not only the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.request import urlopen

ROOT = Path(__file__).resolve().parent.parent
# the page's Start builds RunConfig with these (pages/smallrun.py): the CLI gets the same
PAGE_EVAL_EVERY, PAGE_EVAL_SIZE = 25, 200


def main_stage_speed(run: Path) -> dict:
    recs = [json.loads(ln) for ln in (run / "ledger.jsonl").read_text().splitlines() if ln.strip()]
    steps = [r for r in recs if r.get("type") == "step"]
    if not steps:
        raise RuntimeError(f"{run}: no main-stage steps in the ledger")
    return {"steps": steps[-1]["step"], "steps_per_second": steps[-1]["steps_per_second"],
            "step_only": len(steps) / sum(r["step_time"] for r in steps)}


def cli_run(work: Path, steps: int, base_steps: int, seed: int) -> dict:
    out = work / f"cli-{time.time_ns()}"
    cmd = [sys.executable, "-m", "lab.smallrun", "grpo", "--out", str(out), "--steps", str(steps), "--base-steps", str(base_steps),
           "--eval-every", str(PAGE_EVAL_EVERY), "--eval-size", str(PAGE_EVAL_SIZE), "--save-every", str(max(25, PAGE_EVAL_EVERY)),
           "--seed", str(seed)]
    t0 = time.time()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if r.returncode != 0:
        raise RuntimeError("CLI run failed: " + r.stderr[-2000:])
    return {**main_stage_speed(out), "wall_s": time.time() - t0, "result": r.stdout.strip().splitlines()[-1]}


def tree_cpu(root_pids: list[int]) -> dict[int, float]:
    """CPU seconds (user + system) of each process under ``root_pids``, leaving out training workers."""
    import psutil

    out = {}
    for pid in root_pids:
        try:
            root = psutil.Process(pid)
            procs = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for p in procs:
            try:
                if any("lab.smallrun.worker" in c for c in p.cmdline()):
                    continue
                t = p.cpu_times()
                out[p.pid] = t.user + t.system
            except psutil.NoSuchProcess:
                continue
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def page_run(work: Path, steps: int, base_steps: int, seed: int, reload_every: float, timeout: float) -> dict:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    runs = work / f"page-runs-{time.time_ns()}"
    runs.mkdir()
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1", "--server.port", str(port),
                               "--server.headless", "true", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "LAB_RUNS_DIR": str(runs), "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    browser = None
    try:
        for _ in range(240):
            try:
                if urlopen(url + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("the streamlit server did not start")
        opts = webdriver.ChromeOptions()
        opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1800"):
            opts.add_argument(a)
        browser = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=opts)
        browser.get(f"{url}/smallrun")

        def wait_text(text: str, limit: float = 120) -> None:
            end = time.time() + limit
            while time.time() < end:
                if text in browser.find_element(By.TAG_NAME, "body").text:
                    return
                time.sleep(0.5)
            raise RuntimeError(f"the page never showed {text!r}")

        def set_number(prefix: str, value: int) -> None:
            end = time.time() + 60
            while True:  # the widgets arrive a moment after the page's first text
                el = next((e for e in browser.find_elements(By.CSS_SELECTOR, "input") if (e.get_attribute("aria-label") or "").startswith(prefix)), None)
                if el is not None or time.time() > end:
                    break
                time.sleep(0.5)
            if el is None:
                raise RuntimeError(f"no input labelled {prefix!r}: " + str([e.get_attribute("aria-label") for e in browser.find_elements(By.CSS_SELECTOR, "input")]))
            el.send_keys(Keys.CONTROL, "a")
            el.send_keys(str(value), Keys.TAB)
            time.sleep(1.0)

        wait_text("Start a run")
        set_number("steps", steps)
        browser.find_element(By.XPATH, "//*[contains(text(), 'More: evaluation')]").click()
        time.sleep(0.5)
        set_number("base steps", base_steps)
        set_number("seed", seed)
        name = next(e for e in browser.find_elements(By.CSS_SELECTOR, "input") if (e.get_attribute("aria-label") or "") == "run name")
        name.send_keys(Keys.CONTROL, "a")
        name.send_keys("page", Keys.TAB)
        time.sleep(1.0)
        next(b for b in browser.find_elements(By.CSS_SELECTOR, "button") if "Start" in b.text).click()
        t0 = time.time()
        roots = {"server": [server.pid], "browser": [browser.service.process.pid]}
        cpu0 = {k: tree_cpu(v) for k, v in roots.items()}
        out, reloads, last_reload = runs / "page", 0, time.time()
        while True:
            time.sleep(0.5)
            try:
                st = json.loads((out / "status.json").read_text())
            except (OSError, ValueError):
                st = {}
            if st.get("state") in ("done", "failed", "stopped"):
                break
            if time.time() - t0 > timeout:
                raise RuntimeError(f"the page's run did not finish in {timeout:.0f} s (status {st})")
            if time.time() - last_reload >= reload_every:  # a person reloading: the page must find the live run again
                browser.refresh()
                reloads += 1
                last_reload = time.time()
        cpu1 = {k: tree_cpu(v) for k, v in roots.items()}
        wall = time.time() - t0
        cpu = {k: sum(c - cpu0[k].get(pid, 0.0) for pid, c in cpu1[k].items()) / wall for k in roots}
        if st["state"] != "done":
            raise RuntimeError(f"the page's run ended {st['state']}: {st.get('error')}")
        wait_text("Finished:", 60)
        return {**main_stage_speed(out), "wall_s": wall, "reloads": reloads, "cpu": cpu}
    finally:
        if browser is not None:
            browser.quit()
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="GRPO steps (the default run: 200)")
    ap.add_argument("--base-steps", type=int, default=100, help="base SFT steps before GRPO (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reload-every", type=float, default=5.0, help="seconds between full page reloads")
    ap.add_argument("--rounds", type=int, default=1, help="CLI/page pairs, alternating")
    ap.add_argument("--timeout", type=float, default=1800)
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"GRPO, {a.steps} steps after {a.base_steps} base SFT steps, seed {a.seed}; {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start")
    cli, page = [], []
    with tempfile.TemporaryDirectory(prefix="page-training-") as tmp:
        work = Path(tmp)
        for r in range(a.rounds):
            c = cli_run(work, a.steps, a.base_steps, a.seed)
            cli.append(c)
            print(f"round {r + 1} CLI : {c['steps_per_second']:.2f} steps/s (step-only {c['step_only']:.2f}); {c['wall_s']:.0f} s wall; {c['result']}", flush=True)
            p = page_run(work, a.steps, a.base_steps, a.seed, a.reload_every, a.timeout)
            page.append(p)
            print(f"round {r + 1} page: {p['steps_per_second']:.2f} steps/s (step-only {p['step_only']:.2f}); {p['wall_s']:.0f} s wall; "
                  f"{p['reloads']} reloads, live status every 2 s, charts every 6 s; while training the server used {p['cpu']['server']:.2f} and the "
                  f"browser {p['cpu']['browser']:.2f} CPU-seconds per second", flush=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at end")
    c_mean, p_mean = statistics.mean(x["steps_per_second"] for x in cli), statistics.mean(x["steps_per_second"] for x in page)
    c_step, p_step = statistics.mean(x["step_only"] for x in cli), statistics.mean(x["step_only"] for x in page)
    ratios = [p["steps_per_second"] / c["steps_per_second"] for c, p in zip(cli, page)]
    print("per-round page/CLI ratios: " + ", ".join(f"{r:.2f}" for r in ratios) + f" (min {min(ratios):.2f}, max {max(ratios):.2f})")
    print(f"step-only: page {p_step:.2f} vs CLI {c_step:.2f} steps/s = {p_step / c_step:.2f}x")
    print(f"page {p_mean:.2f} vs CLI {c_mean:.2f} GRPO steps/s (mean of {a.rounds} round(s)) = {p_mean / c_mean:.2f}x (target >= 0.85x)")


if __name__ == "__main__":
    main()
