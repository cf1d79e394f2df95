"""SFT: next-token cross-entropy on the completion tokens only (lab.sft.sft_loss with lab.sft.loss_mask).

Ouyang et al. 2022 (InstructGPT), §3.5 "Supervised fine-tuning"; the completion-only mask is TRL's
``completion_only_loss``. Metrics as TRL's SFTTrainer names them: ``loss``, ``mean_token_accuracy``, ``num_tokens``.
"""

from __future__ import annotations

import random

import torch

from lab.sft import Segment, loss_mask, sft_loss, token_logprobs
from lab.smallrun.algos.base import Algorithm
from lab.smallrun.data import sft_pairs


class SFT(Algorithm):
    name = "sft"
    metric = "eval/accuracy"

    def prepare(self, ctx, resume: bool) -> None:
        self.ctx, self.cfg = ctx, ctx.cfg
        self.policy, self.tokenizer = ctx.load_policy()
        self.pairs = sft_pairs(ctx.records) if ctx.records is not None else None  # a --data file, else the task

    def batch(self, step: int) -> list[tuple[str, str]]:
        """(prompt, completion) pairs of this step; they depend only on (seed, step)."""
        seed = self.ctx.step_seed(step, "sft")
        if self.pairs is not None:
            rng = random.Random(seed)
            return [self.pairs[rng.randrange(len(self.pairs))] for _ in range(self.cfg.batch_size)]
        return [(e.prompt, e.answer) for e in self.ctx.task.sample(self.cfg.batch_size, seed=seed)]

    def step(self, step: int):
        codec = self.ctx.codec
        pairs = self.batch(step)
        # completion-only loss mask from role-tagged segments: the prompt is context only
        segs = [[Segment("user", codec.ids(p)), Segment("assistant", codec.ids(c) + [codec.eos])] for p, c in pairs]
        batch = loss_mask(segs, mode="completion", pad_token=codec.pad)
        ids = torch.tensor(batch.tokens, dtype=torch.long, device=self.ctx.device)  # (B, L)
        attn = batch.attention_mask.to(self.ctx.device).long()  # (B, L)
        mask = batch.loss_mask.to(self.ctx.device)[:, 1:]  # (B, L-1) targets are the next tokens
        self.policy.train()
        with self.ctx.autocast():
            logits = self.policy(input_ids=ids, attention_mask=attn).logits[:, :-1].float()  # (B, L-1, V)
        lp = token_logprobs(logits, ids[:, 1:])  # (B, L-1)
        loss = sft_loss(lp, mask.to(lp.dtype), normalization="token")
        self.ctx.optimize(loss)
        acc = ((logits.detach().argmax(-1) == ids[:, 1:]).float() * mask).sum() / mask.sum()
        return {"loss": float(loss.detach()), "mean_token_accuracy": float(acc), "num_tokens": int(mask.sum())}, None
