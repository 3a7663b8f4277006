"""SASL credentials of the broker's users: ``data_dir/users.json``, managed by ``onceflow broker users``.

No password is stored. Each (user, mechanism) keeps a salted SCRAM credential (RFC 5802): salt,
iteration count, ``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")``. SCRAM-SHA-256/512 use it as is; PLAIN keeps one
derived with SHA-256 and checks a password by deriving it again. The file is replaced atomically
(temporary file, fsync, rename), and read again on every authentication, so users added while the
broker runs can log in at once.

An unknown user must look exactly like a known one with a wrong password: ``decoy(user, mechanism)``
is a credential that matches no password, with the default iteration count and a salt derived from
``user`` with a secret of the data dir (``sasl-secret``: 32 random bytes, created once, 0600). The
salt is the same on every attempt, as a real user's is, and cannot be computed without the secret, so
SCRAM's first answer does not tell who exists; PLAIN checks a password against the decoy with the
same derivation and comparison as against a real credential.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from onceflow.core.fsync import replace_durably

USERS_FILE = "users.json"
SECRET_FILE = "sasl-secret"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_ITERATIONS = 4096
_HASHES = {"PLAIN": "sha256", "SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker knows of one user's password for one mechanism."""

    hash_name: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def derive(cls, mechanism: str, password: str, *, iterations: int = DEFAULT_ITERATIONS) -> ScramCredential:
        """A fresh credential (new random salt) for ``password``."""
        hash_name = _HASHES[mechanism]
        salt = secrets.token_bytes(16)
        salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", hash_name)
        return cls(
            hash_name=hash_name,
            salt=salt,
            iterations=iterations,
            stored_key=hashlib.new(hash_name, client_key).digest(),
            server_key=hmac.digest(salted, b"Server Key", hash_name),
        )

    def matches(self, password: str) -> bool:
        """Whether ``password`` is the one this credential was derived from (constant-time compare)."""
        salted = hashlib.pbkdf2_hmac(self.hash_name, password.encode(), self.salt, self.iterations)
        client_key = hmac.digest(salted, b"Client Key", self.hash_name)
        return hmac.compare_digest(hashlib.new(self.hash_name, client_key).digest(), self.stored_key)

    def to_json(self) -> dict[str, object]:
        encode = base64.b64encode
        return {
            "salt": encode(self.salt).decode(),
            "iterations": self.iterations,
            "stored_key": encode(self.stored_key).decode(),
            "server_key": encode(self.server_key).decode(),
        }

    @classmethod
    def from_json(cls, mechanism: str, raw: dict[str, object]) -> ScramCredential:
        decode = base64.b64decode
        return cls(
            hash_name=_HASHES[mechanism],
            salt=decode(str(raw["salt"])),
            iterations=int(str(raw["iterations"])),
            stored_key=decode(str(raw["stored_key"])),
            server_key=decode(str(raw["server_key"])),
        )


class CredentialStore:
    """The users file of one data dir (see module docs)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / USERS_FILE
        self._secret_path = data_dir / SECRET_FILE
        self._secret: bytes | None = None

    def decoy(self, user: str, mechanism: str) -> ScramCredential:
        """A credential for a user that does not exist (see module docs): it matches no password."""
        hash_name = _HASHES[mechanism]
        label = b"\0".join([b"onceflow-scram-decoy", mechanism.encode(), user.encode()])
        return ScramCredential(
            hash_name=hash_name,
            salt=hmac.digest(self._server_secret(), label, "sha256")[:16],
            iterations=DEFAULT_ITERATIONS,
            stored_key=secrets.token_bytes(hashlib.new(hash_name).digest_size),
            server_key=secrets.token_bytes(hashlib.new(hash_name).digest_size),
        )

    def _server_secret(self) -> bytes:
        """The data dir's secret, created (exclusively, 0600, fsynced) the first time it is needed."""
        if self._secret is None:
            self._secret_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self._secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(secrets.token_bytes(32))
                    fh.flush()
                    os.fsync(fh.fileno())
            secret = self._secret_path.read_bytes()
            if len(secret) < 32:
                raise OSError(f"{self._secret_path} holds {len(secret)} bytes, not a 32-byte secret")
            self._secret = secret
        return self._secret

    def _load(self) -> dict[str, dict[str, dict[str, object]]]:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        users: dict[str, dict[str, dict[str, object]]] = raw.get("users", {})
        return users

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        """The credential of ``user`` for ``mechanism``, or None if there is none."""
        entry = self._load().get(user, {}).get(mechanism)
        return None if entry is None else ScramCredential.from_json(mechanism, entry)

    def users(self) -> dict[str, list[str]]:
        """Every user with the mechanisms it has a credential for."""
        return {user: sorted(mechanisms) for user, mechanisms in sorted(self._load().items())}

    def add(self, user: str, mechanism: str, password: str, *, iterations: int = DEFAULT_ITERATIONS) -> None:
        """Create or replace ``user``'s credential for ``mechanism`` (durable when this returns)."""
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown SASL mechanism {mechanism!r}; expected one of {', '.join(MECHANISMS)}")
        if not user or not password:
            raise ValueError("user and password must not be empty")
        users = self._load()
        users.setdefault(user, {})[mechanism] = ScramCredential.derive(
            mechanism, password, iterations=iterations
        ).to_json()
        self._write(users)

    def remove(self, user: str) -> bool:
        """Delete every credential of ``user``; False if it had none."""
        users = self._load()
        if users.pop(user, None) is None:
            return False
        self._write(users)
        return True

    def _write(self, users: dict[str, dict[str, dict[str, object]]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document = json.dumps({"users": users}, indent=1, sort_keys=True).encode()
        replace_durably(self.path, document, tmp=self.path.with_name(f".{USERS_FILE}.tmp"), mode=0o600)
