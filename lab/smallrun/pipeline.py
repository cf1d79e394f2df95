"""A small run as a pipeline of stages: [base SFT in OUT/base] → the main stage in OUT.

DPO and GRPO (any algorithm that declares ``needs_base_stage``) without ``--model`` start from a policy that
sometimes succeeds: a plain SFT run with SFT's own batch size and learning rate, trained for ``base_steps``
in ``OUT/base`` (its own run directory, ledger and ``final/``). The main stage then starts from
``OUT/base/final``. A stop during the base stage leaves it resumable; ``resume=True`` continues where it stopped.

``SmallRun`` is the public entry point (CLI, page, notebooks, tests): construction validates everything and
locks ``OUT``; ``run()`` trains every stage that is not finished and returns the main stage's summary.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Optional

from lab.smallrun import rundir
from lab.smallrun.config import ALGORITHM_DEFAULTS, RunConfig
from lab.smallrun.loop import Callback, Loop, preflight


def base_stage_config(cfg: RunConfig) -> Optional[RunConfig]:
    """The base SFT stage's config, or None when the algorithm needs none or a starting ``model`` is given."""
    from lab.smallrun.algos import ALGORITHMS

    if cfg.model or not ALGORITHMS[cfg.algorithm].needs_base_stage:
        return None
    d = ALGORITHM_DEFAULTS["sft"]
    return dataclasses.replace(cfg, algorithm="sft", steps=cfg.base_steps, data=None, model=None, batch_size=d["batch_size"], lr=d["lr"],
                               reward_model=None, reward_verifier="exact", rm_bias="none",  # the main stage's reward switches
                               warmup_steps=RunConfig.warmup_steps, save_every=max(cfg.base_steps, 1), eval_every=max(cfg.base_steps, 1))


def stage_done(out: Path) -> bool:
    """A stage is finished when its ``final/`` carries a manifest."""
    return (out / rundir.FINAL / rundir.MANIFEST).exists()


class SmallRun:
    """One run directory: config, checkpoints, ledger; ``run()`` trains until ``steps`` or a stop request.

    ``callback`` receives every event (``{"type": "step" | "eval" | "checkpoint" | "samples" | "done" | "stopped" |
    "phase", ...}``; the base stage's events carry ``"phase": "base"``). ``stop_event`` (a ``threading.Event``)
    ends the run after the current step with a resumable checkpoint.
    """

    def __init__(self, config: RunConfig, out: str | Path, callback: Optional[Callback] = None,
                 stop_event: Optional[threading.Event] = None, resume: bool = False) -> None:
        self.out = Path(out)
        self.callback = callback or (lambda e: None)
        self.stop_event = stop_event or threading.Event()
        config, env = self.preflight(config, self.out, resume)  # everything checked before anything is created
        self.cfg = config
        self.base_cfg = base_stage_config(config)
        start = str(self.out / "base" / rundir.FINAL) if self.base_cfg is not None else config.model
        self.main = Loop(config, self.out, self.callback, self.stop_event, resume, env=env, start_from=start)
        if self.base_cfg is None or stage_done(self.out / "base"):
            self.main.prepare()  # models built now (and the checkpoint loaded on resume): .model and .step are there

    @staticmethod
    def preflight(config: RunConfig, out: str | Path, resume: bool = False):
        """``loop.preflight`` (the whole config and the run directory, nothing created), and one pipeline rule: a
        fresh start is refused where a stopped base stage already has a checkpoint (it is part of that directory's
        run, and would be resumed under its old config)."""
        config, env = preflight(config, out, resume)
        if not resume and base_stage_config(config) is not None and rundir.RunDir.has_run(Path(out) / "base"):
            raise rundir.RunDirError(f"out: {out} already holds a run (its base stage in {Path(out) / 'base'} has a "
                                     "checkpoint); pass resume=True (--resume) or choose another directory")
        return config, env

    # the main stage's state, as the engine exposed it
    @property
    def model(self):
        return self.main.model

    @property
    def step(self) -> int:
        return self.main.step

    @property
    def history(self) -> list[dict]:
        return self.main.history

    @property
    def tokenizer(self):
        return self.main.tokenizer

    @property
    def codec(self):
        return self.main.codec

    @property
    def device(self):
        return self.main.device

    @property
    def algorithm(self):
        return self.main.algo

    def evaluate(self) -> dict:
        return self.main.evaluate()

    def run_base_stage(self) -> bool:
        """Train (or resume) the base SFT stage in ``OUT/base``; True when it finished."""
        base = self.out / "base"
        self.callback({"type": "phase", "phase": "base", "steps": self.base_cfg.steps})
        resume = (base / "run_config.json").exists() and bool(rundir.complete_checkpoints(base))
        Loop(self.base_cfg, base, callback=lambda e: self.callback({**e, "phase": "base"}), stop_event=self.stop_event, resume=resume).run()
        return stage_done(base)

    def run(self) -> dict:
        """Every unfinished stage in order; returns the main stage's summary (``stopped`` if a stop came first).
        The run directory's lock is released when it returns (or fails)."""
        if not self.main.prepared:
            try:
                finished = self.run_base_stage()
            except BaseException:
                self.main.rundir.close()
                raise
            if not finished:  # stopped during the base stage: OUT stays resumable, nothing of the main stage ran
                self.main.rundir.close()
                self.callback({"type": "stopped", "step": 0})
                return {**self.main.summary(stopped=True), "stage": "base"}
        return self.main.run()
