"""Every page under streamlit.testing.v1.AppTest: runs clean, follows its inputs, loads its worked example,
shows bad input as an error message (never an exception)."""

import math
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from lab.dpo import dpo_loss
from lab.grpo import group_advantages
from lab.preference import bradley_terry_probability
from lab.rl import gae
from lab.sft import loss_mask, sft_loss

PAGES = Path(__file__).resolve().parent.parent / "pages"


def run(page: str) -> AppTest:
    at = AppTest.from_file(str(PAGES / f"{page}.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    for m in at.metric:
        if m.label == label:
            return m.value
    raise KeyError(f"no metric {label!r}; have {[m.label for m in at.metric]}")


def clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Traceback" in (e.value or "") for e in at.error)


def example_ok(at: AppTest) -> None:
    assert any("Worked example" in s.value for s in at.success), [w.value for w in at.warning]


@pytest.mark.parametrize("page", ["home", "sft", "preferences", "returns", "ppo", "kl_optimal", "dpo", "grpo", "feedback", "agentic"])
def test_page_runs_clean(page):
    at = run(page)
    clean(at)
    assert not at.error, [e.value for e in at.error]


def test_app_entry_runs():
    at = AppTest.from_file(str(PAGES.parent / "app.py"), default_timeout=60).run()
    clean(at)


def test_sft_page():
    at = run("sft")
    at.radio(key="sft_mode").set_value("full").run()
    clean(at)
    from labui.demo_data import SFT_EXAMPLE_1, SFT_EXAMPLE_2, SFT_P1, SFT_P2

    batch = loss_mask([SFT_EXAMPLE_1, SFT_EXAMPLE_2], "full")
    logp = torch.zeros(batch.loss_mask.shape, dtype=torch.float64)
    for i, p in enumerate((SFT_P1, SFT_P2)):
        vals = [float(x) for x in p.split(",")]
        logp[i, : len(vals)] = torch.tensor(vals, dtype=torch.float64).log()
    want = float(sft_loss(logp, batch.loss_mask, "token"))
    assert float(metric(at, "Loss, token mean")) == pytest.approx(want, abs=1e-4)
    at.button(key="load_sft_example").click().run()
    assert float(metric(at, "Loss, sum")) == pytest.approx(math.log(8), abs=1e-4)
    assert float(metric(at, "Loss, token mean")) == pytest.approx(1.0397, abs=1e-4)
    example_ok(at)
    at.text_input(key="sft_p1").input("1.5, 1, 1, 0.5, 0.25").run()
    clean(at)
    assert any("(0, 1]" in e.value for e in at.error)
    at.text_input(key="sft_p1").input("0.5, 0.5").run()
    assert any("need 5 values" in e.value for e in at.error)


def test_preferences_page():
    at = run("preferences")
    at.number_input(key="pref_rc").set_value(1.0).run()
    at.number_input(key="pref_rr").set_value(-0.5).run()
    assert float(metric(at, "P(y⁺ ≻ y⁻)")) == pytest.approx(float(bradley_terry_probability(1.0, -0.5)), abs=1e-4)
    before = metric(at, "P(y⁺ ≻ y⁻)")
    at.slider(key="pref_offset").set_value(3.0).run()
    assert metric(at, "P(y⁺ ≻ y⁻)") == before  # offset invariance, on screen
    at.button(key="load_pref_example").click().run()
    assert metric(at, "P(y⁺ ≻ y⁻)") == "0.8176" and metric(at, "P(y⁻ ≻ y⁺)") == "0.1824"
    example_ok(at)
    at.button(key="load_pref_cycle_example").click().run()
    clean(at)
    assert any("cycle" in w.value.lower() for w in at.warning)
    at.selectbox(key="pref_ties").select("raise").run()
    at.text_area(key="pref_table").input("A > B\nA = B").run()
    clean(at)
    assert any("tie" in e.value for e in at.error)
    at.text_area(key="pref_table").input("A > B").run()
    at.number_input(key="pref_l2").set_value(0.0).run()
    assert any("l2" in e.value for e in at.error)
    at.text_area(key="pref_table").input("A B").run()
    assert any("line 1" in e.value for e in at.error)


def test_returns_page():
    at = run("returns")
    at.slider(key="ret_lam").set_value(0.5).run()
    adv, _ = gae([0, 0, 1, 0, 2], [0.6, 0.7, 0.9, 0.5, 1.0], 0.9, 0.5)
    assert float(metric(at, "GAE Â₀")) == pytest.approx(float(adv[0]), abs=1e-4)
    at.button(key="load_ret_example").click().run()
    assert float(metric(at, "G₀")) == pytest.approx(1.0) and float(metric(at, "Â₀ = G₀ − V(H₀)")) == pytest.approx(0.6)
    example_ok(at)
    at.text_input(key="ret_values").input("0.1, 0.2").run()
    clean(at)
    assert any("same length" in e.value for e in at.error)


def test_ppo_page():
    at = run("ppo")
    at.number_input(key="ppo_adv").set_value(-2.0).run()
    at.slider(key="ppo_rho").set_value(0.6).run()
    assert float(metric(at, "clipped objective min(ρA, clip(ρ)A)")) == pytest.approx(-1.6)
    at.slider(key="ppo_rho").set_value(1.4).run()
    assert float(metric(at, "clipped objective min(ρA, clip(ρ)A)")) == pytest.approx(-2.8)
    at.button(key="load_ppo_example").click().run()
    assert float(metric(at, "clipped objective min(ρA, clip(ρ)A)")) == pytest.approx(2.4)
    example_ok(at)
    at.button(key="load_kl_example").click().run()
    assert float(metric(at, "shaped reward")) == pytest.approx(0.8 - 0.1 * math.log(2), abs=1e-4)
    at.slider(key="kl_beta").set_value(0.0).run()
    clean(at)
    assert any("beta" in e.value for e in at.error)
    assert metric(at, "clipped objective min(ρA, clip(ρ)A)")  # the rest of the page still works


def test_kl_optimal_page():
    at = run("kl_optimal")
    at.select_slider(key="klo_beta").set_value(0.5).run()
    from lab.dpo import optimal_policy
    from lab.kl import kl_divergence

    pi = optimal_policy([0.5, 0.3, 0.15, 0.05], [0, 1, 2, 3], 0.5)
    assert float(metric(at, "KL(π* ‖ π_ref)")) == pytest.approx(float(kl_divergence(pi, [0.5, 0.3, 0.15, 0.05])), abs=1e-4)
    at.button(key="load_klo_example").click().run()
    assert any("0.4055" in s.value for s in at.success)
    at.text_input(key="klo_ref").input("0.5, 0.6, 0.1").run()
    clean(at)
    assert any("sum to 1" in e.value for e in at.error)


def test_dpo_page():
    at = run("dpo")
    at.slider(key="dpo_beta").set_value(1.0).run()
    losses, _, _ = dpo_loss(math.log(0.25), math.log(0.1), math.log(0.3), math.log(0.4), beta=1.0)  # the page defaults
    assert float(metric(at, "loss −log σ(z)")) == pytest.approx(float(losses), abs=1e-4)
    at.button(key="load_dpo_example").click().run()
    assert float(metric(at, "loss −log σ(z)")) == pytest.approx(0.4055, abs=1e-4)
    assert float(metric(at, "P_θ(y⁺ ≻ y⁻) = σ(z)")) == pytest.approx(0.6667, abs=1e-4)
    example_ok(at)
    at.number_input(key="dpo_pc").set_value(0.0).run()
    clean(at)
    assert any("(0, 1]" in e.value for e in at.error)
    at.slider(key="dpo_beta").set_value(0.0).run()
    assert any("beta" in e.value or "(0, 1]" in e.value for e in at.error)


def test_grpo_page():
    at = run("grpo")
    at.radio(key="grpo_ddof").set_value(0).run()
    want = group_advantages([1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0], 4, ddof=0, eps=1e-4)[:4]
    assert metric(at, "advantages, group 1") == ", ".join(f"{a:.4f}" for a in want.tolist())
    at.button(key="load_grpo_example").click().run()
    assert metric(at, "objective terms Jᵢ = min(ρᵢÂᵢ, clip(ρᵢ)Âᵢ)") == "1.2000, -0.8000, -1.1000, 0.9000"
    assert metric(at, "group mean of the objective terms") == "0.0500"
    # ftip-004N states no numbers: the page must call these the lab's own illustration, not the reference's values
    notes = [s.value for s in at.success]
    assert any("Lab's own illustration" in n and "states no numbers" in n for n in notes), notes
    assert not any("reference states:" in n for n in notes)
    at.text_area(key="grpo_rewards").input("1, 1, 1, 1").run()
    at.selectbox(key="grpo_zero").select("raise").run()
    clean(at)
    assert any("zero spread" in e.value for e in at.error)
    at.text_area(key="grpo_rewards").input("1, 0, 1\n0, 1").run()
    assert any("same size" in e.value for e in at.error)


def test_feedback_page():
    at = run("feedback")
    at.text_input(key="fb_step2").input("17 + 2 = 19").run()
    assert metric(at, "f3") == "1"
    at.button(key="load_fb_example").click().run()
    assert [metric(at, k) for k in ("f_out (response 1)", "f1", "f2", "f3", "f4")] == ["1", "1", "1", "0", "1"]
    example_ok(at)
    at.checkbox(key="fb_hindsight").check().run()
    clean(at)


def test_agentic_page():
    at = run("agentic")
    at.text_area(key="ag_text").input("please run the tests").run()
    assert any("malformed" in e.value for e in at.error)
    at.button(key="ag_run_trace").click().run()
    clean(at)
    assert metric(at, "decisions (test 1, test 2, terminal success)") == "0, 1, 1"
    assert any("expected 9, got 6" in c.value for c in at.code)
    at.button(key="ag_run_rounds").click().run()
    assert len(at.dataframe) >= 1
    at.button(key="load_ag_replay_example").click().run()
    assert float(metric(at, "importance ratio ρ")) == pytest.approx(2.0)
    at.number_input(key="ag_pb").set_value(0.0).run()
    clean(at)
    assert any("(0, 1]" in e.value for e in at.error)
    at.slider(key="ag_z").set_value(1.0).run()
    acc1 = metric(at, "proposals accepted / rejected")
    at.slider(key="ag_z").set_value(4.5).run()
    assert metric(at, "proposals accepted / rejected") != acc1


# ---------------------------------------------------------------- no math in pages (issue 10)
import ast  # noqa: E402

TORCH_CONSTRUCTORS = {"tensor", "as_tensor", "linspace", "logspace", "arange", "zeros", "ones", "full", "full_like", "zeros_like",
                      "ones_like", "meshgrid", "Generator", "stack", "cat"}
TENSOR_MATH = {"log", "exp", "sigmoid", "softmax", "log_softmax", "mean", "sum", "std", "var", "sqrt", "abs", "clamp", "pow",
               "cumsum", "prod", "logsumexp", "tanh", "square", "matmul", "log1p", "expm1", "exp_", "log_", "mul", "div", "add", "sub"}


def _bookkeeping(x: ast.AST) -> bool:
    """Operands that make a binary operation list/string building or index arithmetic, not a formula:
    list and string literals, comprehensions, slices, ``len(...)``, ``.tolist()``, ``.join(...)`` and integer offsets."""
    if isinstance(x, (ast.List, ast.ListComp, ast.JoinedStr, ast.Tuple)):
        return True
    if isinstance(x, ast.Constant) and isinstance(x.value, (str, int)) and not isinstance(x.value, bool):
        return True
    if isinstance(x, ast.Subscript) and isinstance(x.slice, ast.Slice):
        return True
    if isinstance(x, ast.Call):
        f = x.func
        return (isinstance(f, ast.Name) and f.id == "len") or (isinstance(f, ast.Attribute) and f.attr in ("tolist", "join"))
    if isinstance(x, ast.BinOp):
        return _bookkeeping(x.left) or _bookkeeping(x.right)
    return False


def _math_in_page(path: Path) -> list[str]:
    """Formula computations in a page: torch math calls, ``math.*`` calls, tensor math methods, and arithmetic
    whose operand is a value that came from a ``lab`` call (formatting, layout and widget ranges are fine)."""
    tree = ast.parse(path.read_text())
    lab_names = set()  # names imported from lab.* (functions, classes)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lab":
            lab_names |= {a.asname or a.name for a in node.names}
    derived: set[str] = set()

    def mentions(expr, names) -> bool:
        return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(expr))

    changed = True
    while changed:  # values computed from lab results are lab results too
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                if mentions(node.value, lab_names | derived):
                    targets = list(node.targets if isinstance(node, ast.Assign) else [node.target])
                    while targets:
                        t = targets.pop()
                        if isinstance(t, (ast.Tuple, ast.List)):
                            targets += t.elts
                        elif isinstance(t, ast.Starred):
                            targets.append(t.value)
                        elif isinstance(t, (ast.Subscript, ast.Attribute)):
                            targets.append(t.value)  # x[i] = lab(...) makes x a lab result, not the index i
                        elif isinstance(t, ast.Name) and t.id not in derived:
                            derived.add(t.id)
                            changed = True
    found = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if isinstance(base, ast.Name) and base.id == "torch" and node.func.attr not in TORCH_CONSTRUCTORS:
                found.append(f"{where} torch.{node.func.attr}()")
            elif isinstance(base, ast.Name) and base.id == "math":
                found.append(f"{where} math.{node.func.attr}()")
            elif node.func.attr in TENSOR_MATH and not (isinstance(base, ast.Name) and base.id in ("st", "np")):
                found.append(f"{where} .{node.func.attr}()")
        elif isinstance(node, ast.BinOp) and (mentions(node.left, derived) or mentions(node.right, derived)):
            if not (_bookkeeping(node.left) or _bookkeeping(node.right)):
                found.append(f"{where} {ast.unparse(node)}")
    return found


def test_pages_compute_no_formulas():
    found = [f for p in sorted(PAGES.glob("*.py")) if p.name != "smallrun.py" for f in _math_in_page(p)]
    assert not found, "formula computed in a page instead of a lab call:\n" + "\n".join(found)


def test_the_no_math_check_catches_inline_formulas(tmp_path):
    page = tmp_path / "bad.py"
    page.write_text("import math\nimport torch\nfrom lab.rl import discounted_returns\n"
                    "G = discounted_returns([1.0], 0.9)\nadv = G - 0.5\ny = torch.sigmoid(G)\nz = math.log(2)\nw = G.mean()\n")
    found = _math_in_page(page)
    assert len(found) == 4, found


def test_preferences_page_weighs_split_ties_in_the_loss():
    # issue 10: A ≻ B twice, B ≻ A once, one split tie → weighted loss 0.66156 (0.67433 if the tie counted whole)
    at = run("preferences")
    at.selectbox(key="pref_ties").select("split").run()
    at.number_input(key="pref_l2").set_value(0.0).run()
    at.text_area(key="pref_table").input("A > B\nA > B\nB > A\nA = B").run()
    clean(at)
    assert metric(at, "reward-model loss of the fitted scores on these observations") == "0.6616"


def test_kl_page_objective_comes_from_the_library():
    from lab.dpo import optimal_policy
    from lab.kl import kl_regularized_objective

    at = run("kl_optimal")
    ref, r = [0.5, 0.3, 0.15, 0.05], [0, 1, 2, 3]
    o = kl_regularized_objective(optimal_policy(ref, r, 1.0), ref, r, 1.0)
    assert metric(at, "objective E[r] − β·KL") == f"{float(o.objective):.4f}"
    assert metric(at, "E_π*[r]") == f"{float(o.expected_reward):.4f}"
