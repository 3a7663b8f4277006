"""Domain exceptions become gRPC status codes at the service boundary, and nowhere else.

A servicer method decorated with :func:`translate_errors` turns a mapped exception into
``context.abort(code, str(exc))``: the client sees the code and the exception's message. Exceptions
that are not mapped propagate (gRPC answers UNKNOWN and logs them): they are bugs, not outcomes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar, cast

import grpc
from confluent_kafka import KafkaException

from onceflow.core.errors import InvalidConfig, ProducerFenced, WriterFenced

#: Status codes of the shared errors; services extend this with their own exceptions. A Kafka error
#: that reaches a servicer (after the retries of :mod:`onceflow.core.kafka.retry`: Kafka is down or
#: refused) is UNAVAILABLE with its one-line message, never UNKNOWN with a traceback.
DEFAULT_STATUS_CODES: Final[Mapping[type[BaseException], grpc.StatusCode]] = {
    WriterFenced: grpc.StatusCode.FAILED_PRECONDITION,
    ProducerFenced: grpc.StatusCode.FAILED_PRECONDITION,
    InvalidConfig: grpc.StatusCode.INVALID_ARGUMENT,
    KafkaException: grpc.StatusCode.UNAVAILABLE,
}

F = TypeVar("F", bound=Callable[..., Any])


def status_for(
    exc: BaseException, codes: Mapping[type[BaseException], grpc.StatusCode] = DEFAULT_STATUS_CODES
) -> grpc.StatusCode | None:
    """The status code of ``exc``: its most specific mapped class wins; None if no class is mapped."""
    for klass in type(exc).__mro__:
        code = codes.get(klass)
        if code is not None:
            return code
    return None


def translate_errors(codes: Mapping[type[BaseException], grpc.StatusCode] = DEFAULT_STATUS_CODES) -> Callable[[F], F]:
    """Decorate a servicer method ``(self, request, context)`` so mapped exceptions abort the RPC."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
            try:
                return method(self, request, context)
            except Exception as exc:
                code = status_for(exc, codes)
                if code is None:
                    raise
                context.abort(code, str(exc))

        return cast(F, wrapper)

    return decorate
