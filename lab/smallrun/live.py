"""Running a small run in its own process, for pages and notebooks.

``start_run`` checks everything in the caller (``SmallRun.preflight``: a refusal is a ``ValueError`` and nothing
is created), then starts ``python -m lab.smallrun.worker`` in a new session. The page never shares an
interpreter, a thread or a lock with training: it reads the run directory (``status.json`` written by the
worker, and the ledger, complete lines only). ``request_stop`` writes ``OUT/STOP`` for the worker (and sends
SIGTERM to a worker this process started); the loop then ends after the current step with a resumable
checkpoint. A reload, a second tab or a restarted server finds a live run from its status file and whether
its process still runs (``find_live_runs``); a worker that died without a final status (a crash, ``kill -9``)
reads as ``failed``, with its exit code when this process started it.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

from lab.smallrun import rundir
from lab.smallrun.config import RunConfig
from lab.smallrun.engine import SmallRun  # imports transformers' classes in this (main) thread: no import race in preflight
from lab.smallrun.worker import LIVE_STATES, STATUS, STOP

ROOT = Path(__file__).resolve().parent.parent.parent  # the repository: the worker imports this checkout's lab


def _key(out: str | Path) -> str:
    return str(Path(out).resolve())


def _pid_is_worker(pid: int, out: str | Path) -> bool:
    """``pid`` is a running (not zombie) ``lab.smallrun.worker`` for ``out``. On Linux from /proc (a reused pid
    belongs to another command line); elsewhere ``kill(pid, 0)``."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    proc = Path(f"/proc/{pid}")
    if Path("/proc/self").exists():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state not in ("Z", "X") and b"lab.smallrun.worker" in cmd and _key(out).encode() in cmd
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LiveRun:
    """A worker process this server started for one run directory (``proc``), and what it has reported."""

    def __init__(self, out: str | Path, proc: subprocess.Popen, resume: bool) -> None:
        self.out, self.proc, self.resume = Path(out), proc, resume
        self.started = time.time()
        self._stop_pending = False

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None  # poll also reaps it: an exited worker never lingers as a zombie

    def status(self) -> dict:
        return read_status(self.out)

    @property
    def state(self) -> str:
        return self.status()["state"]

    @property
    def error(self) -> Optional[str]:
        return self.status().get("error")

    def stop(self) -> None:
        request_stop(self.out)

    def wait(self, timeout: Optional[float] = None) -> dict:
        """Wait for the worker to exit; its final status."""
        self.proc.wait(timeout=timeout)
        return self.status()


_REGISTRY: dict[str, LiveRun] = {}
_REG_LOCK = threading.Lock()


def get_run(out: str | Path) -> Optional[LiveRun]:
    """The worker this process started for ``out``, if any (a run found on disk has none: see ``read_status``)."""
    return _REGISTRY.get(_key(out))


def _read_status_file(out: Path) -> dict:
    try:
        s = json.loads((out / STATUS).read_text(encoding="utf-8"))
        return s if isinstance(s, dict) else {}
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def read_status(out: str | Path) -> dict:
    """What a run directory says about its run, corrected by whether its worker still runs.

    Keys as the worker writes them (``lab.smallrun.worker``) plus ``alive`` and ``known`` (a status exists).
    A status that says starting/running/stopping whose worker is gone reads as ``failed`` with the exit code
    (when this process started the worker) or "ended without a final status"; ETA is kept only while running.
    """
    out = Path(out)
    own = get_run(out)
    s = _read_status_file(out)
    if own is not None and (not s or s.get("pid") != own.proc.pid):
        # our worker has not written its first status yet (starting up), or an older run's status is still there
        s = {"state": "starting", "pid": own.proc.pid, "phase": None, "step": 0, "total": None, "out": str(out)}
    s.setdefault("state", "unknown")
    known = bool(s) and s["state"] != "unknown"
    if own is not None and s.get("pid") == own.proc.pid:
        alive = own.alive
        code = own.proc.returncode
    else:
        alive, code = _pid_is_worker(s.get("pid"), out), None
    if own is not None and alive and own._stop_pending and (out / STATUS).exists():
        request_stop(out)  # a Stop clicked before the worker had written its status reaches it now
    if s["state"] in LIVE_STATES and not alive:
        s["error"] = s.get("error") or (f"the training process exited with code {code}" + (" (killed)" if code is not None and code < 0 else "")
                                        if code is not None else f"the training process (pid {s.get('pid')}) ended without a final status (killed?)")
        s["state"] = "failed"
    if s["state"] != "running":
        s["eta_s"] = None
    s["alive"], s["known"] = alive, known
    return s


