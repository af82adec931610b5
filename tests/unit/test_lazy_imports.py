"""The packages import their public names on first use (PEP 562), and the command line
imports only what a command needs: ``import agentmem`` and ``agentmem --help`` load
neither numpy nor pydantic, and ``agentmem stats`` loads no tier, embedder or manager."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

from tests.processes import run_python

LAZY = {
    # package -> modules whose whole ``__all__`` it exports
    "agentmem": ["agentmem.errors"],
    "agentmem.controller": [],
    "agentmem.embeddings": ["agentmem.embeddings.local", "agentmem.embeddings.openai"],
    "agentmem.inspector": [],
    "agentmem.long_term": [],
    "agentmem.short_term": [],
    "agentmem.stores": ["agentmem.stores.base"],
    "agentmem.stores.qdrant": [],
}

# Optional packages some exported names need (skipped when not installed).
OPTIONAL = {"QdrantClientStore": "qdrant_client", "RedisSessionStore": "redis"}

# package -> the module whose whole ``__all__`` it imports eagerly (``import *``), not lazily
EAGER = {"agentmem": "agentmem.errors"}

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "shared" / "agentmem"


def _loaded(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"{code}\nimport sys\nprint(sorted(sys.modules))"
    done = run_python("-c", script, timeout=120, check=True)
    loaded: list[str] = ast.literal_eval(done.stdout.splitlines()[-1])
    return loaded


@pytest.mark.parametrize("name", sorted(LAZY))
def test_every_exported_name_resolves_to_its_definition(name: str) -> None:
    package = importlib.import_module(name)
    assert len(set(package.__all__)) == len(package.__all__)
    for export in package.__all__:
        if export in OPTIONAL:
            pytest.importorskip(OPTIONAL[export])
        value = getattr(package, export)
        assert export in vars(package)  # resolved once, then a plain attribute
        assert value is getattr(package, export)
    assert set(package.__all__) <= set(dir(package))
    for module in LAZY[name]:
        assert set(importlib.import_module(module).__all__) <= set(package.__all__), module


def _static_imports(package: ModuleType) -> dict[str, str]:
    """The names the package imports under ``if TYPE_CHECKING:`` -> the module named there."""
    assert package.__file__ is not None
    tree = ast.parse(Path(package.__file__).read_text(encoding="utf-8"))
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                assert statement.module is not None
                for alias in statement.names:
                    names[alias.asname or alias.name] = statement.module
    return names


def test_every_lazy_package_is_checked_here() -> None:
    packages = {
        ".".join(path.relative_to(PACKAGE_ROOT.parent).parent.parts)
        for path in PACKAGE_ROOT.rglob("__init__.py")
        if "lazy_exports(" in path.read_text(encoding="utf-8")
    }
    assert packages == set(LAZY)


@pytest.mark.parametrize("name", sorted(LAZY))
def test_the_table_is___all___less_the_eager_names_in_its_order(name: str) -> None:
    package = importlib.import_module(name)
    eager = importlib.import_module(EAGER[name]).__all__ if name in EAGER else []
    assert set(eager) <= set(vars(package))  # imported with the package, not on first use
    assert list(package._EXPORTS) == [n for n in package.__all__ if n not in eager]


@pytest.mark.parametrize("name", sorted(LAZY))
def test_the_static_names_are_the_lazy_ones(name: str) -> None:
    """What type checkers see (``if TYPE_CHECKING:``) is what the package serves at run
    time: the table's names from the table's modules, each the same object."""
    package = importlib.import_module(name)
    static = _static_imports(package)
    assert static == package._EXPORTS
    for export, module in static.items():
        if export in OPTIONAL:
            continue
        assert getattr(importlib.import_module(module), export) is getattr(package, export)


@pytest.mark.parametrize("name", sorted(LAZY))
def test_unknown_names_are_attribute_errors(name: str) -> None:
    package = importlib.import_module(name)
    with pytest.raises(AttributeError, match=rf"{name}.*NoSuchThing"):
        package.NoSuchThing  # noqa: B018
    assert getattr(package, "NoSuchThing", None) is None


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from agentmem import *", namespace)
    import agentmem

    assert {n for n in namespace if not n.startswith("__")} == set(agentmem.__all__)


def test_import_agentmem_loads_the_error_hierarchy_only() -> None:
    loaded = _loaded("import agentmem")
    ours = {m for m in loaded if m.split(".")[0] == "agentmem"}
    assert ours == {"agentmem", "agentmem._util", "agentmem._util.lazy", "agentmem.errors"}
    assert not {"numpy", "pydantic", "asyncio", "tiktoken"} & set(loaded)


def test_submodule_import_does_not_run_its_siblings() -> None:
    loaded = set(_loaded("import agentmem.long_term.records, agentmem.stores.base"))
    assert "agentmem.long_term.memory" not in loaded
    assert "agentmem.stores.sqlite" not in loaded
    assert "agentmem.embeddings.cache" not in loaded


def test_the_in_memory_store_runs_on_the_engine_without_anything_of_qdrant() -> None:
    code = (
        "from agentmem.long_term.records import MemoryRecord, Scope\n"
        "from agentmem.sparse import SparseVector\n"
        "from agentmem.stores.in_memory import InMemoryMemoryStore\n"
        "store = InMemoryMemoryStore(dimension=2)\n"
        "rec = MemoryRecord.new('tea', 'semantic', scope=Scope(user_id='u'))\n"
        "store.upsert([rec], [[1.0, 0.0]], [SparseVector([1], [1.0])])\n"
        "assert store.search(Scope(user_id='u'), dense=[1.0, 0.0], sparse=SparseVector([1], "
        "[1.0]))[0].record == rec"
    )
    loaded = set(_loaded(code))
    assert "agentmem.stores.engine" in loaded
    assert not {m for m in loaded if "qdrant" in m}


def test_cli_help_imports_argparse_and_the_parser_only() -> None:
    code = (
        "import sys\nfrom agentmem.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    )
    loaded = _loaded(code)
    ours = {m for m in loaded if m.split(".")[0] == "agentmem"}
    assert ours <= {
        "agentmem",
        "agentmem._util",
        "agentmem._util.lazy",
        "agentmem.cli",
        "agentmem.errors",
    }
    assert "argparse" in loaded
    assert not {"logging", "numpy", "pydantic", "asyncio", "json"} & set(loaded)


def test_cli_stats_opens_the_store_without_tier_or_model(tmp_path: Path) -> None:
    from agentmem.long_term import LongTermMemory
    from tests.fake_embedder import HashingEmbedder

    home = tmp_path / "home"
    memory = LongTermMemory.open(user_id="alice", home=home, embedder=HashingEmbedder(384))
    memory.store_memory("Alice indents Python with tabs", "semantic", subtype="preference")
    memory.close()
    code = (
        "import contextlib, io\nfrom agentmem.cli import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    assert main(['--home', {str(home)!r}, 'stats', '--user', 'alice']) == 0\n"
        "assert 'semantic/preference      1' in out.getvalue(), out.getvalue()"
    )
    loaded = set(_loaded(code))
    assert "agentmem.stores.qdrant.edge" in loaded
    unneeded = {
        "agentmem.long_term.memory",
        "agentmem.long_term.episodic",
        "agentmem.controller",
        "agentmem.cli.commands",
        "agentmem.cli.embedder",
        "agentmem.embeddings.local",
        "agentmem.stores.base",  # no session store,
        "agentmem.types",  # and no chat-message models
        "agentmem.tokens",
        "tiktoken",
        "torch",
        "sentence_transformers",
        "transformers",
        "numpy",  # a boolean condition (the open's backfill) needs no numpy scalar
        "asyncio",  # only async callers (with their loop) need it
    }
    assert not unneeded & loaded


def test_the_inspector_server_loads_only_when_served() -> None:
    """The notebook displays and the service import no HTTP server; only serving does."""
    loaded = set(_loaded("import agentmem.service, agentmem.inspector.reprs"))
    assert "agentmem.inspector.server" not in loaded
    assert not {"http.server", "socketserver", "webbrowser"} & loaded
