"""The column kinds: every Arrow type a sink stores has one, anything else none; and every table of
names (Avro here, the sinks' dialects in their own tests) names every kind."""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa
import pytest

from onceflow.core.avro.arrow import AVRO_TYPES
from onceflow.core.column_types import KINDS, column_kind, decimal_name, type_name


@pytest.mark.parametrize(
    ("data_type", "kind"),
    [
        (pa.string(), "string"),
        (pa.large_string(), "string"),
        (pa.int8(), "int8"),
        (pa.int16(), "int16"),
        (pa.int32(), "int32"),
        (pa.int64(), "int64"),
        (pa.float32(), "float32"),
        (pa.float64(), "float64"),
        (pa.decimal128(12, 3), "decimal"),
        (pa.bool_(), "boolean"),
        (pa.binary(), "binary"),
        (pa.large_binary(), "binary"),
        (pa.date32(), "date"),
        (pa.timestamp("us"), "timestamp"),
        (pa.timestamp("ms"), "timestamp"),
        (pa.timestamp("us", tz="UTC"), "timestamp_tz"),
        (pa.timestamp("ns", tz="Europe/Paris"), "timestamp_tz"),
    ],
)
def test_every_stored_type_has_its_kind(data_type: pa.DataType, kind: str) -> None:
    assert column_kind(data_type) == kind
    assert kind in KINDS


@pytest.mark.parametrize(
    "data_type",
    [pa.float16(), pa.uint8(), pa.uint64(), pa.list_(pa.int64()), pa.struct([("a", pa.int8())]), pa.null(),
     pa.date64(), pa.time64("us"), pa.duration("s"), pa.map_(pa.string(), pa.int64()), pa.decimal256(40, 2)],
)  # fmt: skip
def test_a_type_no_sink_stores_has_no_kind(data_type: pa.DataType) -> None:
    assert column_kind(data_type) is None
    with pytest.raises(TypeError, match=re.escape(str(data_type))):
        type_name(data_type, dict.fromkeys(KINDS, "x"))


def test_a_kind_a_table_leaves_out_is_a_type_error_naming_the_type() -> None:
    with pytest.raises(TypeError, match="decimal128"):
        type_name(pa.decimal128(5, 1), {"string": "text"})


def test_decimal_names_take_their_precision_and_scale() -> None:
    names: dict[str, str | Callable[[pa.DataType], str]] = {"decimal": decimal_name("numeric({precision},{scale})")}
    assert type_name(pa.decimal128(12, 3), names) == "numeric(12,3)"


def test_avro_names_every_kind_with_a_new_value_each_time() -> None:
    assert set(AVRO_TYPES) == set(KINDS)
    first = type_name(pa.date32(), AVRO_TYPES)
    assert first == {"type": "int", "logicalType": "date"}
    first["changed"] = True
    assert type_name(pa.date32(), AVRO_TYPES) == {"type": "int", "logicalType": "date"}
