"""PPO with a value model: the classic RLHF step (Ouyang et al. 2022, §3.5, eq. 2; Schulman et al. 2017).

Per rollout batch [ftip-003A]:

1. sample one completion per prompt from the policy; score it (the task's verifier: 1/0, or ``--reward-model``);
2. behaviour log-probs (a training-mode forward pass, as TRL recomputes them), the frozen reference's log-probs and
   the value model's V(H_t) for every completion token;
3. ``lab.ppo.ppo_advantages``: per-token KL-shaped rewards (``kl_shaped_reward(per_token=True)``, ftip-003D), GAE
   with V = 0 after eos (``lab.rl.gae``, ftip-003E), advantages whitened over the batch's active tokens;
4. ``num_ppo_epochs`` passes over the batch in ``num_mini_batches`` shuffled minibatches, each one optimizer step on
   −``lab.ppo.ppo_objective`` (clipped surrogate ftip-003F + ``vf_coef`` × clipped value loss, ftip-003G).

The value model is a second ``GPT2ForSequenceClassification`` (one label) read on every hidden state
(``rewardmodel.token_values``), initialised from the base policy, or from the reward model when one is given (as
TRL does). It is saved beside the policy in every checkpoint (``value.safetensors``), so resume is exact.

Metrics as TRL's PPO trainer names them: ``objective/kl``, ``objective/scores``, ``objective/non_score_reward``,
``objective/rlhf_reward``, ``policy/approxkl_avg``, ``policy/clipfrac_avg``, ``loss/policy_avg``, ``loss/value_avg``,
``val/clipfrac_avg``, ``policy/entropy_avg``, plus ``val/explained_variance`` (CleanRL), ``reward`` and, with a
reward model, ``reward/verifier``.
"""

from __future__ import annotations

import random

import torch

from lab.ppo import ppo_advantages, ppo_objective
from lab.rl import explained_variance
from lab.smallrun.algos.base import Algorithm
from lab.smallrun.decoding import completion_logps, sample
from lab.smallrun.rewardmodel import RewardSource, load_reward_model, proxy_eval, scalar_head_model, token_values
from lab.smallrun.tasks import Example


