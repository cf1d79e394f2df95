"""The "Same batch, many recipes" page under streamlit.testing.v1.AppTest: its numbers are lab.presets', the
differences come with reasons, the URL restores the batch and the presets, and bad input is a message beside the
control (never a traceback)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from lab.presets import DEMO_GROUPS, DEMO_LOGPS, DEMO_RATIOS, make_batch, run_preset

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "recipes.py")


def start(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    clean(at)
    return at


def clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Traceback" in (e.value or "") for e in at.error)


def metric(at: AppTest, label: str) -> str:
    found = [m.value for m in at.metric if m.label == label]
    assert found, [m.label for m in at.metric]
    return found[0]


def test_default_page_shows_the_library_numbers():
    at = start()
    assert not at.error
    batch = make_batch(DEMO_GROUPS, DEMO_LOGPS, ratios=DEMO_RATIOS, ref_shift=0.1)
    for name in ("trl-1.16-grpo", "verl-grpo", "nanochat-rl"):
        r = run_preset(name, batch)
        assert metric(at, f"loss · {name}") == f"{r.loss:+.5f}"
        assert metric(at, f"clip fraction · {name}") == f"{r.clip_fraction:.3f}"
    assert len(at.get("plotly_chart")) == 2
    settings = at.dataframe[0].value
    assert "clip_ratio_c" in list(settings["setting"])
    assert any("dual-clip" in str(x) for x in settings["reason"])
    assert at.query_params["presets"] == "trl-1.16-grpo|verl-grpo|nanochat-rl"


def test_choosing_presets_updates_and_writes_the_link():
    at = start()
    at.multiselect(key="rec_presets").set_value(["dapo-paper", "dr-grpo-paper"]).run()
    clean(at)
    batch = make_batch(DEMO_GROUPS, DEMO_LOGPS, ratios=DEMO_RATIOS, ref_shift=0.1)
    assert metric(at, "loss · dr-grpo-paper") == f"{run_preset('dr-grpo-paper', batch).loss:+.5f}"
    assert at.query_params["presets"] == "dapo-paper|dr-grpo-paper"


def test_link_restores_batch_and_presets():
    at = start({"groups": "1, 0", "logps": "-1, -2\n-0.5", "ratios": "1, 1\n1", "presets": "nanochat-rl|dr-grpo-paper"})
    assert not at.error
    # hand values (tests/test_presets.py): nanochat 1.25/3 when the reference shift is irrelevant (no KL)
    assert metric(at, "loss · nanochat-rl") == f"{1.25 / 3:+.5f}"
    assert metric(at, "loss · dr-grpo-paper") == f"{-0.125:+.5f}"
    at = start({"ref_shift": "0.5", "presets": "verl-grpo|trl-1.16-grpo"})
    assert at.slider(key="rec_ref_shift").value == 0.5
    batch = make_batch(DEMO_GROUPS, DEMO_LOGPS, ratios=DEMO_RATIOS, ref_shift=0.5)
    assert metric(at, "loss · verl-grpo") == f"{run_preset('verl-grpo', batch).loss:+.5f}"


def test_bad_input_shows_a_message_and_the_page_stays_usable():
    at = start()
    at.text_area(key="rec_ratios").set_value("1, 1, 1\nbanana").run()
    clean(at)
    assert any("ratios" in e.value for e in at.error)
    at = start()
    at.text_area(key="rec_ratios").set_value("1, 1").run()  # wrong lengths
    clean(at)
    assert any("ratios" in e.value for e in at.error)
    at = start()
    at.text_area(key="rec_groups").set_value("1").run()  # one singleton group for eight responses
    clean(at)
    assert any("logps" in e.value for e in at.error)
    at = start()
    at.toggle(key="rec_pref_on").set_value(True).run()
    at.text_input(key="rec_pc").set_value("-1, nan").run()
    clean(at)
    assert any("chosen_logps" in e.value for e in at.error)


def test_one_preset_asks_for_another():
    at = start()
    at.multiselect(key="rec_presets").set_value(["verl-ppo"]).run()
    clean(at)
    assert any("at least two" in i.value for i in at.info)


def test_bad_link_falls_back_with_a_warning():
    at = start({"presets": "trl-9-grpo|nope"})
    assert any("presets" in w.value for w in at.warning)
    assert metric(at, "loss · verl-grpo")


def test_divergence_switch_plots_the_playground_runs():
    from lab.presets import simulate_presets

    at = start()
    at.toggle(key="rec_diverge").set_value(True).run()
    clean(at)
    assert len(at.get("plotly_chart")) == 3
    assert not at.error
    sims = simulate_presets(["trl-1.16-grpo", "verl-grpo", "nanochat-rl"], steps=30, lr=1.0)
    assert all(run is not None for run, _ in sims.values())
    assert any("not simulated" in c.value and "verl-grpo" in c.value for c in at.caption)


def test_preference_presets_table_is_the_library_losses():
    from lab.presets import PREFERENCE_PRESETS, PreferencePairs, run_preference_preset

    at = start()
    at.toggle(key="rec_pref_on").set_value(True).run()
    clean(at)
    table = at.dataframe[-1].value
    pairs = PreferencePairs([-5, -8, -3], [-6, -7, -9], [-5.5, -7.5, -4], [-5.5, -7.5, -8], [5, 8, 3], [6, 7, 9])
    for name in PREFERENCE_PRESETS:
        got = float(table.loc[table["preset"] == name, "loss"].iloc[0])
        assert got == run_preference_preset(name, pairs).loss
