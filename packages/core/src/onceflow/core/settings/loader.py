"""Load a :class:`Settings` model from a TOML file plus environment overrides."""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin

from pydantic import BaseModel, ValidationError

from onceflow.core.errors import InvalidConfig
from onceflow.core.settings.base import Settings

S = TypeVar("S", bound=Settings)
_log = logging.getLogger("onceflow.core.settings")


def load_settings(
    model: type[S],
    path: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    appending: frozenset[str] = frozenset(),
) -> S:
    """Return validated settings of type ``model``.

    Steps:
        1. Read the TOML file, if given. A missing or malformed file is an :class:`InvalidConfig`.
        2. Apply every environment variable that starts with ``model.env_prefix``; ``__``
           separates nesting levels. A variable naming no setting is an error, so a typo in a
           deployment never goes unnoticed. Each override of a file value is logged.
        3. Validate. The first problem becomes an :class:`InvalidConfig` naming the setting
           (dotted path, or the environment variable that supplied it) and what is wrong.

    ``overrides`` (settings a command line gives, by dotted path: ``entrypoint``, ``spark.master``) apply
    after the environment, before validation; a path in ``appending`` extends the list it names instead
    of replacing it (``onceflow connect-worker a.json b.json``).
    """
    # Step 1
    data: dict[str, Any] = {}
    source_of: dict[tuple[str, ...], str] = {}
    if path is not None:
        data = _read_toml(Path(path))
        for key_path in _leaf_paths(data):
            source_of[key_path] = str(path)
    # Step 2
    environ = os.environ if env is None else env
    for name in sorted(environ):
        if not name.startswith(model.env_prefix):
            continue
        key_path = tuple(part.lower() for part in name[len(model.env_prefix) :].split("__"))
        annotation = _field_annotation(model, key_path, name)
        value = _parse_env_value(environ[name], annotation)
        if key_path in source_of:
            _log.info("settings.override setting=%s source=env var=%s", ".".join(key_path), name)
        _set_path(data, key_path, value)
        source_of[key_path] = f"environment variable {name}"
    for key, given in (overrides or {}).items():
        key_path = tuple(key.split("."))
        _set_path(data, key_path, [*_get_path(data, key_path, []), *given] if key in appending else given)
        source_of[key_path] = "the command line"
    # Step 3
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = tuple(str(part) for part in error["loc"])
        setting = ".".join(loc) or model.__name__
        source = _source_for(loc, source_of)
        raise InvalidConfig(setting, _reason(error), source=source) from None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise InvalidConfig("config file", f"{path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidConfig("config file", f"{path} is not valid TOML: {exc}") from None


def _leaf_paths(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            paths.extend(_leaf_paths(value, (*prefix, key)))
        else:
            paths.append((*prefix, key))
    return paths


def _field_annotation(model: type[BaseModel], key_path: tuple[str, ...], env_name: str) -> Any:
    """The type annotation of the setting at ``key_path``; unknown paths are errors."""
    current: Any = model
    for depth, key in enumerate(key_path):
        fields = getattr(current, "model_fields", None)
        if fields is None:
            if get_origin(current) is dict and depth == len(key_path) - 1:
                return get_args(current)[1] if get_args(current) else str
            break
        if key not in fields:
            known = ", ".join(sorted(fields))
            raise InvalidConfig(env_name, f"no setting {'.'.join(key_path)!r}; known here: {known}")
        current = fields[key].annotation
        if depth == len(key_path) - 1:
            return current
    raise InvalidConfig(env_name, f"no setting {'.'.join(key_path)!r}")


def _parse_env_value(raw: str, annotation: Any) -> Any:
    """Environment values are strings; structured settings (lists, dicts) are given as JSON."""
    if annotation is str:
        return raw
    origin = get_origin(annotation) or annotation
    if origin in (list, dict, tuple, set, frozenset) or (isinstance(origin, type) and issubclass(origin, BaseModel)):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _get_path(data: Mapping[str, Any], key_path: tuple[str, ...], default: Any) -> Any:
    node: Any = data
    for key in key_path:
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


def _set_path(data: dict[str, Any], key_path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in key_path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[key_path[-1]] = value


def _source_for(loc: tuple[str, ...], source_of: Mapping[tuple[str, ...], str]) -> str | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in source_of:
            return source_of[loc[:end]]
    return None


#: Settings whose value an error never shows (credentials: ``secret_access_key``, ``token_file``...).
_SECRET_NAMES = re.compile(r"secret|token|password|access_key", re.IGNORECASE)


def _reason(error: Mapping[str, Any]) -> str:
    message = str(error["msg"])
    if error["type"] == "extra_forbidden":
        return "unknown setting (check the spelling)"
    if error["type"] == "missing":
        return "is required"
    if any(_SECRET_NAMES.search(str(part)) for part in error.get("loc", ())):
        return message
    if "input" in error and not isinstance(error["input"], Mapping):
        return f"{message} (got {error['input']!r})"
    return message
