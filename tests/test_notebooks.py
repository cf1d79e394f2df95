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


def _hidden_answer(cell) -> bool:
    meta = cell.get("metadata", {})
    return cell.cell_type == "code" and meta.get("jupyter", {}).get("source_hidden") is True and "answer" in meta.get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_course_treatment(path):
    """Issue 13: 4–6 exercises each followed by a collapsed answer, 'What to notice' after every figure, a link to the page."""
    from lab.course import CHAPTERS

    nb = nbformat.read(path, as_version=4)
    cells = nb.cells
    exercises = [i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("### Exercise")]
    assert 4 <= len(exercises) <= 6, f"{path.name}: {len(exercises)} exercises, want 4–6"
    for i in exercises:
        assert i + 1 < len(cells) and _hidden_answer(cells[i + 1]), f"{path.name}: exercise cell {i} has no collapsed answer after it"
        assert "print(" in cells[i + 1].source, f"{path.name}: answer cell {i + 1} explains nothing"
        assert "assert " in cells[i + 1].source, f"{path.name}: answer cell {i + 1} checks nothing"
    assert sum(_hidden_answer(c) for c in cells) >= 4
    for i, c in enumerate(cells):
        if c.cell_type == "code" and ".show()" in c.source:
            nxt = cells[i + 1] if i + 1 < len(cells) else None
            assert nxt is not None and nxt.cell_type == "markdown" and nxt.source.startswith("**What to notice.**"), (
                f"{path.name}: figure cell {i} is not followed by a 'What to notice' cell")
    keys = [ch.key for ch in CHAPTERS if ch.notebook == f"notebooks/{path.name}"]
    assert keys, f"{path.name} belongs to no chapter"
    for key in keys:
        assert f"`/{key}`" in cells[0].source and "./lab.sh app" in cells[0].source, f"{path.name}: first cell must name its page /{key}"