def request_stop(out: str | Path) -> bool:
    """Ask the run in ``out`` to stop after its current step (it leaves a resumable checkpoint).

    Writes ``OUT/STOP`` naming the worker's pid — only into a lab-created run directory whose status names a
    live worker — and sends SIGTERM to a worker this process started. Returns whether a live run was asked.
    """
    out = Path(out)
    own = get_run(out)
    s = _read_status_file(out)
    if own is not None and own.alive and s.get("pid") != own.proc.pid:
        own._stop_pending = True  # the worker is starting: it gets the stop once it has said who it is
        return True
    if not s or s.get("state") not in LIVE_STATES or not rundir.RunDir.is_lab_run(out):
        return False
    pid = s.get("pid")
    if own is not None and own.proc.pid == pid:
        if not own.alive:
            return False
    elif not _pid_is_worker(pid, out):
        return False
    rundir.atomic_write_text(out / STOP, f"{pid}\n")
    if own is not None and own.proc.pid == pid and own.alive:
        own.proc.send_signal(signal.SIGTERM)  # our own child, not yet reaped: the pid cannot have been reused
    if own is not None:
        own._stop_pending = False
    return True


def start_run(config: RunConfig, out: str | Path, resume: bool = False, then: Optional[list[dict]] = None) -> LiveRun:
    """Start (or resume) a run in a worker process; refuses a second live run on the same directory.

    The whole config, the data file, the model, the device and the directory are checked here, in the caller,
    so that a page shows a refusal at once (``ValueError``) and nothing is created; the run directory's lock
    (taken by the worker) also refuses a second writer from another process.
    """
    out = Path(out)
    key = _key(out)
    with _REG_LOCK:
        now = read_status(out)  # a worker that has written its final status is exiting: it holds no lock any more
        if now["alive"] and now["state"] in LIVE_STATES:
            raise ValueError(f"out: a run is already training in {out}")
        config, _ = SmallRun.preflight(config, out, resume)
        proc = spawn_worker(key, None if resume else config.to_dict(), resume, then)
        lr = _REGISTRY[key] = LiveRun(out, proc, resume)
    return lr


