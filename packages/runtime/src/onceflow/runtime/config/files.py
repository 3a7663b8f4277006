"""Connector config files for standalone mode and the CLI.

Two formats, as Kafka Connect accepts them:

- JSON: ``{"name": "...", "config": {...}}`` (the REST body) or a flat ``{"name": ..., ...}`` map;
- Java properties: ``key=value`` lines, ``#`` and ``!`` comments.

Values are strings; JSON numbers and booleans are turned into their string form.
"""

from __future__ import annotations

import json
from pathlib import Path

from onceflow.core.errors import InvalidConfig
from onceflow.runtime.config.connector_config import NAME


def _as_string(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_properties(text: str, *, source: str = "properties") -> dict[str, str]:
    """``key=value`` (or ``key: value``) lines; blank lines and comments are skipped."""
    config: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        positions = [i for i in (stripped.find("="), stripped.find(":")) if i > 0]
        if not positions:
            raise InvalidConfig(f"{source}:{number}", f"expected key=value, got {stripped!r}")
        cut = min(positions)
        config[stripped[:cut].strip()] = stripped[cut + 1 :].strip()
    return config


def load_connector_file(path: str | Path) -> tuple[str, dict[str, str]]:
    """Read one connector's ``(name, config)`` from a JSON or properties file."""
    file = Path(path)
    try:
        text = file.read_text()
    except OSError as exc:
        raise InvalidConfig("connector file", f"cannot read {file}: {exc.strerror}") from None
    if file.suffix == ".json" or text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidConfig("connector file", f"{file} is not valid JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise InvalidConfig("connector file", f"{file}: expected a JSON object")
        raw = doc.get("config", doc)
        if not isinstance(raw, dict):
            raise InvalidConfig("config", f"{file}: expected an object of settings")
        config = {str(k): _as_string(v) for k, v in raw.items()}
        name = str(doc.get(NAME) or config.get(NAME) or "")
    else:
        config = parse_properties(text, source=str(file))
        name = config.get(NAME, "")
    if not name:
        raise InvalidConfig(NAME, f"{file} does not name the connector")
    config[NAME] = name
    return name, config
