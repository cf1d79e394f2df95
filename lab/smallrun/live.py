"""Running a small run in a background thread, for pages and notebooks.

The training thread never touches the UI: it appends events to a thread-safe buffer; the page reads the
buffer (``events_since``) on its own schedule. ``stop()`` asks the run to end after the current step
with a resumable checkpoint. A process-wide registry keeps runs alive across page reloads and closed tabs.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from pathlib import Path
from typing import Optional

import hashlib

from lab.smallrun import rundir
from lab.smallrun.config import RunConfig
from lab.smallrun.engine import SmallRun  # imports transformers' classes in this (main) thread: no import race in workers


class EventBuffer:
    """Append-only, lock-protected list of events; readers ask for everything after an index."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[dict] = []

    def append(self, e: dict) -> None:
        with self._lock:
            self._events.append(e)

    def since(self, i: int) -> list[dict]:
        with self._lock:
            return self._events[i:]

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)


class LiveRun:
    """A SmallRun on a daemon thread. States: "starting", "running", "stopping", "stopped", "done", "failed"."""

    def __init__(self, config: RunConfig, out: str | Path, resume: bool = False) -> None:
        self.cfg, self.out, self.resume = config, Path(out), resume
        self.buffer = EventBuffer()
        self.stop_event = threading.Event()
        self.state = "starting"
        self.error: Optional[str] = None
        self.started = time.time()
        self.thread = threading.Thread(target=self._work, name=f"smallrun:{self.out.name}", daemon=True)

    def start(self) -> "LiveRun":
        self.thread.start()
        return self

    def _work(self) -> None:
        try:
            run = SmallRun(self.cfg, self.out, callback=self.buffer.append, stop_event=self.stop_event, resume=self.resume)
            self.total_steps = run.cfg.steps
            self.state = "running"
            s = run.run()
            self.state = "stopped" if s.get("stopped") else "done"
        except Exception as exc:  # reported to the page as text, never re-raised into the UI thread
            self.error = f"{type(exc).__name__}: {exc}"
            self.buffer.append({"type": "error", "message": self.error, "trace": traceback.format_exc()[-2000:]})
            self.state = "failed"

    def stop(self) -> None:
        if self.state in ("starting", "running"):
            self.state = "stopping"
            self.stop_event.set()

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()


_REGISTRY: dict[str, LiveRun] = {}
_REG_LOCK = threading.Lock()


def start_run(config: RunConfig, out: str | Path, resume: bool = False) -> LiveRun:
    """Start (or resume) a run in the background; refuses a second live run on the same directory.

    The whole config, the data file, the model, the device and the directory are checked here, in the caller's
    thread, so that a page shows a refusal at once (``ValueError``) and nothing is created; the run directory's
    lock (taken by the run itself) also refuses a second writer from another process.
    """
    key = str(Path(out).resolve())
    with _REG_LOCK:
        cur = _REGISTRY.get(key)
        if cur is not None and cur.alive:
            raise ValueError(f"out: a run is already training in {out}")
        SmallRun.preflight(config, out, resume)
        lr = _REGISTRY[key] = LiveRun(config, out, resume).start()
    return lr


def store_upload(runs_dir: str | Path, data: bytes) -> Path:
    """Keep an uploaded data file as ``runs_dir/.uploads/<sha256>.jsonl`` (content-addressed: an existing file of
    that name holds the same bytes, so nothing is ever overwritten) and return its path."""
    d = Path(runs_dir) / ".uploads"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{hashlib.sha256(data).hexdigest()}.jsonl"
    if not path.exists():
        tmp = d / f".tmp-{path.name}-{os.getpid()}-{threading.get_ident()}"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return path


def get_run(out: str | Path) -> Optional[LiveRun]:
    return _REGISTRY.get(str(Path(out).resolve()))


def read_ledger_metrics(out: str | Path) -> tuple[list[dict], dict]:
    """Step and eval events of a finished or running run, read from its ledger (complete lines only)."""
    from lab.agentic import Ledger

    recs, _ = Ledger(Path(out) / "ledger.jsonl").read()
    cfg = next((r["config"] for r in recs if r.get("type") == "config"), {})
    return [r for r in recs if r.get("type") in ("step", "eval")], cfg
