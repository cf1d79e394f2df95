"""Issue 13 on the formula pages sft, preferences, returns, kl_optimal, ppo, dpo (AppTest): course links, two
predictions answered wrong then revealed with the lab-computed answer, shareable links restoring the inputs,
projector mode, and bad link parameters falling back with a message."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lab import course, quiz

PAGES = Path(__file__).resolve().parent.parent / "pages"
MINE = ["sft", "preferences", "returns", "kl_optimal", "ppo", "dpo"]


def run(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def markdown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def widget(at: AppTest, key: str):
    for kind in ("slider", "select_slider", "number_input", "text_input", "text_area", "radio", "selectbox", "checkbox"):
        for w in getattr(at, kind):
            if w.key == key:
                return w
    raise KeyError(key)


@pytest.mark.parametrize("page", MINE)
def test_previous_and_next_links(page):
    at = run(page)
    prev, nxt = course.neighbours(page)
    md = markdown(at)
    if prev is not None:
        assert f"[← Previous: {prev.title}](/{prev.key})" in md
    if nxt is not None:
        assert f"[Next: {nxt.title} →](/{nxt.key})" in md
    assert any(m.startswith("Notebook: ") for m in md)


def _wrong(q) -> object:
    ans = q.answer()
    if q.choices is not None:
        return next(c for c in q.choices if c != ans)
    return float(ans) + 10 * q.tolerance + 1.0  # outside the stated tolerance


@pytest.mark.parametrize("page", MINE)
def test_two_predictions_wrong_then_revealed(page):
    qs = quiz.for_chapter(page)
    assert len(qs) >= 2, page
    at = run(page)
    for q in qs[:2]:
        guess = next(w for w in (list(at.radio) + list(at.number_input)) if w.key == f"predict_{q.key}_guess")
        guess.set_value(_wrong(q)).run()
        next(b for b in at.button if b.key == f"predict_{q.key}_commit").click().run()
        assert not at.exception, [e.value for e in at.exception]
        ans = q.answer()
        shown = ans if q.choices is not None else f"{float(ans):.4g}"
        assert any(f"lab computes **{shown}**" in w.value and "Not quite" in w.value for w in at.warning), \
            (q.key, [w.value for w in at.warning])


LINKS = {
    "ppo": ({"epsilon": "0.2", "advantage": "-2", "ratio": "0.7"}, {"ppo_eps": 0.2, "ppo_adv": -2.0, "ppo_rho": 0.7}),
    "dpo": ({"policy_chosen": "0.6", "ref_chosen": "0.3", "policy_rejected": "0.2", "ref_rejected": "0.4", "beta": "1.5"},
            {"dpo_pc": 0.6, "dpo_rc": 0.3, "dpo_pr": 0.2, "dpo_rr": 0.4, "dpo_beta": 1.5}),
    "sft": ({"mask": "full", "example1": "0.5, 0.5, 0.5, 0.5, 0.5", "include_example2": "0"},
            {"sft_mode": "full", "sft_p1": "0.5, 0.5, 0.5, 0.5, 0.5", "sft_use2": False}),
    "preferences": ({"chosen_score": "2.5", "rejected_score": "-1", "offset": "2", "comparisons": "A > B\nB > C\nC > A", "ties": "split", "l2": "0"},
                    {"pref_rc": 2.5, "pref_rr": -1.0, "pref_offset": 2.0, "pref_table": "A > B\nB > C\nC > A", "pref_ties": "split", "pref_l2": 0.0}),
    "returns": ({"rewards": "1, 2, 3", "values": "0, 0, 0", "gamma": "0.5", "lambda": "0.3"},
                {"ret_rewards": "1, 2, 3", "ret_values": "0, 0, 0", "ret_gamma": 0.5, "ret_lam": 0.3}),
    "kl_optimal": ({"ref": "0.5, 0.5", "rewards": "1, 0", "beta": "2"}, {"klo_ref": "0.5, 0.5", "klo_r": "1, 0", "klo_beta": 2.0}),
}


@pytest.mark.parametrize("page", MINE)
def test_link_restores_the_inputs(page):
    params, want = LINKS[page]
    at = run(page, **params)
    assert not at.error, [e.value for e in at.error]
    for key, value in want.items():
        got = widget(at, key).value
        assert got == pytest.approx(value) if isinstance(value, float) else got == value, (key, got)
    for name, raw in params.items():  # the URL keeps the link's values
        assert at.query_params[name] == [raw] or at.query_params[name] == raw or float(at.query_params[name][0]) == float(raw)


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_ppo_link_shows_minus_1_6():
    at = run("ppo", epsilon="0.2", advantage="-2", ratio="0.7")
    assert float(metric(at, "clipped objective min(ρA, clip(ρ)A)")) == pytest.approx(-1.6)


def test_dpo_link_values_reach_the_metrics():
    at = run("dpo", **LINKS["dpo"][0])
    z = 1.5 * (math.log(0.6 / 0.3) - math.log(0.2 / 0.4))
    assert float(metric(at, "β·margin z")) == pytest.approx(z, abs=1e-4)


@pytest.mark.parametrize("page", MINE)
def test_projector_mode_runs_clean(page):
    at = run(page, projector="1")
    assert not at.error, [e.value for e in at.error]
    assert at.toggle(key="projector").value is True
    assert len(at.get("plotly_chart")) >= 1


BAD = {
    "ppo": {"advantage": "-99", "epsilon": "abc"},
    "dpo": {"beta": "5", "policy_chosen": "x"},
    "sft": {"mask": "everything", "include_example2": "maybe"},
    "preferences": {"ties": "sometimes", "offset": "1e9"},
    "returns": {"gamma": "2", "lambda": "nan"},
    "kl_optimal": {"beta": "0.7", "ref": "x" * 500},
}


@pytest.mark.parametrize("page", MINE)
def test_bad_link_parameters_fall_back_with_a_message(page):
    clean = run(page)
    defaults = {k: w.value for k, w in ((k, widget(clean, Param.key)) for k, Param in _params(page).items())}
    at = run(page, **BAD[page])
    warnings = [w.value for w in at.warning]
    for name in BAD[page]:
        assert any(f"`{name}` ignored" in w for w in warnings), (name, warnings)
        assert widget(at, _params(page)[name].key).value == defaults[name]


def _params(page: str) -> dict:
    import ast

    tree = ast.parse((PAGES / f"{page}.py").read_text())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PARAMS" for t in node.targets):
            for k, v in zip(node.value.keys, node.value.values):
                out[k.value] = type("P", (), {"key": v.args[0].value})
    assert out, page
    return out


def test_dpo_card_when_chosen_falls_while_margin_rises():
    at = run("dpo")  # defaults: chosen 0.3 → 0.25, rejected 0.4 → 0.1
    assert any("chosen reward falls while the margin rises" in i.value for i in at.info)
    at = run("dpo", policy_chosen="0.6")  # chosen rises: no card
    assert not any("chosen reward falls" in i.value for i in at.info)


def test_kl_card_for_a_negative_k1_sample():
    at = run("kl_optimal")
    assert any("negative KL estimate" in i.value for i in at.info)
    at = run("kl_optimal", ref="1", rewards="0")  # one outcome: π* = π_ref, every k1 is 0
    assert not any("negative KL estimate" in i.value for i in at.info)


def test_worked_example_buttons_change_the_page():
    for page, key, label in (("ppo", "load_ppo_example", "clipped objective min(ρA, clip(ρ)A)"),
                             ("dpo", "load_dpo_example", "loss −log σ(z)"),
                             ("preferences", "load_pref_example", "P(y⁺ ≻ y⁻)"),
                             ("returns", "load_ret_example", "G₀"),
                             ("sft", "load_sft_example", "Loss, token mean")):
        at = run(page)
        before = metric(at, label)
        at.button(key=key).click().run()
        assert metric(at, label) != before, page


def test_sft_normalizations_differ_visibly_by_default():
    at = run("sft")
    tok, seq = float(metric(at, "Loss, token mean")), float(metric(at, "Loss, sequence mean"))
    assert abs(tok - seq) > 0.1
    assert any(c.key == "sft_norms" for c in at.get("plotly_chart")) or len(at.get("plotly_chart")) >= 3


def test_ppo_card_at_ratio_one():
    at = run("ppo", ratio="1")
    assert any("Clip fraction exactly 0" in i.value for i in at.info)
    assert not any("Clip fraction exactly 0" in i.value for i in run("ppo").info)
