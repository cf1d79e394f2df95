"""Reward and value models for the small runs: a causal LM's backbone with a scalar head.

Both are ``transformers``' sequence-classification model with one label (``GPT2ForSequenceClassification``
for the tiny GPT-2), so a saved reward model loads with plain
``AutoModelForSequenceClassification.from_pretrained(dir)`` [ftip-002R; Ouyang et al. 2022, §3.5]:

- a **reward model** reads the head at the last real token of prompt + response + eos: one score per
  sequence (``sequence_scores``). The index is computed from the attention mask, never from transformers'
  pad-token heuristic (which is wrong for left-padded prompts);
- a **value model** reads the same head on every hidden state (``token_values``): V(H_t) for the state
  before each completion token, the positions whose logits predict that token [ftip-003E].

``check_reward_model`` validates a ``--reward-model`` directory before anything trains: it exists, it is a
scalar-head classifier (not a causal LM), its weights load completely, and its tokenizer is the policy's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch


def scalar_head_model(policy, seed: int = 0):
    """A sequence-classification model with one label whose backbone is a copy of ``policy``'s and whose
    score head is new (seeded). ``pad_token_id`` is set from the policy's config (transformers requires it
    for batches). The policy is not changed."""
    from transformers import AutoModelForSequenceClassification

    cfg = policy.config.__class__.from_dict(policy.config.to_dict())
    cfg.num_labels = 1
    cfg.architectures = None
    if cfg.pad_token_id is None:
        cfg.pad_token_id = cfg.eos_token_id
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_config(cfg)
    prefix = policy.base_model_prefix  # "transformer" for GPT-2
    getattr(model, prefix).load_state_dict(getattr(policy, prefix).state_dict())
    return model.to(next(policy.parameters()).device)


def head_on_every_state(model, ids: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
    """The scalar head on every hidden state: (B, L) from ids, attention mask (B, L) (left or right padding;
    positions from the mask, as the policy's forward pass uses them)."""
    pos = (attn.cumsum(-1) - 1).clamp(min=0)  # (B, L)
    hidden = getattr(model, model.base_model_prefix)(input_ids=ids, attention_mask=attn, position_ids=pos).last_hidden_state  # (B, L, D)
    return model.score(hidden).squeeze(-1).float()  # (B, L)


def last_token_index(attn: torch.Tensor) -> torch.Tensor:
    """(B,) index of the last position whose attention mask is 1 (the eos of prompt + response + eos)."""
    if bool((attn.sum(-1) == 0).any()):
        raise ValueError("attn: a row has no real token, so it has no last token to score")
    L = attn.shape[-1]
    return L - 1 - torch.flip(attn, dims=[-1]).argmax(-1)


def sequence_scores(model, prompt_ids, prompt_attn, comp_ids, comp_mask) -> torch.Tensor:
    """r(x, y): the head at the last real token of [left-padded prompt | right-padded response + eos], (B,)."""
    ids = torch.cat([prompt_ids, comp_ids], 1)  # (B, P+T)
    attn = torch.cat([prompt_attn, comp_mask], 1)
    per_state = head_on_every_state(model, ids, attn)  # (B, P+T)
    return per_state.gather(-1, last_token_index(attn)[:, None]).squeeze(-1)  # (B,)


def token_values(model, prompt_ids, prompt_attn, comp_ids, comp_mask) -> torch.Tensor:
    """V(H_t) for every completion position t, (B, T): the head on the state that predicts token t (the last
    prompt token for t = 0), as TRL's PPO reads ``values[:, P - 1 : -1]``. Masked positions hold whatever the
    head says there; callers mask them."""
    ids = torch.cat([prompt_ids, comp_ids], 1)
    attn = torch.cat([prompt_attn, comp_mask], 1)
    P = prompt_ids.shape[1]
    return head_on_every_state(model, ids, attn)[:, P - 1 : -1]  # (B, T)


def score_texts(model, codec, prompts: list[str], responses: list[str], batch: int = 256) -> torch.Tensor:
    """Scores of (prompt, response) pairs as text: each response is encoded with eos appended (``codec.right_pad``),
    exactly as the reward model was trained, so a sampled response without eos is scored like one with it. (N,)"""
    out = []
    for i in range(0, len(prompts), batch):
        pids, pattn = codec.left_pad(prompts[i : i + batch])
        cids, cmask = codec.right_pad(responses[i : i + batch])
        out.append(sequence_scores(model, pids, pattn, cids, cmask))
    return torch.cat(out) if out else torch.zeros(0)


def _first_line(exc: Exception) -> str:
    s = str(exc).strip()
    return s.splitlines()[0] if s else type(exc).__name__


def check_reward_model(path: str, policy_tokenizer=None) -> dict:
    """Validate a ``--reward-model`` directory without loading it onto a device; returns its config dict.

    Refuses (one-line ``ValueError`` naming ``reward_model``): a missing directory, no ``config.json``, a config
    that is not a one-label sequence classifier (e.g. a causal-LM checkpoint), weights that do not load
    completely, and a tokenizer whose vocabulary or pad/eos ids differ from ``policy_tokenizer``'s (then the
    reward model would read other tokens than the policy wrote)."""
    from lab.smallrun.config import checkpoint_json

    p = Path(path)
    cfg = checkpoint_json(path, "reward_model", "the final/ of an rm run, or a sequence-classification checkpoint")
    arch = cfg.get("architectures") or []
    if not isinstance(arch, list) or not any(str(a).endswith("ForSequenceClassification") for a in arch):
        raise ValueError(f"reward_model: {path} is a {', '.join(map(str, arch)) or 'model without architectures'} checkpoint, not a reward "
                         f"model (a ...ForSequenceClassification with one label, as `python -m lab.smallrun rm` saves)")
    n_labels = cfg.get("num_labels", len(cfg.get("id2label") or {}) or None)
    if n_labels != 1:
        raise ValueError(f"reward_model: {path} has {n_labels} labels; a reward model has exactly one (a scalar score)")
    load_reward_model(path)  # weights complete and readable
    if policy_tokenizer is not None:
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(p, local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - one line, not a traceback
            raise ValueError(f"reward_model: cannot load the tokenizer of {path} ({type(exc).__name__}: {_first_line(exc)})") from None
        if tok.get_vocab() != policy_tokenizer.get_vocab():
            raise ValueError(f"reward_model: the tokenizer of {path} ({len(tok)} tokens) differs from the policy's ({len(policy_tokenizer)} "
                             f"tokens); the reward model must read the policy's token ids")
        for name in ("eos_token_id", "pad_token_id"):
            if getattr(tok, name) != getattr(policy_tokenizer, name):
                raise ValueError(f"reward_model: the tokenizer of {path} has {name} {getattr(tok, name)}, the policy's has "
                                 f"{getattr(policy_tokenizer, name)}")
    return cfg


def load_reward_model(path: str, device: Optional[torch.device] = None, trainable: bool = False):
    """A scalar-head model from ``path`` (strict: every tensor present, none unexpected); frozen and in eval
    mode unless ``trainable`` (the value model of PPO starts from a reward model and trains)."""
    from transformers import AutoModelForSequenceClassification

    try:
        model, info = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True, output_loading_info=True)
    except Exception as exc:  # noqa: BLE001 - a broken or partial copy: one line
        raise ValueError(f"reward_model: cannot load {path} ({type(exc).__name__}: {_first_line(exc)})") from None
    if info.get("missing_keys") or info.get("unexpected_keys") or info.get("mismatched_keys"):
        raise ValueError(f"reward_model: {path}: the weights do not match its config (missing {list(info.get('missing_keys', []))[:4]}, "
                         f"unexpected {list(info.get('unexpected_keys', []))[:4]}); refusing a partial load")
    if model.config.pad_token_id is None:
        model.config.pad_token_id = model.config.eos_token_id
    if device is not None:
        model.to(device)
    if not trainable:
        model.eval()
        for q in model.parameters():
            q.requires_grad_(False)
    return model


class RewardSource:
    """The learned reward of ``--reward-model`` (frozen), shared by PPO, GRPO and DPO; falsy without one.

    ``scores(prompts, responses)`` → (N,) the reward model's scores (each response + eos); ``evaluate(policy)`` →
    ``eval/proxy_reward``: the mean score of the policy's greedy completions of the held-out prompts (the loop
    logs the verifier's ``eval/accuracy`` on the same completions beside it)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.model = load_reward_model(ctx.cfg.reward_model, ctx.device) if ctx.cfg.reward_model else None

    def __bool__(self) -> bool:
        return self.model is not None

    @torch.no_grad()
    def scores(self, prompts: list[str], responses: list[str]) -> torch.Tensor:
        with self.ctx.autocast():
            return score_texts(self.model, self.ctx.codec, prompts, responses).float().cpu()

    @torch.no_grad()
    def evaluate(self, policy, greedy: Optional[list] = None) -> dict:
        """``greedy``: the loop's greedy held-out completions, [(Example, text)]; None decodes them here."""
        greedy = greedy if greedy is not None else _greedy_heldout(self.ctx, policy)
        prompts, texts = [e.prompt for e, _ in greedy], [t for _, t in greedy]
        return {"eval/proxy_reward": float(self.scores(prompts, texts).mean())}


@torch.no_grad()
def _greedy_heldout(ctx, policy) -> list:
    """[(Example, greedy completion)] for the run's held-out prompts (the loop's evaluation decodes the same)."""
    from lab.smallrun.decoding import sample

    held = ctx.task.heldout(ctx.cfg.eval_size)
    ids, mask, _ = sample(policy, ctx.codec, [e.prompt for e in held], ctx.cfg.max_new_tokens, greedy=True)
    return list(zip(held, ctx.codec.decode(ids, mask)))


@torch.no_grad()
def sequence_kl_eval(ctx, policy, ref) -> dict:
    """``eval/kl``: KL(π ‖ π_ref) of whole completions on the held-out prompts [ftip-006X; Gao et al. 2022, §2.2: the
    optimization strength is d = √KL]. One completion per prompt is sampled from π (at the training temperature, from
    a generator seeded by the evaluation step), and the k1 estimate Σ_t (log π − log π_ref) over its tokens
    (``lab.kl.kl_estimate``, unbiased) is averaged over prompts.

    This is a sequence-level KL, so it can be compared with best-of-N's analytic log N − (N−1)/N. GRPO's per-step
    ``kl`` is a per-token mean of k3 and cannot. Logged only where a proxy is (``--reward-model`` or the hackable
    checker): 2 forward passes and one sampled decode per evaluation."""
    from lab.kl import kl_estimate
    from lab.smallrun.decoding import completion_logps, sample

    prompts = [e.prompt for e in ctx.task.heldout(ctx.cfg.eval_size)]
    g = torch.Generator().manual_seed(ctx.step_seed(ctx.step, "eval-kl"))
    total = 0.0
    for i in range(0, len(prompts), 256):  # chunks of 256 (as score_texts): bounded memory for big vocabularies
        chunk = prompts[i : i + 256]
        comp, cmask, _ = sample(policy, ctx.codec, chunk, ctx.cfg.max_new_tokens, ctx.cfg.temperature, g)  # (n, T) each
        pids, pattn = ctx.codec.left_pad(chunk)
        with ctx.autocast():
            lp = completion_logps(policy, pids, pattn, comp, cmask, ctx.cfg.temperature)  # (n, T)
            ref_lp = completion_logps(ref, pids, pattn, comp, cmask, ctx.cfg.temperature)  # (n, T)
        total += float(kl_estimate(lp, ref_lp, kind="k1", mask=cmask).sum())  # Σ over the chunk's tokens, 0 after eos
    return {"eval/kl": total / len(prompts)}


def proxy_eval(ctx, policy, ref, reward_source, checker, greedy: Optional[list] = None) -> dict:
    """What a run against a proxy logs at each evaluation, beside the loop's gold ``eval/accuracy``: the proxy's own
    held-out score (``eval/proxy_reward``: the learned reward's mean, or the hackable checker's acceptance rate) and
    how far the proxy has moved the policy (``eval/kl``). Nothing without a proxy. Shared by grpo/rloo and ppo."""
    if reward_source:
        out = reward_source.evaluate(policy, greedy)
    elif ctx.cfg.reward_verifier != "exact":
        out = verifier_proxy_eval(ctx, policy, checker, greedy)
    else:
        return {}
    return {**out, **sequence_kl_eval(ctx, policy, ref)}


@torch.no_grad()
def verifier_proxy_eval(ctx, policy, verifier, greedy: Optional[list] = None) -> dict:
    """``eval/proxy_reward`` for a checker used as the training reward (``reward_verifier="hackable"``): its acceptance
    rate on the policy's greedy completions of the held-out prompts; the loop's ``eval/accuracy`` is the exact
    verifier's on the same prompts, so the two curves are proxy and gold side by side."""
    greedy = greedy if greedy is not None else _greedy_heldout(ctx, policy)  # the loop's completions when given
    return {"eval/proxy_reward": sum(verifier.verify(e.prompt, t, answer=e.answer).decision for e, t in greedy) / len(greedy)}
