"""Lazy package exports (PEP 562): a package names the modules that hold its public names;
each module is imported when one of its names is first used (private).

``import agentmem`` then costs the package files alone, and ``agentmem --help`` or a
program that needs one class does not pay for numpy, the pydantic models or the stores. A
package uses it like this::

    from typing import TYPE_CHECKING
    from agentmem._lazy import lazy_exports

    if TYPE_CHECKING:  # the static names, for type checkers and IDEs
        from agentmem.long_term.records import MemoryRecord, Scope

    __all__ = ["MemoryRecord", "Scope"]
    __getattr__, __dir__ = lazy_exports(
        __name__, {"agentmem.long_term.records": ("MemoryRecord", "Scope")}
    )

A name is looked up once: its value is then set on the package, so later lookups are plain
attribute reads. Names that moved away (``moved``: name -> the module that holds it now)
still resolve, with the :mod:`agentmem._moved` deprecation warning pointing at the caller.

Example:
    >>> import sys, types
    >>> pkg = sys.modules["demo_pkg"] = types.ModuleType("demo_pkg")
    >>> pkg.__getattr__, pkg.__dir__ = lazy_exports("demo_pkg", {"math": ("sqrt",)})
    >>> pkg.sqrt(4.0), "sqrt" in vars(pkg), "sqrt" in dir(pkg)
    (2.0, True, True)
    >>> del sys.modules["demo_pkg"]
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType

from agentmem._moved import _warn

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
    package: str,
    modules: Mapping[str, Iterable[str]],
    *,
    moved: Mapping[str, str] | None = None,
    fallback: Callable[[str], object] | None = None,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: The package's ``__name__``.
        modules: Each module -> the names of it the package exports (imported on first use).
        moved: Names that left the package -> the module that holds each now; they warn
            (:class:`DeprecationWarning`, pointing at the caller), then resolve.
        fallback: Called with any other name (it raises :class:`AttributeError` for names
            it does not know); without one, those are :class:`AttributeError` here. A
            fallback that warns with ``stacklevel=3`` must add no frame of its own (a
            function of the name, or a :func:`functools.partial` of one).
    """
    home = {name: module for module, names in modules.items() for name in names}
    gone = dict(moved or {})

    def __getattr__(name: str) -> object:
        module = home.get(name)
        if module is not None:
            value = getattr(load_module(module), name)
            setattr(sys.modules[package], name, value)  # next time: a plain attribute
            return value
        new = gone.get(name)
        if new is not None:
            value = getattr(load_module(new), name)
            _warn(package, new, name)  # stack: _warn, this __getattr__, the caller
            return value
        if fallback is not None:
            return fallback(name)
        msg = f"module {package!r} has no attribute {name!r}"
        raise AttributeError(msg)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home})

    return __getattr__, __dir__
