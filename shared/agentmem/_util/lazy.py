"""Lazy package exports (PEP 562): a package maps each public name to the module that
holds it; that module is imported when the name is first used (private).

``import agentmem`` then costs the package files alone, and ``agentmem --help`` or a
program that needs one class does not pay for numpy, the pydantic models or the stores. A
package uses it like this::

    from typing import TYPE_CHECKING
    from agentmem._util.lazy import lazy_exports

    if TYPE_CHECKING:  # the static names, for type checkers and IDEs
        from agentmem.long_term.records import MemoryRecord, Scope

    __all__ = ["MemoryRecord", "Scope"]

    _EXPORTS = {  # each name -> the module imported from above, in the order of __all__
        "MemoryRecord": "agentmem.long_term.records",
        "Scope": "agentmem.long_term.records",
    }
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

The three say the same names in the shapes their readers need (type checkers, ``import *``
and linters, the import on first use); ``tests/unit/test_lazy_imports.py`` holds them
together.

A name is looked up once: its value is then set on the package, so later lookups are plain
attribute reads.

Example:
    >>> import sys, types
    >>> pkg = sys.modules["demo_pkg"] = types.ModuleType("demo_pkg")
    >>> pkg.__getattr__, pkg.__dir__ = lazy_exports("demo_pkg", {"sqrt": "math"})
    >>> pkg.sqrt(4.0), "sqrt" in vars(pkg), "sqrt" in dir(pkg)
    (2.0, True, True)
    >>> del sys.modules["demo_pkg"]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import ModuleType

__all__ = ["lazy_exports", "load_module"]


def load_module(name: str) -> ModuleType:
    """The module ``name``, imported if need be, as an ``import`` statement would (unlike
    :func:`importlib.import_module`, ``python -X importtime`` reports it).

    Example:
        >>> load_module("json.decoder").__name__
        'json.decoder'
    """
    __import__(name)
    return sys.modules[name]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: The package's ``__name__``.
        exports: Each name the package exports -> the module that holds it, the one that
            defines it or a subpackage that exports it (imported when the name is first
            used); any other name is an :class:`AttributeError`.
    """
    home = dict(exports)

    def __getattr__(name: str) -> object:
        module = home.get(name)
        if module is not None:
            value = getattr(load_module(module), name)
            setattr(sys.modules[package], name, value)  # next time: a plain attribute
            return value
        msg = f"module {package!r} has no attribute {name!r}"
        raise AttributeError(msg)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home})

    return __getattr__, __dir__
