"""Declared connector configuration, after Kafka Connect's ``ConfigDef``.

A connector declares the settings it understands as :class:`ConfigKey` s in a :class:`ConfigDef`.
Raw configs are string-to-string maps (as in the Kafka Connect REST API); :meth:`ConfigDef.validate`
reports every problem per setting, and :meth:`ConfigDef.parse` turns a valid map into typed values or
raises :class:`~onceflow.core.errors.InvalidConfig` naming the first bad setting. Settings that are
not declared are kept (they may be meant for the runtime or a client library), as in Kafka Connect.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from onceflow.core.errors import InvalidConfig


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Default of a setting that must be given.
REQUIRED: Final[Any] = _Required()


class ConfigType(enum.Enum):
    """How a raw string value is read."""

    STRING = "string"
    INT = "int"
    FLOAT = "float"
    BOOLEAN = "boolean"
    LIST = "list"


@dataclass(frozen=True)
class ConfigKey:
    """One declared setting. ``check`` returns an error message for a bad (typed) value, or None."""

    name: str
    type: ConfigType
    doc: str
    default: Any = REQUIRED
    choices: tuple[str, ...] | None = None
    min: float | None = None
    max: float | None = None
    check: Callable[[Any], str | None] | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def convert(self, raw: str) -> Any:
        """The typed value of ``raw``; raises ValueError with a reason."""
        text = raw.strip()
        if self.type is ConfigType.STRING:
            value: Any = raw
        elif self.type is ConfigType.INT:
            try:
                value = int(text)
            except ValueError:
                raise ValueError(f"expected an integer, got {raw!r}") from None
        elif self.type is ConfigType.FLOAT:
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"expected a number, got {raw!r}") from None
        elif self.type is ConfigType.BOOLEAN:
            if text.lower() not in ("true", "false"):
                raise ValueError(f"expected true or false, got {raw!r}")
            value = text.lower() == "true"
        else:
            value = [item.strip() for item in text.split(",") if item.strip()]
        self._check_bounds(value)
        return value

    def _check_bounds(self, value: Any) -> None:
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"must be one of {', '.join(self.choices)}, got {value!r}")
        if self.min is not None and value < self.min:
            raise ValueError(f"must be >= {self.min:g}, got {value}")
        if self.max is not None and value > self.max:
            raise ValueError(f"must be <= {self.max:g}, got {value}")
        if self.check is not None:
            problem = self.check(value)
            if problem:
                raise ValueError(problem)


@dataclass
class ConfigValidation:
    """The outcome of validating one setting: its raw value and every problem found."""

    name: str
    value: str | None
    errors: list[str] = field(default_factory=list)


class ParsedConfig(Mapping[str, Any]):
    """Typed values of the declared settings, plus the raw originals (undeclared keys included)."""

    def __init__(self, values: Mapping[str, Any], originals: Mapping[str, str]) -> None:
        self._values = dict(values)
        self.originals: dict[str, str] = dict(originals)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get_str(self, key: str) -> str:
        return str(self._values[key])

    def get_int(self, key: str) -> int:
        return int(self._values[key])

    def get_float(self, key: str) -> float:
        return float(self._values[key])

    def get_bool(self, key: str) -> bool:
        return bool(self._values[key])

    def get_list(self, key: str) -> list[str]:
        return list(self._values[key])

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """Raw settings starting with ``prefix``, prefix stripped (e.g. ``producer.override.``)."""
        return {k[len(prefix) :]: v for k, v in self.originals.items() if k.startswith(prefix)}


class ConfigDef:
    """An ordered set of declared settings."""

    def __init__(self, keys: Iterable[ConfigKey] = ()) -> None:
        self._keys: dict[str, ConfigKey] = {}
        for key in keys:
            self.add(key)

    def add(self, key: ConfigKey) -> ConfigDef:
        self._keys[key.name] = key
        return self

    def define(self, name: str, type: ConfigType, doc: str, default: Any = REQUIRED, **kwargs: Any) -> ConfigDef:
        """Declare a setting (see :class:`ConfigKey`); returns self so definitions chain."""
        return self.add(ConfigKey(name, type, doc, default, **kwargs))

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A new definition with this one's keys, then ``other``'s (``other`` wins on a clash)."""
        return ConfigDef([*self._keys.values(), *other.keys()])

    def keys(self) -> list[ConfigKey]:
        return list(self._keys.values())

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def validate(self, raw: Mapping[str, str]) -> list[ConfigValidation]:
        """One :class:`ConfigValidation` per declared setting, in declaration order."""
        results = []
        for key in self._keys.values():
            value = raw.get(key.name)
            result = ConfigValidation(key.name, value)
            if value is None:
                if key.required:
                    result.errors.append(f"missing required setting {key.name!r}: {key.doc}")
            else:
                try:
                    key.convert(value)
                except ValueError as exc:
                    result.errors.append(str(exc))
            results.append(result)
        return results

    def parse(self, raw: Mapping[str, str]) -> ParsedConfig:
        """Typed values of ``raw``; the first problem raises ``InvalidConfig(setting, reason)``."""
        values: dict[str, Any] = {}
        for key in self._keys.values():
            value = raw.get(key.name)
            if value is None:
                if key.required:
                    raise InvalidConfig(key.name, f"is required ({key.doc})")
                values[key.name] = key.default
                continue
            try:
                values[key.name] = key.convert(value)
            except ValueError as exc:
                raise InvalidConfig(key.name, str(exc)) from None
        return ParsedConfig(values, raw)
