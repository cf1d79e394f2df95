"""The Compare and Proxies pages on real small-run checkpoints (AppTest): the "run checkpoints" source, the measured
proxy/gold curves and best-of-N with a learned proxy; with no runs, a CLI line instead of a traceback."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from lab import evaluation as ev
from lab import proxy
from lab.smallrun import evaluate as E
from lab.smallrun import rundir
from lab.smallrun.config import RunConfig
from lab.smallrun.engine import SmallRun

PAGES = Path(__file__).resolve().parent.parent / "pages"
RUN_CASES, RUN_SAMPLES = 100, 8  # the Compare page's defaults for run checkpoints


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Traceback" in (e.value or "") for e in at.error)


def _rm_run(path: Path) -> None:
    """A lab run directory holding a reward model (a real, randomly initialised GPT2ForSequenceClassification) as final/."""
    from transformers import GPT2Config, GPT2ForSequenceClassification

    from lab.models import char_tokenizer

    tok = char_tokenizer()
    torch.manual_seed(0)
    rm = GPT2ForSequenceClassification(GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=1, n_head=2, num_labels=1,
                                                  pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id))
    rd = rundir.RunDir.open(path, resume=False)
    try:
        rundir.atomic_write_text(path / "run_config.json", json.dumps({"algorithm": "rm", "task": "reversal", "max_new_tokens": 8}))

        def write(tmp):
            rm.save_pretrained(tmp)
            tok.save_pretrained(tmp)

        ck = rundir.write_checkpoint(rd, 1, write, rundir.weights_sha256(rm))
        rundir.publish_final(rd, ck)
    finally:
        rd.close()


PROXY_LEDGER = [
    {"type": "config", "config": {"algorithm": "grpo", "task": "reversal"}},
    {"type": "eval", "step": 0, "eval/accuracy": 0.30, "eval/proxy_reward": 0.10},
    {"type": "step", "step": 10, "reward": 0.4, "reward/verifier": 0.35},
    {"type": "eval", "step": 10, "eval/accuracy": 0.45, "eval/proxy_reward": 0.40, "eval/kl": 0.02},
    {"type": "step", "step": 20, "reward": 0.7, "reward/verifier": 0.25},
    {"type": "eval", "step": 20, "eval/accuracy": 0.25, "eval/proxy_reward": 0.75, "eval/kl": 0.09},
    {"type": "step", "step": 30, "reward": 0.9, "reward/verifier": 0.10},
    {"type": "eval", "step": 30, "eval/accuracy": 0.15, "eval/proxy_reward": 0.95, "eval/kl": 0.30},
]


def make_runs(root: Path) -> Path:
    """``g`` (a GRPO run with its SFT base stage), ``rm`` (a reward-model run) and ``hacked`` (a ledger with proxy and gold)."""
    cfg = RunConfig(algorithm="grpo", steps=2, base_steps=120, batch_size=4, group_size=2, eval_every=100, eval_size=20,
                    save_every=1, keep=3, model_size="tiny", seed=0)
    SmallRun(cfg, root / "g").run()
    _rm_run(root / "rm")
    rd = rundir.RunDir.open(root / "hacked", resume=False)
    try:
        led = rundir.ChainLedger(root / "hacked" / "ledger.jsonl")
        for r in PROXY_LEDGER:
            led.append(r)
    finally:
        rd.close()
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    return make_runs(tmp_path_factory.mktemp("runs"))


def compare_on_runs(monkeypatch, root) -> AppTest:
    monkeypatch.setenv("LAB_RUNS_DIR", str(root))
    at = AppTest.from_file(str(PAGES / "compare.py"), default_timeout=120).run()
    at.radio(key="cmp_source").set_value("run checkpoints").run()
    clean(at)
    return at


# ---------------------------------------------------------------- Compare: run checkpoints


def test_compare_defaults_to_base_final_vs_final_and_shows_measured_numbers(runs, monkeypatch):
    at = compare_on_runs(monkeypatch, runs)
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="cmp_run").options == ["g"]  # the reward-model run is not a policy; "hacked" has no checkpoint
    assert "rm · final" not in at.selectbox(key="cmp_ck_a_g").options
    assert at.selectbox(key="cmp_ck_a_g").value == "g/base · final" and at.selectbox(key="cmp_ck_b_g").value == "g · final"
    a = E.evaluate_checkpoint(runs / "g" / "base" / "final", n_cases=RUN_CASES, n_samples=RUN_SAMPLES, seed=0)
    b = E.evaluate_checkpoint(runs / "g" / "final", n_cases=RUN_CASES, n_samples=RUN_SAMPLES, seed=0)
    p = ev.paired_bootstrap(a.correct, b.correct)
    assert metric(at, "mean difference (candidate − baseline)") == f"{p.mean_difference:+.3f}"
    assert metric(at, "paired 95% interval") == f"[{p.low:+.3f}, {p.high:+.3f}]"
    table = E.comparison_table(a, b)
    sel = ev.selective_metrics(b.correct, ev.abstain_below(table["confidence"], 0.5))
    assert metric(at, "coverage") == f"{sel.coverage:.1%}"
    oa = E.evaluate_checkpoint(runs / "g" / "base" / "final", task="addition", n_cases=RUN_CASES, n_samples=0)
    ob = E.evaluate_checkpoint(runs / "g" / "final", task="addition", n_cases=RUN_CASES, n_samples=0)
    r = ev.retention(oa.correct, ob.correct)
    assert metric(at, "old task before") == f"{r.before:.3f}" and metric(at, "old task after") == f"{r.after:.3f}"
    claim = next(i.value for i in at.info if "paired bootstrap interval" in i.value)
    assert "Checkpoint g · final, compared with g/base · final" in claim and f"{RUN_CASES} independent cases" in claim
    assert "greedy held-out accuracy (exact verifier)" in claim and "the addition task" in claim
    assert f"{r.change:+.3f}" in claim and "8 samples per case" in claim
    assert any("pass@k" in s.value for s in at.subheader)


def test_compare_follows_the_picked_checkpoint_and_case_count(runs, monkeypatch):
    at = compare_on_runs(monkeypatch, runs)
    at.selectbox(key="cmp_ck_b_g").set_value("g · step 1").run()
    at.select_slider(key="cmp_run_n").set_value(20).run()
    clean(at)
    a = E.evaluate_checkpoint(runs / "g" / "base" / "final", n_cases=20, n_samples=RUN_SAMPLES)
    b = E.evaluate_checkpoint(runs / "g" / "checkpoints" / "step-000001", n_cases=20, n_samples=RUN_SAMPLES)
    p = ev.paired_bootstrap(a.correct, b.correct)
    assert metric(at, "paired 95% interval") == f"[{p.low:+.3f}, {p.high:+.3f}]"
    assert any("20 independent cases" in i.value for i in at.info)


def test_compare_without_runs_gives_the_cli_line(tmp_path, monkeypatch):
    at = compare_on_runs(monkeypatch, tmp_path / "no-runs")
    assert any("python -m lab.smallrun grpo --out" in i.value for i in at.info)
    assert not at.metric


def test_compare_tampered_checkpoint_is_a_message_not_a_traceback(runs, tmp_path, monkeypatch):
    root = tmp_path / "runs"
    shutil.copytree(runs / "g", root / "g")
    cfg = root / "g" / "final" / "config.json"
    cfg.write_text(cfg.read_text() + " ")
    at = compare_on_runs(monkeypatch, root)
    assert any("config.json was changed" in e.value for e in at.error), [e.value for e in at.error]


# ---------------------------------------------------------------- Proxies: measured curves and best-of-N


def test_proxies_page_shows_measured_run_curves_and_best_of_n(runs, monkeypatch):
    monkeypatch.setenv("LAB_RUNS_DIR", str(runs))
    at = AppTest.from_file(str(PAGES / "proxies.py"), default_timeout=180).run()
    clean(at)
    assert at.selectbox(key="px_run").value == "hacked" and at.selectbox(key="px_run").options == ["hacked"]
    rc = proxy.run_curves(str(runs / "hacked"))
    assert metric(at, "gold accuracy, last eval") == f"{rc.gold[-1]:.3f}" == "0.150"
    assert metric(at, "proxy reward, last eval") == "0.950"
    assert any("measured: proxy" in i.value for i in at.info), "proxy up while gold falls: the misconception card"
    _, _, alpha, beta, _ = rc.gao_fit("rl")
    names = [t.get("name") for c in at.get("plotly_chart") for t in json.loads(c.proto.spec)["data"]]
    assert f"Gao RL fit (α={alpha:.2f}, β={beta:.2f})" in names, names
    assert at.selectbox(key="px_bon_policy").value == "g · final" and at.selectbox(key="px_bon_rm").value == "rm · final"
    res = E.best_of_n_with_proxy(runs / "g" / "final", runs / "rm" / "final", n_cases=20, n_max=64, seed=0)
    cap = next(c.value for c in at.caption if "samples each drawn once" in c.value)
    assert "20 held-out reversal prompts, 64 samples each" in cap and "N = 1 … 64" in cap
    assert res.curve.n == [1, 2, 4, 8, 16, 32, 64]
    charts = at.get("plotly_chart")
    assert len(charts) >= 4


def test_proxies_page_without_runs_explains_how_to_make_them(tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "none"))
    at = AppTest.from_file(str(PAGES / "proxies.py"), default_timeout=60).run()
    clean(at)
    infos = [i.value for i in at.info]
    assert any("lab.smallrun rm --rm-bias length --base-steps 200 --out" in v and "--reward-model" in v for v in infos), infos
    assert any("needs a policy run and a reward-model run" in v for v in infos), infos


def test_best_of_n_defaults_to_the_policy_the_reward_model_learned_from(runs, tmp_path, monkeypatch):
    """With a reward-model run that has its own base stage, best-of-N starts from that base policy (whose samples the
    proxy was trained on), not from another run's final policy (one already optimized against the proxy, say)."""
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(runs / "g", root / "g")
    _rm_run(root / "rmb")
    shutil.copytree(runs / "g" / "base", root / "rmb" / "base")
    monkeypatch.setenv("LAB_RUNS_DIR", str(root))
    at = AppTest.from_file(str(PAGES / "proxies.py"), default_timeout=180).run()
    clean(at)
    assert at.selectbox(key="px_bon_rm").value == "rmb · final"
    assert at.selectbox(key="px_bon_policy").value == "rmb/base · final", at.selectbox(key="px_bon_policy").options
