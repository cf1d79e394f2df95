"""Parity with TRL 1.16's GRPOTrainer code: group advantages (from a real generation step) and the loss.

The trainer is real (tiny local GPT-2, real tokenizer). Advantages: TRL generates completions and calls
a reward function that returns prescribed random rewards; we compare the advantages it computes.
Loss: TRL's `_compute_loss` receives random old/reference log-probs, advantages and masks; we compare
loss, the `kl` and clip metrics, and the gradient with lab.grpo.grpo_loss on log-probs computed by
lab.sft.token_logprobs from the same model.
"""

import tempfile

import pytest
import torch

from lab.grpo import group_advantages, grpo_loss
from lab.sft import token_logprobs
from tests import trl_helpers as H

pytest.importorskip("trl")
H.quiet()

B, P, T = 8, 4, 6


@pytest.fixture(scope="module")
def model_path():
    return H.saved_tiny_model(seed=0)


def make_trainer(model_path, **kw):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    rewards = kw.pop("rewards", None)

    def reward_fn(completions, **_):
        return [float(x) for x in rewards[: len(completions)]] if rewards is not None else [0.0] * len(completions)

    args = GRPOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=B, num_generations=kw.pop("num_generations", 4),
                      max_completion_length=T, report_to=[], use_cpu=True, seed=0, bf16=False, **kw)
    ds = Dataset.from_list([{"prompt": p} for p in ["1+1=", "2+5=", "9+9=", "3+4="]])
    return GRPOTrainer(model=model_path, reward_funcs=[reward_fn], args=args, train_dataset=ds, processing_class=H.tokenizer())


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
@pytest.mark.parametrize("pattern", ["random", "all_equal_group"])
def test_group_advantages_match_trl(model_path, scale, pattern):
    g = torch.Generator().manual_seed(7)
    rewards = torch.randn(B, generator=g)
    if pattern == "all_equal_group":
        rewards[:4] = 0.5  # one prompt whose group has zero spread
    tr = make_trainer(model_path, rewards=rewards.tolist(), scale_rewards=scale)
    tr.model.train()
    inputs = [{"prompt": p} for p in ["1+1="] * 4 + ["2+5="] * 4]
    out = tr._generate_and_score_completions(inputs)
    ours = group_advantages(rewards, group_size=4, scale=scale)
    assert torch.allclose(out["advantages"].float(), ours.float(), atol=1e-5, rtol=1e-5)
    if pattern == "all_equal_group":
        assert ours[:4].abs().max().item() == 0.0


def random_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    mask = torch.ones(B, T, dtype=torch.long)
    for i, n in enumerate(torch.randint(1, T + 1, (B,), generator=g).tolist()):
        mask[i, n:] = 0
    return dict(
        prompt_ids=torch.randint(3, 60, (B, P), generator=g), prompt_mask=torch.ones(B, P, dtype=torch.long),
        completion_ids=torch.randint(3, 60, (B, T), generator=g), completion_mask=mask,
        advantages=torch.randn(B, generator=g) * 2,
        num_items_in_batch=mask.sum().float(),
    )


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize("beta,bias_correction", [(0.0, False), (0.04, False), (0.04, True)])
def test_grpo_loss_and_gradient_match_trl(model_path, loss_type, beta, bias_correction):
    tr = make_trainer(model_path, loss_type=loss_type, beta=beta, epsilon=0.2, epsilon_high=0.28, use_bias_correction_kl=bias_correction)
    model = tr.model
    model.eval()  # eval mode: no gradient-accumulation scaling in TRL; dropout is 0 in the tiny model anyway
    inputs = random_inputs(seed=hash((loss_type, beta)) % 1000)
    with torch.no_grad():  # old and reference log-probs: the model's own, perturbed so ratios cross both clip edges
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
        logits = model(input_ids=ids).logits[:, P - 1 : -1]
        base = token_logprobs(logits, inputs["completion_ids"])
        g = torch.Generator().manual_seed(11)
        inputs["old_per_token_logps"] = (base + torch.randn(B, T, generator=g) * 0.3).clamp(max=0.0)
        inputs["ref_per_token_logps"] = (base + torch.randn(B, T, generator=g) * 0.5).clamp(max=0.0)

    model.zero_grad()
    trl_loss = tr._compute_loss(model, dict(inputs))
    trl_loss.backward()
    trl_grads = [p.grad.clone() for p in model.parameters()]
    m = {k: v[-1] for k, v in tr._metrics["eval"].items()}

    model.zero_grad()
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    am = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    logps = token_logprobs(model(input_ids=ids, attention_mask=am).logits[:, P - 1 : -1], inputs["completion_ids"])  # (B, T)
    loss, ours = grpo_loss(logps, inputs["old_per_token_logps"], inputs["advantages"], inputs["completion_mask"],
                           ref_logps=inputs["ref_per_token_logps"] if beta else None, beta=beta, epsilon=0.2, epsilon_high=0.28,
                           loss_type=loss_type, max_completion_length=T, kl_bias_correction=bias_correction, num_items_in_batch=float(inputs["num_items_in_batch"]))
    loss.backward()

    assert loss.item() == pytest.approx(trl_loss.item(), rel=1e-4, abs=1e-6)
    for key in ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean") + (("kl",) if beta else ()):
        assert ours[key] == pytest.approx(m[key], rel=1e-4, abs=1e-6), key
    assert ours["clip_ratio/region_mean"] > 0  # the test really exercises clipping
    for a, b in zip(model.parameters(), trl_grads):
        assert torch.allclose(a.grad, b, rtol=1e-3, atol=1e-6)
