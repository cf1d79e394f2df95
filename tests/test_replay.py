import copy
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.models import char_tokenizer, tiny_gpt2
from lab.replay import (
    CurrentPolicy,
    DynamicGradientGate,
    PolicyStamp,
    ReplayPool,
    RolloutRecord,
    annotate,
    forecast_checkpoint,
    gate_zscore,
    rank_one_projectors,
)


def rec(i, at=0, lp=(math.log(0.25),)):
    return RolloutRecord(f"r{i}", "q", "stamp-b", ("y",), lp, ("e",), at)


def test_policy_stamp_changes_with_every_component():
    tok = char_tokenizer()
    m = tiny_gpt2(len(tok), n_layer=1, n_embd=16, n_head=2)
    base = PolicyStamp.from_parts(m, tok, {"v": 1}, {"temperature": 1.0}, "abc")
    assert base == PolicyStamp.from_parts(m, tok, {"v": 1}, {"temperature": 1.0}, "abc")
    assert base.digest != PolicyStamp.from_parts(m, tok, {"v": 2}, {"temperature": 1.0}, "abc").digest
    assert base.digest != PolicyStamp.from_parts(m, tok, {"v": 1}, {"temperature": 0.7}, "abc").digest
    assert base.digest != PolicyStamp.from_parts(m, tok, {"v": 1}, {"temperature": 1.0}, "abd").digest
    with torch.no_grad():
        next(m.parameters())[0, 0] += 1e-3
    assert base.digest != PolicyStamp.from_parts(m, tok, {"v": 1}, {"temperature": 1.0}, "abc").digest
    tok2 = char_tokenizer("0123456789")
    m2 = tiny_gpt2(len(tok2), n_layer=1, n_embd=16, n_head=2)
    assert PolicyStamp.from_parts(m2, tok2, {"v": 1}, {"temperature": 1.0}, "abc").tokenizer != base.tokenizer


def test_annotate_is_attempt_local():
    r = rec(1)
    frozen = copy.deepcopy(r)
    a = annotate(r, CurrentPolicy("now", lambda x: [math.log(0.5)]), update_index=3, prior_uses=2)
    assert a.ratios == pytest.approx((2.0,)) and a.clipped == (True,) and a.age == 3 and a.prior_uses == 2
    assert r == frozen
    with pytest.raises(Exception):
        r.collected_at = 5  # frozen dataclass
    with pytest.raises(ValueError, match="update_index"):
        annotate(rec(2, at=5), CurrentPolicy("now", lambda x: [-1.0]), update_index=3, prior_uses=0)
    with pytest.raises(ValueError, match="current_policy"):
        annotate(r, CurrentPolicy("now", lambda x: [-1.0, -1.0]), update_index=3, prior_uses=0)


def test_replay_pool_rules():
    pool = ReplayPool(capacity=2)
    for i in range(3):
        pool.insert(rec(i))
    assert [r.record_id for r in pool.records()] == ["r1", "r2"] and pool.evicted == ["r0"]
    g = torch.Generator().manual_seed(0)
    pool.select(2, g)
    assert pool.uses == {"r0": 0, "r1": 1, "r2": 1}
    mu = ReplayPool(capacity=5, eviction="max_uses", max_uses=1)
    mu.insert(rec(0))
    mu.insert(rec(1))
    mu.select(1, g)
    assert len(mu) == 1
    nz = ReplayPool(capacity=5, insertion="nonzero_advantage")
    assert not nz.insert(rec(0), advantage_spread=0.0) and nz.insert(rec(1), advantage_spread=0.5)
    with pytest.raises(ValueError, match="max_uses"):
        ReplayPool(3, eviction="max_uses")


def test_gate_zscore_and_bad_input():
    assert gate_zscore(1.5, 1.0, 0.5) == 1.0 and gate_zscore(2.5, 1.0, 0.5) == 3.0
    with pytest.raises(ValueError, match="s must be > 0"):
        gate_zscore(1.0, 1.0, 0.0)


def test_gate_with_real_adam_rejection_is_bit_identical():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 5))
    head = model[1].weight
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    gate = DynamicGradientGate(z_threshold=2.0, window=4, min_history=3)
    x = torch.randn(16, 4)
    decisions = []
    for k in range(12):
        scale = 50.0 if k == 9 else 1.0  # one proposal with an exploding gradient
        loss = (model(x) * scale).pow(2).mean()
        loss.backward()
        before = [p.detach().clone() for p in model.parameters()]
        state_before = copy.deepcopy(opt.state_dict())
        d = gate.step(opt, head)
        decisions.append(d.accepted)
        if not d.accepted:
            assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before))
            sd = opt.state_dict()
            for pid, st_ in state_before["state"].items():
                for key, v in st_.items():
                    assert torch.equal(sd["state"][pid][key], v)
            assert all(p.grad is None for p in model.parameters())
    assert decisions[9] is False and sum(decisions) == 11
    assert gate.cost.proposals == 12 and gate.cost.rejected == 1


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_projectors_sign_invariant(seed):
    g = torch.Generator().manual_seed(seed)
    u, v = torch.randn(5, generator=g, dtype=torch.float64), torch.randn(3, generator=g, dtype=torch.float64)
    (a, b), (c, d) = rank_one_projectors(u, v), rank_one_projectors(-u, -v)
    assert torch.equal(a, c) and torch.equal(b, d)


def test_forecast_checkpoint_linear_trajectory():
    g = torch.Generator().manual_seed(1)
    u, v = torch.randn(6, generator=g, dtype=torch.float64), torch.randn(4, generator=g, dtype=torch.float64)
    noise = [torch.randn(6, 4, generator=g, dtype=torch.float64) * 1e-3 for _ in range(3)]
    deltas = [k * torch.outer(u, v) + n for k, n in zip((1.0, 2.0, 3.0), noise)]
    f = forecast_checkpoint(deltas, rank=1)
    assert (f.predicted_delta - 4.0 * torch.outer(u, v)).abs().max() < 0.05
    assert all(e > 0.99 for e in f.explained)
    with pytest.raises(ValueError, match="at least 2"):
        forecast_checkpoint(deltas[:1])
    with pytest.raises(ValueError, match="rank"):
        forecast_checkpoint(deltas, rank=9)
