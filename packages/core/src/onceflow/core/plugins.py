"""Plug-ins: the objects installed distributions register under an ``importlib.metadata`` entry-point group.

Every group onceflow reads goes through :func:`load_group`: the command's sub-commands
(``onceflow.cli``), the connectors (``onceflow.connectors``), the consumer's extensions
(``onceflow.consumer.extensions``), the replay audit (``onceflow.audit``) and the fault plug-ins
(``onceflow.faults``). It loads them in name order and checks their type; one that does not load,
or is not what the group expects, is a :class:`PluginError` naming the group, the entry point and
its value. What happens then is the caller's policy, as in Kafka Connect's plugin scanning: a
worker logs and skips a broken connector (``on_error``), a consumer refuses to start with a broken
extension (the default: raise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Final, Generic, Literal, TypeVar, overload

from onceflow.core.errors import OnceflowError

T = TypeVar("T")


class PluginError(OnceflowError):
    """An installed plug-in does not load, or is not of the type its group expects.

    ``group``, ``name`` and ``value`` (``module:attr``) name its entry point; ``reason`` says what is wrong.
    """

    def __init__(self, entry: EntryPoint, reason: str) -> None:
        self.group = entry.group
        self.name = entry.name
        self.value = entry.value
        self.reason = reason
        super().__init__(f"{entry.group} entry point {entry.name!r} ({entry.value}) {reason}")


@dataclass(frozen=True)
class Plugin(Generic[T]):
    """A loaded entry point and what it names (``target``)."""

    entry: EntryPoint
    target: T

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def value(self) -> str:
        """``module:attr``."""
        return self.entry.value


#: What a caller that skips broken plug-ins does with each (log it, print it).
OnError = Callable[[PluginError], None]


#: ``kind`` of a group whose entry points name functions (or any callable: a factory, a class).
CALLABLE: Final = "callable"


# A class ``kind`` is ``type[Any]``, not ``type[T]``: mypy refuses an abstract class (every plug-in base
# is one) where ``type[T]`` is expected; the check that each is a subclass is the loader's, at run time.
@overload
def load_group(
    group: str, *, kind: type[Any], name: str | None = None, on_error: OnError | None = None
) -> list[Plugin[type[Any]]]: ...
@overload
def load_group(
    group: str, *, kind: Literal["callable"], name: str | None = None, on_error: OnError | None = None
) -> list[Plugin[Callable[..., Any]]]: ...
@overload
def load_group(
    group: str, *, kind: None = None, name: str | None = None, on_error: OnError | None = None
) -> list[Plugin[object]]: ...
def load_group(
    group: str,
    *,
    kind: type[Any] | Literal["callable"] | None = None,
    name: str | None = None,
    on_error: OnError | None = None,
) -> list[Plugin[Any]]:
    """Every installed entry point of ``group`` (only those called ``name``, if given), loaded, by name.

    With ``kind`` a class, each must name a subclass of it; with :data:`CALLABLE`, something callable.
    A plug-in that does not load or is not of that kind raises :class:`PluginError`, or, with
    ``on_error``, is passed to it and left out.
    """
    found: list[Plugin[Any]] = []
    selected = entry_points(group=group) if name is None else entry_points(group=group, name=name)
    for entry in sorted(selected, key=lambda e: (e.name, e.value)):
        try:
            found.append(Plugin(entry, _load(entry, kind)))
        except PluginError as exc:
            if on_error is None:
                raise
            on_error(exc)
    return found


def _load(entry: EntryPoint, kind: type[Any] | Literal["callable"] | None) -> object:
    try:
        loaded: object = entry.load()
    except Exception as exc:  # an import error, or any error the plug-in's module raises on import
        raise PluginError(entry, f"does not load: {exc!r}") from exc
    if kind == CALLABLE:
        if not callable(loaded):
            raise PluginError(entry, "is not callable")
    elif isinstance(kind, type) and not (isinstance(loaded, type) and issubclass(loaded, kind)):
        raise PluginError(entry, f"is not a {kind.__name__} class")
    return loaded
