"""Edge-sweep entries for the library functions added for the pages (issue 10, "no math in pages").

Not a test module by itself: the generated edge sweep (``tests/test_edge_sweep.py``, another branch) enumerates
every public function of lab.sft/preference/rl/kl/ppo/dpo/grpo and fails for one without cases. After merging,
register these in its ``SPECS``, e.g. ``SPECS["lab.pages"] = lambda: spec_page_functions(Case, Raises)``.
Several functions return a ``NamedTuple``: the sweep's ``to_py`` must project those with ``tuple(...)`` (a
NamedTuple cannot be rebuilt from one generator argument).

References are plain float64 formulas written out here, independent of the code under test.
"""

from __future__ import annotations

import math

import torch

NAN, INF = float("nan"), float("inf")


def _kl(p, q):
    return sum(a * math.log(a / b) for a, b in zip(p, q) if a > 0)


def spec_page_functions(Case, Raises) -> list:
    c: list = []
    add = lambda fn, label, kwargs, expect, **kw: c.append(Case(f"lab.{fn}", label, kwargs, expect, **kw))

    # lab.kl.log_probabilities
    for label, p in (("half", 0.5), ("one", 1.0), ("int one", 1), ("tiny", 1e-300), ("list", [0.25, 1.0])):
        want = [math.log(x) for x in p] if isinstance(p, list) else math.log(p)
        add("kl.log_probabilities", label, {"probs": p}, want)
    for label, p in (("zero", 0.0), ("above one", 1.5), ("negative", -0.1), ("nan", NAN), ("inf", INF), ("text", "p"), ("-inf", -INF)):
        add("kl.log_probabilities", label, {"probs": p, "name": "probs"}, Raises(("probs",)))

    # lab.kl.kl_regularized_objective → (objective, expected_reward, kl)
    P, Q, R = [0.3, 0.2, 0.5], [0.4, 0.4, 0.2], [0.0, 1.0, 2.0]
    for beta in (1.0, 0.5, 1e-6, 1e6):
        kl = _kl(P, Q)
        add("kl.kl_regularized_objective", f"beta={beta}", {"policy": P, "ref_probs": Q, "rewards": R, "beta": beta},
            (1.2 - beta * kl, 1.2, kl), rtol=1e-9, atol=1e-9)
    for noise in (1e-17, 1e-12, 1e-9):
        add("kl.kl_regularized_objective", f"near-equal {noise}", {"policy": [0.5 + noise, 0.5 - noise], "ref_probs": [0.5, 0.5],
                                                                   "rewards": [1.0, 1.0], "beta": 0.1}, (1.0, 1.0, 0.0), atol=1e-15)
    add("kl.kl_regularized_objective", "support mismatch", {"policy": [0.5, 0.5], "ref_probs": [1.0, 0.0], "rewards": [1.0, 3.0], "beta": 0.1},
        (-INF, 2.0, INF))
    add("kl.kl_regularized_objective", "zero mass, huge reward", {"policy": [1.0, 0.0], "ref_probs": [0.5, 0.5], "rewards": [2.0, 1e300], "beta": 1.0},
        (2.0 - math.log(2), 2.0, math.log(2)))
    add("kl.kl_regularized_objective", "int inputs", {"policy": [1, 0], "ref_probs": [1, 0], "rewards": [3, 1], "beta": 2}, (3.0, 3.0, 0.0))
    for label, kw, names in (
        ("beta 0", {"beta": 0.0}, ("beta",)), ("beta nan", {"beta": NAN}, ("beta",)), ("beta inf", {"beta": INF}, ("beta",)),
        ("policy not a pmf", {"policy": [0.6, 0.6, 0.1]}, ("policy",)), ("ref not a pmf", {"ref_probs": [0.7, 0.7, 0.2]}, ("ref_probs",)),
        ("reward inf", {"rewards": [0.0, INF, 1.0]}, ("rewards",)), ("reward nan", {"rewards": [0.0, NAN, 1.0]}, ("rewards",)),
        ("policy nan", {"policy": [NAN, 0.5, 0.5]}, ("policy",)), ("mismatch", {"rewards": [0.0, 1.0]}, ("policy", "rewards")),
        ("ref mismatch", {"ref_probs": [0.5, 0.5]}, ("policy", "ref_probs")), ("empty", {"policy": [], "ref_probs": [], "rewards": []}, ("policy",)),
    ):
        add("kl.kl_regularized_objective", label, {"policy": P, "ref_probs": Q, "rewards": R, "beta": 1.0, **kw}, Raises(names))

    # lab.ppo.clipping_effect → (unclipped, clipped, removed)
    for (a, rho, eps, eh), want in (((2.0, 1.4, 0.2, None), (2.8, 2.4, 0.4)), ((-2.0, 0.6, 0.2, None), (-1.2, -1.6, 0.4)),
                                     ((-2.0, 1.4, 0.2, None), (-2.8, -2.8, 0.0)), ((2.0, 1.2, 0.1, 0.3), (2.4, 2.4, 0.0)),
                                     ((0.0, 2.0, 0.2, None), (0.0, 0.0, 0.0)), ((1e300, 0.5, 0.2, None), (5e299, 5e299, 0.0))):
        add("ppo.clipping_effect", f"A={a} rho={rho}", {"ratio": rho, "advantages": a, "epsilon": eps, "epsilon_high": eh}, want)
    add("ppo.clipping_effect", "int", {"ratio": 2, "advantages": 1, "epsilon": 0.5}, (2.0, 1.5, 0.5))
    for label, kw, names in (("ratio<0", {"ratio": -0.1}, ("ratio",)), ("ratio inf", {"ratio": INF}, ("ratio",)), ("ratio nan", {"ratio": NAN}, ("ratio",)),
                             ("adv inf", {"advantages": INF}, ("advantages",)), ("adv nan", {"advantages": NAN}, ("advantages",)),
                             ("eps 1", {"epsilon": 1.0}, ("epsilon",)), ("shapes", {"ratio": [1.0, 2.0], "advantages": [1.0, 2.0, 3.0]}, ("ratio", "advantages"))):
        add("ppo.clipping_effect", label, {"ratio": 1.0, "advantages": 1.0, **kw}, Raises(names))

    # lab.ppo.kl_shaped_reward_from_ratio
    for score, ratio, beta in ((0.8, 2.0, 0.1), (0.0, 1e-300, 1.0), (-3.0, 1e300, 0.5), (1, 1, 1)):
        add("ppo.kl_shaped_reward_from_ratio", f"{score},{ratio},{beta}", {"score": score, "ratio": ratio, "beta": beta},
            score - beta * math.log(ratio), rtol=1e-12)
    for label, kw, names in (("ratio 0", {"ratio": 0.0}, ("ratio",)), ("ratio<0", {"ratio": -1.0}, ("ratio",)), ("ratio inf", {"ratio": INF}, ("ratio",)),
                             ("ratio nan", {"ratio": NAN}, ("ratio",)), ("beta 0", {"beta": 0.0}, ("beta",)), ("score nan", {"score": NAN}, ("score",)),
                             ("score inf", {"score": INF}, ("score",)), ("shapes", {"score": [1.0, 2.0], "ratio": [1.0, 2.0, 3.0]}, ("score", "ratio"))):
        add("ppo.kl_shaped_reward_from_ratio", label, {"score": 0.8, "ratio": 2.0, "beta": 0.1, **kw}, Raises(names))

    # lab.dpo.log_ratio
    for lp, rlp in ((math.log(0.6), math.log(0.3)), (0.0, -1e4), (-1e-17, 0.0), (-1, -2)):
        add("dpo.log_ratio", f"{lp},{rlp}", {"logps": lp, "ref_logps": rlp}, float(lp) - float(rlp), atol=1e-15)
    for label, kw, names in (("logp>0", {"logps": 0.5}, ("logps",)), ("ref -inf", {"ref_logps": -INF}, ("ref_logps",)),
                             ("nan", {"logps": NAN}, ("logps",)), ("shapes", {"logps": [-1.0, -2.0], "ref_logps": [-1.0, -2.0, -3.0]}, ("logps", "ref_logps"))):
        add("dpo.log_ratio", label, {"logps": -1.0, "ref_logps": -1.0, **kw}, Raises(names))

    # lab.preference.majority_edges
    from lab.preference import Comparison, Observation

    o = lambda a, b, w=1.0: Observation("x", a, b, "j", w)
    add("preference.majority_edges", "cycle", {"comparisons": [o("A", "B"), o("B", "C"), o("C", "A")]}, [("A", "B"), ("B", "C"), ("C", "A")])
    add("preference.majority_edges", "1-1 no edge", {"comparisons": [o("A", "B"), o("B", "A")]}, [])
    add("preference.majority_edges", "split tie", {"comparisons": [o("A", "B"), o("A", "B", 0.5), o("B", "A", 0.5)]}, [("A", "B")])
    add("preference.majority_edges", "empty", {"comparisons": []}, [])
    add("preference.majority_edges", "comparison records", {"comparisons": [Comparison("x", "A", "B", "j", "b"), Comparison("x", "A", "B", "j", "tie")]},
        [("B", "A")])
    add("preference.majority_edges", "negative weight", {"comparisons": [o("A", "B", -1.0)]}, Raises(("weight",)))
    add("preference.majority_edges", "nan weight", {"comparisons": [o("A", "B", NAN)]}, Raises(("weight",)))
    add("preference.majority_edges", "not a record", {"comparisons": ["A > B"]}, Raises(("comparisons",)))

    # lab.grpo.length_mask, token_advantages, group_surrogate, loss_types_from_ratios, step_end_positions
    add("grpo.length_mask", "3,1,0", {"lengths": [3, 1, 0]}, [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    add("grpo.length_mask", "float whole", {"lengths": [2.0], "max_length": 3}, [[1.0, 1.0, 0.0]])
    for label, kw, names in (("empty", {"lengths": []}, ("lengths",)), ("fraction", {"lengths": [2.5]}, ("lengths",)), ("negative", {"lengths": [-1]}, ("lengths",)),
                             ("inf", {"lengths": [INF]}, ("lengths",)), ("nan", {"lengths": [NAN]}, ("lengths",)), ("text", {"lengths": ["3"]}, ("lengths",)),
                             ("bool", {"lengths": [True]}, ("lengths",)), ("max too small", {"lengths": [3], "max_length": 2}, ("max_length",))):
        add("grpo.length_mask", label, kw, Raises(names))
    m = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    add("grpo.token_advantages", "spread", {"advantages": [0.5, -2.0], "mask": m}, [[0.5, 0.5, 0.0], [-2.0, 0.0, 0.0]])
    add("grpo.token_advantages", "huge, masked exactly 0", {"advantages": [1e300, -1e300], "mask": m}, [[1e300, 1e300, 0.0], [-1e300, 0.0, 0.0]])
    add("grpo.token_advantages", "bool mask", {"advantages": [1.0, 2.0], "mask": m.bool()}, [[1.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    for label, kw, names in (("adv inf", {"advantages": [1.0, INF]}, ("advantages",)), ("adv nan", {"advantages": [NAN, 1.0]}, ("advantages",)),
                             ("rows", {"advantages": [1.0]}, ("mask",)), ("non 0/1 mask", {"mask": m * 0.5}, ("mask",)),
                             ("adv 2-D", {"advantages": [[1.0], [2.0]]}, ("advantages",))):
        add("grpo.token_advantages", label, {"advantages": [1.0, 2.0], "mask": m, **kw}, Raises(names))
    add("grpo.group_surrogate", "lab illustration 004N", {"ratios": [1.3, 0.7, 1.1, 0.9], "advantages": [1.0, -1.0, -1.0, 1.0], "epsilon": 0.2},
        ([1.2, -0.8, -1.1, 0.9], 0.05), atol=1e-12)
    add("grpo.group_surrogate", "zero advantages", {"ratios": [1e6, 0.0], "advantages": [0.0, 0.0]}, ([0.0, 0.0], 0.0))
    for label, kw, names in (("sizes", {"ratios": [1.0, 1.0], "advantages": [1.0]}, ("ratios", "advantages")), ("empty", {"ratios": [], "advantages": []}, ("ratios",)),
                             ("ratio inf", {"ratios": [INF], "advantages": [1.0]}, ("ratios",)), ("ratio nan", {"ratios": [NAN], "advantages": [1.0]}, ("ratios",)),
                             ("ratio<0", {"ratios": [-1.0], "advantages": [1.0]}, ("ratio", "ratios")), ("eps", {"epsilon": 1.0}, ("epsilon",))):
        add("grpo.group_surrogate", label, {"ratios": [1.0], "advantages": [1.0], **kw}, Raises(names))
    add("grpo.loss_types_from_ratios", "ratios 1", {"ratios": [1.0, 1.0], "advantages": [1.0, -1.0], "lengths": [2, 1]},
        lambda got: abs(got["grpo"][0]) < 1e-15 and abs(got["bnpo"][0] + 1 / 3) < 1e-15 and abs(got["dr_grpo"][0] + 0.25) < 1e-15)
    add("grpo.loss_types_from_ratios", "huge ratio", {"ratios": [50.0, 1e-3], "advantages": [1.0, -1.0], "lengths": [1, 1]},
        lambda got: abs(got["grpo"][0] + 0.2) < 1e-12)
    for label, kw, names in (("ratio 0", {"ratios": [1.0, 0.0]}, ("ratios",)), ("ratio inf", {"ratios": [1.0, INF]}, ("ratios",)),
                             ("adv size", {"advantages": [1.0]}, ("advantages",)), ("lengths size", {"lengths": [1]}, ("lengths",)),
                             ("length 0", {"lengths": [1, 0]}, ("lengths",)), ("length fraction", {"lengths": [1, 2.5]}, ("lengths",))):
        add("grpo.loss_types_from_ratios", label, {"ratios": [1.0, 1.0], "advantages": [1.0, -1.0], "lengths": [1, 1], **kw}, Raises(names))
    add("grpo.step_end_positions", "3,4,2", {"step_lengths": [3, 4, 2]}, [2, 6, 8])
    add("grpo.step_end_positions", "floats", {"step_lengths": [2.0, 1]}, [1, 2])
    for bad in ([], [0], [1, -2], [1.5], [INF], [NAN], [True], ["2"]):
        add("grpo.step_end_positions", repr(bad), {"step_lengths": bad}, Raises(("step_lengths",)))

    # lab.preference.reward_model_loss(weights=): the new argument (the function itself is swept already)
    rl = lambda d: -math.log(1 / (1 + math.exp(-d)))
    add("preference.reward_model_loss", "weights, issue 10", {"r_chosen": [1.0, 1.0, -1.0, 1.0, -1.0], "r_rejected": [0.0] * 5,
                                                              "weights": [1.0, 1.0, 1.0, 0.5, 0.5]},
        (2.5 * rl(1.0) + 1.5 * rl(-1.0)) / 4, rtol=1e-12)
    add("preference.reward_model_loss", "weights tiny", {"r_chosen": [2.0, 0.0], "r_rejected": [0.0, 0.0], "weights": [1e-300, 0.0]}, rl(2.0), rtol=1e-12)
    for label, w in (("negative", [1.0, -1.0]), ("inf", [1.0, INF]), ("nan", [1.0, NAN]), ("all zero", [0.0, 0.0]), ("shape", [1.0])):
        add("preference.reward_model_loss", f"weights {label}", {"r_chosen": [1.0, 2.0], "r_rejected": [0.0, 0.0], "weights": w}, Raises(("weights",)))
    return c
