"""The playground's speed shortcuts (issue 14) leave every number unchanged.

The tabular bandit skips the product with the identity feature matrix, the identity gather and the
multiplication by an all-ones mask; a bandit given the identity as explicit features still takes the
general path. Both must give bit-identical runs under every objective variant, in both modes.
"""

import pytest
import torch

from lab import playground as P

TABULAR = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5])
GENERAL = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5], features=torch.eye(3).tolist())


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("variant", list(P.VARIANTS))
def test_tabular_shortcut_is_bit_identical_to_identity_features(variant, exact):
    objective, fixed = P.VARIANTS[variant]
    kw = dict(fixed, group_size=2) if exact and objective in ("grpo", "rloo") else dict(fixed)
    a = P.train(TABULAR, objective, 15, 0.7, seed=1, exact=exact, **kw)
    b = P.train(GENERAL, objective, 15, 0.7, seed=1, exact=exact, **kw)
    for field in ("probs", "loss", "kl", "grad_norm", "expected_reward"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field
    for x, y in zip(a.advantages, b.advantages):
        assert torch.equal(x, y)
    for x, y in zip(a.ratios, b.ratios):
        assert (x is None and y is None) or torch.equal(x, y)
    assert a.metrics == b.metrics


def test_space_flags():
    """The shortcuts switch on only where they are identities."""
    tab = P.build_space(TABULAR)
    tab.token_logps(tab.theta0)
    assert not tab._gather and not tab._masked
    eos = P.build_space(P.sequence_task("short_or_long", 2, 3))
    eos.token_logps(eos.theta0)
    assert eos._gather and eos._masked
    seq = P.build_space(P.sequence_task("count", 2, 3))
    seq.token_logps(seq.theta0)
    assert seq._gather and not seq._masked
