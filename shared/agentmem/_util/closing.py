"""``with`` support for objects that hold resources and have a ``close()`` method."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["ClosesOnExit"]

_Self = TypeVar("_Self", bound="ClosesOnExit")


class ClosesOnExit:
    """Mixin: ``with obj:`` hands back ``obj`` and calls ``obj.close()`` when the block ends,
    however it ends (exceptions propagate).

    Example:
        >>> class Handle(ClosesOnExit):
        ...     closed = False
        ...     def close(self) -> None:
        ...         self.closed = True
        >>> with Handle() as h:
        ...     pass
        >>> h.closed
        True
    """

    def close(self) -> None:
        """Release what the object holds (subclasses implement it)."""
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
