"""The end-of-input marker's value, and when a read covers the input."""

from __future__ import annotations

import pytest

from onceflow.core.end_of_input import HEADER, EndOfInputMarker, is_marker
from onceflow.core.errors import SerializationError


def test_a_marker_round_trips_and_says_which_reads_cover_the_input() -> None:
    marker = EndOfInputMarker("file", {0: 10, 1: 0, 2: 7})
    assert EndOfInputMarker.decode(marker.encode()) == marker
    assert marker.covered_by({0: 10, 2: 9})  # an empty partition needs no read
    assert not marker.covered_by({0: 10, 1: 0, 2: 6})
    assert not marker.covered_by({0: 12})


@pytest.mark.parametrize("value", [None, b"", b"{}", b"[1]", b'{"source": "x", "end_offsets": {"a": 1}}'])
def test_a_bad_marker_value_is_a_serialization_error(value: bytes | None) -> None:
    with pytest.raises(SerializationError, match="not an end-of-input marker"):
        EndOfInputMarker.decode(value)


def test_markers_are_recognised_by_their_header_in_lists_and_mappings() -> None:
    assert is_marker([("a", b"1"), (HEADER, b"1")])
    assert is_marker({HEADER: b"1"})
    assert not is_marker(None)
    assert not is_marker([("seq", b"1")])