def spawn_worker(out: str | Path, config: Optional[dict], resume: bool = False, then: Optional[list[dict]] = None) -> subprocess.Popen:
    """``python -m lab.smallrun.worker`` for ``out`` in a new session (a server's Ctrl-C does not reach it); ``then``:
    a pipeline's later stages, started one after another as each finishes. Checks nothing: callers preflight first."""
    args = [sys.executable, "-m", "lab.smallrun.worker", "--out", _key(out)]
    args += ["--resume"] if resume else ["--config", json.dumps(config)]
    if then:
        args += ["--then", json.dumps([{"out": _key(t["out"]), "config": t["config"]} for t in then])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    return subprocess.Popen(args, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def stage_finished(out: str | Path) -> bool:
    """The run in ``out`` ran to its end: a summary that is not a stop, and its ``final/`` checkpoint."""
    s = ledger_summary(out) if Path(out, rundir.LEDGER).exists() else None
    return bool(s) and not s.get("stopped") and (Path(out) / rundir.FINAL / rundir.MANIFEST).exists()


def rlhf_pipeline(runs_dir: str | Path, name: str, task: str = "reversal", seed: int = 0, model_size: str = "small",
                  overrides: Optional[dict[str, dict]] = None) -> list[tuple[str, Path, RunConfig]]:
    """The classic RLHF pipeline as three runs [ftip-003A]: SFT on demonstrations → a reward model on preference pairs
    (from the SFT policy) → PPO from the SFT policy against that reward model (Ouyang et al. 2022, §3.5).

    Returns ``[(stage, run directory, config)]`` for ``runs_dir/NAME-sft``, ``NAME-rm``, ``NAME-ppo``; every config is
    validated field by field here (``RunConfig``); what depends on the earlier stages' checkpoints is checked when a
    stage starts. ``overrides``: per-stage RunConfig fields, e.g. ``{"ppo": {"steps": 50}}``.
    """
    from lab.smallrun.rundir import run_path

    overrides = overrides or {}
    if not isinstance(overrides, dict) or not set(overrides) <= {"sft", "rm", "ppo"}:
        raise ValueError(f"overrides must map stages sft, rm, ppo to RunConfig fields; got {overrides!r}")
    dirs = {st: run_path(runs_dir, f"{name}-{st}") for st in ("sft", "rm", "ppo")}
    common = {"task": task, "seed": seed, "model_size": model_size}
    sft_final, rm_final = str(dirs["sft"] / rundir.FINAL), str(dirs["rm"] / rundir.FINAL)
    configs = {"sft": RunConfig(algorithm="sft", **{**common, **overrides.get("sft", {})}),
               "rm": RunConfig(algorithm="rm", **{**common, "model": sft_final, **overrides.get("rm", {})}),
               "ppo": RunConfig(algorithm="ppo", **{**common, "model": sft_final, "reward_model": rm_final, **overrides.get("ppo", {})})}
    return [(st, dirs[st], configs[st]) for st in ("sft", "rm", "ppo")]


def start_pipeline(stages: list[tuple[str, Path, RunConfig]]) -> Optional[LiveRun]:
    """Start the first unfinished stage (resuming it when it has a checkpoint) with the later ones chained behind it;
    stages that already finished are kept as they are. Returns None when every stage has finished."""
    for i, (_, out, cfg) in enumerate(stages):
        if stage_finished(out):
            continue
        resume = (out / rundir.MARKER).exists() and bool(rundir.complete_checkpoints(out))
        then = [{"out": str(o), "config": c.to_dict()} for _, o, c in stages[i + 1:]]
        return start_run(cfg, out, resume=resume, then=then)
    return None


def find_live_runs(runs_dir: str | Path) -> list[tuple[Path, dict]]:
    """Run directories under ``runs_dir`` whose worker still runs, newest start first (for a reload or a new tab)."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    found = []
    for f in root.glob(f"*/{STATUS}"):
        s = read_status(f.parent)
        if s["alive"] and s["state"] in LIVE_STATES:
            found.append((f.parent, s))
    for key, lr in list(_REGISTRY.items()):  # our own workers still starting up have no status file yet
        if Path(key).parent == root.resolve() and lr.alive and all(p.resolve() != Path(key) for p, _ in found):
            found.append((lr.out, read_status(lr.out)))
    return sorted(found, key=lambda t: -(t[1].get("started") or time.time()))


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


class _LedgerTail:
    """A ledger read incrementally: only bytes appended since the last read are parsed (complete lines only)."""

    def __init__(self) -> None:
        self.ino, self.offset, self.records = None, 0, []


_TAILS: dict[str, _LedgerTail] = {}
_TAIL_LOCK = threading.Lock()


def read_ledger_records(out: str | Path) -> list[dict]:
    """All complete records of ``OUT/ledger.jsonl``; a page refreshing every second parses only the new lines."""
    path = Path(out) / rundir.LEDGER
    key = _key(path)
    with _TAIL_LOCK:
        t = _TAILS.setdefault(key, _LedgerTail())
        try:
            st = path.stat()
        except OSError:
            _TAILS.pop(key, None)
            return []
        if t.ino != (st.st_dev, st.st_ino) or st.st_size < t.offset:  # a new or replaced file: read it again
            t.ino, t.offset, t.records = (st.st_dev, st.st_ino), 0, []
        if st.st_size > t.offset:
            with open(path, "rb") as f:
                f.seek(t.offset)
                data = f.read(st.st_size - t.offset)
            end = data.rfind(b"\n") + 1  # a line still being written waits for the next read
            for ln in data[:end].split(b"\n")[:-1]:
                try:
                    rec = json.loads(ln)
                except (ValueError, UnicodeDecodeError):
                    continue  # not ours to judge here: `python -m lab.smallrun verify` reports a broken ledger
                if isinstance(rec, dict):
                    t.records.append(rec)
            t.offset += end
        return list(t.records)


def read_ledger_metrics(out: str | Path) -> tuple[list[dict], dict]:
    """Step and eval events of a finished or running run, read from its ledger (complete lines only), and its config."""
    recs = read_ledger_records(out)
    cfg = next((r["config"] for r in recs if r.get("type") == "config"), {})
    return [r for r in recs if r.get("type") in ("step", "eval")], cfg


def ledger_summary(out: str | Path) -> Optional[dict]:
    """The run's own result (the ledger's last ``summary`` record: main stage only, the base stage has its own ledger)."""
    return next((r for r in reversed(read_ledger_records(out)) if r.get("type") == "summary"), None)
