"""Every notebook: stored without outputs, has hidden "try it" answers, and executes cleanly (its asserts hold)."""

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TINY = {  # the small-run notebook's parameters cell, shrunk for the test suite
    "SFT_STEPS": 20, "WEAK_SFT_STEPS": 100,  # the base stage must sometimes succeed, or DPO has no pairs
    "GRPO_STEPS": 4, "DPO_STEPS": 4, "EVAL_SIZE": 10,
}


def test_there_is_a_notebook_per_chapter():
    assert len(NOTEBOOKS) == 12  # 01–12: one per chapter (the course test checks each chapter names its notebook)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs before committing"
    hidden = [c for c in nb.cells if c.get("metadata", {}).get("jupyter", {}).get("source_hidden")]
    assert hidden, f"{path.name} has no hidden answer cell"
    assert "ftip-" in nb.cells[0].source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell.source += "\n" + "\n".join(f"{k} = {v!r}" for k, v in {**TINY, "RUN_DIR": str(tmp_path / "runs")}.items())
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    print(f"{path.name}: executed in {time.perf_counter() - t0:.1f} s")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
