"""The SASL state of one connection (Kafka's SaslHandshake v1 + SaslAuthenticate flow, KIP-152).

Steps on a SASL listener:
    1. SaslHandshake names a mechanism; one not enabled gets UNSUPPORTED_SASL_MECHANISM and the
       enabled list.
    2. SaslAuthenticate carries the mechanism's tokens: PLAIN one (``authzid NUL user NUL
       password``), SCRAM two (client-first, client-final).
    3. Success sets the principal (``User:<name>``); a failure answers SASL_AUTHENTICATION_FAILED
       and the connection is closed after that answer.
Until step 3 succeeds only ApiVersions, SaslHandshake and SaslAuthenticate are served. An unknown
user is refused after the same work and with the same answers as a known user with a wrong password
(its decoy credential, see :mod:`onceflow.broker.auth.credentials`).
"""

from __future__ import annotations

from collections.abc import Sequence

from onceflow.broker.auth.credentials import CredentialStore, ScramCredential
from onceflow.broker.auth.errors import AuthenticationFailed
from onceflow.broker.auth.scram import ScramServer

ANONYMOUS = "User:ANONYMOUS"


class SaslSession:
    """See module docs. ``principal`` is set once authenticated."""

    def __init__(self, enabled_mechanisms: Sequence[str], store: CredentialStore) -> None:
        self.enabled_mechanisms = tuple(enabled_mechanisms)
        self._store = store
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.failed = False
        self._scram: ScramServer | None = None

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    def handshake(self, mechanism: str) -> bool:
        """Step 1: choose ``mechanism``; False if it is not enabled."""
        if mechanism not in self.enabled_mechanisms or self.authenticated:
            return False
        self.mechanism = mechanism
        if mechanism.startswith("SCRAM-"):
            self._scram = ScramServer(mechanism, self._credential)
        return True

    def authenticate(self, token: bytes) -> bytes:
        """Step 2: consume one token, return the answer token; raises AuthenticationFailed (and the
        session is failed for good)."""
        try:
            return self._step(token)
        except (AuthenticationFailed, UnicodeDecodeError, ValueError) as exc:
            self.failed = True
            if isinstance(exc, AuthenticationFailed):
                raise
            raise AuthenticationFailed(f"malformed {self.mechanism} token") from exc

    def _credential(self, user: str, mechanism: str) -> ScramCredential:
        """The user's credential, or the store's decoy for an unknown user (never tells them apart)."""
        found = self._store.lookup(user, mechanism)
        return found if found is not None else self._store.decoy(user, mechanism)

    def _step(self, token: bytes) -> bytes:
        if self.failed or self.authenticated or self.mechanism is None:
            raise AuthenticationFailed("SaslAuthenticate out of order (no SaslHandshake, or already done)")
        if self.mechanism == "PLAIN":
            parts = token.decode("utf-8").split("\0")
            if len(parts) != 3:
                raise AuthenticationFailed("malformed PLAIN token")
            _authzid, user, password = parts
            if not self._credential(user, "PLAIN").matches(password):  # a decoy for unknown users: same work
                raise AuthenticationFailed("Authentication failed: Invalid username or password (SASL mechanism PLAIN)")
            self.principal = f"User:{user}"
            return b""
        assert self._scram is not None
        if not self._scram.user:
            return self._scram.first(token)
        answer = self._scram.final(token)
        self.principal = f"User:{self._scram.user}"
        return answer
