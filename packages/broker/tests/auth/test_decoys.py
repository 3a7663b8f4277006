"""A PLAIN login of an unknown user does exactly the work of a known user's wrong password: one key
derivation with the same hash and iteration count, then a constant-time comparison (so failures take
the same time, whatever the machine's speed). Observed on the real ``SaslSession`` and users file."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest

from onceflow.broker.auth import AuthenticationFailed, CredentialStore, SaslSession


def _work_of_a_failed_login(store: CredentialStore, user: str, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    work: list[object] = []
    derive, compare = hashlib.pbkdf2_hmac, hmac.compare_digest

    def counting_derive(hash_name: str, password: bytes, salt: bytes, iterations: int) -> bytes:
        work.append(("derive", hash_name, len(salt), iterations))
        return derive(hash_name, password, salt, iterations)

    def counting_compare(a: bytes, b: bytes) -> bool:
        work.append(("compare", len(a), len(b)))
        return compare(a, b)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counting_derive)
    monkeypatch.setattr(hmac, "compare_digest", counting_compare)
    session = SaslSession(["PLAIN"], store)
    assert session.handshake("PLAIN")
    with pytest.raises(AuthenticationFailed) as refused:
        session.authenticate(f"\0{user}\0wrong-password".encode())
    monkeypatch.undo()
    work.append(str(refused.value))
    return work


def test_an_unknown_user_costs_what_a_wrong_password_costs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = CredentialStore(tmp_path)
    store.add("alice", "PLAIN", "alice-secret")
    known = _work_of_a_failed_login(store, "alice", monkeypatch)
    unknown = _work_of_a_failed_login(store, "ghost", monkeypatch)
    assert known == unknown
    assert known[0] == ("derive", "sha256", 16, 4096)
