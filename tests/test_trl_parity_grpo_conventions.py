"""Parity with TRL 1.16's GRPOTrainer for GSPO (importance_sampling_level="sequence") and CISPO (loss_type="cispo"):
TRL's `_compute_loss` on a real tiny GPT-2 against lab.grpo on log-probs from the same model (loss and gradients)."""

import pytest
import torch

from lab.grpo import cispo_loss, gspo_loss
from lab.sft import token_logprobs
from tests.test_trl_parity_grpo import B, P, T, make_trainer, random_inputs

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def model_path():
    from tests import trl_helpers as H

    return H.saved_tiny_model(seed=0)


def _compare(tr, ours_fn, seed):
    model = tr.model
    model.eval()
    inputs = random_inputs(seed=seed)
    with torch.no_grad():
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
        base = token_logprobs(model(input_ids=ids).logits[:, P - 1 : -1], inputs["completion_ids"])
        g = torch.Generator().manual_seed(seed + 1)
        inputs["old_per_token_logps"] = (base + torch.randn(B, T, generator=g) * 0.3).clamp(max=0.0)
    model.zero_grad()
    trl_loss = tr._compute_loss(model, dict(inputs))
    trl_loss.backward()
    trl_grads = [p.grad.clone() for p in model.parameters()]
    m = {k: v[-1] for k, v in tr._metrics["eval"].items()}
    model.zero_grad()
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    am = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    logps = token_logprobs(model(input_ids=ids, attention_mask=am).logits[:, P - 1 : -1], inputs["completion_ids"])
    loss, metrics = ours_fn(logps, inputs)
    loss.backward()
    assert loss.item() == pytest.approx(trl_loss.item(), rel=1e-4, abs=1e-6)
    for a, b in zip(model.parameters(), trl_grads):
        assert torch.allclose(a.grad, b, rtol=1e-3, atol=1e-6)
    return metrics, m


@pytest.mark.parametrize("eps_low,eps_high", [(0.05, 0.08), (3e-4, 4e-4)])
def test_gspo_matches_trl_sequence_level(model_path, eps_low, eps_high):
    tr = make_trainer(model_path, loss_type="grpo", importance_sampling_level="sequence", beta=0.0, epsilon=eps_low, epsilon_high=eps_high)
    _compare(tr, lambda lp, x: gspo_loss(lp, x["old_per_token_logps"], x["advantages"], x["completion_mask"], eps_low, eps_high), seed=5)


@pytest.mark.parametrize("cap", [1.05, 5.0])
def test_cispo_matches_trl(model_path, cap):
    tr = make_trainer(model_path, loss_type="cispo", beta=0.0, epsilon_high=cap)
    ours, theirs = _compare(tr, lambda lp, x: cispo_loss(lp, x["old_per_token_logps"], x["advantages"], x["completion_mask"], cap,
                                                         num_items_in_batch=float(x["num_items_in_batch"])), seed=9)
    assert ours["cispo_clip_ratio"] == pytest.approx(theirs["cispo_clip_ratio"], abs=1e-6)
