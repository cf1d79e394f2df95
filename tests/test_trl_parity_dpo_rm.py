"""Parity with TRL 1.16's own trainer code: DPO sigmoid loss and reward metrics, reward-model loss.

The trainers are real (tiny local GPT-2, real tokenizer); random and extreme values enter through the
trainers' own inputs: precomputed reference log-probs for DPO, margins for the reward model.
"""

import tempfile

import pytest
import torch

from lab.dpo import dpo_loss, dpo_metrics
from lab.preference import reward_model_loss
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
def dpo_trainer_factory():
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    tok = H.tokenizer()
    path = H.saved_tiny_model(seed=0)
    ref_path = H.saved_tiny_model(seed=1)
    from transformers import AutoModelForCausalLM

    def make(beta):
        args = DPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4, report_to=[], beta=beta,
                         use_cpu=True, bf16=False, precompute_ref_log_probs=True)
        return DPOTrainer(model=AutoModelForCausalLM.from_pretrained(path), ref_model=AutoModelForCausalLM.from_pretrained(ref_path),
                          args=args, train_dataset=Dataset.from_list(PAIRS), processing_class=tok)

    return make


@pytest.mark.parametrize("beta,scale", [(0.1, 1.0), (0.5, 5.0), (2.0, 60.0)])
def test_dpo_sigmoid_loss_and_reward_metrics_match_trl(dpo_trainer_factory, beta, scale):
    tr = dpo_trainer_factory(beta)
    batch = next(iter(tr.get_train_dataloader()))
    g = torch.Generator().manual_seed(int(beta * 10))
    # random reference log-probs; scale=60 gives extreme margins (|beta * Delta| up to ~100)
    batch["ref_chosen_logps"] = -torch.rand(4, generator=g) * scale
    batch["ref_rejected_logps"] = -torch.rand(4, generator=g) * scale
    model = tr.model
    model.train()  # dropout is 0 in the tiny model; train mode only selects TRL's metric bucket
    model.zero_grad()
    trl_loss = tr.compute_loss(model, dict(batch))
    trl_loss.backward()
    trl_grads = [p.grad.clone() for p in model.parameters()]
    m = {k: v[-1] for k, v in tr._metrics["train"].items()}

    model.zero_grad()
    logps = H.sequence_logprobs(model, batch["input_ids"], batch["attention_mask"], batch["completion_mask"])
    chosen, rejected = logps.chunk(2)  # TRL stacks [chosen; rejected]
    losses, rc, rr = dpo_loss(chosen, rejected, batch["ref_chosen_logps"], batch["ref_rejected_logps"], beta=beta)
    losses.mean().backward()
    ours = dpo_metrics(rc, rr)

    assert losses.mean().item() == pytest.approx(trl_loss.item(), rel=1e-5, abs=1e-6)
    for key in ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies"):
        assert ours[key] == pytest.approx(m[key], rel=1e-5, abs=1e-5), key
    for a, b in zip(model.parameters(), trl_grads):
        assert torch.allclose(a.grad, b, rtol=1e-4, atol=1e-6)


@pytest.fixture(scope="module")
def reward_trainer():
    from datasets import Dataset
    from transformers import GPT2Config, GPT2ForSequenceClassification
    from trl import RewardConfig, RewardTrainer

    tok = H.tokenizer()
    torch.manual_seed(0)
    rm = GPT2ForSequenceClassification(GPT2Config(vocab_size=len(tok), n_layer=1, n_head=2, n_embd=32, n_positions=64,
                                                  num_labels=1, pad_token_id=tok.pad_token_id))
    ds = Dataset.from_list([{"chosen": p["prompt"] + p["chosen"], "rejected": p["prompt"] + p["rejected"]} for p in PAIRS])
    args = RewardConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4, report_to=[], use_cpu=True, bf16=False)
    return RewardTrainer(model=rm, args=args, train_dataset=ds, processing_class=tok)


@pytest.mark.parametrize("margin_scale", [None, 1.0, 500.0])
def test_reward_model_loss_matches_trl(reward_trainer, margin_scale):
    tr = reward_trainer
    batch = dict(next(iter(tr.get_train_dataloader())))
    if margin_scale is not None:
        batch["margin"] = torch.randn(4, generator=torch.Generator().manual_seed(3)) * margin_scale
    with torch.no_grad():
        trl_loss = tr.compute_loss(tr.model, dict(batch))
        scores = tr.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.squeeze(-1)
    rc, rr = scores.chunk(2)
    ours = reward_model_loss(rc, rr, margin=batch.get("margin"))
    assert torch.isfinite(ours)
    assert ours.item() == pytest.approx(trl_loss.item(), rel=1e-5, abs=1e-6)
