"""Deprecated: the framework embedder adapters moved to the adapter packages.

* ``agentmem.embeddings.adapters.LangChainEmbedder`` -> ``langchain_agentmem.LangChainEmbedder``
* ``agentmem.embeddings.adapters.LlamaIndexEmbedder`` -> ``llamaindex_agentmem.LlamaIndexEmbedder``

The same holds for ``agentmem.LangChainEmbedder`` / ``agentmem.embeddings.LangChainEmbedder``
and their LlamaIndex twins. Each old name is served by a module-level ``__getattr__``
(PEP 562) that emits a :class:`DeprecationWarning` naming the new import path and imports
the class lazily from its adapter package, so importing agentmem never imports a framework.

Example:
    >>> import warnings
    >>> import agentmem.embeddings.adapters as old
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     cls = old.LangChainEmbedder
    >>> cls.__module__, caught[0].category.__name__
    ('langchain_agentmem.embeddings', 'DeprecationWarning')
"""

from __future__ import annotations

import importlib
import warnings

__all__: list[str] = []

#: The release that drops the old paths.
REMOVED_IN = "0.3"

#: Each moved name -> (the package to import it from now, the module that defines it).
MOVED: dict[str, tuple[str, str]] = {
    "LangChainEmbedder": ("langchain_agentmem", "langchain_agentmem.embeddings"),
    "LlamaIndexEmbedder": ("llamaindex_agentmem", "llamaindex_agentmem.embeddings"),
}

_EXTRA = {"langchain_agentmem": "langchain", "llamaindex_agentmem": "llamaindex"}


def moved_adapter(old_module: str, name: str) -> tuple[type, str]:
    """Import the moved class ``name`` from its adapter package.

    Returns:
        The class, and the deprecation message naming its new import path.

    Raises:
        AttributeError: ``name`` is not a moved adapter (so ``getattr`` defaults work).
        ImportError: The adapter's framework is not installed (names the extra).

    Example:
        >>> cls, message = moved_adapter("agentmem", "LlamaIndexEmbedder")
        >>> cls.__name__, message.split(";")[0]
        ('LlamaIndexEmbedder', 'agentmem.LlamaIndexEmbedder moved to llamaindex_agentmem')
    """
    if name not in MOVED:
        msg = f"module {old_module!r} has no attribute {name!r}"
        raise AttributeError(msg)
    package, module = MOVED[name]
    try:
        cls: type = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        extra = _EXTRA[package]
        msg = f"{name} needs its framework: pip install 'tiered-agentmem[{extra}]' ({exc})"
        raise ImportError(msg) from exc
    message = (
        f"{old_module}.{name} moved to {package}; use `from {package} import {name}` "
        f"(the old path is removed in agentmem {REMOVED_IN})"
    )
    return cls, message


def warn_moved(old_module: str, name: str) -> type:
    """The body of a module ``__getattr__`` (PEP 562) serving the moved adapters.

    Returns the class :func:`moved_adapter` imports, after a :class:`DeprecationWarning`
    that points at the code that used the old name.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     cls = warn_moved("agentmem", "LlamaIndexEmbedder")
        >>> cls.__name__, caught[0].category.__name__
        ('LlamaIndexEmbedder', 'DeprecationWarning')
    """
    cls, message = moved_adapter(old_module, name)
    # 1 is this function, 2 the module's __getattr__, 3 the code that named the old path.
    warnings.warn(message, DeprecationWarning, stacklevel=3)
    return cls


def __getattr__(name: str) -> type:
    return warn_moved(__name__, name)
