import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.sft import Segment, loss_mask, sft_loss, sft_token_weights, shift_for_next_token, token_logprobs


def test_token_logprobs_matches_log_softmax_by_hand():
    logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0]]])  # (1, 2, 2)
    labels = torch.tensor([[1, 0]])
    lp = token_logprobs(logits, labels)
    assert lp.shape == (1, 2)
    assert lp[0, 0].item() == pytest.approx(math.log(0.5))
    assert lp[0, 1].item() == pytest.approx(math.log(0.75))


def test_token_logprobs_ignore_index_and_shift():
    logits = torch.randn(2, 4, 5)
    ids = torch.randint(0, 5, (2, 4))
    lg, lab = shift_for_next_token(logits, ids)
    assert lg.shape == (2, 3, 5) and lab.shape == (2, 3)
    lab = lab.clone()
    lab[0, 0] = -100
    lp = token_logprobs(lg, lab, ignore_index=-100)
    assert lp[0, 0].item() == 0.0
    assert torch.allclose(lp[1], torch.log_softmax(lg[1], -1).gather(-1, lab[1:2].T).squeeze(-1))


def test_token_logprobs_bad_input():
    with pytest.raises(ValueError, match="logits"):
        token_logprobs(torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="labels"):
        token_logprobs(torch.zeros(1, 2, 3), torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="labels"):
        token_logprobs(torch.zeros(1, 2, 3), torch.tensor([[0, 7]]))


CONVO = [
    Segment("system", ["SYS"]),
    Segment("user", ["USER", "hi"]),
    Segment("assistant", ["yo", "END"]),
    Segment("user", ["USER", "more"]),
    Segment("assistant", ["ok", "END"]),
]


def test_loss_mask_modes_and_padding():
    short = [Segment("user", ["USER", "ping"]), Segment("assistant", ["OK", "END"])]
    comp = loss_mask([CONVO, short], "completion")
    asst = loss_mask([CONVO, short], "assistant")
    full = loss_mask([CONVO, short], "full")
    assert comp.loss_mask[0].tolist() == [0, 0, 0, 0, 0, 0, 0, 1, 1]
    assert asst.loss_mask[0].tolist() == [0, 0, 0, 1, 1, 0, 0, 1, 1]
    assert full.loss_mask[0].tolist() == [1] * 9
    # padding: short example is right-padded, never in loss or attention, in every mode
    for b in (comp, asst, full):
        assert b.roles[1][4:] == ["pad"] * 5
        assert b.loss_mask[1, 4:].sum() == 0
        assert b.attention_mask[1].tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 0]
    # the prompt stays in context although masked out of the loss
    assert comp.attention_mask[0].sum() == 9 and comp.loss_mask[0, :3].sum() == 0


def test_loss_mask_bad_input():
    with pytest.raises(ValueError, match="mode"):
        loss_mask([CONVO], "everything")
    with pytest.raises(ValueError, match="role"):
        Segment("robot", ["x"])
    with pytest.raises(ValueError, match="assistant"):
        loss_mask([[Segment("user", ["a"])]], "completion")
    with pytest.raises(ValueError, match="examples"):
        loss_mask([], "full")


def test_sft_loss_three_normalizations_by_hand():
    # example 0: two supervised tokens with p = 1/2, 1/4; example 1: one supervised token with p = 1/8
    logp = torch.log(torch.tensor([[1.0, 0.5, 0.25], [0.125, 1.0, 1.0]], dtype=torch.float64))
    mask = torch.tensor([[0, 1, 1], [1, 0, 0]], dtype=torch.float64)
    s = math.log(2) + math.log(4) + math.log(8)
    assert sft_loss(logp, mask, "sum").item() == pytest.approx(s)
    assert sft_loss(logp, mask, "token").item() == pytest.approx(s / 3)
    assert sft_loss(logp, mask, "sequence").item() == pytest.approx(0.5 * (math.log(8) / 2 + math.log(8)))


def test_sft_loss_bad_input():
    logp = torch.log(torch.full((1, 3), 0.5))
    with pytest.raises(ValueError, match="mask"):
        sft_loss(logp, torch.zeros(1, 3))
    with pytest.raises(ValueError, match="mask"):
        sft_loss(logp, torch.ones(1, 2))
    with pytest.raises(ValueError, match="normalization"):
        sft_loss(logp, torch.ones(1, 3), "mean")
    with pytest.raises(ValueError, match="token_logps"):
        sft_loss(torch.tensor([[0.5, -1.0, -1.0]]), torch.ones(1, 3))
    with pytest.raises(ValueError, match="examples"):
        sft_loss(torch.log(torch.full((2, 2), 0.5)), torch.tensor([[1.0, 1.0], [0.0, 0.0]]), "sequence")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4), st.sampled_from(["token", "sequence"]))
