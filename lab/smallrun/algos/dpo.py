"""DPO: −log σ(β[(log π − log π_ref)(y⁺) − (log π − log π_ref)(y⁻)]) over preference pairs (lab.dpo.dpo_loss).

Rafailov et al. 2023, §4, eq. 7 [ftip-003R]. Pairs come from a preference ``--data`` file or from the
verifier: a verified-correct and an incorrect completion sampled from the starting policy for the same prompt.
Metrics as TRL's DPOTrainer names them (``rewards/chosen``, ``rewards/rejected``, ``rewards/margins``,
``rewards/accuracies``, ``logps/chosen``, ``logps/rejected``); the headline is held-out preference accuracy.
"""

from __future__ import annotations

import json

import torch

from lab.dpo import dpo_loss, dpo_metrics
from lab.smallrun import rundir
from lab.smallrun.algos.base import Algorithm
from lab.smallrun.data import load_jsonl
from lab.smallrun.decoding import completion_logps, sample
from lab.smallrun.rewardmodel import RewardSource
from lab.smallrun.tasks import Example


class DPO(Algorithm):
    name = "dpo"
    metric = "eval/preference_accuracy"
    needs_base_stage = True

    def prepare(self, ctx, resume: bool) -> None:
        self.ctx, self.cfg = ctx, ctx.cfg
        self.policy, self.tokenizer = ctx.load_policy()
        self.ref = ctx.frozen_copy(self.policy)  # π_ref: the starting policy, frozen
        self._heldout_ref = None  # the reference is frozen: its held-out log-probs are computed once
        self.reward_source = RewardSource(ctx)  # --reward-model: it ranks the training candidates instead of the verifier
        self.pairs, self.heldout_pairs = self._pairs(resume)

    # -- pairs ---------------------------------------------------------------------------------------

    def build_pairs(self, examples: list[Example], purpose: str, per_prompt: int = 1, rank_by=None) -> list[dict]:
        """Chosen = a verified-correct sample, rejected = an incorrect one, both from the starting policy
        (prompts where every sample agrees give no pair). ``per_prompt`` > 1 (the reward model's data) pairs up to
        that many distinct incorrect samples of a prompt, each with a correct one; 1 gives DPO's one pair per prompt.
        ``rank_by`` (a ``RewardSource``): rank the candidates by a reward model instead of the verifier."""
        ver, k, codec = self.ctx.task.verifier(), self.cfg.dpo_candidates, self.ctx.codec
        g = torch.Generator().manual_seed(self.ctx.step_seed(0, purpose))
        pairs = []
        for i in range(0, len(examples), 32):
            chunk = examples[i : i + 32]
            prompts = [e.prompt for e in chunk for _ in range(k)]
            ids, mask, _ = sample(self.policy, codec, prompts, self.cfg.max_new_tokens, self.cfg.temperature, g)
            texts = codec.decode(ids, mask)
            if rank_by is not None:  # chosen = the distinct candidate the reward model scores highest, rejected = lowest
                s = rank_by.scores(prompts, texts).view(len(chunk), k)
                for j, e in enumerate(chunk):
                    best, worst = int(s[j].argmax()), int(s[j].argmin())
                    if texts[j * k + best] != texts[j * k + worst]:
                        pairs.append({"prompt": e.prompt, "chosen": texts[j * k + best], "rejected": texts[j * k + worst]})
                continue
            for j, e in enumerate(chunk):
                cands = texts[j * k : (j + 1) * k]
                dec = [ver.verify(e.prompt, c, answer=e.answer).decision for c in cands]
                good = [c for c, d in zip(cands, dec) if d]
                bad = list(dict.fromkeys(c for c, d in zip(cands, dec) if c and not d))  # distinct, in sampling order
                if good:
                    pairs += [{"prompt": e.prompt, "chosen": good[q % len(good)], "rejected": b} for q, b in enumerate(bad[:per_prompt])]
        return pairs

    def pair_counts(self) -> tuple[int, int, int]:
        """(prompts sampled, pairs per prompt, most pairs kept) for verifier-built training pairs."""
        return self.cfg.dpo_pairs * 3, 1, self.cfg.dpo_pairs

    def _pairs(self, resume: bool) -> tuple[list[dict], list[dict]]:
        train_f, held_f = self.ctx.out / "pairs.jsonl", self.ctx.out / "heldout_pairs.jsonl"
        if resume and train_f.exists():
            # a weak starting policy may give no held-out pair at all: an empty file is an empty list, not an error
            held = load_jsonl(held_f, "preference") if held_f.read_text(encoding="utf-8").strip() else []
            return load_jsonl(train_f, "preference"), held
        if self.ctx.records is not None:
            pairs = self.ctx.records
        else:
            n_prompts, per_prompt, cap = self.pair_counts()
            ex = self.ctx.task.sample(n_prompts, seed=self.ctx.step_seed(0, "dpo-prompts"))
            pairs = self.build_pairs(ex, "dpo-train", per_prompt, rank_by=self.reward_source or None)[:cap]
        held = self.build_pairs(self.ctx.task.heldout(self.cfg.eval_size * 2), "dpo-heldout")[: self.cfg.eval_size]
        if not pairs:
            raise ValueError("no DPO pairs: the starting policy never produced both a correct and an incorrect answer; "
                             "train the base stage longer (base_steps) or pass a preference --data file")
        for f, rows in ((train_f, pairs), (held_f, held)):
            rundir.atomic_write_text(f, "".join(json.dumps(r) + "\n" for r in rows))
        return pairs, held

    def pair_logps(self, model, pairs: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequence log-probs (N,) of chosen and of rejected, in one forward pass (TRL's [chosen; rejected] layout)."""
        codec = self.ctx.codec
        pids, pattn = codec.left_pad([p["prompt"] for p in pairs] * 2)
        cids, cmask = codec.right_pad([p["chosen"] for p in pairs] + [p["rejected"] for p in pairs])
        with self.ctx.autocast():
            lp = completion_logps(model, pids, pattn, cids, cmask)  # (2N, T)
        seq = (lp * cmask).sum(-1)  # (2N,)
        return seq[: len(pairs)], seq[len(pairs):]

    # -- the step ------------------------------------------------------------------------------------

    def step(self, step: int):
        n = len(self.pairs)
        epoch, k = divmod(step * self.cfg.batch_size, n)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(self.ctx.step_seed(epoch, "dpo-order"))).tolist()
        batch = [self.pairs[order[(k + i) % n]] for i in range(min(self.cfg.batch_size, n))]
        self.policy.train()
        c, r = self.pair_logps(self.policy, batch)
        with torch.no_grad():
            rc, rr = self.pair_logps(self.ref, batch)
        losses, cr, rj = dpo_loss(c, r, rc, rr, beta=self.cfg.beta)
        loss = losses.mean()
        self.ctx.optimize(loss)
        samples = {"prompt": batch[0]["prompt"], "chosen": batch[0]["chosen"], "rejected": batch[0]["rejected"],
                   "reward_chosen": float(cr[0]), "reward_rejected": float(rj[0]),
                   "logp_chosen": float(c[0].detach()), "logp_rejected": float(r[0].detach())}
        return {"loss": float(loss.detach()), **dpo_metrics(cr, rj), "logps/chosen": float(c.detach().mean()),
                "logps/rejected": float(r.detach().mean())}, samples

    @torch.no_grad()
    def evaluate(self, greedy=None) -> dict:
        """Held-out preference accuracy (does the policy rank the correct answer higher?) and implicit-reward margins."""
        proxy = self.reward_source.evaluate(self.policy, greedy) if self.reward_source else {}  # --reward-model: eval/proxy_reward
        if not self.heldout_pairs:
            return proxy
        self.policy.eval()
        c, r = self.pair_logps(self.policy, self.heldout_pairs)
        if self._heldout_ref is None:
            self._heldout_ref = self.pair_logps(self.ref, self.heldout_pairs)
        rc, rr = self._heldout_ref
        _, cr, rj = dpo_loss(c, r, rc, rr, beta=self.cfg.beta)  # implicit rewards β·log π/π_ref
        m = dpo_metrics(cr, rj)
        return {"eval/preference_accuracy": float((c > r).float().mean()), "eval/rewards/margins": m["rewards/margins"],
                "eval/rewards/accuracies": m["rewards/accuracies"], **proxy}
