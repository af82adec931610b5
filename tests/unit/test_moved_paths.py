"""Names that moved keep working at their old path for one release, with a warning."""

from __future__ import annotations

import importlib

import pytest

MOVED = [
    ("agentmem.manager", "MemoryManager", "agentmem.controller.manager"),
    ("agentmem.consolidation", "MemoryConsolidator", "agentmem.controller.consolidation"),
    ("agentmem.conflicts", "ConflictResolver", "agentmem.controller.conflicts"),
    ("agentmem.forgetting", "ForgettingPolicy", "agentmem.controller.forgetting"),
    ("agentmem.retrieval", "MemoryRetriever", "agentmem.controller.retrieval"),
    ("agentmem.scheduler", "ConsolidationQueue", "agentmem.controller.scheduler"),
    ("agentmem.llm_openai", "OpenAIChatModel", "agentmem.llm.openai"),
    ("agentmem.long_term.qdrant_edge", "QdrantEdgeStore", "agentmem.stores.qdrant.edge"),
    ("agentmem.long_term.qdrant_client", "QdrantClientStore", "agentmem.stores.qdrant.client"),
    ("agentmem.long_term", "QdrantEdgeStore", "agentmem.stores.qdrant.edge"),
    ("agentmem.long_term", "QdrantClientStore", "agentmem.stores.qdrant.client"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_old_path_warns_and_gives_the_same_object(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=rf"import it from {new}") as caught:
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)
    assert caught[0].filename == __file__  # the warning points at the caller


def test_from_import_of_an_old_path_warns_at_the_import_line() -> None:
    with pytest.warns(DeprecationWarning, match="agentmem.controller.manager") as caught:
        from agentmem.manager import MemoryManager  # noqa: F401
    assert caught[0].filename == __file__


def test_unknown_names_are_attribute_errors() -> None:
    module = importlib.import_module("agentmem.manager")
    with pytest.raises(AttributeError, match=r"agentmem\.manager"):
        module.NoSuchThing  # noqa: B018
    with pytest.raises(AttributeError):
        importlib.import_module("agentmem.long_term").NoSuchThing  # noqa: B018


def test_new_paths_do_not_warn(recwarn: pytest.WarningsRecorder) -> None:
    from agentmem.controller import MemoryManager  # noqa: F401
    from agentmem.stores import QdrantEdgeStore  # noqa: F401
    from agentmem.stores.qdrant import AutoIndex  # noqa: F401

    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]
