"""Avro single-object encoding with fastavro.

Every value is ``C3 01`` + the 8-byte little-endian CRC-64-AVRO fingerprint of the writer
schema's Parsing Canonical Form + the Avro binary body, as the Avro specification defines it.
The fingerprint travels with every record, so a reader knows which schema wrote it and refuses
bytes it cannot interpret instead of decoding garbage.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Mapping
from typing import Any, Generic, TypeVar, cast

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.schema import fingerprint, to_parsing_canonical_form

from onceflow.core.errors import CorruptRecord, SerializationError, UnknownSchema

MAGIC = b"\xc3\x01"
HEADER_SIZE = len(MAGIC) + 8

T = TypeVar("T", bound=Mapping[str, Any])


def schema_fingerprint(schema: Mapping[str, Any]) -> bytes:
    """The 8-byte CRC-64-AVRO fingerprint used in the single-object header."""
    canonical = to_parsing_canonical_form(parse_schema(dict(schema), _write_hint=False))
    return bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))


def _without_logical_types(schema: Any) -> Any:
    """Copy of ``schema`` that reads logical types as their raw type (ints stay ints)."""
    if isinstance(schema, dict):
        return {k: _without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_without_logical_types(v) for v in schema]
    return schema


class SingleObjectSerde(Generic[T]):
    """Encodes and decodes records of one schema. Thread-safe; cheap to share.

    ``decode`` raises :class:`UnknownSchema` when the fingerprint is not this schema's, and
    :class:`CorruptRecord` when the bytes are not a whole, valid record.
    """

    def __init__(self, schema: Mapping[str, Any], *, logical_types: bool = False) -> None:
        """``logical_types``: read and write decimals, dates and timestamps as Python values
        (``Decimal``, ``date``, ``datetime``) instead of their raw Avro types."""
        self.schema: Mapping[str, Any] = copy.deepcopy(dict(schema))
        self.name = f"{schema.get('namespace', '')}.{schema['name']}".lstrip(".")
        self.fingerprint = schema_fingerprint(schema)
        #: What starts every encoded record: the magic bytes and the fingerprint.
        self.header = MAGIC + self.fingerprint
        self._parsed = parse_schema(dict(self.schema) if logical_types else _without_logical_types(self.schema))

    def encode(self, record: T) -> bytes:
        """Return the single-object encoding of ``record``."""
        out = io.BytesIO()
        out.write(self.header)
        try:
            schemaless_writer(out, self._parsed, dict(record))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SerializationError(f"cannot encode {self.name}: {exc}") from exc
        return out.getvalue()

    def decode(self, data: bytes) -> T:
        """Return the record in ``data``; see the class docstring for the errors."""
        if len(data) < HEADER_SIZE or data[:2] != MAGIC:
            raise CorruptRecord(
                f"not an Avro single-object encoded {self.name}: expected header C3 01 + 8-byte fingerprint, "
                f"got {data[:HEADER_SIZE].hex() or 'empty value'} ({len(data)} bytes)"
            )
        if data[2:HEADER_SIZE] != self.fingerprint:
            raise UnknownSchema(data[2:HEADER_SIZE], [f"{self.name} ({self.fingerprint.hex()})"])
        body = io.BytesIO(data)
        body.seek(HEADER_SIZE)
        try:
            record = schemaless_reader(body, self._parsed, None)
        except Exception as exc:  # fastavro raises EOFError, ValueError, UnicodeDecodeError, ...
            raise CorruptRecord(f"corrupt {self.name} body ({len(data)} bytes): {type(exc).__name__}: {exc}") from exc
        if body.tell() != len(data):
            raise CorruptRecord(f"corrupt {self.name}: {len(data) - body.tell()} trailing bytes after the record")
        return cast(T, record)


class SchemaRegistry:
    """Decodes values of several known schemas, dispatching on the fingerprint."""

    def __init__(self, *serdes: SingleObjectSerde[Any]) -> None:
        self._by_fingerprint = {serde.fingerprint: serde for serde in serdes}

    def serde_for(self, data: bytes) -> SingleObjectSerde[Any]:
        """The serde that wrote ``data``; raises UnknownSchema or CorruptRecord."""
        if len(data) < HEADER_SIZE or data[:2] != MAGIC:
            raise CorruptRecord(f"not an Avro single-object encoded value ({len(data)} bytes)")
        serde = self._by_fingerprint.get(data[2:HEADER_SIZE])
        if serde is None:
            known = [f"{s.name} ({fp.hex()})" for fp, s in self._by_fingerprint.items()]
            raise UnknownSchema(data[2:HEADER_SIZE], known)
        return serde
