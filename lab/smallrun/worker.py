"""Training in its own process, for the page: ``python -m lab.smallrun.worker --out DIR (--config JSON | --resume)``.

Why a process and not a thread in the Streamlit server: the server's reruns (one a second per open tab, each
building figures) then share no interpreter lock with training, and a crash or ``kill -9`` of training cannot
take the server down. The page runs ``SmallRun.preflight`` in-process first (a refusal is shown at once and
nothing is created), then starts this module with ``subprocess.Popen(..., start_new_session=True)``.

What the worker writes, all inside its own lab-created run directory (``lab.smallrun.rundir`` marker):

- ``status.json`` (atomic; at most ``STATUS_HZ`` times a second while steps run, at once on a phase change, an
  evaluation, a checkpoint, stop, done or failure): ``state`` (starting, running, stopping, stopped, done,
  failed), ``phase`` (base, main), ``step``/``total``, ``steps_per_second``, ``eta_s`` (only while running),
  ``pid``, the latest ``samples`` event, the run's ``summary`` (main stage only) and ``error``;
- ``worker.log``: the process's stdout and stderr (warnings, a traceback).

Metrics are not copied here: the page reads them from the run's hash-chained ledger.

Stop: ``OUT/STOP`` holding this worker's pid (written by the page), or SIGTERM/SIGINT. Either sets the run's
``stop_event``; the training loop sees it after the current step and leaves a resumable checkpoint.

Only the public API of the engine is used: ``SmallRun(config, out, callback, stop_event, resume).run()``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Optional

from lab.smallrun import rundir

STATUS = "status.json"
STOP = "STOP"
WORKER_LOCK = ".worker.lock"  # held for the worker's whole life: one worker per run directory, before it writes anything
LOG = "worker.log"
STATUS_HZ = 4.0  # progress writes per second at most: cheap for training, fresh enough for a 1 s page refresh
LIVE_STATES = ("starting", "running", "stopping")


def stop_requested(out: Path, pid: int) -> bool:
    """``OUT/STOP`` exists and names this worker (or nobody): a stop file left by an earlier worker is not obeyed."""
    try:
        text = (out / STOP).read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, UnicodeDecodeError):
        return True  # unreadable but present: stopping is the safe reading
    return text in ("", str(pid))


class Status:
    """The status file: one JSON object, rewritten atomically; step events are throttled to ``STATUS_HZ``."""

    def __init__(self, out: Path, algorithm: str, resume: bool) -> None:
        self.out = out
        self.path = out / STATUS
        self.s: dict = {"state": "starting", "phase": None, "step": 0, "total": None, "steps_per_second": None, "eta_s": None,
                        "pid": os.getpid(), "out": str(out), "algorithm": algorithm, "resume": resume, "started": time.time(),
                        "updated": time.time(), "samples": None, "summary": None, "base_summary": None, "error": None,
                        "returncode": None}
        self._last = 0.0
        self.main_total: Optional[int] = None  # the main stage's steps, once known

    def write(self, force: bool = True, **kw) -> None:
        self.s.update(kw)
        now = time.time()
        if not force and now - self._last < 1.0 / STATUS_HZ:
            return
        self.s["updated"] = now
        self._last = now
        final = self.s["state"] not in LIVE_STATES
        rundir.atomic_write_text(self.path, json.dumps(self.s, default=str, allow_nan=True), fsync=final)

    def on_event(self, e: dict) -> None:
        """The SmallRun callback: events → status (the ledger holds the metrics)."""
        t = e.get("type")
        phase = "base" if e.get("phase") == "base" else "main"
        state = "stopping" if self.s["state"] == "stopping" else "running"
        if t != "phase" and phase != self.s["phase"]:  # the main stage begins (no phase event announces it)
            self.s.update(phase=phase, step=0, total=self.main_total if phase == "main" else None, steps_per_second=None, eta_s=None)
        if t == "phase":
            # a stage begins: its step counter starts at 0; the total comes with the event (base) or the first step
            self.write(state=state, phase=e.get("phase") or "main", step=0, total=e.get("steps"), steps_per_second=None, eta_s=None)
        elif t == "step":
            total = e.get("total_steps") or self.s.get("total") or e["step"]
            sps = e.get("steps_per_second")
            eta = (total - e["step"]) / sps if sps and sps > 0 and state == "running" else None
            self.write(force=False, state=state, phase=phase, step=e["step"], total=total, steps_per_second=sps, eta_s=eta)
        elif t == "samples":
            if phase == "main":
                self.s["samples"] = e  # written with the next step's status
        elif t == "done":
            # the base stage's "done" is the base stage's, never the run's result
            if phase == "base":
                self.write(base_summary={k: v for k, v in e.items() if k != "type"})
            else:
                self.write(summary={k: v for k, v in e.items() if k != "type"}, eta_s=None)
        elif t in ("eval", "checkpoint", "stopped"):
            self.write(state=state, phase=phase, eta_s=None if state != "running" else self.s.get("eta_s"))


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.smallrun.worker", description="Train one small run in this process, "
                                 "reporting to OUT/status.json; stop with OUT/STOP or SIGTERM.")
    ap.add_argument("--out", required=True, help="the run directory (created by the lab, or an existing lab run with --resume)")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--config", help="the RunConfig as a JSON object")
    g.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint")
    ap.add_argument("--then", default="[]", help="a pipeline's later stages, a JSON list of {\"out\", \"config\"}: when this run "
                    "finishes (not when it stops or fails), a worker starts the first of them with the rest as its --then")
    a = ap.parse_args(argv)
    out = Path(a.out)

    # 1. a stop signal from the first moment: it sets the event the training loop checks after every step
    stop_event = threading.Event()

    def on_signal(signum, frame) -> None:
        stop_event.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    # 2. the run directory exists and carries the lab's marker before anything is written into it
    from lab.smallrun.config import RunConfig

    try:
        then = json.loads(a.then)
        if not isinstance(then, list) or not all(isinstance(t, dict) and {"out", "config"} <= set(t) for t in then):
            raise ValueError("then: a JSON list of {\"out\": DIR, \"config\": {...}} stages")
        cfg = RunConfig() if a.resume else RunConfig.from_dict(json.loads(a.config))
        if a.resume:
            rundir.RunDir.check(out, resume=True)
        else:
            rundir.RunDir.open(out, resume=False).close()  # creates it with the marker (or refuses), then lets go
    except (ValueError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # the run's own lock is taken only once training is set up (seconds later); until then a second worker started for
    # the same directory (two clicks, two servers) would pass the check above and overwrite this one's status and STOP
    lock_fd = os.open(out / WORKER_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock_fd)
        print(f"error: out: {out} is in use by another worker; wait for it to finish or stop it", file=sys.stderr)
        return 2
    log = os.open(out / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    print(f"--- worker pid {os.getpid()} {'resume' if a.resume else 'start'} {time.strftime('%Y-%m-%d %H:%M:%S')}", flush=True)

    # a stop file left by an earlier (killed) worker is not for this one; the page writes STOP only after it has
    # read this worker's pid from the status file written just below
    (out / STOP).unlink(missing_ok=True)
    status = Status(out, "?" if a.resume else cfg.algorithm, a.resume)
    status.main_total = None if a.resume else cfg.steps
    status.write(state="stopping" if stop_event.is_set() else "starting")

    # 3. train; every event updates the status; a stop file or signal sets stop_event
    def callback(e: dict) -> None:
        if not stop_event.is_set() and stop_requested(out, os.getpid()):
            stop_event.set()
        if stop_event.is_set() and status.s["state"] in ("starting", "running"):
            status.write(state="stopping", eta_s=None)
        status.on_event(e)

    code = 0
    try:
        import warnings

        warnings.filterwarnings("ignore")
        import transformers

        transformers.utils.logging.disable_progress_bar()  # the log keeps messages, not progress bars
        from lab.smallrun.engine import SmallRun

        run = SmallRun(cfg, out, callback=callback, stop_event=stop_event, resume=a.resume)
        status.s["algorithm"], status.main_total = run.cfg.algorithm, run.cfg.steps
        if status.s["phase"] != "main":  # the base stage (if any) is over: the main stage starts at its resumed step
            status.s.update(phase="main", step=getattr(run, "step", 0), total=run.cfg.steps, steps_per_second=None, eta_s=None)
        status.write(state="stopping" if stop_event.is_set() else "running")
        s = run.run()
        nxt, next_error = None, None
        if then and not s.get("stopped"):  # the pipeline's next stage, in its own worker (its own run directory and status)
            from lab.smallrun.live import spawn_worker

            try:  # checked here, as the page checks a first start: the next worker's own errors would go nowhere
                SmallRun.preflight(RunConfig.from_dict(then[0]["config"]), then[0]["out"], False)
            except ValueError as exc:
                next_error = f"the next stage ({then[0]['out']}) cannot start: {exc}"
                print(f"--- {next_error}", flush=True)
            else:
                nxt = then[0]["out"]
                spawn_worker(nxt, then[0]["config"], resume=False, then=then[1:])
                print(f"--- started the next stage in {nxt}", flush=True)
        # a page waits for `next` to report, and shows `next_error` instead when the next stage was refused
        status.write(state="stopped" if s.get("stopped") else "done", eta_s=None, next=nxt, next_error=next_error)
    except BaseException as exc:  # noqa: BLE001 — reported in the status file, the process then exits non-zero
        traceback.print_exc()
        # a stop never raises (the loop returns after its stop checkpoint; signals only set stop_event), so an
        # exception is a failure even when a stop was pending: e.g. the stop checkpoint hit a full disk. The page
        # then says "failed" with the error, and Resume continues from the last complete checkpoint.
        status.write(state="failed", eta_s=None, error=f"{type(exc).__name__}: {exc}")
        code = 1
    finally:
        try:
            if stop_requested(out, os.getpid()):
                (out / STOP).unlink(missing_ok=True)
        except OSError:
            pass
    return code


if __name__ == "__main__":
    sys.exit(main())
