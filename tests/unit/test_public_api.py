"""The public surface that users (and checks from outside the repo) rely on."""

from __future__ import annotations

import importlib

import pytest

import agentmem
from tests.processes import run_python

REQUIRED = {
    "agentmem": [
        # foundation
        "Message",
        "TokenCounter",
        "ConversationBufferMemory",
        "SlidingWindowMemory",
        "SummaryBufferMemory",
        # working memory
        "WorkingMemory",
        # long-term
        "LongTermMemory",
        "EpisodicMemory",
        "SemanticMemory",
        # controller
        "MemoryManager",
        "MemoryConsolidator",
        "MemoryRetriever",
        "ConflictResolver",
        "ForgettingPolicy",
        # one service per process
        "MemoryService",
    ],
}


@pytest.mark.parametrize(("module", "names"), REQUIRED.items())
def test_required_names_are_exported(module: str, names: list[str]) -> None:
    mod = importlib.import_module(module)
    for name in names:
        assert name in mod.__all__, name
        assert getattr(mod, name) is not None


def test_all_lists_exactly_what_the_package_exports() -> None:
    # The package's own names, sorted, then the whole error hierarchy of agentmem.errors.
    own = agentmem.__all__[: -len(agentmem.errors.__all__)]
    assert own == sorted(own, key=lambda n: (n[0].islower(), n))
    assert agentmem.__all__ == [*own, *agentmem.errors.__all__]
    assert len(set(agentmem.__all__)) == len(agentmem.__all__)
    for name in agentmem.__all__:
        assert hasattr(agentmem, name), name


def test_importing_agentmem_loads_no_model_or_framework() -> None:

    code = (
        "import sys, agentmem; "
        "print([m for m in ('torch', 'sentence_transformers', 'openai', 'redis', "
        "'qdrant_client', 'langchain_core') if m in sys.modules])"
    )
    out = run_python("-c", code, check=True)
    assert out.stdout.strip() == "[]"


def test_context_budget_error_is_part_of_the_one_hierarchy() -> None:
    import agentmem.context

    assert "ContextBudgetError" in agentmem.errors.__all__
    assert agentmem.ContextBudgetError is agentmem.errors.ContextBudgetError
    assert agentmem.context.ContextBudgetError is agentmem.errors.ContextBudgetError
    assert issubclass(agentmem.errors.ContextBudgetError, agentmem.errors.ConfigurationError)


def test_the_integration_module_serves_every_name_it_lists() -> None:
    """``agentmem.integration`` is the adapters' documented surface beyond the facade."""
    import agentmem.integration

    names = agentmem.integration.__all__
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(agentmem.integration, name) is not None, name
    assert not set(names) & set(agentmem.__all__)  # one public home per name
