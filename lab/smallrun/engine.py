"""The small-run engine: one training loop shared by SFT, DPO and GRPO, on a tiny GPT-2.

Read top to bottom: device and threads → model and tokenizer → batching and sampling → the three
training steps (each calls the library's own loss: lab.sft, lab.dpo, lab.grpo) → evaluation →
checkpoints and the run ledger → the loop.

Reproducibility: each step's data and sampling depend only on (seed, step), checkpoints hold the model
(safetensors), optimizer, scheduler and RNG states, and are loaded with ``weights_only=True``; a resumed
run therefore continues exactly (bitwise on CPU).

Safety: the whole config is validated before anything is created (``config.validate_environment``);
everything on disk goes through ``lab.smallrun.rundir`` (marker, lock, hash-chained ledger, atomic and
verified checkpoints, the last ``keep`` kept, atomic ``final/``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import random
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Optional

import torch

from lab.dpo import dpo_loss, dpo_metrics
from lab.grpo import group_advantages, group_stats, grpo_loss
from lab.kl import entropy_from_logits
from lab.models import char_tokenizer, tiny_gpt2
from lab.replay import PolicyStamp
from lab.sft import Segment, loss_mask, sft_loss, token_logprobs
from lab.smallrun.config import ALGORITHM_DEFAULTS, MODEL_SIZES, RunConfig, validate_environment
from lab.smallrun import fastgen, rundir
from lab.smallrun.data import load_jsonl, sft_pairs
from lab.smallrun.rundir import ChainLedger, CheckpointWriteError, RunDir, RunDirError
from lab.smallrun.tasks import Example, get_task

Callback = Callable[[dict], None]


def _import_heavy_modules() -> None:
    """Import transformers' lazily-loaded classes now, in the importing (main) thread.

    ``transformers`` resolves its names on first access; two threads that touch it first at the same moment
    (two Starts at once in a fresh Streamlit server) made one fail with ``ImportError: cannot import name
    'PreTrainedTokenizerFast'``. Resolving them once here, before any training thread exists, removes the race.
    """
    import safetensors.torch  # noqa: F401
    import tokenizers  # noqa: F401
    import transformers
    from transformers import (AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel,  # noqa: F401
                              PreTrainedTokenizerFast)


_import_heavy_modules()

# ----------------------------------------------------------------------------- device and threads


def pick_device(name: str = "auto") -> torch.device:
    """cuda → mps → cpu when ``name`` is "auto"."""
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_threads(device: torch.device, requested: int = 0) -> int:
    """Tiny models on a CPU run several times faster on one thread than on two (less sync overhead)."""
    n = requested if requested > 0 else 1
    if device.type == "cpu":
        torch.set_num_threads(n)
    return n


def step_seed(seed: int, step: int, purpose: str) -> int:
    """A seed that depends only on (run seed, step, purpose): resuming at step k replays the same data."""
    return int(hashlib.sha256(f"{seed}:{step}:{purpose}".encode()).hexdigest()[:15], 16)


def versions() -> dict:
    import transformers

    v = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__}
    try:
        v["code_revision"] = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent,
                                            timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        v["code_revision"] = "unknown"
    return v


# ----------------------------------------------------------------------------- batching and sampling


class Codec:
    """Token ids for prompts and completions with a real tokenizer; completions end with eos."""

    def __init__(self, tokenizer, device: torch.device) -> None:
        self.tok, self.device = tokenizer, device
        self.pad, self.eos = tokenizer.pad_token_id, tokenizer.eos_token_id
        self._cache: dict[str, list[int]] = {}

    def ids(self, text: str) -> list[int]:
        """Token ids of ``text`` (cached: the same prompts recur within a group and across steps)."""
        got = self._cache.get(text)
        if got is None:
            got = self._cache[text] = self.tok(text, add_special_tokens=False)["input_ids"]
            if len(self._cache) > 100_000:
                self._cache.clear()
        return got

    def left_pad(self, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, P) prompt ids padded on the left, and their attention mask."""
        rows = [self.ids(p) for p in prompts]
        P = max(len(r) for r in rows)
        ids = torch.full((len(rows), P), self.pad, dtype=torch.long)
        attn = torch.zeros(len(rows), P, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, P - len(r):] = torch.tensor(r)
            attn[i, P - len(r):] = 1
        return ids.to(self.device), attn.to(self.device)

    def right_pad(self, completions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T) completion ids + eos, padded on the right, and their mask."""
        rows = [self.ids(c) + [self.eos] for c in completions]
        T = max(len(r) for r in rows)
        ids = torch.full((len(rows), T), self.pad, dtype=torch.long)
        mask = torch.zeros(len(rows), T, dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1
        return ids.to(self.device), mask.to(self.device)

    def decode(self, ids: torch.Tensor, mask: torch.Tensor) -> list[str]:
        out = []
        for row, m in zip(ids.tolist(), mask.tolist()):
            toks = [t for t, k in zip(row, m) if k and t != self.eos]
            out.append(self.tok.decode(toks))
        return out


def completion_logps(model, prompt_ids, prompt_attn, comp_ids, comp_mask, temperature: float = 1.0, with_entropy: bool = False):
    """log π(completion token | prompt, earlier tokens) for every completion position: (B, T) [and entropy (B, T)]."""
    ids = torch.cat([prompt_ids, comp_ids], 1)  # (B, P+T)
    attn = torch.cat([prompt_attn, comp_mask], 1)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    P = prompt_ids.shape[1]
    logits = model(input_ids=ids, attention_mask=attn, position_ids=pos).logits[:, P - 1 : -1].float() / temperature  # (B, T, V)
    lp = token_logprobs(logits, comp_ids)  # (B, T)
    if with_entropy:
        return lp, entropy_from_logits(logits.detach())
    return lp


@torch.no_grad()
def sample(model, codec: Codec, prompts: list[str], max_new_tokens: int, temperature: float = 1.0,
           generator: Optional[torch.Generator] = None, greedy: bool = False):
    """Autoregressive sampling with a KV cache. Returns (completion ids (B, T), mask (B, T), logps (B, T)).

    The mask covers the sampled tokens up to and including eos; logps are the sampling policy's
    log-probabilities of the sampled tokens at ``temperature`` (the behaviour log-probs of GRPO).
    """
    model.eval()
    fast = fastgen.GPT2Decoder(model) if fastgen.supports(model) else None
    if fast is not None:
        # group members share a prompt: prefill each distinct prompt once, then copy its cache per member
        first = {p: i for i, p in enumerate(dict.fromkeys(prompts))}
        uniq = list(first)
        inv = torch.tensor([first[p] for p in prompts], device=codec.device)
        ids_u, attn_u = codec.left_pad(uniq)
        pos_u = (attn_u.cumsum(-1) - 1).clamp(min=0)
        logits = fast.prefill(ids_u, attn_u, pos_u).float().index_select(0, inv)
        fast.expand(inv)
        ids, attn, pos = ids_u.index_select(0, inv), attn_u.index_select(0, inv), pos_u.index_select(0, inv)
    else:
        ids, attn = codec.left_pad(prompts)
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True)
        past, logits = out.past_key_values, out.logits[:, -1].float()
    B = ids.shape[0]
    toks, logps, masks = [], [], []
    done = torch.zeros(B, dtype=torch.bool, device=ids.device)
    next_pos = pos[:, -1] + 1
    for _ in range(max_new_tokens):
        lp_all = torch.log_softmax(logits / temperature, -1)  # (B, V)
        if greedy:
            tok = lp_all.argmax(-1)
        else:
            tok = torch.multinomial(lp_all.exp().cpu(), 1, generator=generator).squeeze(-1).to(ids.device)
        toks.append(torch.where(done, torch.full_like(tok, codec.pad), tok))
        logps.append(torch.where(done, torch.zeros_like(lp_all[:, 0]), lp_all.gather(-1, tok[:, None]).squeeze(-1)))
        masks.append((~done).long())
        done = done | (tok == codec.eos)
        if bool(done.all()):
            break
        attn = torch.cat([attn, torch.ones(B, 1, dtype=attn.dtype, device=attn.device)], 1)
        if fast is not None:
            logits = fast.step(tok, attn, next_pos).float()
        else:
            out = model(input_ids=tok[:, None], attention_mask=attn, position_ids=next_pos[:, None], past_key_values=past, use_cache=True)
            past, logits = out.past_key_values, out.logits[:, -1].float()
        next_pos = next_pos + 1
    return torch.stack(toks, 1), torch.stack(masks, 1), torch.stack(logps, 1)


# ----------------------------------------------------------------------------- the run


class SmallRun:
    """One run directory: config, checkpoints, ledger; ``run()`` trains until ``steps`` or a stop request.

    ``callback`` receives every event (``{"type": "step" | "eval" | "checkpoint" | "samples" | "done", ...}``);
    the CLI prints them, the web page buffers them. ``stop_event`` (a ``threading.Event``) ends the run after the
    current step with a resumable checkpoint.
    """

    def __init__(self, config: RunConfig, out: str | Path, callback: Optional[Callback] = None,
                 stop_event: Optional[threading.Event] = None, resume: bool = False) -> None:
        self.out = Path(out)
        self.callback = callback or (lambda e: None)
        self.stop_event = stop_event or threading.Event()
        # 1. everything is checked before anything is created: config, device, data, model, context, directory
        config, env = self.preflight(config, self.out, resume)
        self.cfg = config
        self.task = get_task(config.task)
        self.device = env["device"]
        self.records = env["records"]
        # 2. the directory: created with the lab's marker, locked for this writer alone
        self.rundir = RunDir.open(self.out, resume)
        try:
            self.threads = pick_threads(self.device, config.threads)
            self.autocast = self.device.type == "cuda" and config.bf16 and torch.cuda.is_bf16_supported()
            self.ledger = ChainLedger(self.out / rundir.LEDGER)
            self._ledger_records: list[dict] = []
            if resume:  # a tampered ledger is reported before anything is loaded or appended
                self._ledger_records, problems = self.ledger.verify()
                if problems:
                    raise RunDirError(f"ledger: {self.out / rundir.LEDGER} fails its hash chain ({'; '.join(problems[:3])}"
                                      f"{' …' if len(problems) > 3 else ''}); refusing to resume. "
                                      f"See: python -m lab.smallrun verify {self.out}")
            self.step = 0
            self.history: list[dict] = []
            self._versions = versions()
            if not resume:
                rundir.atomic_write_text(self.out / "run_config.json", json.dumps(config.to_dict(), indent=2))
            self._build(resume)
        except BaseException:
            self.rundir.close()
            raise

    @staticmethod
    def preflight(config: RunConfig, out: str | Path, resume: bool = False) -> tuple[RunConfig, dict]:
        """``(config, environment)`` if a run may start (or resume) in ``out``; one clear ``ValueError`` otherwise.
        Creates, locks and changes nothing: the page calls it before starting a background run."""
        out = Path(out)
        if resume:
            RunDir.check(out, resume=True)
            try:
                config = RunConfig.from_dict(json.loads((out / "run_config.json").read_text(encoding="utf-8")))
            except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
                raise ValueError(f"out: {out / 'run_config.json'} is not a valid run config ({exc})") from None
        env = validate_environment(config)
        RunDir.check(out, resume)
        return config, env

    # -- model, tokenizer, optimizer -----------------------------------------------------------------

    def _start_from(self) -> Optional[str]:
        """Where the weights come from: --model, or the base stage's SFT checkpoint for DPO/GRPO."""
        if self.cfg.model:
            return self.cfg.model
        if self.cfg.algorithm == "sft":
            return None
        base = self.out / "base"
        if not (base / rundir.FINAL / rundir.MANIFEST).exists():
            d = ALGORITHM_DEFAULTS["sft"]  # the base stage is a plain SFT run with SFT's own batch size and learning rate
            base_cfg = dataclasses.replace(self.cfg, algorithm="sft", steps=self.cfg.base_steps, data=None, model=None,
                                           batch_size=d["batch_size"], lr=d["lr"], warmup_steps=RunConfig.warmup_steps,
                                           save_every=max(self.cfg.base_steps, 1), eval_every=max(self.cfg.base_steps, 1))
            self.callback({"type": "phase", "phase": "base", "steps": base_cfg.steps})
            resume = (base / "run_config.json").exists() and bool(rundir.complete_checkpoints(base))
            SmallRun(base_cfg, base, callback=lambda e: self.callback({**e, "phase": "base"}), stop_event=self.stop_event, resume=resume).run()
            if self.stop_event.is_set() and not (base / "final").exists():
                raise RuntimeError("stopped during the base stage; resume to continue")
        return str(base / "final")

    def _build(self, resume: bool) -> None:
        torch.manual_seed(self.cfg.seed)
        random.seed(self.cfg.seed)
        src = self._start_from()
        if src is None:
            self.tokenizer = char_tokenizer()
            n_layer, n_head, n_embd = MODEL_SIZES[self.cfg.model_size]
            self.model = tiny_gpt2(len(self.tokenizer), n_layer=n_layer, n_head=n_head, n_embd=n_embd, seed=self.cfg.seed,
                                   pad_token_id=self.tokenizer.pad_token_id, eos_token_id=self.tokenizer.eos_token_id,
                                   bos_token_id=self.tokenizer.bos_token_id)
        else:
            self.model, self.tokenizer = rundir.load_pretrained_strict(src)
        self.model.to(self.device)
        self.codec = Codec(self.tokenizer, self.device)
        need_ref = self.cfg.algorithm == "dpo" or (self.cfg.algorithm == "grpo" and self.cfg.kl_beta > 0)
        self.ref = None
        self._heldout_ref_logps = None
        if need_ref:  # frozen copy of the starting policy
            self.ref = rundir.load_pretrained_strict(src)[0].to(self.device) if src else None
            for p in self.ref.parameters():
                p.requires_grad_(False)
            self.ref.eval()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay, foreach=True)
        warm = max(self.cfg.warmup_steps, 0)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
        self.heldout = self.task.heldout(self.cfg.eval_size)
        if self.cfg.algorithm == "dpo":
            self._prepare_dpo_pairs(resume)
        if resume:
            self._load_latest()
        else:
            self.ledger.append({"type": "config", "config": self.cfg.to_dict(), "seed": self.cfg.seed, "versions": self._versions,
                                "device": str(self.device), "threads": self.threads, "start_from": src or "fresh GPT-2",
                                "parameters": sum(p.numel() for p in self.model.parameters()), "time": time.time()})

    def _autocast(self):
        return torch.autocast("cuda", dtype=torch.bfloat16) if self.autocast else torch.autocast("cpu", enabled=False)

    # -- SFT -----------------------------------------------------------------------------------------

    def _sft_examples(self, step: int) -> list[tuple[str, str]]:
        rng = random.Random(step_seed(self.cfg.seed, step, "sft"))
        if self.records is not None:
            pairs = sft_pairs(self.records)
            return [pairs[rng.randrange(len(pairs))] for _ in range(self.cfg.batch_size)]
        return [(e.prompt, e.answer) for e in self.task.sample(self.cfg.batch_size, seed=step_seed(self.cfg.seed, step, "sft"))]

    def sft_step(self, step: int) -> dict:
        pairs = self._sft_examples(step)
        # completion-only loss mask from role-tagged segments (lab.sft.loss_mask): the prompt is context only
        segs = [[Segment("user", self.codec.ids(p)), Segment("assistant", self.codec.ids(c) + [self.codec.eos])] for p, c in pairs]
        batch = loss_mask(segs, mode="completion", pad_token=self.codec.pad)
        ids = torch.tensor(batch.tokens, dtype=torch.long, device=self.device)  # (B, L)
        attn = batch.attention_mask.to(self.device).long()
        mask = batch.loss_mask.to(self.device)[:, 1:]  # targets are the next tokens
        self.model.train()
        with self._autocast():
            logits = self.model(input_ids=ids, attention_mask=attn).logits[:, :-1].float()  # (B, L-1, V)
        lp = token_logprobs(logits, ids[:, 1:])  # (B, L-1)
        loss = sft_loss(lp, mask.to(lp.dtype), normalization="token")
        self._optimize(loss)
        acc = ((logits.detach().argmax(-1) == ids[:, 1:]).float() * mask).sum() / mask.sum()
        loss = loss.detach()
        return {"loss": float(loss), "mean_token_accuracy": float(acc), "num_tokens": int(mask.sum())}

    # -- DPO -----------------------------------------------------------------------------------------

    def _build_pairs(self, examples: list[Example], purpose: str) -> list[dict]:
        """Pairs from the verifier: chosen = a verified-correct sample, rejected = an incorrect one, both
        sampled from the starting policy (prompts where every sample agrees give no pair)."""
        ver = self.task.verifier()
        g = torch.Generator().manual_seed(step_seed(self.cfg.seed, 0, purpose))
        pairs = []
        k = self.cfg.dpo_candidates
        for i in range(0, len(examples), 32):
            chunk = examples[i : i + 32]
            prompts = [e.prompt for e in chunk for _ in range(k)]
            ids, mask, _ = sample(self.model, self.codec, prompts, self.cfg.max_new_tokens, self.cfg.temperature, g)
            texts = self.codec.decode(ids, mask)
            for j, e in enumerate(chunk):
                cands = texts[j * k : (j + 1) * k]
                dec = [ver.verify(e.prompt, c, answer=e.answer).decision for c in cands]
                good = [c for c, d in zip(cands, dec) if d]
                bad = [c for c, d in zip(cands, dec) if c and not d]
                if good and bad:
                    pairs.append({"prompt": e.prompt, "chosen": good[0], "rejected": bad[0]})
        return pairs

    def _prepare_dpo_pairs(self, resume: bool) -> None:
        train_f, held_f = self.out / "pairs.jsonl", self.out / "heldout_pairs.jsonl"
        if resume and train_f.exists():
            self.pairs = load_jsonl(train_f, "preference")
            self.heldout_pairs = load_jsonl(held_f, "preference")
            return
        if self.records is not None:
            self.pairs = self.records
        else:
            ex = self.task.sample(self.cfg.dpo_pairs * 3, seed=step_seed(self.cfg.seed, 0, "dpo-prompts"))
            self.pairs = self._build_pairs(ex, "dpo-train")[: self.cfg.dpo_pairs]
        self.heldout_pairs = self._build_pairs(self.task.heldout(self.cfg.eval_size * 2), "dpo-heldout")[: self.cfg.eval_size]
        if not self.pairs:
            raise ValueError("no DPO pairs: the starting policy never produced both a correct and an incorrect answer; "
                             "train the base stage longer (base_steps) or pass a preference --data file")
        for f, rows in ((train_f, self.pairs), (held_f, self.heldout_pairs)):
            rundir.atomic_write_text(f, "".join(json.dumps(r) + "\n" for r in rows))

    def _pair_logps(self, model, pairs: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
        prompts = [p["prompt"] for p in pairs] * 2
        pids, pattn = self.codec.left_pad(prompts)
        cids, cmask = self.codec.right_pad([p["chosen"] for p in pairs] + [p["rejected"] for p in pairs])
        with self._autocast():
            lp = completion_logps(model, pids, pattn, cids, cmask)
        seq = (lp * cmask).sum(-1)  # (2N,) sequence log-probs, TRL's layout [chosen; rejected]
        return seq[: len(pairs)], seq[len(pairs):]

    def dpo_step(self, step: int) -> dict:
        n = len(self.pairs)
        epoch, k = divmod(step * self.cfg.batch_size, n)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(step_seed(self.cfg.seed, epoch, "dpo-order"))).tolist()
        idx = [order[(k + i) % n] for i in range(min(self.cfg.batch_size, n))]
        batch = [self.pairs[i] for i in idx]
        self.model.train()
        c, r = self._pair_logps(self.model, batch)
        with torch.no_grad():
            rc, rr = self._pair_logps(self.ref, batch)
        losses, cr, rj = dpo_loss(c, r, rc, rr, beta=self.cfg.beta)
        loss = losses.mean()
        self._optimize(loss)
        self._last_samples = {"type": "samples", "step": step, "prompt": batch[0]["prompt"], "chosen": batch[0]["chosen"],
                              "rejected": batch[0]["rejected"], "reward_chosen": float(cr[0]), "reward_rejected": float(rj[0]),
                              "logp_chosen": float(c[0].detach()), "logp_rejected": float(r[0].detach())}
        return {"loss": float(loss.detach()), **dpo_metrics(cr, rj), "logps/chosen": float(c.detach().mean()),
                "logps/rejected": float(r.detach().mean())}

    # -- GRPO ----------------------------------------------------------------------------------------

    def _grpo_prompts(self, step: int) -> list[Example]:
        rng = random.Random(step_seed(self.cfg.seed, step, "grpo"))
        if self.records is not None:
            return [Example(r["prompt"], r["answer"]) for r in (self.records[rng.randrange(len(self.records))] for _ in range(self.cfg.batch_size))]
        return self.task.sample(self.cfg.batch_size, seed=step_seed(self.cfg.seed, step, "grpo"))

    def grpo_step(self, step: int) -> dict:
        cfg = self.cfg
        examples = self._grpo_prompts(step)
        members = [e for e in examples for _ in range(cfg.group_size)]  # group members contiguous
        prompts = [e.prompt for e in members]
        g = torch.Generator().manual_seed(step_seed(cfg.seed, step, "grpo-sample"))
        comp, cmask, old_lp = sample(self.model, self.codec, prompts, cfg.max_new_tokens, cfg.temperature, g)
        texts = self.codec.decode(comp, cmask)
        ver = self.task.verifier()
        rewards = torch.tensor([float(ver.verify(e.prompt, t, answer=e.answer).decision) for e, t in zip(members, texts)])
        adv = group_advantages(rewards, cfg.group_size, scale=cfg.scale).to(self.device)  # (N,)
        pids, pattn = self.codec.left_pad(prompts)
        mask = cmask.float()
        ref_lp = None
        if self.ref is not None:
            with torch.no_grad():
                ref_lp = completion_logps(self.ref, pids, pattn, comp, cmask, cfg.temperature)
        self.model.train()
        for _ in range(cfg.num_iterations):  # μ optimizer steps on the same batch, ratios against the stored old log-probs
            with self._autocast():
                lp, ent = completion_logps(self.model, pids, pattn, comp, cmask, cfg.temperature, with_entropy=True)
            old = old_lp if cfg.num_iterations > 1 else lp.detach()  # μ = 1: ratio is exactly 1, as in TRL
            loss, m = grpo_loss(lp, old, adv, mask, ref_logps=ref_lp, beta=cfg.kl_beta, epsilon=cfg.epsilon,
                                epsilon_high=cfg.epsilon_high, loss_type=cfg.loss_type, max_completion_length=cfg.max_new_tokens)
            self._optimize(loss)
        _, group_std = group_stats(rewards, cfg.group_size)  # (G,)
        grouped = rewards.view(-1, cfg.group_size)  # (G, n)
        zero_spread = grouped.amax(-1) == grouped.amin(-1)  # (G,) exact test: a float std of equal values need not be 0
        self._last_samples = {"type": "samples", "step": step, "prompt": examples[0].prompt, "answer": examples[0].answer,
                              "completions": texts[: cfg.group_size], "rewards": rewards[: cfg.group_size].tolist(),
                              "advantages": adv[: cfg.group_size].tolist(),
                              "tokens": [[self.tokenizer.decode([t]) for t, k in zip(row, mk) if k] for row, mk in
                                         zip(comp[: cfg.group_size].tolist(), cmask[: cfg.group_size].tolist())]}
        return {"loss": float(loss.detach()), "reward": float(rewards.mean()), "reward_std": float(group_std.mean()),
                "frac_reward_zero_std": float(zero_spread.float().mean()),
                "entropy": float((ent * mask).sum() / mask.sum()), "completions/mean_length": float(mask.sum(-1).mean()),
                **m}

    # -- shared pieces -------------------------------------------------------------------------------

    def _optimize(self, loss: torch.Tensor) -> None:
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.cfg.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.max_grad_norm)
        self.opt.step()
        self.sched.step()

    @torch.no_grad()
    def evaluate(self) -> dict:
        """Held-out exact match (greedy) for every algorithm; for DPO also held-out preference accuracy and margin."""
        ver = self.task.verifier()
        correct = 0
        for i in range(0, len(self.heldout), 100):
            chunk = self.heldout[i : i + 100]
            ids, mask, _ = sample(self.model, self.codec, [e.prompt for e in chunk], self.cfg.max_new_tokens, greedy=True)
            for e, t in zip(chunk, self.codec.decode(ids, mask)):
                correct += ver.verify(e.prompt, t, answer=e.answer).decision
        out = {"eval/accuracy": correct / len(self.heldout)}
        if self.cfg.algorithm == "dpo" and self.heldout_pairs:
            self.model.eval()
            c, r = self._pair_logps(self.model, self.heldout_pairs)
            if self._heldout_ref_logps is None:  # the reference is frozen: its log-probs are computed once
                self._heldout_ref_logps = self._pair_logps(self.ref, self.heldout_pairs)
            rc, rr = self._heldout_ref_logps
            _, cr, rj = dpo_loss(c, r, rc, rr, beta=self.cfg.beta)  # implicit rewards β·log π/π_ref (lab.dpo)
            m = dpo_metrics(cr, rj)
            out["eval/preference_accuracy"] = float((c > r).float().mean())  # does the policy rank the correct answer higher?
            out["eval/rewards/margins"] = m["rewards/margins"]
            out["eval/rewards/accuracies"] = m["rewards/accuracies"]
        return out

    # -- checkpoints ---------------------------------------------------------------------------------

    def save_checkpoint(self, final: bool = False) -> Path:
        """Model (safetensors) + tokenizer + optimizer, scheduler, RNG states and step, written whole or not at all
        (``rundir.write_checkpoint``); the ledger records its policy stamp; only the newest ``keep`` are kept."""
        stamp = PolicyStamp.from_parts(self.model, self.tokenizer, {"format": "prompt+completion", "eos": self.tokenizer.eos_token},
                                       {"eval": "greedy", "train_temperature": self.cfg.temperature, "max_new_tokens": self.cfg.max_new_tokens},
                                       self._versions["code_revision"])
        state = {"step": self.step, "optimizer": self.opt.state_dict(), "scheduler": self.sched.state_dict(),
                 "torch_rng": torch.get_rng_state(), "python_rng": list(random.getstate()[1]), "python_rng_version": random.getstate()[0],
                 "history": json.dumps(self.history)}
        if torch.cuda.is_available():
            state["cuda_rng"] = torch.cuda.get_rng_state_all()

        def write(tmp: Path) -> None:
            self.model.save_pretrained(tmp, safe_serialization=True)
            self.tokenizer.save_pretrained(tmp)
            torch.save(state, tmp / "trainer_state.pt")

        def record(path: Path) -> None:  # appended before the rename: a recorded stamp always precedes its checkpoint
            self.ledger.append({"type": "checkpoint", "step": self.step, "path": str(path), "policy_stamp": stamp.digest,
                                "weights_sha256": stamp.weights, "time": time.time()})

        path = rundir.write_checkpoint(self.rundir, self.step, write, stamp.weights, record)
        rundir.prune_checkpoints(self.rundir, self.cfg.keep)
        if final:
            rundir.publish_final(self.rundir, path)
        self.callback({"type": "checkpoint", "step": self.step, "path": str(path)})
        return path

    def _load_latest(self) -> None:
        """Resume from the newest complete checkpoint: files checked against its manifest, strict load, and the
        loaded weights' hash checked against the ledger's policy stamp for that step."""
        ckpts = rundir.complete_checkpoints(self.out)
        if not ckpts:
            raise RunDirError(f"out: {self.out} has no complete checkpoint to resume from; start it again without --resume")
        path = ckpts[-1]
        problems = rundir.check_files(path)
        if problems:
            raise RunDirError(f"checkpoint: {problems[0]}; refusing to resume from it")
        from safetensors.torch import load_file

        rundir.load_state_strict(self.model, load_file(path / "model.safetensors", device=str(self.device)))
        step = int(rundir.CKPT_RE.match(path.name).group(1))
        stamps = [r for r in self._ledger_records if r.get("type") == "checkpoint" and r.get("step") == step]
        if not stamps:
            raise RunDirError(f"ledger: no checkpoint record for step {step} ({path}); refusing to resume from an unrecorded checkpoint")
        got = rundir.weights_sha256(self.model)
        if got != stamps[-1].get("weights_sha256"):
            raise RunDirError(f"checkpoint: the weights of {path} do not match the ledger's policy stamp for step {step} "
                              f"(SHA-256 {got[:12]}… vs {str(stamps[-1].get('weights_sha256'))[:12]}…); refusing to resume")
        state = torch.load(path / "trainer_state.pt", weights_only=True, map_location="cpu")  # never unpickles arbitrary objects
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate((state["python_rng_version"], tuple(state["python_rng"]), None))
        if "cuda_rng" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.step = int(state["step"])
        self.history = json.loads(state["history"])
        self.ledger.append({"type": "resume", "step": self.step, "from": str(path), "time": time.time()})

    # -- the loop ------------------------------------------------------------------------------------

    def run(self) -> dict:
        """Train from the current step to ``steps``; returns a summary with held-out results before → after.
        The run directory's lock is released when it returns (or fails)."""
        if not self.rundir.locked:
            raise RunDirError(f"out: this SmallRun on {self.out} has already run; create a new one (resume=True) to continue")
        try:
            return self._run()
        except CheckpointWriteError:
            raise
        except OSError as exc:  # e.g. the ledger cannot grow on a full disk
            good = rundir.complete_checkpoints(self.out)
            raise CheckpointWriteError(f"out: writing to {self.out} failed at step {self.step} ({exc.strerror or exc}); "
                                       + (f"the checkpoint {good[-1]} is intact and resumable (--resume)" if good else "no checkpoint was written yet")) from exc
        finally:
            self.rundir.close()

    def _run(self) -> dict:
        cfg = self.cfg
        train = {"sft": self.sft_step, "dpo": self.dpo_step, "grpo": self.grpo_step}[cfg.algorithm]
        if self.step == 0 and not any(h.get("type") == "eval" for h in self.history):
            self._record({"type": "eval", "step": 0, **self.evaluate()})
        t0 = time.perf_counter()
        start_step = self.step
        while self.step < cfg.steps:
            ts = time.perf_counter()
            m = train(self.step)
            self.step += 1
            done = self.step - start_step
            ev = {"type": "step", "step": self.step, "total_steps": cfg.steps, "lr": self.sched.get_last_lr()[0], "step_time": time.perf_counter() - ts,
                  "steps_per_second": done / (time.perf_counter() - t0), **m}
            self._record(ev)
            if cfg.algorithm in ("grpo", "dpo"):
                self.callback(self._last_samples)
            if self.step % cfg.eval_every == 0 or self.step == cfg.steps:
                self._record({"type": "eval", "step": self.step, **self.evaluate()})
            if self.stop_event.is_set():
                self.save_checkpoint()
                self.callback({"type": "stopped", "step": self.step})
                return self.summary(stopped=True)
            if self.step % cfg.save_every == 0 and self.step < cfg.steps:
                self.save_checkpoint()
        self.save_checkpoint(final=True)
        s = self.summary()
        self.ledger.append({"type": "summary", **s, "time": time.time()})
        self.callback({"type": "done", **s})
        return s

    def _record(self, ev: dict) -> None:
        self.history.append(ev)
        self.ledger.append(ev)
        self.callback(ev)

    def summary(self, stopped: bool = False) -> dict:
        evals = [h for h in self.history if h["type"] == "eval"]
        key = "eval/preference_accuracy" if self.cfg.algorithm == "dpo" else "eval/accuracy"
        return {"algorithm": self.cfg.algorithm, "task": self.cfg.task, "steps": self.step, "stopped": stopped,
                "before": evals[0].get(key) if evals else None, "after": evals[-1].get(key) if evals else None,
                "metric": key, "accuracy_before": evals[0].get("eval/accuracy") if evals else None,
                "accuracy_after": evals[-1].get("eval/accuracy") if evals else None,
                "margin_after": evals[-1].get("eval/rewards/margins") if evals else None}
