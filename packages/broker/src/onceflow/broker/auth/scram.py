"""The server side of a SCRAM exchange (RFC 5802, RFC 7677: SCRAM-SHA-256, SCRAM-SHA-512).

Two client messages, two answers:
    1. client-first ``n,,n=<user>,r=<client nonce>`` -> server-first ``r=<nonce>,s=<salt>,i=<iterations>``
       (an unknown user gets its decoy credential, ``CredentialStore.decoy``: a stable salt no one
       can compute without the data dir's secret, so the answer does not tell whether the user exists);
    2. client-final ``c=<gs2 header>,r=<nonce>,p=<proof>`` -> server-final ``v=<server signature>``
       once the proof checks out; otherwise :class:`AuthenticationFailed`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable

from onceflow.broker.auth.credentials import ScramCredential
from onceflow.broker.auth.errors import AuthenticationFailed

Lookup = Callable[[str, str], ScramCredential]
"""The credential of (user, mechanism): the real one, or a decoy for an unknown user."""


def _attributes(message: str) -> dict[str, str]:
    pairs = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            pairs[key] = value
    return pairs


def _invalid_credentials(mechanism: str) -> str:
    return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"


def _unescape_name(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One SCRAM authentication of one connection (see module docs)."""

    def __init__(self, mechanism: str, lookup: Lookup) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self.user: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._gs2_header = ""

    def first(self, message: bytes) -> bytes:
        """Step 1: answer the client-first message."""
        text = message.decode("utf-8", errors="strict")
        if not text.startswith(("n,", "y,")):
            raise AuthenticationFailed("SCRAM: channel binding is not supported")
        parts = text.split(",", 2)
        if len(parts) != 3:
            raise AuthenticationFailed("SCRAM: malformed client-first message")
        self._gs2_header = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        attributes = _attributes(self._client_first_bare)
        if "n" not in attributes or "r" not in attributes:
            raise AuthenticationFailed("SCRAM: client-first message lacks n= or r=")
        self.user = _unescape_name(attributes["n"])
        self._credential = credential = self._lookup(self.user, self.mechanism)
        self._nonce = attributes["r"] + secrets.token_urlsafe(18)
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        """Step 2: check the client's proof; answer the server signature."""
        text = message.decode("utf-8", errors="strict")
        without_proof, sep, proof_part = text.rpartition(",p=")
        attributes = _attributes(without_proof)
        if not sep or attributes.get("r") != self._nonce:
            raise AuthenticationFailed("SCRAM: malformed client-final message or nonce mismatch")
        if base64.b64decode(attributes.get("c", "")) != self._gs2_header.encode():
            raise AuthenticationFailed("SCRAM: channel binding mismatch")
        credential = self._credential
        if credential is None:
            raise AuthenticationFailed("SCRAM: client-final message before client-first")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        hash_name = credential.hash_name
        client_signature = hmac.digest(credential.stored_key, auth_message, hash_name)
        proof = base64.b64decode(proof_part)
        if len(proof) != len(client_signature):
            raise AuthenticationFailed("SCRAM: malformed proof")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(hash_name, client_key).digest(), credential.stored_key):
            raise AuthenticationFailed(_invalid_credentials(self.mechanism))
        server_signature = hmac.digest(credential.server_key, auth_message, hash_name)
        return b"v=" + base64.b64encode(server_signature)
