"""Supervised fine-tuning: token log-probabilities, loss masks and the masked SFT loss.

Reference chapter "Instruction tuning" (ftip-0029): notation ftip-002A, objective ftip-002F,
response-token normalization ftip-002G, worked example ftip-002H. The InstructGPT SFT stage is
Ouyang et al. 2022, §3.5 and App. C.1; instruction tuning is Wei et al. 2022, §2.

A loss mask says which *targets* count; the attention mask says which tokens are *visible*.
Masking the prompt out of the loss keeps it in context: that is the whole point of the split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import torch
import torch.nn.functional as F

from lab._checks import TensorLike, active_values, as_mask, as_tensor, check_active, check_choice, check_int

Normalization = Literal["token", "sequence", "sum"]
MaskMode = Literal["completion", "assistant", "full"]
ROLES = ("system", "user", "assistant")


def _as_labels(labels: TensorLike, name: str = "labels") -> torch.Tensor:
    """Token ids as int64: integer/bool tensors and lists, or floats holding whole numbers."""
    if isinstance(labels, torch.Tensor):
        t = labels
    else:
        try:
            t = torch.as_tensor(labels)
        except (TypeError, ValueError, RuntimeError, OverflowError):
            raise ValueError(f"{name} must be integer token ids (a tensor or a list); got {labels!r}") from None
    if t.is_complex():
        raise ValueError(f"{name} must be integer token ids; got a complex tensor")
    if t.is_floating_point():
        if not bool(torch.isfinite(t).all()) or not bool((t == t.round()).all()):
            raise ValueError(f"{name} must be integer token ids; got non-integer values")
    return t.long()


def token_logprobs(logits: TensorLike, labels: TensorLike, ignore_index: int | None = None) -> torch.Tensor:
    """Log-probability of each label under its logits [ftip-002F].

    ``logits`` (B, T, V) and ``labels`` (B, T) must already be aligned: ``logits[:, t]`` is the
    distribution that predicts ``labels[:, t]`` (for a causal LM use :func:`shift_for_next_token`).
    Positions whose label equals ``ignore_index`` get log-probability 0 so that they add nothing;
    their logits may hold anything (even NaN) and get zero gradient. Elsewhere logits must not be NaN
    or +inf; a logit of −inf is a token of probability 0, and a label on such a token raises
    ``ValueError`` (its log-probability is −inf). Same quantity as TRL's ``selective_log_softmax``.
    """
    x = as_tensor(logits, "logits", allow_nan=True)
    if x.dim() != 3:
        raise ValueError(f"logits must have shape (B, T, V); got {tuple(x.shape)}")
    labels = _as_labels(labels)
    if labels.shape != x.shape[:2]:
        raise ValueError(f"labels (shape {tuple(labels.shape)}) must have shape (B, T) = {tuple(x.shape[:2])}")
    if ignore_index is not None:
        ignore_index = check_int(ignore_index, "ignore_index", -(2**62))
    ignored = labels == ignore_index if ignore_index is not None else torch.zeros_like(labels, dtype=torch.bool)
    safe = labels.masked_fill(ignored, 0)
    V = x.shape[-1]
    if V == 0 or bool(((safe < 0) | (safe >= V)).any()):
        raise ValueError(f"labels must be token ids in [0, {V}) (or ignore_index); got {safe.min().item() if safe.numel() else '-'}..{safe.max().item() if safe.numel() else '-'}")
    used = ~ignored  # (B, T)
    xd = x.detach()[used]
    if bool(torch.isnan(xd).any()) or bool((xd == float("inf")).any()):
        raise ValueError("logits must not contain NaN or +inf at positions whose label counts")
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    x = torch.where(used.unsqueeze(-1), x, torch.zeros_like(x))  # ignored rows: any filler, zero gradient
    logp = torch.gather(F.log_softmax(x, dim=-1), -1, safe.unsqueeze(-1)).squeeze(-1)  # (B, T)
    logp = logp.masked_fill(ignored, 0.0)
    if not bool(torch.isfinite(logp.detach()).all()):
        raise ValueError("logits give some label probability 0 (its logit is -inf, or all logits of the row are -inf); its log-probability is -inf")
    return logp


def shift_for_next_token(logits: TensorLike, input_ids: TensorLike) -> tuple[torch.Tensor, torch.Tensor]:
    """Align a causal LM's outputs with its targets: position t predicts token t+1.

    Returns ``(logits[:, :-1], input_ids[:, 1:])`` with shapes (B, T-1, V) and (B, T-1).
    """
    x = as_tensor(logits, "logits", allow_nan=True)
    ids = _as_labels(input_ids, "input_ids")
    if x.dim() != 3 or ids.dim() != 2 or x.shape[:2] != ids.shape:
        raise ValueError(f"logits (shape {tuple(x.shape)}) must be (B, T, V) and input_ids (shape {tuple(ids.shape)}) (B, T)")
    if x.shape[1] < 2:
        raise ValueError(f"input_ids must hold at least 2 tokens to predict a next one; got T={x.shape[1]}")
    return x[:, :-1, :], ids[:, 1:]


@dataclass(frozen=True)
class Segment:
    """One role-tagged run of tokens in a conversation, e.g. ``Segment("user", ["ping"])``."""

    role: str
    tokens: tuple

    def __init__(self, role: str, tokens: Sequence) -> None:
        check_choice(role, "role", ROLES)
        object.__setattr__(self, "role", role)
        object.__setattr__(self, "tokens", tuple(tokens))


@dataclass(frozen=True)
class MaskedBatch:
    """A padded batch of role-tagged examples with its two masks.

    ``tokens`` and ``roles`` are (B, T) lists (padding has role ``"pad"`` and token ``pad_token``);
    ``attention_mask`` (B, T) marks every real token (context, prompt included);
    ``loss_mask`` (B, T) marks the tokens whose prediction is supervised.
    """

    tokens: list[list]
    roles: list[list[str]]
    attention_mask: torch.Tensor  # (B, T)
    loss_mask: torch.Tensor  # (B, T)


def loss_mask(examples: Sequence[Sequence[Segment]], mode: MaskMode = "completion", pad_token: object = "<pad>") -> MaskedBatch:
    """Build loss and attention masks from role-tagged examples [ftip-002A, ftip-002F].

    ``mode`` (a declared convention, TRL's names in brackets):

    - ``"completion"``: only the final assistant segment, the completion, is supervised
      (TRL ``completion_only_loss``);
    - ``"assistant"``: every assistant segment of a multi-turn conversation (TRL ``assistant_only_loss``);
    - ``"full"``: every real token, prompt included (plain language modelling).

    Padding is always excluded from the loss, and the prompt always stays in ``attention_mask``.
    Examples are right-padded to the longest one.
    """
    check_choice(mode, "mode", ("completion", "assistant", "full"))
    if len(examples) == 0:
        raise ValueError("examples must contain at least one example")
    rows_tok, rows_role, rows_sup = [], [], []
    for i, ex in enumerate(examples):
        if len(ex) == 0 or sum(len(s.tokens) for s in ex) == 0:
            raise ValueError(f"examples[{i}] has no tokens")
        last_assistant = max((k for k, s in enumerate(ex) if s.role == "assistant"), default=None)
        if mode != "full" and last_assistant is None:
            raise ValueError(f"examples[{i}] has no assistant segment, so mode={mode!r} supervises nothing in it")
        toks, roles, sup = [], [], []
        for k, seg in enumerate(ex):
            if mode == "completion":
                s = k == last_assistant
            elif mode == "assistant":
                s = seg.role == "assistant"
            else:
                s = True
            toks += list(seg.tokens)
            roles += [seg.role] * len(seg.tokens)
            sup += [1.0 if s else 0.0] * len(seg.tokens)
        rows_tok.append(toks)
        rows_role.append(roles)
        rows_sup.append(sup)
    T = max(len(r) for r in rows_tok)
    attn = torch.zeros(len(examples), T, dtype=torch.float64)
    lm = torch.zeros(len(examples), T, dtype=torch.float64)
    for i in range(len(examples)):
        n = len(rows_tok[i])
        attn[i, :n] = 1.0
        lm[i, :n] = torch.tensor(rows_sup[i], dtype=torch.float64)
        rows_tok[i] = rows_tok[i] + [pad_token] * (T - n)
        rows_role[i] = rows_role[i] + ["pad"] * (T - n)
    return MaskedBatch(tokens=rows_tok, roles=rows_role, attention_mask=attn, loss_mask=lm)


def sft_token_weights(mask: TensorLike, normalization: Normalization = "token") -> torch.Tensor:
    """The weights w_t(z)·m_t(z) of the SFT objective [ftip-002F, ftip-002G], shape like ``mask`` (B, T).

    - ``"token"``: 1/N_resp on every selected token of the batch (ftip-002G): every token counts equally,
      so long answers weigh more.
    - ``"sequence"``: 1/(B·n_b) on the n_b selected tokens of example b: every example counts equally.
    - ``"sum"``: weight 1 on each selected token (weights do not sum to 1; the loss grows with length).
    """
    check_choice(normalization, "normalization", ("token", "sequence", "sum"))
    m = as_tensor(mask, "mask")
    m = as_mask(m, m, "mask")
    if normalization == "token":
        return m / m.sum()
    if normalization == "sum":
        return m
    if m.dim() != 2:
        raise ValueError(f"mask must have shape (B, T) for normalization='sequence'; got {tuple(m.shape)}")
    per_example = m.sum(-1, keepdim=True)  # (B, 1)
    if bool((per_example == 0).any()):
        empty = (per_example.squeeze(-1) == 0).nonzero().flatten().tolist()
        raise ValueError(f"mask selects no token in examples {empty}; normalization='sequence' would divide by zero")
    return m / (per_example * m.shape[0])


def sft_loss(token_logps: TensorLike, mask: TensorLike, normalization: Normalization = "token") -> torch.Tensor:
    """Masked supervised fine-tuning loss L_sft = −Σ w_t m_t log π(y_t | prefix) [ftip-002F].

    ``token_logps`` (B, T) are log π of each target (from :func:`token_logprobs`), ``mask`` (B, T)
    the loss mask (bool or 0/1). ``normalization`` is the declared weighting, see :func:`sft_token_weights`;
    the default ``"token"`` is the reference's response-token normalization (ftip-002G) and TRL's
    SFT default. An all-zero mask raises ``ValueError``. Masked positions may hold anything (0, −1e4,
    −inf, NaN): they are replaced by 0 before the weighted sum, so value and gradient ignore them.
    Integer inputs are converted to float64 (never an integer loss).
    """
    logp = as_tensor(token_logps, "token_logps", allow_nan=True)
    m = as_mask(mask, logp, "mask")
    active = m > 0
    check_active(logp, active, "token_logps", logprob=True)
    w = sft_token_weights(m, normalization).to(logp.dtype)  # (B, T)
    return -(w * active_values(logp, active)).sum()
