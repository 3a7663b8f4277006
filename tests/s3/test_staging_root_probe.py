"""Every service that stages checks its staging root at start (issue 21): the participant, the coordinator and
the Spark driver each write, read and delete a probe object, and an unusable root stops them at once with
exit code 2 and one line naming the root and the cause, never a credential.

Before, ``staging_root = "s3://..."`` failed only at the first batch's commit ("Install s3fs to access
S3" deep in a traceback) and the driver restarted in a loop.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from onceflow.core.toml_writer import to_toml
from onceflow.ipcount.schema import ENTRYPOINT, results_outputs
from onceflow.testing.s3 import S3ProxyProcess

pytestmark = pytest.mark.slow


def _run(
    command: str, settings: Mapping[str, object], tmp_path: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    config = tmp_path / f"{command}.toml"
    config.write_text(to_toml(settings))
    module = {"participant": "onceflow.sinks", "coordinator": "onceflow.coordinator", "spark": "onceflow.spark"}[
        command
    ]
    return subprocess.run(
        [sys.executable, "-m", module, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1", **env},
        check=False,
    )


def _assert_refused(
    result: subprocess.CompletedProcess[str], command: str, root: str, cause: str, *secrets: str
) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"onceflow {command}: ")]
    assert len(lines) == 1, result.stderr
    assert f"staging root {root} is unusable" in lines[0] and cause in lines[0], lines[0]
    assert "Traceback" not in result.stderr, result.stderr
    for secret in secrets:
        assert secret not in result.stdout + result.stderr


def test_a_wrong_credential_names_the_bucket_never_the_secret(s3proxy: S3ProxyProcess, tmp_path: Path) -> None:
    root = s3proxy.uri(f"{tmp_path.name}/staging")
    wrong = "wrong-secret-0123456789abcdef"
    settings = {
        "sinks": [{"name": "sqlite", "kind": "sqlite", "options": {"path": str(tmp_path / "sink.db")}}],
        "staging": {
            "roots": [root],
            "allowed_schemes": ["s3"],
            "s3": {**s3proxy.s3_settings(), "secret_access_key": wrong},
        },
    }
    result = _run("participant", settings, tmp_path, {})
    cause = "the store refused the credentials (from settings) for bucket 'onceflow'"
    _assert_refused(result, "participant", root, cause, wrong, s3proxy.secret_access_key, s3proxy.access_key_id)


def test_a_missing_bucket_stops_the_coordinator(s3proxy: S3ProxyProcess, tmp_path: Path) -> None:
    root = s3proxy.uri("staging", bucket="no-such-bucket")
    settings = {"staging_root": root, "transaction_log": {"backend": "memory"}}
    result = _run("coordinator", settings, tmp_path, s3proxy.client_env())
    _assert_refused(result, "coordinator", root, "bucket 'no-such-bucket' does not exist", s3proxy.secret_access_key)


def test_an_unreachable_endpoint_stops_the_spark_driver_before_its_jvm(s3proxy: S3ProxyProcess, tmp_path: Path) -> None:
    root = s3proxy.uri(f"{tmp_path.name}/staging")
    settings = {
        "entrypoint": ENTRYPOINT,
        "outputs": results_outputs(["sqlite"]),
        "staging_root": root,
        "participants": [{"sink": "sqlite", "target": "127.0.0.1:1"}],
        "staging": {"s3": {**s3proxy.s3_settings(), "endpoint_url": "http://127.0.0.1:1"}},
    }
    result = _run("spark", settings, tmp_path, {})
    _assert_refused(result, "spark", root, "endpoint http://127.0.0.1:1 is unreachable", s3proxy.secret_access_key)