class PPO(Algorithm):
    name = "ppo"
    metric = "eval/accuracy"
    needs_base_stage = True

    def prepare(self, ctx, resume: bool) -> None:
        self.ctx, self.cfg = ctx, ctx.cfg
        self.policy, self.tokenizer = ctx.load_policy()
        self.ref = ctx.frozen_copy(self.policy)  # π_ref: the starting policy, frozen (the KL penalty's anchor)
        self.verifier = ctx.task.verifier()  # the gold: evaluation and reward/verifier
        self.reward_checker = ctx.task.verifier(self.cfg.reward_verifier)  # the training reward ("hackable": a buggy proxy)
        self.reward_model = RewardSource(ctx)
        if self.cfg.reward_model:  # the value model starts from the reward model, as TRL's PPO does
            self.value = load_reward_model(self.cfg.reward_model, ctx.device, trainable=True)
        else:
            self.value = scalar_head_model(self.policy, seed=self.cfg.seed)

    def trained(self) -> dict[str, torch.nn.Module]:
        return {"model": self.policy, "value": self.value}

    def prompts(self, step: int) -> list[Example]:
        """This step's prompts (``batch_size``); they depend only on (seed, step)."""
        seed = self.ctx.step_seed(step, "ppo")
        if self.ctx.records is not None:
            rng, recs = random.Random(seed), self.ctx.records
            return [Example(r["prompt"], r["answer"]) for r in (recs[rng.randrange(len(recs))] for _ in range(self.cfg.batch_size))]
        return self.ctx.task.sample(self.cfg.batch_size, seed=seed)

    def step(self, step: int):
        cfg, ctx = self.cfg, self.ctx
        examples = self.prompts(step)
        prompts = [e.prompt for e in examples]
        g = torch.Generator().manual_seed(ctx.step_seed(step, "ppo-sample"))
        comp, cmask, _ = sample(self.policy, ctx.codec, prompts, cfg.max_new_tokens, cfg.temperature, g)  # (B, T) each
        texts = ctx.codec.decode(comp, cmask)
        verified = torch.tensor([float(self.verifier.verify(e.prompt, t, answer=e.answer).decision) for e, t in zip(examples, texts)])  # (B,)
        scores = self.reward_model.scores(prompts, texts) if self.reward_model else verified  # (B,) what PPO maximises
        if self.cfg.reward_verifier != "exact":  # the buggy checker pays; the exact one is logged beside it
            scores = torch.tensor([float(self.reward_checker.verify(e.prompt, t, answer=e.answer).decision) for e, t in zip(examples, texts)])
        pids, pattn = ctx.codec.left_pad(prompts)
        mask = cmask.float()  # (B, T): completion tokens up to and including eos
        self.policy.train()
        self.value.train()
        with torch.no_grad(), ctx.autocast():  # the rollout's fixed quantities
            old_lp = completion_logps(self.policy, pids, pattn, comp, cmask, cfg.temperature)  # (B, T) behaviour log-probs
            ref_lp = completion_logps(self.ref, pids, pattn, comp, cmask, cfg.temperature)  # (B, T)
            old_v = token_values(self.value, pids, pattn, comp, cmask)  # (B, T) V(H_t)
        rewards, adv, returns = ppo_advantages(scores.to(old_lp), old_lp, ref_lp, old_v, mask, kl_coef=cfg.kl_coef, gamma=cfg.gamma,
                                               lam=cfg.lam, whiten=cfg.whiten_advantages and bool(mask.sum() >= 2))  # (B, T) each, 0 after eos
        # (whitening needs two active tokens for its Bessel-corrected variance; one lone token is left unwhitened)
        kl_seq = ((old_lp - ref_lp) * mask).sum(-1)  # (B,) k1 estimate of KL(π‖π_ref) per sequence, as TRL logs it
        ms: list[dict] = []
        B = len(prompts)
        for epoch in range(cfg.num_ppo_epochs):
            perm = torch.randperm(B, generator=torch.Generator().manual_seed(ctx.step_seed(step, f"ppo-minibatch-{epoch}")))
            for idx in perm.to(ctx.device).chunk(cfg.num_mini_batches):
                with ctx.autocast():
                    lp, ent = completion_logps(self.policy, pids[idx], pattn[idx], comp[idx], cmask[idx], cfg.temperature, with_entropy=True)
                    v = token_values(self.value, pids[idx], pattn[idx], comp[idx], cmask[idx])  # (b, T)
                objective, m = ppo_objective(lp, old_lp[idx], adv[idx], mask[idx], epsilon=cfg.epsilon, epsilon_high=cfg.epsilon_high,
                                             values=v, value_targets=returns[idx], c1=cfg.vf_coef, entropy=ent, c2=0.0,
                                             old_values=old_v[idx], value_clip=cfg.cliprange_value)
                ctx.optimize(-objective)
                ms.append(m)
        mean = lambda k: sum(x[k] for x in ms) / len(ms)  # averaged over every minibatch of every epoch, as TRL does
        n = min(4, B)
        samples = {"prompt": examples[0].prompt, "answer": examples[0].answer, "completions": texts[:n], "scores": scores[:n].tolist(),
                   "tokens": [[self.tokenizer.decode([t]) for t, k in zip(row, mk) if k] for row, mk in zip(comp[:n].tolist(), cmask[:n].tolist())],
                   "advantages": [row[: int(k)] for row, k in zip(adv[:n].tolist(), mask[:n].sum(-1).tolist())],
                   "values": [row[: int(k)] for row, k in zip(old_v[:n].tolist(), mask[:n].sum(-1).tolist())]}
        metrics = {"objective/kl": float(kl_seq.mean()), "objective/scores": float(scores.mean()),
                   "objective/non_score_reward": float((-cfg.kl_coef * kl_seq).mean()),
                   "objective/rlhf_reward": float((scores.to(kl_seq) - cfg.kl_coef * kl_seq).mean()),
                   "policy/approxkl_avg": mean("approx_kl"), "policy/clipfrac_avg": mean("clipfrac"),
                   "loss/policy_avg": -mean("objective/clipped_surrogate"), "loss/value_avg": mean("loss/value"),
                   "val/clipfrac_avg": mean("vf_clipfrac"), "policy/entropy_avg": mean("entropy"),
                   "val/explained_variance": explained_variance(old_v, returns, mask, if_constant=0.0),
                   "reward": float(scores.mean()), "completions/mean_length": float(mask.sum(-1).mean())}
        if self.reward_model or self.cfg.reward_verifier != "exact":
            metrics["reward/verifier"] = float(verified.mean())  # the gold reward on the same samples
        return metrics, samples

    def evaluate(self, greedy=None) -> dict:
        return proxy_eval(self.ctx, self.policy, self.ref, self.reward_model, self.reward_checker, greedy)
