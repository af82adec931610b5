"""Architecture measures of the code base, from its source (nothing of it is run but one
``import agentmem`` in a subprocess).

* **async twins**: pairs of a function ``name`` and an ``async def aname`` (or ``_name`` /
  ``_aname``) in one class or module, and the lines of the async side (decorators
  included). A twin made by ``async_twin(name)`` or ``offload(name)`` is one line and is
  not a function, so it does not count.
* **import circles** among the core's modules (module-level imports; imports under
  ``if TYPE_CHECKING:`` excluded), and deferred (function-level) imports of core modules.
* **private imports** by the adapter packages: a core module or a name starting with ``_``.
* **the adapters' surface**: the core modules each adapter package imports (only
  :data:`ADAPTER_SURFACE` is allowed), and where an adapter reaches past the manager: a call
  of the assembler (:data:`ASSEMBLY`) or a use of a manager's tier (:data:`TIERS`:
  ``manager.short_term.refresh()``, or ``lt = manager.long_term`` then ``lt.get_memory()``).
* **frameworks** imported by ``import agentmem``.
* **top-level modules**: the modules directly under ``agentmem/`` (the layout map in
  ``docs/internals/layout.md`` lists them; at most 15).

Run: ``python bench/architecture.py`` (``--json`` for machine-readable output).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "shared" / "agentmem"
ADAPTERS = [ROOT / "langchain_agentmem", ROOT / "llamaindex_agentmem"]
FRAMEWORKS = ("langchain", "langgraph", "llama_index")
#: What the adapters may import from the core: the facade and the documented public modules.
ADAPTER_SURFACE = frozenset(
    {"agentmem", "agentmem.errors", "agentmem.types", "agentmem.integration"}
)
#: The manager's tiers: an adapter goes through the manager's methods, never through these.
TIERS = frozenset({"short_term", "working", "long_term"})
#: The assembler's entry points: an adapter calls ``MemoryManager.gather_context`` instead.
ASSEMBLY = frozenset({"assemble_context", "check_required", "pack_context"})


def module_name(path: Path) -> str:
    """``agentmem.x.y`` for ``shared/agentmem/x/y.py``."""
    rel = path.relative_to(CORE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = frozenset(module_name(p) for p in CORE.rglob("*.py") if "__pycache__" not in p.parts)


def twins(root: Path) -> tuple[int, int, Counter[str]]:
    pairs = lines = 0
    per: Counter[str] = Counter()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        scopes: list[ast.AST] = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]
        for scope in scopes:
            body = getattr(scope, "body", [])
            funcs = {
                n.name: n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            for name, node in funcs.items():
                if not isinstance(node, ast.AsyncFunctionDef):
                    continue
                sync = _sync_name(name)
                if sync is None or sync not in funcs:
                    continue
                size = (node.end_lineno or node.lineno) - node.lineno + 1 + len(node.decorator_list)
                pairs += 1
                lines += size
                per[f"{path.relative_to(root)}:{getattr(scope, 'name', '<module>')}"] += size
    return pairs, lines, per


def _sync_name(name: str) -> str | None:
    if name.startswith("__a"):
        return "__" + name[3:]
    if name.startswith("_a"):
        return "_" + name[2:]
    if name.startswith("a"):
        return name[1:]
    return None


def _imports(path: Path) -> tuple[set[str], set[str], set[str]]:
    """(module-level, deferred, type-checking-only) ``agentmem`` modules ``path`` imports."""
    tree = ast.parse(path.read_text())
    top: set[str] = set()
    deferred: set[str] = set()
    typing_only: set[str] = set()
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )

    def visit(node: ast.AST, in_function: bool, in_type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            fn = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            tc = in_type_checking or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            )
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - child.level + 1])
                    base = f"{base}.{child.module}" if child.module else base
                # ``from pkg import submodule`` depends on the submodule, not on pkg.
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                    for a in child.names
                ]
            for name in names:
                if name == "agentmem" or name.startswith("agentmem."):
                    (typing_only if tc else deferred if fn else top).add(name)
            visit(child, fn, tc)

    visit(tree, False, False)
    return top, deferred, typing_only


def import_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = {module_name(p): p for p in CORE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    deferred: dict[str, set[str]] = {}
    for mod, path in modules.items():
        top, later, _ = _imports(path)
        graph[mod] = {_resolve(n, modules) for n in top} - {mod, None}  # type: ignore[operator]
        late = {_resolve(n, modules) for n in later} - {mod, None}
        if late:
            deferred[mod] = late  # type: ignore[assignment]
    return graph, deferred


def every_import_graph() -> dict[str, set[str]]:
    """The import graph with deferred and type-checking-only imports as edges too: a circle
    here is one that only a function-level or ``TYPE_CHECKING`` import keeps from failing."""
    modules = {module_name(p): p for p in CORE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        names = set().union(*_imports(path))
        graph[mod] = {_resolve(n, modules) for n in names} - {mod, None}  # type: ignore[operator]
    return graph


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def private_adapter_imports() -> list[str]:
    found = []
    for root in ADAPTERS:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentmem"):
                    mod = node.module or ""
                    bad = [p for p in mod.split(".") if p.startswith("_")]
                    bad += [a.name for a in node.names if a.name.startswith("_")]
                    if bad:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {mod} {bad}")
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        if a.name.startswith("agentmem") and any(
                            p.startswith("_") for p in a.name.split(".")
                        ):
                            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {a.name}")
    return found


def adapter_core_imports() -> dict[str, set[str]]:
    """Adapter package -> the core modules its files import (deferred and ``TYPE_CHECKING``
    imports included; ``from agentmem import errors`` imports ``agentmem.errors``)."""
    found: dict[str, set[str]] = {}
    for root in ADAPTERS:
        modules = found.setdefault(root.name, set())
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    base = node.module
                    names = [
                        f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                        for a in node.names
                    ]
                modules.update(n for n in names if n.split(".")[0] == "agentmem")
    return found


def adapter_surface_violations() -> list[str]:
    """Core modules an adapter package imports outside :data:`ADAPTER_SURFACE`."""
    return [
        f"{package}: {module}"
        for package, modules in sorted(adapter_core_imports().items())
        for module in sorted(modules - ADAPTER_SURFACE)
    ]


def adapter_reaches() -> list[str]:
    """Where an adapter calls the assembler or uses a manager's tier (see the module)."""
    found = []
    for root in ADAPTERS:
        for path in sorted(root.rglob("*.py")):
            where = path.relative_to(root.parent)
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    if name in ASSEMBLY:
                        found.append(f"{where}:{node.lineno}: calls {name}")
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Attribute)
                    and node.value.attr in TIERS
                ):
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
                elif isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr):
                    value = node.value
                    if isinstance(value, ast.Attribute) and value.attr in TIERS:
                        found.append(f"{where}:{node.lineno}: binds {ast.unparse(value)}")
    return found


