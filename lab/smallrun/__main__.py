"""python -m lab.smallrun ALGORITHM [--FIELD VALUE ...] --out runs/NAME [--resume]
python -m lab.smallrun verify RUN_DIR      (ledger hash chain, checkpoints against manifests and policy stamps)
python -m lab.smallrun export-trl --config RUN_DIR_OR_FLAGS --out FILE

The run flags are generated from ``RunConfig``: one flag per field (``--max-new-tokens`` for ``max_new_tokens``),
its help the field's docstring and default, its choices the field's ``Literal`` type; values are checked in one
place, ``RunConfig.__post_init__``, and a bad one is reported as one line naming the flag.

Exit codes: 0 done; 1 a run failed while training (e.g. a full disk; the message names the checkpoint that is
intact) or ``verify`` found problems; 2 the config, data, model, device or run directory was refused before
anything was created or trained.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from typing import Literal, get_args, get_origin

from lab.smallrun.config import ALGORITHMS, RunConfig, field_docs, field_types
from lab.smallrun.data import DataFileError


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2): ``error: --flag: what is wrong``."""

    def error(self, message: str):
        self.exit(2, f"error: {message}\n")


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _arg_type(tp):
    """(argparse type, metavar) for a RunConfig annotation; choices stay strings (validated by RunConfig)."""
    args = [a for a in get_args(tp) if a is not type(None)] if get_origin(tp) is not Literal else [tp]
    base = args[0] if len(args) == 1 else tp
    if get_origin(base) is Literal:
        return str, "{" + ",".join(map(str, get_args(base))) + "}"
    if base in (int, float):
        return base, base.__name__.upper()
    return str, None


