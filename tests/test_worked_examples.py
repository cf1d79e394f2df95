import json
import subprocess
import sys

import pytest

import worked_examples


@pytest.mark.parametrize("mod", worked_examples.examples(), ids=lambda m: m.ID)
def test_example_matches_reference(mod):
    row = worked_examples.check(mod)
    assert row["ok"], row
    assert mod.FTIP.startswith("ftip-") or (mod.ID.startswith("credit-") and mod.FTIP == "credit-bank")  # the credit bank has no ftip tags
    assert mod.explain()


def test_cli_json_reports_every_example_ok():
    out = subprocess.run([sys.executable, "-m", "worked_examples", "--json"], capture_output=True, text=True, check=True)
    rows = json.loads(out.stdout)
    assert {r["id"] for r in rows} >= {
        "sft-response-only", "bradley-terry", "preference-cycle", "return-advantage", "ppo-clip",
        "rlhf-shaped-reward", "dpo-log-ratio", "dpo-relative", "policy-gradient-baseline",
        "process-labels", "rlvr-round", "grpo-group-clip", "verifiable-reward", "code-agent-trace",
        "replay-annotation", "dgg-gate", "sign-invariant-forecast",
    }
    for r in rows:
        assert set(r) == {"id", "ftip", "computed", "expected", "ok"} and r["ok"] is True
