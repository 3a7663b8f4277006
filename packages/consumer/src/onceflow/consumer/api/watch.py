"""The one way a watch RPC streams what the consumer commits (WatchRows, and an extension's watches such
as the IP-count example's WatchResults): subscribe to the feed when the call arrives, send a first
message, then one per committed batch that has something for the watcher."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final, TypeVar

import grpc
from google.protobuf.message import Message

from onceflow.consumer.exceptions import FeatureUnavailable
from onceflow.consumer.feed import ResultsFeed, ResultsUpdate, Subscription

#: How often a watch stream checks that its client is still there.
WATCH_TICK_S: Final = 0.25

M = TypeVar("M", bound=Message)


def live_feed(feed: ResultsFeed | None) -> ResultsFeed:
    """The feed watch streams read (:class:`FeatureUnavailable` when no consumer runs in this server)."""
    if feed is None:
        raise FeatureUnavailable("no consumer runs in this server: nothing to watch")
    return feed


def watch_feed(
    feed: ResultsFeed, message: Callable[[ResultsUpdate | None], M | None], context: grpc.ServicerContext
) -> Iterator[M]:
    """Subscribe to ``feed`` now (so that nothing committed after the call arrived is missed), and stream
    the first message (``message(None)``: no rows, the offsets), then ``message(update)`` of every
    update that has one. A watcher that falls behind is ended with RESOURCE_EXHAUSTED."""
    return _stream(feed, feed.subscribe(), message, context)


def _stream(
    feed: ResultsFeed,
    subscription: Subscription,
    message: Callable[[ResultsUpdate | None], M | None],
    context: grpc.ServicerContext,
) -> Iterator[M]:
    try:
        first = message(None)
        assert first is not None
        yield first
        while context.is_active():
            if subscription.overflowed.is_set():
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "watcher fell behind the consumer; watch again")
            update = subscription.get(WATCH_TICK_S)
            if update is None:
                continue
            found = message(update)
            if found is not None:
                yield found
    finally:
        feed.unsubscribe(subscription)
