"""The memory inspector: see what an agent remembers, why it recalled it, and where the
tokens of a context went.

* In a notebook: a built context, recall results, a :class:`~agentmem.MemoryManager`, a
  :class:`~agentmem.LongTermMemory` and a :class:`~agentmem.WorkingMemory` display as
  HTML (their ``_repr_html_``, built by :mod:`agentmem.inspector.reprs`).
* In a browser: :class:`InspectorServer`, started by ``agentmem inspect`` for a home no
  process holds, or by :meth:`agentmem.MemoryService.serve_inspector` inside the app that
  holds it (see :mod:`agentmem.inspector.server` for its security).

Standard library only (the ``[inspect]`` extra adds nothing); plots are inline SVG.

Example:
    >>> from agentmem import MemoryService
    >>> service = MemoryService.open(home)  # doctest: +SKIP
    >>> server = service.serve_inspector(port=0)  # doctest: +SKIP
    >>> print(server.url)  # doctest: +SKIP
    http://127.0.0.1:43817/?token=6Yb0...
    >>> server.stop()  # doctest: +SKIP
"""

from typing import TYPE_CHECKING

from agentmem._util.lazy import lazy_exports

if TYPE_CHECKING:  # the static names, for type checkers and IDEs
    from agentmem.inspector.recent import RecentContext, RecentContexts
    from agentmem.inspector.server import InspectorServer

__all__ = ["InspectorServer", "RecentContext", "RecentContexts"]

_EXPORTS = {  # each name -> the module imported from above, in the order of __all__
    "InspectorServer": "agentmem.inspector.server",
    "RecentContext": "agentmem.inspector.recent",
    "RecentContexts": "agentmem.inspector.recent",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