def test_weights_sum_to_one(lengths, norm):
    T = max(lengths)
    mask = torch.zeros(len(lengths), T, dtype=torch.float64)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    assert sft_token_weights(mask, norm).sum().item() == pytest.approx(1.0)


def test_aggregation_reweights_long_answers():
    # a long answer of bad tokens dominates the token mean but not the sequence mean
    logp = torch.log(torch.tensor([[0.1] * 8, [0.9] + [1.0] * 7], dtype=torch.float64))
    mask = torch.tensor([[1.0] * 8, [1.0] + [0.0] * 7], dtype=torch.float64)
    assert sft_loss(logp, mask, "token") > sft_loss(logp, mask, "sequence")


# ---- Issue 10 §1: masked fillers, integer inputs, -inf logits ----

def test_sft_loss_masked_fillers_and_ints():
    assert sft_loss([[-1.0, float("-inf")]], [[1, 0]]).item() == 1.0  # used to be NaN
    for f in (0.0, -1e4, float("-inf"), float("nan"), float("inf")):
        lp = torch.tensor([[-1.0, -3.0, f]], dtype=torch.float32, requires_grad=True)
        loss = sft_loss(lp, torch.tensor([[True, True, False]]))
        loss.backward()
        assert loss.item() == 2.0 and lp.grad.tolist() == [[-0.5, -0.5, 0.0]]
    loss = sft_loss(torch.tensor([[-1, -2]]), torch.tensor([[1, 1]]))  # used to be tensor(0) in int64
    assert loss.dtype == torch.float64 and loss.item() == 1.5
    with pytest.raises(ValueError, match="token_logps must not contain NaN at active"):
        sft_loss([[float("nan")]], [[1]])


def test_token_logprobs_with_minus_inf_logits_and_ignored_garbage():
    logits = torch.tensor([[[0.0, float("-inf"), 0.0], [float("nan"), 1.0, 2.0]]], requires_grad=True)
    lp = token_logprobs(logits, torch.tensor([[0, -100]]), ignore_index=-100)
    assert lp[0].tolist() == pytest.approx([math.log(0.5), 0.0])
    lp.sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[0, 1].abs().sum().item() == 0.0
    with pytest.raises(ValueError, match="label probability 0"):
        token_logprobs(torch.tensor([[[0.0, float("-inf")]]]), torch.tensor([[1]]))
    with pytest.raises(ValueError, match="logits must not contain NaN"):
        token_logprobs(torch.tensor([[[0.0, float("nan")]]]), torch.tensor([[0]]))
    with pytest.raises(ValueError, match="labels must be integer"):
        token_logprobs(torch.zeros(1, 1, 2), torch.tensor([[0.5]]))
    assert token_logprobs(torch.tensor([[[1e4, 0.0]]]), [[1]]).item() == -1e4  # huge logits stay exact


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.sampled_from(["token", "sequence", "sum"]), st.data())
def test_sft_loss_ignores_whatever_masked_positions_hold(B, T, normalization, data):
    """Property: masked entries (any filler) change neither the SFT loss nor its gradient."""
    lp = torch.tensor(data.draw(st.lists(st.lists(st.floats(-20, 0), min_size=T, max_size=T), min_size=B, max_size=B)), dtype=torch.float64)
    mask = torch.tensor(data.draw(st.lists(st.lists(st.booleans(), min_size=T, max_size=T), min_size=B, max_size=B)))
    mask[:, 0] = True
    fill = torch.tensor(data.draw(st.lists(st.lists(st.sampled_from([0.0, -1e4, float("-inf"), float("inf"), float("nan")]),
                                                    min_size=T, max_size=T), min_size=B, max_size=B)), dtype=torch.float64)
    x, y = lp.clone().requires_grad_(True), torch.where(mask, lp, fill).requires_grad_(True)
    a, b = sft_loss(x, mask, normalization), sft_loss(y, mask.int(), normalization)
    a.backward()
    b.backward()
    assert torch.equal(a, b) and torch.equal(x.grad, y.grad)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.data())
def test_minus_inf_logits_renormalise_over_the_rest(V, data):
    """Property: tokens with logit −inf drop out; the others get log of their renormalised probability."""
    logits = data.draw(st.lists(st.floats(-30, 30), min_size=V, max_size=V))
    off = data.draw(st.lists(st.booleans(), min_size=V, max_size=V))
    label = data.draw(st.integers(0, V - 1))
    off[label] = False
    x = [float("-inf") if o else v for v, o in zip(logits, off)]
    kept = [v for v, o in zip(logits, off) if not o]
    m = max(kept)
    want = logits[label] - (m + math.log(sum(math.exp(v - m) for v in kept)))
    assert token_logprobs(torch.tensor([[x]], dtype=torch.float64), [[label]]).item() == pytest.approx(want, rel=1e-12, abs=1e-12)
