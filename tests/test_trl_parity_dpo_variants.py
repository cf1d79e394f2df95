"""Parity with TRL 1.16 for the direct-alignment variants.

IPO, hinge and robust DPO run through a real ``DPOTrainer`` around a tiny local GPT-2 (loss and parameter
gradients). SimPO / smoothed sigmoid (CPO) and ORPO's odds-ratio term live in ``trl.experimental``: their loss
methods are called directly with TRL's own code and only the attributes they read.
"""

import math
import tempfile
from types import SimpleNamespace

import pytest
import torch

from lab import dpo
from tests import trl_helpers as H

pytest.importorskip("trl")
H.quiet()

PAIRS = [
    {"prompt": "1+1=", "chosen": "2", "rejected": "3"},
    {"prompt": "2+5=", "chosen": "7", "rejected": "12"},
    {"prompt": "9+9=", "chosen": "18", "rejected": "81"},
    {"prompt": "3+4=", "chosen": "7", "rejected": "8"},
]


@pytest.fixture(scope="module")
def factory():
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import DPOConfig, DPOTrainer

    tok = H.tokenizer()
    path, ref_path = H.saved_tiny_model(seed=0), H.saved_tiny_model(seed=1)

    def make(loss_type, beta, label_smoothing=0.0):
        args = DPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4, report_to=[], beta=beta, loss_type=[loss_type],
                         label_smoothing=label_smoothing, use_cpu=True, bf16=False, precompute_ref_log_probs=True)
        return DPOTrainer(model=AutoModelForCausalLM.from_pretrained(path), ref_model=AutoModelForCausalLM.from_pretrained(ref_path),
                          args=args, train_dataset=Dataset.from_list(PAIRS), processing_class=tok)

    return make


@pytest.mark.parametrize("loss_type,beta,smoothing,scale", [("ipo", 0.1, 0.0, 1.0), ("ipo", 0.5, 0.0, 20.0), ("hinge", 0.1, 0.0, 5.0),
                                                            ("hinge", 2.0, 0.0, 1.0), ("robust", 0.5, 0.1, 5.0), ("robust", 0.1, 0.3, 30.0)])
def test_dpo_trainer_variants_match(factory, loss_type, beta, smoothing, scale):
    tr = factory(loss_type, beta, smoothing)
    batch = next(iter(tr.get_train_dataloader()))
    g = torch.Generator().manual_seed(int(beta * 100 + scale))
    batch["ref_chosen_logps"] = -torch.rand(4, generator=g) * scale
    batch["ref_rejected_logps"] = -torch.rand(4, generator=g) * scale
    model = tr.model
    model.train()
    model.zero_grad()
    trl_loss = tr.compute_loss(model, dict(batch))
    trl_loss.backward()
    trl_grads = [p.grad.clone() for p in model.parameters()]

    model.zero_grad()
    logps = H.sequence_logprobs(model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"])
    chosen, rejected = logps.chunk(2)
    refs = (batch["ref_chosen_logps"], batch["ref_rejected_logps"])
    if loss_type == "ipo":
        n_c, n_r = batch["completion_mask"].sum(1).chunk(2)  # TRL divides each log ratio by its completion length
        ours = dpo.ipo_loss(chosen, rejected, *refs, beta=beta, chosen_lengths=n_c, rejected_lengths=n_r)
    elif loss_type == "hinge":
        ours = dpo.hinge_loss(chosen, rejected, *refs, beta=beta)
    else:
        ours = dpo.robust_dpo_loss(chosen, rejected, *refs, beta=beta, label_smoothing=smoothing)
    ours.mean().backward()
    assert ours.mean().item() == pytest.approx(trl_loss.item(), rel=1e-5, abs=1e-6)
    for a, b in zip(model.parameters(), trl_grads):
        assert torch.allclose(a.grad, b, rtol=1e-4, atol=1e-6)


def _cpo_self(loss_type, beta, label_smoothing, gamma=0.5):
    return SimpleNamespace(alpha=0.0, loss_type=loss_type, beta=beta, label_smoothing=label_smoothing, simpo_gamma=gamma,
                           accelerator=SimpleNamespace(device=torch.device("cpu")))


@pytest.mark.parametrize("beta,gamma,smoothing", [(2.0, 0.5, 0.0), (2.5, 1.4, 0.0), (1.0, 0.0, 0.2)])
def test_simpo_matches_trl_cpo_trainer(beta, gamma, smoothing):
    from trl.experimental.cpo import CPOTrainer

    g = torch.Generator().manual_seed(7)
    seq_c, seq_r = -torch.rand(16, generator=g, dtype=torch.float64) * 40, -torch.rand(16, generator=g, dtype=torch.float64) * 40
    n_c, n_r = torch.randint(1, 30, (16,), generator=g), torch.randint(1, 30, (16,), generator=g)
    # TRL's CPO passes average log-probs when loss_type == "simpo"
    trl_losses, trl_rc, trl_rr = CPOTrainer.cpo_loss(_cpo_self("simpo", beta, smoothing, gamma), seq_c / n_c, seq_r / n_r)
    losses, rc, rr = dpo.simpo_loss(seq_c, seq_r, n_c, n_r, beta=beta, gamma=gamma, label_smoothing=smoothing)
    assert torch.allclose(losses, trl_losses, rtol=1e-12, atol=1e-12)
    assert torch.allclose(rc, trl_rc) and torch.allclose(rr, trl_rr)


@pytest.mark.parametrize("beta,smoothing", [(0.1, 0.1), (0.5, 0.3), (2.0, 0.0)])
def test_cdpo_smoothing_matches_trl_smoothed_sigmoid(beta, smoothing):
    """TRL's smoothed sigmoid (CPO's sigmoid loss with label_smoothing) applied to DPO's log-ratio difference is cDPO."""
    from trl.experimental.cpo import CPOTrainer

    g = torch.Generator().manual_seed(3)
    lp = [-torch.rand(32, generator=g, dtype=torch.float64) * 30 for _ in range(4)]
    trl_losses, _, _ = CPOTrainer.cpo_loss(_cpo_self("sigmoid", beta, smoothing), lp[0] - lp[2], lp[1] - lp[3])
    assert torch.allclose(dpo.cdpo_loss(*lp, beta=beta, label_smoothing=smoothing), trl_losses, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lam", [0.1, 1.0])
def test_orpo_odds_ratio_matches_trl(lam):
    from trl.experimental.orpo import ORPOTrainer

    g = torch.Generator().manual_seed(11)
    c = -torch.rand(32, generator=g) * 5 - 1e-3  # average log-probs < 0
    r = -torch.rand(32, generator=g) * 5 - 1e-3
    trl_terms, _, _, _, trl_log_odds = ORPOTrainer.odds_ratio_loss(
        SimpleNamespace(beta=lam, accelerator=SimpleNamespace(device=torch.device("cpu"))), c, r)
    losses, log_odds = dpo.orpo_odds_ratio_loss(c, r, lam=lam)
    # TRL returns +λ log σ(·) and subtracts its mean from the NLL; the lab returns the loss term −λ log σ(·)
    assert torch.allclose(losses, -trl_terms, rtol=1e-5, atol=1e-6)
    assert log_odds.mean().item() == pytest.approx(trl_log_odds.item(), rel=1e-5)
    assert math.isfinite(losses.sum().item())
