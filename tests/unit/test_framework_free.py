"""The core package ``agentmem`` neither depends on nor imports LangChain, LangGraph or LlamaIndex.

* ``[project].dependencies`` in pyproject.toml names no framework package (the frameworks
  live in the ``langchain`` / ``langgraph`` / ``llamaindex`` extras);
* ``import agentmem`` in a fresh interpreter loads no framework module, and works when no
  framework can be imported at all;
* the embedder adapters live in the adapter packages, public there.

Also a CI-friendly script: ``python tests/unit/test_framework_free.py`` prints the framework
packages among the core dependencies and exits 1 if there are any.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from tests.processes import run_python

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
FRAMEWORK_MODULES = ("langchain", "langgraph", "llama_index")
# Normalized (PEP 503) distribution-name prefixes of the frameworks.
FRAMEWORK_DISTRIBUTIONS = ("langchain", "langgraph", "llama-index", "llamaindex")


def _normalize(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _project_table() -> dict[str, object]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        tomllib = pytest.importorskip("tomli")
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    project: dict[str, object] = data["project"]
    return project


def framework_dependencies() -> list[str]:
    """The core ``[project].dependencies`` that belong to a framework (should be none)."""
    dependencies = _project_table()["dependencies"]
    assert isinstance(dependencies, list)
    return [dep for dep in dependencies if _normalize(dep).startswith(FRAMEWORK_DISTRIBUTIONS)]


# -- install: pyproject.toml -----------------------------------------------------------------


def test_core_dependencies_name_no_framework() -> None:
    assert framework_dependencies() == []


def test_the_frameworks_stay_in_their_extras() -> None:
    extras = _project_table()["optional-dependencies"]
    assert isinstance(extras, dict)
    names = {extra: {_normalize(dep) for dep in deps} for extra, deps in extras.items()}
    assert "llama-index-core" in names["llamaindex"]
    assert {"langchain-core", "langchain", "langgraph"} <= names["langchain"]


def test_the_normalizer_catches_every_spelling() -> None:
    spellings = ["llama-index-core>=0.12", "llama_index.core", "LangChain-Core>=1", "langgraph"]
    assert all(_normalize(s).startswith(FRAMEWORK_DISTRIBUTIONS) for s in spellings)
    assert not _normalize("tiktoken>=0.8").startswith(FRAMEWORK_DISTRIBUTIONS)


# -- import: a fresh interpreter ---------------------------------------------------------------


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return run_python(
        "-c",
        textwrap.dedent(code),
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT / 'shared'}", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def test_importing_agentmem_imports_no_framework() -> None:
    result = _run(
        f"""
        import json, sys
        import agentmem, agentmem.embeddings, agentmem.tokens
        prefixes = {FRAMEWORK_MODULES!r}
        print(json.dumps(sorted(m for m in sys.modules if m.startswith(prefixes))))
        """
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_agentmem_works_when_no_framework_can_be_imported() -> None:
    result = _run(
        f"""
        import importlib.abc, sys

        class Blocker(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.startswith({FRAMEWORK_MODULES!r}):
                    raise ImportError(f"{{name}} is blocked in this test")
                return None

        sys.meta_path.insert(0, Blocker())
        import agentmem
        memory = agentmem.ConversationBufferMemory(max_tokens=100)
        memory.add_message("user", "tabs, not spaces")
        print(memory.get_token_count() > 0, "LangChainEmbedder" in agentmem.__all__)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False"]


def test_the_adapters_are_public_in_their_packages_only() -> None:
    import agentmem.embeddings
    import langchain_agentmem
    import llamaindex_agentmem

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "LangChainEmbedder" in langchain_agentmem.__all__
        assert "LlamaIndexEmbedder" in llamaindex_agentmem.__all__
        assert langchain_agentmem.LangChainEmbedder.__module__ == "langchain_agentmem.embeddings"
        assert llamaindex_agentmem.LlamaIndexEmbedder.__module__ == (
            "llamaindex_agentmem.embeddings"
        )
    for old in (agentmem, agentmem.embeddings):  # the old paths are gone (CHANGELOG.md)
        assert not hasattr(old, "LangChainEmbedder")
        assert not hasattr(old, "LlamaIndexEmbedder")


if __name__ == "__main__":  # CI-friendly: python tests/unit/test_framework_free.py
    found = framework_dependencies()
    for dependency in found:
        print(f"framework package in [project].dependencies: {dependency}")
    if not found:
        print("[project].dependencies are framework-free")
    sys.exit(1 if found else 0)
