"""GRPO: sample a group per prompt, score it with the verifier, normalise rewards within the group, and take
clipped policy-gradient steps (lab.grpo.group_advantages + lab.grpo.grpo_loss).

Shao et al. 2024, §4.1.2, group-relative advantage [ftip-004D]; DAPO (Yu et al. 2025, §3.1 clip-higher,
§3.3 token-level loss) [ftip-004H, ftip-004J]. Metrics as TRL's GRPOTrainer names them (``reward``,
``reward_std``, ``frac_reward_zero_std``, ``entropy``, ``completions/mean_length``, ``clip_ratio/...``).

The advantage rule is one method, :meth:`GRPO.advantages`; RLOO (``algos/rloo.py``) replaces only that.
"""

from __future__ import annotations

import random

import torch

from lab.grpo import group_advantages, group_stats, grpo_loss
from lab.smallrun.algos.base import Algorithm
from lab.smallrun.decoding import completion_logps, sample
from lab.smallrun.rewardmodel import RewardSource, proxy_eval
from lab.smallrun.tasks import Example


class GRPO(Algorithm):
    name = "grpo"
    metric = "eval/accuracy"
    needs_base_stage = True

    def prepare(self, ctx, resume: bool) -> None:
        self.ctx, self.cfg = ctx, ctx.cfg
        self.policy, self.tokenizer = ctx.load_policy()
        self.verifier = ctx.task.verifier()  # the gold: evaluation and reward/verifier
        self.reward_checker = ctx.task.verifier(self.cfg.reward_verifier)  # the training reward ("hackable": a buggy proxy)
        self.reward_source = RewardSource(ctx)  # --reward-model: the learned reward replaces the verifier's
        proxy_logged = bool(self.reward_source) or self.cfg.reward_verifier != "exact"
        # π_ref, the starting policy frozen: for the KL penalty, and for eval/kl where a proxy is optimized
        self.ref = ctx.frozen_copy(self.policy) if self.cfg.kl_beta > 0 or proxy_logged else None

    def prompts(self, step: int) -> list[Example]:
        """This step's prompts (``batch_size``); they depend only on (seed, step)."""
        seed = self.ctx.step_seed(step, "grpo")
        if self.ctx.records is not None:
            rng, recs = random.Random(seed), self.ctx.records
            return [Example(r["prompt"], r["answer"]) for r in (recs[rng.randrange(len(recs))] for _ in range(self.cfg.batch_size))]
        return self.ctx.task.sample(self.cfg.batch_size, seed=seed)

    def advantages(self, rewards: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """(N,) advantages from (N,) rewards in contiguous groups, and the rule's own metrics."""
        return group_advantages(rewards, self.cfg.group_size, scale=self.cfg.scale), {}

    def step(self, step: int):
        cfg, ctx = self.cfg, self.ctx
        examples = self.prompts(step)
        members = [e for e in examples for _ in range(cfg.group_size)]  # group members contiguous
        prompts = [e.prompt for e in members]
        g = torch.Generator().manual_seed(ctx.step_seed(step, "grpo-sample"))
        comp, cmask, _ = sample(self.policy, ctx.codec, prompts, cfg.max_new_tokens, cfg.temperature, g)  # (N, T) each
        texts = ctx.codec.decode(comp, cmask)
        verified = torch.tensor([float(self.verifier.verify(e.prompt, t, answer=e.answer).decision) for e, t in zip(members, texts)])  # (N,)
        rewards = verified
        if self.cfg.reward_verifier != "exact":  # the buggy checker pays; the exact one is logged beside it
            rewards = torch.tensor([float(self.reward_checker.verify(e.prompt, t, answer=e.answer).decision) for e, t in zip(members, texts)])
        if self.reward_source:  # optimise the proxy; the verifier's reward on the same samples is logged beside it
            rewards = self.reward_source.scores(prompts, texts)
        adv, adv_metrics = self.advantages(rewards)
        adv = adv.to(ctx.device)
        pids, pattn = ctx.codec.left_pad(prompts)
        mask = cmask.float()
        ref_lp = None
        if self.ref is not None and cfg.kl_beta > 0:
            with torch.no_grad():
                ref_lp = completion_logps(self.ref, pids, pattn, comp, cmask, cfg.temperature)
        self.policy.train()
        old_lp = None
        if cfg.num_iterations > 1:  # behaviour log-probs from the training forward under the same autocast, as TRL does:
            with torch.no_grad(), ctx.autocast():  # the first of μ iterations then has ratio exactly 1
                old_lp = completion_logps(self.policy, pids, pattn, comp, cmask, cfg.temperature)  # (N, T)
        iters = []
        for _ in range(cfg.num_iterations):  # μ optimizer steps on the same batch
            with ctx.autocast():
                lp, ent = completion_logps(self.policy, pids, pattn, comp, cmask, cfg.temperature, with_entropy=True)  # (N, T) each
            old = old_lp if old_lp is not None else lp.detach()  # μ = 1: ratio is exactly 1, as in TRL
            loss, m = grpo_loss(lp, old, adv, mask, ref_logps=ref_lp, beta=cfg.kl_beta, epsilon=cfg.epsilon,
                                epsilon_high=cfg.epsilon_high, loss_type=cfg.loss_type, max_completion_length=cfg.max_new_tokens)
            ctx.optimize(loss)
            iters.append({"loss": float(loss.detach()), "entropy": float((ent * mask).sum() / mask.sum()), **m})
        averaged = {k: sum(it[k] for it in iters) / len(iters) for k in iters[0]}  # metrics: mean over the μ iterations
        _, group_std = group_stats(rewards, cfg.group_size)  # (G,)
        grouped = rewards.view(-1, cfg.group_size)  # (G, n)
        zero_spread = grouped.amax(-1) == grouped.amin(-1)  # (G,) exact test: a float std of equal values need not be 0
        n = cfg.group_size
        samples = {"prompt": examples[0].prompt, "answer": examples[0].answer, "completions": texts[:n],
                   "rewards": rewards[:n].tolist(), "advantages": adv[:n].tolist(),
                   "tokens": [[self.tokenizer.decode([t]) for t, k in zip(row, mk) if k] for row, mk in zip(comp[:n].tolist(), cmask[:n].tolist())]}
        metrics = {**averaged, "reward": float(rewards.mean()), "reward_std": float(group_std.mean()),
                   "frac_reward_zero_std": float(zero_spread.float().mean()), "completions/mean_length": float(mask.sum(-1).mean()),
                   **adv_metrics}
        if self.reward_source or self.cfg.reward_verifier != "exact":
            metrics["reward/verifier"] = float(verified.mean())
        return metrics, samples

    def evaluate(self, greedy=None) -> dict:
        return proxy_eval(self.ctx, self.policy, self.ref, self.reward_source, self.reward_checker, greedy)
