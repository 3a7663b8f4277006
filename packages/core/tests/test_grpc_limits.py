"""Streams are bounded per client and in total, below the server's threads (onceflow.core.grpc.limits).

The end-to-end attack (twenty streams against the consumer) is tests/security/test_results_api_attacks.py;
here, the bounds with several clients, which one machine's loopback cannot show end to end.
"""

from __future__ import annotations

import pytest

from onceflow.core.errors import InvalidConfig
from onceflow.core.grpc.limits import StreamLimits, client_of, stream_budget
from onceflow.core.settings import GrpcLimitsSettings


def test_a_client_and_the_server_each_have_their_bound() -> None:
    limits = StreamLimits(max_per_client=2, max_total=3)
    a1, a2 = limits.admit("10.0.0.1"), limits.admit("10.0.0.1")
    assert callable(a1) and callable(a2)
    refused = limits.admit("10.0.0.1")
    assert isinstance(refused, str) and "max_streams_per_client = 2" in refused and "10.0.0.1" in refused
    b1 = limits.admit("10.0.0.2")
    assert callable(b1)
    refused = limits.admit("10.0.0.3")
    assert isinstance(refused, str) and "server.limits.max_streams = 3" in refused
    assert limits.open_streams() == 3

    a1()
    a1()  # releasing twice gives one slot back
    assert limits.open_streams() == 2
    assert callable(limits.admit("10.0.0.3"))
    assert isinstance(limits.admit("10.0.0.1"), str)  # the total is reached again


def test_the_budget_keeps_threads_for_the_other_calls() -> None:
    assert stream_budget(GrpcLimitsSettings(), 16) == 8
    assert stream_budget(GrpcLimitsSettings(max_streams=14), 16) == 14
    with pytest.raises(InvalidConfig, match=r"server\.limits\.max_streams"):
        stream_budget(GrpcLimitsSettings(max_streams=15), 16)


@pytest.mark.parametrize(
    ("peer", "client"),
    [("ipv4:10.0.0.7:51234", "10.0.0.7"), ("ipv6:[::1]:4000", "[::1]"), ("ipv6:%5B::1%5D:4000", "%5B::1%5D"),
     ("unix:/tmp/s.sock", "unix:/tmp/s.sock")],
)  # fmt: skip
def test_the_client_is_the_peer_address_without_its_port(peer: str, client: str) -> None:
    assert client_of(peer) == client
