"""The notebooks in ``notebooks/``: saved with their outputs, and still running as saved.

Every ``notebooks/*.ipynb`` is picked up; a new notebook needs its entry in ``CHECKS``.

* **Saved with outputs** (so tables and plots show where the repository is browsed): every
  code cell was run, in order, without an error, and every cell that draws a plot holds its
  PNG. ``notebooks/refresh.py`` re-runs a notebook and saves it.
* **Still running**: each notebook is executed with ``notebooks/refresh.py``'s ``execute``
  (offline: the scripted stand-ins play the LLMs; ``AGENTMEM_HOME`` and ``TMPDIR`` point at
  temporary directories) from an empty working directory, and must write nothing outside its
  own temporary directories and remove those.
* **Showing what it says**: the notebooks hold no asserts. After a notebook's last cell, its
  entry in ``CHECKS`` runs in the same kernel, on the notebook's own variables, and checks
  what the notebook's text claims (budgets kept, memories recalled, history kept, nothing
  deleted by a dry run); a failing check fails the run with its traceback.
* **Saved outputs that match the code**: the executed notebook shows output in the same cells,
  and plots in the same cells, as the saved one (a stale save fails: refresh it).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

__all__: list[str] = []

# Run in the notebook's kernel after its last cell (the notebook's variables in scope).
CHECKS: dict[str, str] = {
    "01_quickstart": """
assert SCRIPTED
assert max(tokens["summary"]) <= BUDGET, "the summary buffer never exceeds its budget"
assert tokens["buffer"][-1] > BUDGET, "the buffer crosses the budget"
assert len(summary.get_all_messages()) == 2 * len(conversation) == 60, "nothing is deleted"
assert summary.summary.startswith("The user has asked"), summary.summary
assert scripted.calls["summarize"] >= 1
assert sum(ctx.ledger.values()) == ctx.token_count <= MAX_TOKENS, ctx.ledger
assert decision.action == "reinforce", "the near-duplicate reinforces instead of being stored"
recalled = [hit.record.content for hit in ctx.recalled]
assert "Alice writes Python and indents with tabs" in recalled, recalled
""",
    "02_langchain_agent": """
assert SCRIPTED
assert len(log_one) == 9, "turn 1 and 2: a tool call and an answer; then one call per turn"
assert max(sent) <= BUDGET, "every request fits the budget"
assert whole[-1] > BUDGET, "without trimming, the last calls would not fit"
assert report_one["prompt_tokens"] == sent[-1], "the middleware's count matches the recount"
assert log_one[-1]["sent_messages"] < log_one[-1]["whole_messages"], "old turns were trimmed"
assert saved == ["The user indents Python code with tabs"], saved
assert notes == ["Project Falcon deadline is Friday"], notes
system_two = log_two[0]["system"]
recalled_block = system_two[system_two.index("<recalled_memories"):]
assert "The user indents Python code with tabs" in recalled_block, system_two
assert report_two["recalled"] >= 1
assert [item.key for item in hits][0] == "indent", "the indentation preference ranks first"
assert all(item.namespace == ("alice", "prefs") for item in hits), "bob's items stay out"
""",
    "03_llamaindex_chat_engine": """
assert SCRIPTED
assert max(sent) <= TOKEN_LIMIT, "every AgentMemory request fits token_limit"
assert whole[-1] > TOKEN_LIMIT, "without a limit the conversation would not fit"
assert over, "counted exactly, some ChatMemoryBuffer requests go over the limit"
assert "Debian" in last_request[1].content, "the long-term memory is recalled"
assert [m.role.value for m in agent_log] == ["user", "assistant", "tool", "assistant"] * 2
assert "2026-05-18" in str(answer), "the answer uses the tool result"
assert agent_exact > agent_text_only, "the tool call costs tokens ChatMemoryBuffer misses"
assert exact_tokens(agent_view) <= TOKEN_LIMIT
assert len(log_before) == 2 * len(CHAT_SCRIPT) + len(agent_log)
assert written >= 1
assert log_after == log_before, "the conversation survives the restart"
assert records_after == records_before
assert new_session_messages == 0, "a new session starts with an empty conversation"
assert "tabs" in recalled_text, "the new session recalls the consolidated episode"
""",
    "04_memory_lifecycle": """
assert SCRIPTED
assert [d.action for d in report.decisions] == ["add", "add", "add"]
assert again.messages == 0, "every message is consolidated exactly once"
assert [d.action for d in report2.decisions] == ["supersede"]
assert [h.record.content for h in current][0] == SPACES
assert TABS not in [h.record.content for h in current], "searches return the current truth"
old = next(h.record for h in history if h.record.content == TABS)
new = next(h.record for h in history if h.record.content == SPACES)
assert old.superseded_by == new.id and old.valid_to is not None, "the old one is history"
gone = {name: info["forgotten_after_days"] for name, info in curves.items()}
assert gone["importance 0.9, 10 accesses"] is None, "still kept after 2 years"
assert gone["importance 0.1, 0 accesses"] < gone["importance 0.9, 0 accesses"]
assert before == after and dry.deleted == 0, "a dry run deletes nothing"
forget_list = [d.record.content for d in dry.decisions]
assert "Alice mentioned it was raining on Tuesday" in forget_list, forget_list
assert all("Lindqvist" not in c for c in forget_list), "pinned memories are never forgotten"
assert dry.pinned == 1
""",
    "05_retrieval_quality": """
