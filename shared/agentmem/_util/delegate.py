"""``Delegate``: an attribute whose value lives on another object its owner holds (private).

:class:`ReadOnlyDelegate` only reads it (like a property without a setter: writing raises
:class:`~agentmem.errors.ReadOnlySettingError`, an ``AttributeError``, and mypy rejects the
assignment); :class:`Delegate` also writes it.

Example:
    >>> class Engine:
    ...     def __init__(self):
    ...         self.speed = 1
    ...         self.model = "V8"
    >>> class Car:
    ...     speed: Delegate[int] = Delegate("engine", doc="The engine's speed.")
    ...     engine_model: ReadOnlyDelegate[str] = ReadOnlyDelegate("engine", "model")
    ...     def __init__(self):
    ...         self.engine = Engine()
    >>> car = Car()
    >>> car.speed = 3
    >>> car.engine.speed, Car.speed.__doc__, car.engine_model
    (3, "The engine's speed.", 'V8')
    >>> car.engine_model = "V6"
    Traceback (most recent call last):
    ...
    agentmem.errors.ReadOnlySettingError: Car.engine_model is read-only (it is engine.model)
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

from typing_extensions import Never

from agentmem.errors import ReadOnlySettingError

__all__ = ["Delegate", "ReadOnlyDelegate"]

T = TypeVar("T")


class ReadOnlyDelegate(Generic[T]):
    """Reads ``obj.<holder>.<target>`` as ``obj.<name>``; writing it raises
    :class:`~agentmem.errors.ReadOnlySettingError` (an ``AttributeError``).

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
    def __get__(self, obj: None, owner: type[Any] | None = None) -> ReadOnlyDelegate[T]: ...

    @overload
    def __get__(self, obj: object, owner: type[Any] | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type[Any] | None = None) -> Any:
        return self if obj is None else getattr(getattr(obj, self.holder), self.target)

    def __set__(self, obj: object, value: Never) -> None:
        msg = f"{type(obj).__name__}.{self.name} is read-only (it is {self.holder}.{self.target})"
        raise ReadOnlySettingError(msg)


class Delegate(ReadOnlyDelegate[T]):
    """Reads and writes ``obj.<holder>.<target>`` as ``obj.<name>`` (arguments: see
    :class:`ReadOnlyDelegate`)."""

    def __set__(self, obj: object, value: T) -> None:
        setattr(getattr(obj, self.holder), self.target, value)
