import json
import subprocess
import sys

import pytest
import torch

import worked_examples


@pytest.mark.parametrize("mod", worked_examples.examples(), ids=lambda m: m.ID)
def test_example_matches_reference(mod):
    row = worked_examples.check(mod)
    assert row["ok"], row
    assert mod.FTIP.startswith("ftip-") or (mod.ID.startswith("credit-") and mod.FTIP == "credit-bank")  # the credit bank has no ftip tags
    assert mod.explain()


def test_inputs_are_what_compute_uses():
    # issue 10: INPUTS["segments"] once disagreed with compute() (mean 0.693 instead of 1.040)
    from lab.sft import Segment, loss_mask, sft_loss
    from worked_examples import sft_response_only as m

    ex = [Segment(role, toks) for role, toks in m.INPUTS["segments"]]
    batch = loss_mask([ex], "completion")
    logp = torch.log(torch.tensor([m.INPUTS["probs"]], dtype=torch.float64))
    assert [t for t, k in zip(batch.tokens[0], batch.loss_mask[0].tolist()) if k] == m.INPUTS["supervised"]
    assert float(sft_loss(logp, batch.loss_mask, "token")) == pytest.approx(m.EXPECTED[1], abs=1e-12)


# The reference's "Example." blocks that state numbers (ftip-004N is an Example without numbers; ftip-004W a schematic)
EXAMPLE_TAGS = {"ftip-002H", "ftip-002T", "ftip-002V", "ftip-0037", "ftip-003I", "ftip-003J", "ftip-003S", "ftip-0041",
                "ftip-004M", "ftip-004V", "ftip-0059", "ftip-005B", "ftip-006B"}


def test_attribution_is_declared():
    # issue 10: ftip-004N states no numbers; ftip-0049 is a Definition, not a worked example
    assert worked_examples.kind(worked_examples.by_id("grpo-group-clip")) == "illustration"
    assert worked_examples.kind(worked_examples.by_id("verifiable-reward")) == "definition"
    for mod in worked_examples.examples():
        k = worked_examples.kind(mod)
        assert k != "example" or mod.FTIP in EXAMPLE_TAGS or mod.SOURCE.startswith("overview"), (mod.ID, mod.FTIP)
        if k != "example":
            assert mod.NOTE


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
        assert set(r) == {"id", "ftip", "kind", "computed", "expected", "ok"} and r["ok"] is True
