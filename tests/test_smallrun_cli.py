"""The CLI is generated from RunConfig: every field a flag, every docstring in --help, choices checked in one place;
one clean progress line per stage."""

import dataclasses
import re
import subprocess
import sys

import pytest

from lab.smallrun.__main__ import build_parser, flag, main, parse
from lab.smallrun.config import ALGORITHMS, RunConfig, field_choices, field_docs


def test_every_field_has_a_flag_with_the_dataclass_default():
    opts = {o for a in build_parser()._actions for o in a.option_strings}
    for f in dataclasses.fields(RunConfig):
        if f.name != "algorithm":  # the positional argument
            assert flag(f.name) in opts, f.name
    for algo in ALGORITHMS:  # no flags given: exactly the dataclass's config
        cfg, _ = parse([algo])
        assert cfg == RunConfig(algorithm=algo)
    cfg, _ = parse(["grpo", "--no-bf16", "--epsilon-high", "0.28", "--loss-type", "bnpo", "--data", "x.jsonl"])
    assert cfg.bf16 is False and cfg.epsilon_high == 0.28 and cfg.loss_type == "bnpo" and cfg.data == "x.jsonl"


def test_help_lists_every_docstring_default_and_choice(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["--help"])
    assert ei.value.code == 0
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines: compare without whitespace
    docs = field_docs()
    assert set(docs) == {f.name for f in dataclasses.fields(RunConfig)}, "a field without a docstring"
    for name, doc in docs.items():
        assert "".join(doc.split()) in text, name
    for name, allowed in field_choices().items():
        assert "{" + ",".join(allowed) + "}" in text, name
    assert "(default:8)" in text and "grpo200" in text  # max_new_tokens; the per-algorithm default of steps
    for name, row in ALGORITHMS.items():
        assert "".join(row["description"].split()) in text


@pytest.mark.parametrize("argv, flagname", [(["grpo", "--loss-type", "foo"], "--loss-type"), (["grpo", "--scale", "row"], "--scale"),
                                            (["sft", "--task", "chess"], "--task"), (["sft", "--model-size", "huge"], "--model-size"),
                                            (["grpo", "--epsilon", "2"], "--epsilon"), (["sft", "--steps", "0"], "--steps"),
                                            (["ppx"], "algorithm")])
def test_a_bad_choice_exits_2_with_one_line_naming_the_flag(argv, flagname, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flagname in err[0] and err[0].startswith("error:")
    assert not (tmp_path / "r").exists()


def test_a_bad_type_exits_2_with_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "lab.smallrun", "sft", "--steps", "abc", "--out", str(tmp_path / "r")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--steps" in r.stderr


def test_the_table_names_real_fields_and_defaults():
    names = {f.name for f in dataclasses.fields(RunConfig)}
    from lab.smallrun.algos import ALGORITHMS as CLASSES

    assert set(CLASSES) == set(ALGORITHMS) == set(field_choices()["algorithm"])
    for name, row in ALGORITHMS.items():
        assert set(row["fields"]) <= names and row["data"] in ("sft", "preference", "rl") and row["description"]
        assert set(row["defaults"]) >= {"steps", "lr", "batch_size"}
        cfg = RunConfig(algorithm=name)
        assert (cfg.steps, cfg.lr, cfg.batch_size) == (row["defaults"]["steps"], row["defaults"]["lr"], row["defaults"]["batch_size"])


def test_progress_prints_one_final_line_per_stage(tmp_path):
    """Captured (not a terminal): no bar redraws, no carriage returns; one line per stage, then the summary line."""
    r = subprocess.run([sys.executable, "-m", "lab.smallrun", "grpo", "--steps", "4", "--base-steps", "6", "--batch-size", "2",
                        "--group-size", "2", "--eval-every", "2", "--eval-size", "10", "--model-size", "tiny", "--out", str(tmp_path / "g")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "\r" not in r.stdout + r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 2, r.stderr
    assert re.fullmatch(r"base sft: 6/6 steps in [\d.]+ s, [\d.]+ steps/s; loss=[\d.]+", err[0])
    assert re.fullmatch(r"grpo: 4/4 steps in [\d.]+ s, [\d.]+ steps/s; loss=-?[\d.]+ reward=[\d.]+", err[1])
    out = r.stdout.strip().splitlines()
    assert re.fullmatch(r"held-out accuracy [\d.]+% -> [\d.]+%  \(.*\)", out[-1])
    assert [ln.split(":")[0] for ln in out[1:-1]] == ["[base sft] step 0", "[base sft] step 6", "[grpo] step 0", "[grpo] step 2", "[grpo] step 4"]


def test_progress_on_a_terminal_leaves_one_bar_line_per_stage():
    """On a terminal each stage has a tqdm bar with steps/s and ETA; after the run, what stays on screen (the last
    carriage-return segment of each line) is one finished bar per stage and the evaluation lines, nothing else."""
    import io

    from lab.smallrun.__main__ import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    p = Progress({"base": 3, "main": 4}, {"base": "base sft", "main": "grpo"}, stream=term)
    p({"type": "phase", "phase": "base", "steps": 3})
    for s in range(1, 4):
        p({"type": "step", "phase": "base", "step": s, "loss": 1.0 / s})
    p({"type": "eval", "phase": "base", "step": 3, "eval/accuracy": 0.5})
    p({"type": "done", "phase": "base"})
    for s in range(1, 5):
        p({"type": "step", "step": s, "loss": 0.1, "reward": 0.5})
        if s == 2:
            p({"type": "eval", "step": 2, "eval/accuracy": 0.6})
    p({"type": "done"})
    p.close()
    screen = [ln.split("\r")[-1].rstrip() for ln in term.getvalue().split("\n")]
    screen = [ln for ln in screen if ln.strip()]
    bars = [ln for ln in screen if "|" in ln]
    assert len(bars) == 2, screen
    assert bars[0].startswith("base sft: 100%") and "3/3" in bars[0] and "step/s" in bars[0]
    assert bars[1].startswith("grpo: 100%") and "4/4" in bars[1] and "reward=0.500" in bars[1]
    assert [ln for ln in screen if ln.startswith("[")] == ["[base sft] step 3: accuracy=0.500", "[grpo] step 2: accuracy=0.600"]
