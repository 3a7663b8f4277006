"""Exceptions of SASL authentication."""

from __future__ import annotations


class AuthenticationFailed(Exception):  # noqa: N818 -- Kafka's SaslAuthenticationException
    """The client's credentials were refused; the message is what the client is told."""
