"""Reward model: a scalar head on the base policy's backbone, trained on preference pairs with the Bradley–Terry loss.

Ouyang et al. 2022, §3.5, eq. 1 [ftip-002R; Bradley–Terry ftip-002Q]: loss = −log σ(r(x, y⁺) − r(x, y⁻)),
``lab.preference.reward_model_loss``. The model is ``transformers``' sequence-classification head with one label
(``GPT2ForSequenceClassification`` for the tiny GPT-2), its backbone copied from the base SFT stage's policy and
its score head new, so ``final/`` loads with ``AutoModelForSequenceClassification.from_pretrained``. The score of
(prompt, response) is the head at the last real token of prompt + response + eos (``rewardmodel.sequence_scores``).

Pairs are built as DPO's are (the same builder, ``DPO.build_pairs``): chosen = a verified-correct sample, rejected =
an incorrect one, from the starting policy; here up to ``rm_pairs_per_prompt`` distinct incorrect samples per prompt.
Or a preference ``--data`` file in TRL's format. Metrics as TRL's ``RewardTrainer`` names them (``loss``,
``accuracy``, ``margin``); held-out ``eval/preference_accuracy`` and ``eval/rewards/margins``.
"""

from __future__ import annotations

import torch

from lab.preference import reward_model_loss
from lab.smallrun.algos.dpo import DPO
from lab.smallrun.rewardmodel import scalar_head_model, sequence_scores


class RewardModel(DPO):
    name = "rm"
    metric = "eval/preference_accuracy"
    needs_base_stage = True
    greedy_eval = False  # a reward model writes nothing to decode

    def prepare(self, ctx, resume: bool) -> None:
        self.ctx, self.cfg = ctx, ctx.cfg
        self.policy, self.tokenizer = ctx.load_policy()  # the base policy: it samples the pairs and gives the backbone
        self.reward_source = None  # a reward model learns from the verifier's pairs (or --data), never from another one
        self.pairs, self.heldout_pairs = self._pairs(resume)
        self.rm = scalar_head_model(self.policy, seed=self.cfg.seed)  # backbone copied, score head new
        self.policy = None  # not trained and not needed again: free it

    def pair_counts(self) -> tuple[int, int, int]:
        return self.cfg.rm_prompts, self.cfg.rm_pairs_per_prompt, self.cfg.rm_prompts * self.cfg.rm_pairs_per_prompt

    def build_pairs(self, examples, purpose: str, per_prompt: int = 1, rank_by=None) -> list[dict]:
        """DPO's verifier-built pairs; with ``rm_bias="length"`` the *training* pairs drop every pair whose chosen answer
        is shorter than the rejected one. The reward model then never sees a longer answer lose, and nothing stops it
        from scoring length up: a proxy with a planted, exploitable error (issue 16's over-optimization demo). Held-out
        pairs stay unbiased, so its held-out accuracy shows the error. Measured (README): RL against it wrote longer
        answers on seed 0 only; on seeds 1 and 2 the policy found other errors of the proxy, at unchanged length.

        (Keeping only strictly longer chosen answers would leave almost nothing on reversal: measured on seeds 0–2,
        the pairs from 4096 prompts split 257 / 9503 / 1026, 1226 / 7106 / 701 and 175 / 7504 / 365 into chosen
        longer / equal / shorter; this rule drops the last group, 4–10 % of the pairs.)"""
        pairs = super().build_pairs(examples, purpose, per_prompt, rank_by)
        if self.cfg.rm_bias == "length" and purpose == "dpo-train":
            pairs = [p for p in pairs if len(p["chosen"]) >= len(p["rejected"])]
        return pairs

    def trained(self) -> dict[str, torch.nn.Module]:
        return {"model": self.rm}

    def scores(self, pairs: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
        """r(x, y⁺), r(x, y⁻): (N,) each, from one forward pass over [chosen; rejected]."""
        codec = self.ctx.codec
        pids, pattn = codec.left_pad([p["prompt"] for p in pairs] * 2)
        cids, cmask = codec.right_pad([p["chosen"] for p in pairs] + [p["rejected"] for p in pairs])  # each + eos
        with self.ctx.autocast():
            s = sequence_scores(self.rm, pids, pattn, cids, cmask)  # (2N,)
        return s[: len(pairs)], s[len(pairs):]

    def step(self, step: int):
        n = len(self.pairs)
        epoch, k = divmod(step * self.cfg.batch_size, n)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(self.ctx.step_seed(epoch, "rm-order"))).tolist()
        batch = [self.pairs[order[(k + i) % n]] for i in range(min(self.cfg.batch_size, n))]
        self.rm.train()
        rc, rr = self.scores(batch)
        loss = reward_model_loss(rc, rr)
        self.ctx.optimize(loss)
        d = (rc - rr).detach()
        samples = {"prompt": batch[0]["prompt"], "chosen": batch[0]["chosen"], "rejected": batch[0]["rejected"],
                   "score_chosen": float(rc[0].detach()), "score_rejected": float(rr[0].detach())}
        return {"loss": float(loss.detach()), "accuracy": float((d > 0).float().mean()), "margin": float(d.mean()),
                "rewards/chosen": float(rc.detach().mean()), "rewards/rejected": float(rr.detach().mean())}, samples

    @torch.no_grad()
    def evaluate(self, greedy=None) -> dict:
        """Held-out pairwise accuracy (is the correct answer scored higher?) and the mean score margin."""
        if not self.heldout_pairs:
            return {}
        self.rm.eval()
        rc, rr = [], []
        for i in range(0, len(self.heldout_pairs), 256):
            c, r = self.scores(self.heldout_pairs[i : i + 256])
            rc.append(c)
            rr.append(r)
        d = torch.cat(rc) - torch.cat(rr)
        return {"eval/preference_accuracy": float((d > 0).float().mean()), "eval/rewards/margins": float(d.mean())}
