"""The layering rules of the architecture, checked from the source (bench/architecture.py
measures them; these tests keep them)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def arch() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "agentmem_bench_architecture", ROOT / "bench" / "architecture.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_no_import_circle_in_the_core(arch: ModuleType) -> None:
    graph, _ = arch.import_graph()
    assert arch.circles(graph) == []


def test_the_circle_finder_finds_circles(arch: ModuleType) -> None:
    assert arch.circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_adapters_import_only_public_core_names(arch: ModuleType) -> None:
    assert arch.private_adapter_imports() == []


def test_at_most_15_modules_sit_directly_under_agentmem(arch: ModuleType) -> None:
    top = arch.top_level_modules()
    assert "__init__.py" in top
    assert len(top) <= 15, top
    # Each one is on the layout map, so the map shows the whole top level.
    layout = (ROOT / "docs" / "internals" / "layout.md").read_text(encoding="utf-8")
    assert [m for m in top if m != "__init__.py" and m not in layout] == []


def test_adapters_import_only_the_facade_and_the_documented_modules(arch: ModuleType) -> None:
    """``langchain_agentmem`` and ``llamaindex_agentmem`` build on ``agentmem``,
    ``agentmem.errors``, ``agentmem.types`` and ``agentmem.integration``: what else they need
    is made public there, so no adapter depends on where the core keeps it."""
    imported = arch.adapter_core_imports()
    assert set(imported) == {"langchain_agentmem", "llamaindex_agentmem"}
    assert all(imported.values())  # the walk finds their imports
    assert arch.adapter_surface_violations() == []


def test_adapters_never_assemble_nor_reach_into_a_tier(arch: ModuleType) -> None:
    """Adapters convert messages and call the manager (``gather_context`` and the rest):
    they never call the assembler nor use ``manager.short_term`` / ``.working`` /
    ``.long_term`` themselves."""
    assert arch.adapter_reaches() == []


def test_the_reach_finder_finds_reaches(arch: ModuleType, tmp_path: Path) -> None:
    package = tmp_path / "adapter"
    package.mkdir()
    (package / "bad.py").write_text(
        "from agentmem.context import assemble_context\n"
        "from agentmem import MemoryManager\n"
        "def f(m):\n"
        "    m.short_term.refresh()\n"
        "    lt = m.long_term\n"
        "    return assemble_context([], counter=m.token_counter, max_tokens=9)\n"
    )
    arch.ADAPTERS, saved = [package], arch.ADAPTERS
    try:
        assert arch.adapter_surface_violations() == ["adapter: agentmem.context"]
        assert sorted(arch.adapter_reaches()) == [
            "adapter/bad.py:4: m.short_term.refresh",
            "adapter/bad.py:5: binds m.long_term",
            "adapter/bad.py:6: calls assemble_context",
        ]
    finally:
        arch.ADAPTERS = saved


def test_importing_agentmem_imports_no_framework(arch: ModuleType) -> None:
    assert arch.frameworks_on_import() == []


def test_sync_and_async_are_written_once(arch: ModuleType) -> None:
    _pairs, lines, per = arch.twins(arch.CORE)
    assert lines < 300, per.most_common(10)