def build_parser() -> argparse.ArgumentParser:
    """The run CLI, generated from RunConfig: every field is a flag, its help is the field's docstring with its
    default; choices are listed from the field's ``Literal`` type and checked by RunConfig (one place)."""
    docs, types = field_docs(), field_types()
    specific = {f: [a for a, row in ALGORITHMS.items() if f in row["fields"]] for row in ALGORITHMS.values() for f in row["fields"]}
    algos = "; ".join(f"{name}: {row['description']}" for name, row in ALGORITHMS.items())
    ap = _Parser(prog="python -m lab.smallrun", description="Train a tiny GPT-2 with one of the lab's post-training algorithms, "
                 "using lab's own losses. Other commands: verify RUN_DIR, export-trl --config ... --out FILE.",
                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("algorithm", metavar="ALGORITHM", help=f"{docs['algorithm']} {{{','.join(ALGORITHMS)}}} — {algos}")
    ap.add_argument("--out", help="run directory (default runs/ALGORITHM-TASK-sSEED)")
    ap.add_argument("--resume", action="store_true", help="continue the run in --out from its latest checkpoint (its stored config wins)")
    common = ap.add_argument_group("options of every algorithm")
    groups = {name: ap.add_argument_group(f"options of {', '.join(names)}") for name, names in
              {", ".join(v): v for v in specific.values()}.items()}
    for f in dataclasses.fields(RunConfig):
        if f.name == "algorithm":
            continue
        tp = types[f.name]
        help_ = docs.get(f.name, "")
        default = f.default
        if f.name in ("steps", "lr", "batch_size"):
            help_ += " Defaults: " + ", ".join(f"{a} {row['defaults'][f.name]}" for a, row in ALGORITHMS.items()) + "."
            default = None
        group = groups[", ".join(specific[f.name])] if f.name in specific else common
        if tp is bool:
            group.add_argument(flag(f.name), default=default, action=argparse.BooleanOptionalAction, help=help_)
        else:
            typ, metavar = _arg_type(tp)
            group.add_argument(flag(f.name), type=typ, metavar=metavar, default=default, help=help_)
    return ap


def parse(argv: list[str] | None = None) -> tuple[RunConfig, argparse.Namespace]:
    """``(config, namespace)``; ``SystemExit(2)`` for bad flags, ``ValueError`` naming the flag for a bad value."""
    a = build_parser().parse_args(argv)
    values = {f.name: getattr(a, f.name) for f in dataclasses.fields(RunConfig)}
    try:
        cfg = RunConfig(**values)
    except ValueError as exc:  # RunConfig names the field; the CLI names the flag
        msg = str(exc)
        name = msg.split(" ", 1)[0].rstrip(":")
        if name in values and name != "algorithm":
            msg = f"{flag(name)}: {msg}"
        raise ValueError(msg) from None
    a.out = a.out or f"runs/{a.algorithm}-{a.task}-s{a.seed}"
    return cfg, a


def verify(argv: list[str]) -> int:
    from lab.smallrun.rundir import verify_run

    ap = argparse.ArgumentParser(prog="python -m lab.smallrun verify", description="Check a run directory: the ledger's hash chain, "
                                 "every checkpoint against its manifest and the ledger's policy stamp, final/ and the base stage.")
    ap.add_argument("run_dir")
    a = ap.parse_args(argv)
    facts, problems = verify_run(a.run_dir)
    for f in facts:
        print(f"ok: {f}")
    for p in problems:
        print(f"PROBLEM: {p}")
    print(f"{a.run_dir}: " + ("verified, no problems" if not problems else f"{len(problems)} problem(s)"))
    return 1 if problems else 0


class Progress:
    """One progress bar per stage (base SFT, then the main stage) with steps/s and ETA, closed when its stage ends,
    so each stage leaves exactly one final line. Without a terminal (a log file, a pipe) nothing is redrawn: each
    stage prints only that final line. Evaluations print one line each above the bar."""

    KEYS = ("loss", "reward", "rewards/margins")

    def __init__(self, totals: dict[str, int], names: dict[str, str], stream=None) -> None:
        self.totals, self.names = totals, names
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.bars: dict = {}
        self.started: dict[str, tuple[float, int]] = {}
        self.last: dict[str, dict] = {}

    def __call__(self, e: dict) -> None:
        import time

        from tqdm import tqdm

        phase = e.get("phase", "main")
        kind = e["type"]
        if kind == "step":
            if phase not in self.started:
                self.started[phase] = (time.perf_counter(), e["step"] - 1)
                if self.tty:
                    self.bars[phase] = tqdm(total=self.totals[phase], desc=self.names[phase], unit="step", initial=e["step"] - 1,
                                            file=self.stream, leave=True)
            self.last[phase] = e
            bar = self.bars.get(phase)
            if bar is not None:
                bar.set_postfix({k.split("/")[-1]: f"{e[k]:.3f}" for k in self.KEYS if k in e}, refresh=False)
                bar.update(1)
        elif kind == "eval":
            vals = " ".join(f"{k.removeprefix('eval/')}={v:.3f}" for k, v in e.items() if k.startswith("eval/"))
            line = f"[{self.names[phase]}] step {e['step']}: {vals}"
            if self.bars.get(phase) is not None:  # above the bar, on the bar's own stream: no torn lines
                tqdm.write(line, file=self.stream)
            else:
                print(line, flush=True)
        elif kind == "phase":
            print(f"base stage: {e['steps']} SFT steps to get a starting policy that sometimes succeeds", flush=True)
        elif kind in ("done", "stopped"):
            self.finish(phase, stopped=kind == "stopped")

    def finish(self, phase: str, stopped: bool = False) -> None:
        """The stage's one final line: the closed bar on a terminal, a plain summary line otherwise."""
        import time

        bar = self.bars.pop(phase, None)
        if bar is not None:
            bar.close()
        elif phase in self.started and phase in self.last:
            t0, first = self.started.pop(phase)
            e = self.last[phase]
            n, wall = e["step"] - first, time.perf_counter() - t0
            post = " ".join(f"{k.split('/')[-1]}={e[k]:.3f}" for k in self.KEYS if k in e)
            print(f"{self.names[phase]}: {e['step']}/{self.totals[phase]} steps{' (stopped)' if stopped else ''} in {wall:.1f} s, "
                  f"{n / max(wall, 1e-9):.2f} steps/s; {post}", file=self.stream, flush=True)

    def close(self) -> None:
        for phase in list(self.bars):
            self.finish(phase)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["verify"]:
        return verify(argv[1:])
    if argv[:1] == ["export-trl"]:  # python -m lab.smallrun export-trl --config ... --out ...
        from lab.smallrun.export_trl import main as export_main

        return export_main(argv[1:])
    warnings.filterwarnings("ignore")
    import transformers

    from lab.smallrun.pipeline import SmallRun
    from lab.smallrun.rundir import CheckpointWriteError

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        cfg, a = parse(argv)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    progress = None
    events = lambda e: progress(e) if progress is not None else None  # noqa: E731  (bound once the stages are known)
    try:
        run = SmallRun(cfg, a.out, callback=events, resume=a.resume)
    except (DataFileError, ValueError) as exc:  # refused before anything was created or trained
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (CheckpointWriteError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    cfg = run.cfg  # on --resume the stored config wins
    totals, names = {"main": cfg.steps}, {"main": cfg.algorithm}
    if run.base_cfg is not None:
        totals["base"], names["base"] = run.base_cfg.steps, "base sft"
    progress = Progress(totals, names)
    try:
        s = run.run()
    except (CheckpointWriteError, ValueError, RuntimeError) as exc:
        progress.close()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    progress.close()
    print(summary_line(s, a.out))
    return 0


def summary_line(s: dict, out: str) -> str:
    """The last line of a run: the headline held-out result before -> after."""
    pct = lambda x: "n/a" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    if s.get("stage") == "base":
        return f"stopped during the base stage; continue with --resume  ({out})"
    if s["metric"] == "eval/preference_accuracy" and s.get("accuracy_before") is not None:  # DPO: preference and exact match
        margin = "n/a" if s.get("margin_after") is None else f"{s['margin_after']:.3f}"
        return (f"held-out preference accuracy {pct(s['before'])} -> {pct(s['after'])}; mean implicit margin 0.000 -> {margin}; "
                f"held-out exact match {pct(s['accuracy_before'])} -> {pct(s['accuracy_after'])}  ({out})")
    if s["metric"] == "eval/accuracy":
        return f"held-out accuracy {pct(s['before'])} -> {pct(s['after'])}  ({out})"
    name = s["metric"].removeprefix("eval/").replace("_", " ")
    return f"held-out {name} {pct(s['before'])} -> {pct(s['after'])}  ({out})"


if __name__ == "__main__":
    sys.exit(main())
