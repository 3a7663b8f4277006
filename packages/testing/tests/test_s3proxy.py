"""The S3Proxy launcher: a real S3 API server in about a second, its credentials enforced, and a kill -9
followed by a restart on the same port that still serves every object."""

from __future__ import annotations

import time

import pytest
from pyarrow import fs as pafs

from onceflow.contract.staging import StagingError, StagingStore, parse_staging_uri
from onceflow.contract.staging.settings import S3Settings
from onceflow.testing.s3 import S3ProxyProcess
from onceflow.testing.s3.fixtures import S3ProxyFactory


def _store(proxy: S3ProxyProcess, **override: str) -> StagingStore:
    return StagingStore(S3Settings.model_validate({**proxy.s3_settings(), **override}), environ={})


def test_it_serves_its_bucket_survives_kill_9_and_refuses_a_wrong_secret(s3proxy_factory: S3ProxyFactory) -> None:
    started = time.monotonic()
    proxy = s3proxy_factory()
    startup = time.monotonic() - started
    location = parse_staging_uri(proxy.uri("prefix/object"))
    store = _store(proxy)
    store.publish(location, b"payload")
    port = proxy.port

    proxy.kill()
    with pytest.raises(StagingError, match="unreachable"):
        _store(proxy).read(location)
    proxy.start()
    assert proxy.port == port
    assert _store(proxy).read(location) == b"payload"

    with pytest.raises(StagingError, match="refused the credentials") as refused:
        _store(proxy, secret_access_key="not-the-secret").read(location)
    assert proxy.secret_access_key not in str(refused.value)
    print(f"S3Proxy started in {startup:.2f}s")


def test_the_client_environment_reaches_it(s3proxy: S3ProxyProcess) -> None:
    store = StagingStore(environ=s3proxy.client_env())
    location = parse_staging_uri(s3proxy.uri("env/object"))
    store.publish(location, b"x")
    assert store.exists(location) and not store.exists(location.child("nothing"))
    filesystem, path = store.filesystem(location)
    assert isinstance(filesystem, pafs.S3FileSystem) and path == f"{s3proxy.bucket}/env/object"