assert SOURCE.startswith("SYNTHETIC"), SOURCE
assert list(results) == ["dense", "bm25", "hybrid"]
for mode, groups in results.items():
    assert list(groups) == ["1", "2", "3", "4", "5", "1-5"], (mode, list(groups))
    assert [groups[g]["n"] for g in groups] == [2, 2, 2, 2, 2, 10], (mode, groups)
    for group, row in groups.items():
        values = [row[f"R_frac@{k}"] for k in KS]
        assert all(0 <= v <= 1 for v in values), (mode, group, row)
        assert values == sorted(values), ("R_frac@k grows with k", mode, group, row)
""",
    "06_inspector": """
assert sum(ctx.ledger.values()) == ctx.token_count <= 700, ctx.ledger
assert "Alice lives in Trondheim" in [hit.record.content for hit in hits]
assert "<script>" not in ctx._repr_html_() + hits._repr_html_()
assert b"Trondheim" in page, "the inspector served the memories page"
assert not HOME.exists()
""",
}


def _refresh() -> ModuleType:
    spec = importlib.util.spec_from_file_location("notebooks_refresh", NOTEBOOK_DIR / "refresh.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path: Path) -> Any:
    import nbformat

    return nbformat.read(path, as_version=4)


def _code(notebook: Any) -> list[Any]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _plots(cell: Any) -> int:
    return sum("image/png" in output.get("data", {}) for output in cell.outputs)


def _html(cells: list[Any]) -> list[str]:
    """The HTML displays (``_repr_html_``) the cells saved."""
    return [
        "".join(output["data"]["text/html"])
        for cell in cells
        for output in cell.outputs
        if "text/html" in output.get("data", {})
    ]


def _shape(notebook: Any) -> list[tuple[bool, int]]:
    """Per code cell: whether it shows anything, and how many plots."""
    return [(bool(cell.outputs), _plots(cell)) for cell in _code(notebook)]


def test_notebooks_exist_and_each_has_its_checks() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"
    assert sorted(CHECKS) == [path.stem for path in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_saved_with_its_outputs(path: Path) -> None:
    cells = _code(_read(path))
    counts = [cell.execution_count for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: not saved after one run top to bottom ({counts}); "
        "run: .venv/bin/python notebooks/refresh.py " + path.name
    )
    errors = [i for i, c in enumerate(cells) if any(o.output_type == "error" for o in c.outputs)]
    assert not errors, f"{path.name}: code cells {errors} were saved with an error"
    drawing = [cell for cell in cells if "plt.show()" in cell.source]
    assert drawing or _html(cells), f"{path.name}: draws no plot and shows no display"
    assert all(_plots(cell) >= 1 for cell in drawing), f"{path.name}: a plot was not saved"


def test_the_inspector_notebook_shows_its_html_displays() -> None:
    html = _html(_code(_read(NOTEBOOK_DIR / "06_inspector.ipynb")))
    assert len(html) == 4  # the context, the recall results, the manager, the working memory
    assert all('<div class="am-root">' in page for page in html)
    assert "Context: " in html[0]
    assert "&lt;script&gt;alert(&#x27;hi&#x27;)&lt;/script&gt;" in "".join(html)
    assert "<script>" not in "".join(html)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_holds_no_test_code_and_imports_no_bench(path: Path) -> None:
    for cell in _code(_read(path)):
        assert not re.search(r"^\s*assert\b", cell.source, re.M), cell.source
        assert not re.search(r"^\s*(from|import)\s+bench\b", cell.source, re.M), cell.source
        assert "sys.path" not in cell.source, cell.source
        assert "key_numbers" not in cell.source, cell.source


@pytest.mark.integration
@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_shows_what_it_says(path: Path, tmp_path: Path) -> None:
    before = sorted(p.name for p in NOTEBOOK_DIR.iterdir())
    cwd = tmp_path / "cwd"
    tmp = tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    executed = _refresh().execute(
        path,
        cwd=cwd,
        tmp=tmp,
        extra_cells=[CHECKS[path.stem]],
        env={"AGENTMEM_LOCOMO": str(tmp_path / "no-locomo-here.json")},  # the synthetic data
    )
    assert _shape(executed)[:-1] == _shape(_read(path)), (
        f"{path.name}: the saved outputs are stale; run: .venv/bin/python notebooks/refresh.py"
    )
    assert sorted(p.name for p in NOTEBOOK_DIR.iterdir()) == before, "a notebook wrote files"
    assert not any(cwd.iterdir()), "a notebook left files in its working directory"
    assert not (tmp / "home").exists(), "a notebook used AGENTMEM_HOME, not its own home"
    left = sorted(p.name for p in tmp.glob("agentmem-*"))  # (libraries' caches may stay)
    assert not left, f"the notebook left its temporary directories: {left}"
