"""The distribution: its own name on the registry, extras that match the examples, and
install lines that name it.

``agentmem`` on PyPI is an unrelated project, so the distribution is ``tiered-agentmem``
while the import names stay ``agentmem``, ``langchain_agentmem`` and ``llamaindex_agentmem``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "tiered-agentmem"
# `pip install` hints and extras references: ...agentmem[extra], in code, docs and notebooks.
_EXTRA_REFERENCE = re.compile(r"(?<![\w.-])([\w.-]*agentmem)\[")


def _pyproject() -> dict[str, object]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        tomllib = pytest.importorskip("tomli")
    project: dict[str, object] = tomllib.loads(
        (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    )["project"]
    return project


def _name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def resolved_extra(extra: str) -> set[str]:
    """The distribution names an extra installs, following ``tiered-agentmem[...]`` inside it."""
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    names: set[str] = set()
    for requirement in extras[extra]:
        if _name(requirement) == DISTRIBUTION:
            inner = re.search(r"\[(.*?)\]", requirement)
            assert inner is not None, requirement
            for other in inner.group(1).split(","):
                names |= resolved_extra(other.strip())
        else:
            names.add(_name(requirement))
    return names


def test_the_distribution_has_a_name_of_its_own() -> None:
    assert _pyproject()["name"] == DISTRIBUTION
    assert _pyproject()["scripts"] == {"agentmem": "agentmem.cli:main"}


def test_extras_refer_to_this_distribution_only() -> None:
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    for extra, requirements in extras.items():
        for requirement in requirements:
            assert _name(requirement) != "agentmem", f"[{extra}] installs the unrelated agentmem"


def test_langchain_extra_brings_what_the_agent_middleware_and_store_need() -> None:
    assert {"langchain-core", "langchain", "langgraph"} <= resolved_extra("langchain")
    assert resolved_extra("langgraph") == resolved_extra("langchain")  # the older name


def test_llamaindex_extra_works_with_the_default_local_embedder() -> None:
    assert "llama-index-core" in resolved_extra("llamaindex")
    assert resolved_extra("local") <= resolved_extra("llamaindex")


def test_all_and_dev_extras_cover_every_other_extra() -> None:
    extras = _pyproject()["optional-dependencies"]
    assert isinstance(extras, dict)
    # [bench] holds the peer libraries of bench/peers.py, which the tests never import.
    others = [e for e in extras if e not in {"all", "dev", "bench"}]
    everything = set().union(*(resolved_extra(e) for e in others))
    assert everything <= resolved_extra("dev")
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= resolved_extra("docs")


def _texts() -> list[Path]:
    folders = ["shared/agentmem", "langchain_agentmem", "llamaindex_agentmem", "docs", "notebooks"]
    paths = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / ".ci" / "test"]
    for folder in folders:
        paths += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".md", ".ipynb"}]
    return paths


def test_every_install_line_names_the_distribution() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in _texts()
        for match in _EXTRA_REFERENCE.finditer(path.read_text(encoding="utf-8"))
        if match.group(1) != DISTRIBUTION
    ]
    assert wrong == []


def test_the_checker_catches_the_old_name() -> None:
    found = [m.group(1) for m in _EXTRA_REFERENCE.finditer("pip install 'agentmem[local]'")]
    assert found == ["agentmem"]
    found = [m.group(1) for m in _EXTRA_REFERENCE.finditer(f"pip install '{DISTRIBUTION}[x]'")]
    assert found == [DISTRIBUTION]
