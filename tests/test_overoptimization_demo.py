"""The over-optimization demo's mechanics on a few steps (benchmarks/overoptimization.py; the measured acceptance,
proxy up while gold peaks and falls >= 10 points on seeds 0-2, is in the README, not a timed test)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "overoptimization.py"


def test_demo_recipe_runs_end_to_end_and_keeps_its_runs(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("overoptimization", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = mod.main(["--seeds", "0", "--steps", "3", "--eval-every", "1", "--rm-steps", "3", "--rm-prompts", "64",
                     "--base-steps", "60", "--bon-cases", "3", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    (r,) = rows
    assert r["steps"] == [0, 1, 2, 3] and len(r["proxy"]) == len(r["gold"]) == 4  # both curves at every evaluation
    assert r["bon"].n == [1, 2, 4, 8, 16, 32, 64] and r["bon"].d[0] == 0.0
    assert "proxy up, gold up to a peak and then down >= 10 points on" in out and "best-of-N" in out
    # the reward model was trained with the declared bias and the RL run against it; both kept for the Proxies page
    cfg = json.loads((tmp_path / "rm-s0" / "run_config.json").read_text())
    assert cfg["rm_bias"] == "length" and cfg["algorithm"] == "rm"
    rl = json.loads((tmp_path / "grpo-s0" / "run_config.json").read_text())
    assert rl["reward_model"] == str(tmp_path / "rm-s0" / "final") and rl["lr"] == 1e-4
    from lab.proxy import proxy_runs

    assert proxy_runs(str(tmp_path)) == ["grpo-s0"]
