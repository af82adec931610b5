"""``Delegate``: an attribute whose value lives on another object its owner holds (private).

Example:
    >>> class Engine:
    ...     def __init__(self):
    ...         self.speed = 1
    >>> class Car:
    ...     speed: Delegate[int] = Delegate("engine", doc="The engine's speed.")
    ...     def __init__(self):
    ...         self.engine = Engine()
    >>> car = Car()
    >>> car.speed = 3
    >>> car.engine.speed, Car.speed.__doc__
    (3, "The engine's speed.")
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

__all__ = ["Delegate"]

T = TypeVar("T")


class Delegate(Generic[T]):
    """Reads and writes ``obj.<holder>.<target>`` as ``obj.<name>``.

    Args:
        holder: The owner's attribute that holds the value's object.
        target: The attribute on that object (default: the same name as here).
        doc: The attribute's docstring.
    """

    def __init__(self, holder: str, target: str | None = None, *, doc: str | None = None) -> None:
        self.holder = holder
        self._target = target
        self.__doc__ = doc

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name
        self.target = self._target or name

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> Delegate[T]: ...

    @overload
    def __get__(self, obj: object, owner: type[Any] | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type[Any] | None = None) -> Any:
        return self if obj is None else getattr(getattr(obj, self.holder), self.target)

    def __set__(self, obj: object, value: T) -> None:
        setattr(getattr(obj, self.holder), self.target, value)
