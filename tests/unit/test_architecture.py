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


def test_importing_agentmem_imports_no_framework(arch: ModuleType) -> None:
    assert arch.frameworks_on_import() == []


def test_sync_and_async_are_written_once(arch: ModuleType) -> None:
    _pairs, lines, per = arch.twins(arch.CORE)
    assert lines < 300, per.most_common(10)
