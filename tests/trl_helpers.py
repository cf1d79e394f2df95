"""Build real TRL trainers around a tiny local GPT-2, offline, so parity tests run TRL's own loss code."""

from __future__ import annotations

import tempfile
import warnings

import torch

from lab.models import char_tokenizer, tiny_gpt2
from lab.sft import shift_for_next_token, token_logprobs


def tokenizer():
    return char_tokenizer()


def saved_tiny_model(seed: int = 0) -> str:
    """Save a tiny GPT-2 and its tokenizer to a temporary directory; TRL loads references from a path."""
    tok = char_tokenizer()
    d = tempfile.mkdtemp(prefix="lab-tiny-")
    tiny_gpt2(len(tok), seed=seed).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def sequence_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    """Σ over completion tokens of log π(token | prefix), computed with lab.sft.token_logprobs. (B,)"""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits  # (B, T, V)
    lg, labels = shift_for_next_token(logits, input_ids)
    lp = token_logprobs(lg, labels)  # (B, T-1)
    return (lp * completion_mask[:, 1:]).sum(-1)


def quiet():
    warnings.filterwarnings("ignore")
    import datasets
    import transformers

    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
