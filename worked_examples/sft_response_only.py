"""Response-only supervision on one instruction record [ftip-002H] (overview: the USER ping / ASSISTANT OK END strip)."""

import math

import torch

from lab.sft import Segment, loss_mask, sft_loss

ID = "sft-response-only"
FTIP = "ftip-002H"
SOURCE = "definitions ftip-002H; overview, 'Supervised fine-tuning from desired responses'"
INPUTS = {
    # the overview's strip; the ASSISTANT role marker is a template token: context, not a target
    "segments": [("user", ["USER", "ping", "ASSISTANT"]), ("assistant", ["OK", "END"])],
    # probability the model gives each token as the next token; only OK and END are supervised
    "probs": [1.0, 1.0, 1.0, 0.5, 0.25],
    "supervised": ["OK", "END"],
}
EXPECTED = [math.log(8), 0.5 * math.log(8)]  # [L_sum, L_mean] ≈ [2.079, 1.040]
TOLERANCE = 1e-9


def _batch():
    ex = [Segment(role, tokens) for role, tokens in INPUTS["segments"]]  # exactly the declared inputs
    batch = loss_mask([ex], mode="completion")
    logps = torch.log(torch.tensor([INPUTS["probs"]], dtype=torch.float64))  # (1, 5)
    return batch, logps


def compute() -> list[float]:
    batch, logps = _batch()
    return [float(sft_loss(logps, batch.loss_mask, "sum")), float(sft_loss(logps, batch.loss_mask, "token"))]


def explain() -> str:
    batch, _ = _batch()
    toks = batch.tokens[0]
    sel = [t for t, m in zip(toks, batch.loss_mask[0].tolist()) if m]
    s, mean = compute()
    return (
        f"tokens {toks}; loss mask {batch.loss_mask[0].int().tolist()} (context: all {int(batch.attention_mask.sum())} tokens)\n"
        f"supervised {sel}: L_sum = -log 1/2 - log 1/4 = log 8 = {s:.4f}; L_mean = L_sum / 2 = {mean:.4f}"
    )
