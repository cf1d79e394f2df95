"""Export to TRL (issue 17): the exported scripts run real TRL trainers on a tiny local GPT-2 on CPU.

GRPO: 2 steps; TRL's logged first-step loss equals the loss the lab engine's functions (lab.grpo.group_advantages +
grpo_loss, as SmallRun.grpo_step calls them) give on the batch TRL sampled (its rewards and completion lengths,
recorded by the script), within 1e-5. DPO and SFT: 2 steps each. Unmapped options become comments and warnings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lab.grpo import group_advantages, grpo_loss
from lab.smallrun.config import RunConfig
from lab.smallrun.export_trl import export, load_config
from lab.smallrun.__main__ import main as cli

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module")
def base_model(tmp_path_factory) -> str:
    """A tiny GPT-2 after a short lab SFT stage, so GRPO groups have rewards that differ."""
    out = tmp_path_factory.mktemp("base") / "sft"
    r = subprocess.run([sys.executable, "-m", "lab.smallrun", "sft", "--model-size", "tiny", "--steps", "120", "--eval-every", "1000",
                        "--eval-size", "8", "--out", str(out)], cwd=ROOT, env={**ENV, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return str(out / "final")


def run_script(script: Path, out: Path) -> list[dict]:
    r = subprocess.run([sys.executable, str(script), "--cpu", "--output-dir", str(out)], env={**ENV, "PYTHONPATH": ""},
                       capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads((out / "log_history.json").read_text())


def test_grpo_script_runs_two_steps_and_its_first_loss_matches_the_lab(base_model, tmp_path):
    cfg = RunConfig(algorithm="grpo", task="reversal", model=base_model, steps=2, batch_size=8, group_size=4, warmup_steps=0,
                    loss_type="dapo", seed=0)
    warns = export(cfg, tmp_path / "train_grpo.py")
    assert any("evaluation" in w for w in warns)
    log = run_script(tmp_path / "train_grpo.py", tmp_path / "out")
    steps = [e for e in log if "loss" in e]
    assert [e["step"] for e in steps] == [1, 2]
    first = json.loads((tmp_path / "out" / "rewards.jsonl").read_text().splitlines()[0])
    rewards = torch.tensor(first["rewards"], dtype=torch.float64)
    assert bool((rewards.view(-1, 4).amax(-1) > rewards.view(-1, 4).amin(-1)).any()), "no group with spread: the check would be vacuous"
    lengths = first["completion_lengths"]
    mask = torch.tensor([[1.0] * n + [0.0] * (cfg.max_new_tokens - n) for n in lengths])
    logps = torch.full(mask.shape, -1.0, dtype=torch.float64)  # μ = 1: the ratio is exactly 1 whatever the log-probs
    adv = group_advantages(rewards, cfg.group_size, scale=cfg.scale)
    lab_loss, _ = grpo_loss(logps, logps.detach(), adv, mask, loss_type=cfg.loss_type, max_completion_length=cfg.max_new_tokens)
    assert abs(steps[0]["loss"] - float(lab_loss)) < 1e-5
    assert abs(float(lab_loss)) > 1e-4  # a non-trivial loss was compared


@pytest.mark.parametrize("algorithm", ["dpo", "sft", "rloo", "rm"])
def test_dpo_sft_rloo_and_reward_model_scripts_run_two_steps(base_model, tmp_path, algorithm):
    cfg = RunConfig(algorithm=algorithm, task="sorting", model=base_model, steps=2, batch_size=4, dpo_pairs=16, warmup_steps=0,
                    **({"group_size": 4, "kl_beta": 0.04} if algorithm == "rloo" else {}))
    warns = export(cfg, tmp_path / f"train_{algorithm}.py")
    log = run_script(tmp_path / f"train_{algorithm}.py", tmp_path / "out")
    losses = [e["loss"] for e in log if "loss" in e]
    assert len(losses) == 2 and all(l == l for l in losses)
    rows = [json.loads(line) for line in (tmp_path / f"train_{algorithm}.jsonl").read_text().splitlines()]
    keys = {"dpo": {"prompt", "chosen", "rejected"}, "rm": {"prompt", "chosen", "rejected"}, "sft": {"prompt", "completion"},
            "rloo": {"prompt", "answer"}}[algorithm]
    assert set(rows[0]) == keys
    if algorithm == "rloo":  # the two differences from TRL's RLOOTrainer are named
        assert any("sequence-level ratio" in w for w in warns) and any("from each completion's reward" in w for w in warns)
        assert (tmp_path / "out" / "rewards.jsonl").exists()
    if algorithm == "rm":  # the saved model is a one-label sequence classifier
        saved = json.loads((tmp_path / "out" / "config.json").read_text())
        assert len(saved["id2label"]) == 1 and saved["architectures"] == ["GPT2ForSequenceClassification"]


def test_cli_writes_script_prints_warnings_and_never_overwrites(tmp_path, capsys):
    out = tmp_path / "train_trl.py"
    assert cli(["export-trl", "--config", "grpo --task addition --kl-beta 0.04 --loss-type bnpo --epsilon-high 0.28", "--out", str(out)]) == 0
    text = out.read_text()
    err = capsys.readouterr().err
    assert "warning: base stage" in err and "# NOTE (not mapped): base stage" in text
    for opt in ("loss_type='bnpo'", "beta=0.04", "epsilon_high=0.28", "num_generations=8", "scale_rewards='group'", "use_bias_correction_kl=False"):
        assert opt in text
    compile(text, str(out), "exec")
    before = out.read_text()
    assert cli(["export-trl", "--config", "sft", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_text() == before
    assert cli(["export-trl", "--config", "sft", "--out", str(out), "--force"]) == 0


def test_config_from_run_directory_and_bad_config(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "run_config.json").write_text(json.dumps(RunConfig(algorithm="dpo", beta=0.3).to_dict()))
    assert load_config(str(d)).beta == 0.3
    with pytest.raises(ValueError, match="config"):
        load_config(str(tmp_path))
    with pytest.raises(ValueError, match="config"):
        load_config("bogus --task reversal")
    for algo in ("ppo",):  # a valid small run without a TRL mapping: refused by name, nothing written
        with pytest.raises(ValueError, match="algorithm"):
            export(load_config(f"{algo} --task reversal"), tmp_path / f"{algo}.py")
        assert not (tmp_path / f"{algo}.py").exists()