def frameworks_on_import() -> list[str]:
    code = (
        "import sys, agentmem; "
        f"print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return [line for line in out.splitlines() if line]


def top_level_modules() -> list[str]:
    """The modules directly under ``agentmem/`` (``__init__.py`` included)."""
    return sorted(p.name for p in CORE.glob("*.py"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    pairs, lines, per = twins(CORE)
    graph, deferred = import_graph()
    found = circles(graph)
    hidden = [c for c in circles(every_import_graph()) if c not in found]
    private = private_adapter_imports()
    surface = {k: sorted(v) for k, v in sorted(adapter_core_imports().items())}
    reaches = adapter_reaches()
    frameworks = frameworks_on_import()
    library_lines = sum(len(p.read_text().splitlines()) for p in CORE.rglob("*.py"))
    result = {
        "core_lines": library_lines,
        "async_twin_pairs": pairs,
        "async_twin_lines": lines,
        "import_circles": found,
        "circles_kept_by_deferred_or_type_checking_imports": hidden,
        "deferred_core_imports": {k: sorted(v) for k, v in sorted(deferred.items())},
        "adapter_private_imports": private,
        "adapter_core_imports": surface,
        "adapter_reaches_past_the_manager": reaches,
        "frameworks_imported_by_import_agentmem": frameworks,
        "top_level_modules": top_level_modules(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"core: {library_lines} lines")
    print(f"async twins: {pairs} pairs, {lines} lines of async twins")
    for where, size in per.most_common(args.top):
        print(f"  {size:5d}  {where}")
    print(f"import circles in the core: {len(found)}")
    for comp in found:
        print("  " + " <-> ".join(comp))
    print(f"circles only deferred or TYPE_CHECKING imports keep from failing: {len(hidden)}")
    for comp in hidden:
        print("  " + " <-> ".join(comp))
    print(f"deferred (function-level) core imports: {sum(map(len, deferred.values()))}")
    for mod, targets in sorted(deferred.items()):
        print(f"  {mod} -> {', '.join(sorted(targets))}")
    print(f"adapter imports of private core names: {len(private)}")
    for line in private:
        print("  " + line)
    for package, modules in surface.items():
        print(f"core modules {package} imports: {len(modules)} ({', '.join(modules)})")
    print(f"adapter calls of the assembler or uses of a tier: {len(reaches)}")
    for line in reaches:
        print("  " + line)
    print(f"frameworks imported by `import agentmem`: {frameworks or 'none'}")
    print(f"modules directly under agentmem/: {len(result['top_level_modules'])}")


if __name__ == "__main__":
    main()
