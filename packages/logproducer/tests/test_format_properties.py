"""Property: any well-formed line nginx or Apache could write (random client, time, offset, request,
escaped referer/user agent, ``-`` bytes, extra fields), or nginx, Caddy or Traefik as JSON, parses
back to exactly the values rendered."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onceflow.core.avro import AccessEvent
from onceflow.logproducer.formats import LineParser, MalformedLine, unescape
from onceflow.logproducer.sample import escape_apache, escape_nginx
from onceflow.testing.logproducer.strategies import access_lines, json_access_lines


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(access_lines())
def test_a_rendered_line_parses_to_its_values(case: tuple[bytes, AccessEvent]) -> None:
    line, event = case
    assert LineParser("auto").parse(line) == event


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_access_lines())
def test_a_json_line_parses_to_its_values(case: tuple[bytes, AccessEvent]) -> None:
    line, event = case
    assert LineParser("auto").parse(line) == LineParser("json").parse(line) == event


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=60))
def test_both_escapings_round_trip_through_unescape(data: bytes) -> None:
    expected = data.decode("utf-8", "backslashreplace")
    assert unescape(escape_nginx(data)) == expected
    assert unescape(escape_apache(data)) == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(access_lines(), st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(b' "\\[]-x0\xff')), max_size=4))
def test_a_damaged_line_is_an_event_or_malformed_never_a_crash(
    case: tuple[bytes, AccessEvent], damage: list[tuple[int, int]]
) -> None:
    line = bytearray(case[0])
    for position, byte in damage:
        line[position % len(line)] = byte
    parser = LineParser("auto")
    parser.parse(case[0])
    with contextlib.suppress(MalformedLine):
        parser.parse(bytes(line))
