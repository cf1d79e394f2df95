"""Token ids, training-path log-probs, and ONE sampling loop over a small decoder interface.

A decoder has three methods (shapes in comments):

- ``prefill(ids (B, P), attn (B, P), pos (B, P)) -> logits (B, V)`` of the last prompt position,
- ``expand(index (N,))``: copy cached prompt rows to group members (row ``i`` of the new cache is row ``index[i]``),
- ``step(tok (N,), attn (N, S), pos (N,)) -> logits (N, V)``: feed one token per row.

Two implementations sit behind it: ``fastgen.GPT2Decoder`` (GPT-2's own modules without the per-call wrappers,
several times faster for a tiny model) and :class:`HFDecoder` (any ``transformers`` causal LM, through
``past_key_values``). :func:`make_decoder` picks; :func:`sample` never branches on which one it has.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

from lab.kl import entropy_from_logits
from lab.sft import token_logprobs
from lab.smallrun import fastgen


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


class HFDecoder:
    """The generic path: any ``transformers`` causal LM, its own forward with ``past_key_values``."""

    def __init__(self, model) -> None:
        self.m = model
        self.past = None

    @torch.no_grad()
    def prefill(self, ids: torch.Tensor, attn: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        out = self.m(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True)
        self.past = out.past_key_values
        return out.logits[:, -1]  # (B, V)

    def expand(self, index: torch.Tensor) -> None:
        if hasattr(self.past, "reorder_cache"):  # a transformers Cache: index_select on every layer, in place
            self.past.reorder_cache(index)
        else:  # the legacy tuple-of-tuples layout
            self.past = tuple(tuple(t.index_select(0, index) for t in layer) for layer in self.past)

    @torch.no_grad()
    def step(self, tok: torch.Tensor, attn: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        out = self.m(input_ids=tok[:, None], attention_mask=attn, position_ids=pos[:, None], past_key_values=self.past, use_cache=True)
        self.past = out.past_key_values
        return out.logits[:, -1]  # (N, V)


def make_decoder(model):
    """The fast GPT-2 decoder where it covers the model (``fastgen.supports``), the generic one otherwise."""
    return fastgen.GPT2Decoder(model) if fastgen.supports(model) else HFDecoder(model)


@torch.no_grad()
def sample(model, codec: Codec, prompts: list[str], max_new_tokens: int, temperature: float = 1.0,
           generator: Optional[torch.Generator] = None, greedy: bool = False, decoder=None):
    """Autoregressive sampling with a KV cache. Returns (completion ids (N, T), mask (N, T), logps (N, T)).

    The mask covers the sampled tokens up to and including eos; logps are the sampling policy's
    log-probabilities of the sampled tokens at ``temperature``. ``decoder`` defaults to ``make_decoder(model)``.
    """
    if not isinstance(prompts, (list, tuple)) or not prompts or not all(isinstance(p, str) for p in prompts):
        raise ValueError(f"prompts must be a non-empty list of strings; got {type(prompts).__name__} of {len(prompts) if hasattr(prompts, '__len__') else '?'}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer >= 1; got {max_new_tokens!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a finite number > 0; got {temperature!r}")
    temperature = float(temperature)
    model.eval()
    dec = decoder if decoder is not None else make_decoder(model)
    # group members share a prompt: prefill each distinct prompt once, then copy its cache to every member
    first = {p: i for i, p in enumerate(dict.fromkeys(prompts))}
    inv = torch.tensor([first[p] for p in prompts], device=codec.device)  # (N,) member -> distinct prompt
    ids_u, attn_u = codec.left_pad(list(first))  # (U, P)
    pos_u = (attn_u.cumsum(-1) - 1).clamp(min=0)
    logits = dec.prefill(ids_u, attn_u, pos_u).float().index_select(0, inv)  # (N, V)
    dec.expand(inv)
    attn, next_pos = attn_u.index_select(0, inv), pos_u[:, -1].index_select(0, inv) + 1  # (N, P), (N,)
    N = len(prompts)
    toks, logps, masks = [], [], []
    done = torch.zeros(N, dtype=torch.bool, device=attn.device)
    for _ in range(max_new_tokens):
        lp_all = torch.log_softmax(logits / temperature, -1)  # (N, V)
        if greedy:
            tok = lp_all.argmax(-1)
        else:
            tok = torch.multinomial(lp_all.exp().cpu(), 1, generator=generator).squeeze(-1).to(attn.device)
        toks.append(torch.where(done, torch.full_like(tok, codec.pad), tok))
        logps.append(torch.where(done, torch.zeros_like(lp_all[:, 0]), lp_all.gather(-1, tok[:, None]).squeeze(-1)))
        masks.append((~done).long())
        done = done | (tok == codec.eos)
        if bool(done.all()):
            break
        attn = torch.cat([attn, torch.ones(N, 1, dtype=attn.dtype, device=attn.device)], 1)
        logits = dec.step(tok, attn, next_pos).float()
        next_pos = next_pos + 1
    return torch.stack(toks, 1), torch.stack(masks, 1), torch.stack(logps, 1)
