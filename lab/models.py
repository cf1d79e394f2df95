"""Tiny causal language models and tokenizers built locally: no model hub, no network.

A character-level ``PreTrainedTokenizerFast`` (a real 🤗 tokenizer object, saved and loaded like any
other) and a GPT-2 built from ``GPT2Config`` with a few hundred thousand parameters, small enough
to train on a laptop CPU in a minute. ``load_pretrained`` loads a local checkpoint directory the
user already has (``local_files_only``: never downloads).
"""

from __future__ import annotations

import string
from pathlib import Path

import torch

DEFAULT_ALPHABET = string.digits + string.ascii_lowercase + string.ascii_uppercase + " +-*/=?!.,:;()[]'\"<>#_|\n"
SPECIAL_TOKENS = {"pad_token": "<pad>", "eos_token": "<eos>", "bos_token": "<bos>", "unk_token": "<unk>"}


def char_tokenizer(alphabet: str = DEFAULT_ALPHABET):
    """A character-level ``PreTrainedTokenizerFast``: one token per character, with pad/eos/bos/unk.

    Characters outside ``alphabet`` map to ``<unk>``. Left padding is not set here: trainers choose.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = list(dict.fromkeys(alphabet))
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS.values())}
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL_TOKENS["unk_token"]))
    tk.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")  # every character its own token
    tk.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, **SPECIAL_TOKENS)
    tok.model_max_length = 512
    return tok


def tiny_gpt2(vocab_size: int, n_layer: int = 2, n_head: int = 4, n_embd: int = 64, n_positions: int = 128, seed: int = 0, pad_token_id: int = 0, eos_token_id: int = 1, bos_token_id: int = 2):
    """A GPT-2 causal LM built from ``GPT2Config`` (defaults: ≈0.1 M parameters for a ~90-symbol vocabulary).

    Dropout is off so that a forward pass is deterministic given the weights (needed for exact resume
    and for comparing log-probabilities across two computations).
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        activation_function="gelu_pytorch_tanh",  # GPT-2's tanh GELU, computed by torch's fused kernel
        pad_token_id=pad_token_id, eos_token_id=eos_token_id, bos_token_id=bos_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT2LMHeadModel(cfg)


def load_pretrained(path: str | Path):
    """Load a local causal-LM checkpoint directory and its tokenizer, without network access."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"path must be an existing checkpoint directory; got {str(path)!r}")
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok
