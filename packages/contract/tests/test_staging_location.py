"""The one parser of staging URIs, and the local store's deletes that never follow a symlink."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from onceflow.contract.staging import (
    InvalidStagingUri,
    StagingLocation,
    StagingStore,
    StagingWriter,
    SymlinkRefused,
    delete_batch,
    parse_staging_uri,
)
from onceflow.contract.staging.confinement import PathNotAllowed, StagingConfinement
from onceflow.contract.staging.s3 import S3Connection
from onceflow.contract.staging.settings import S3Settings
from onceflow.core.errors import InvalidConfig

SCHEMA = pa.schema([pa.field("n", pa.int64())])


@pytest.mark.parametrize(
    ("uri", "location"),
    [
        ("/srv/staging/job/0/a.arrow", StagingLocation("file", "/srv/staging/job/0/a.arrow")),
        ("file:///srv/staging/a.arrow", StagingLocation("file", "/srv/staging/a.arrow")),
        ("file://localhost/srv/staging/a.arrow", StagingLocation("file", "/srv/staging/a.arrow")),
        ("s3://bucket/prefix/job/0/a.arrow", StagingLocation("s3", "prefix/job/0/a.arrow", "bucket")),
        ("s3a://bucket/prefix/", StagingLocation("s3", "prefix", "bucket")),
        ("s3://bucket", StagingLocation("s3", "", "bucket")),
    ],
)
def test_what_a_staging_uri_names(uri: str, location: StagingLocation) -> None:
    assert parse_staging_uri(uri) == location
    assert parse_staging_uri(location.uri) == location


def test_a_relative_path_is_made_absolute_against_the_working_directory() -> None:
    assert parse_staging_uri("data/staging") == StagingLocation("file", os.path.join(os.getcwd(), "data/staging"))


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("/srv/staging/a::http://evil/x", "chained"),
        ("simplecache::s3://bucket/x", "chained"),
        ("/srv/staging/a\x00b", "NUL"),
        ("file:///srv/staging/a?x=1", "query"),
        ("file://otherhost/srv/staging/a", "host"),
        ("file:relative/a", "absolute"),
        ("/srv/staging/../../etc/passwd", "'..'"),
        ("s3://bucket/a/%2e%2e/b", "segments"),
        ("s3://bucket/a//b", "segments"),
        ("s3://key:secret@bucket/a", "bucket name"),
        ("s3://bucket:9000/a", "bucket name"),
        ("s3:///a", "bucket name"),
        ("http://host/a", "scheme 'http'"),
        ("", "empty"),
    ],
)
def test_what_is_not_a_staging_uri(uri: str, reason: str) -> None:
    with pytest.raises(InvalidStagingUri, match=reason):
        parse_staging_uri(uri)


def test_s3_confinement_is_by_bucket_and_key_prefix() -> None:
    confinement = StagingConfinement(["s3://bucket/staging"], ["s3"])
    assert confinement.check("s3://bucket/staging/job/0/a.arrow")
    assert confinement.check("s3a://bucket/staging/job/0/a.arrow")
    for refused in ("s3://bucket/staging-other/a", "s3://other/staging/a", "s3://bucket/staging", "s3://bucket/a"):
        with pytest.raises(PathNotAllowed):
            confinement.check(refused)
    with pytest.raises(InvalidStagingUri, match="chained"):
        confinement.check("s3://bucket/staging/a::http://evil")
    with pytest.raises(InvalidConfig, match="staging supports"):
        StagingConfinement(["hdfs://nn/staging"], ["hdfs"])


def test_the_local_check_resolves_what_the_reader_opens(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "job").mkdir(parents=True)
    confinement = StagingConfinement([str(root)], ["file"])
    assert confinement.check(f"file://localhost{root}/job/0/a.arrow")
    (root / "job" / "out").symlink_to(tmp_path)
    with pytest.raises(PathNotAllowed, match="resolves outside"):
        confinement.check(f"{root}/job/out/a.arrow")


@pytest.mark.parametrize("link", ["job", "batch"])
def test_delete_batch_never_follows_a_symlink(tmp_path: Path, link: str) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (outside / "3").mkdir(parents=True)
    (outside / "3" / "precious").write_text("keep")
    if link == "job":
        root.mkdir()
        (root / "job").symlink_to(outside)
    else:
        (root / "job").mkdir(parents=True)
        (root / "job" / "3").symlink_to(outside / "3")
    with pytest.raises(SymlinkRefused, match="never followed"):
        delete_batch(str(root), "job", 3)
    assert (outside / "3" / "precious").read_text() == "keep"


def test_delete_batch_removes_links_inside_a_batch_without_following_them(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    StagingWriter(str(root), "job", 1).write("part-0", [], SCHEMA)
    (root / "job" / "1" / "escape").symlink_to(outside)
    assert delete_batch(str(root), "job", 1) is True
    assert not (root / "job" / "1").exists()
    assert (outside / "precious").read_text() == "keep"


def test_a_symlinked_root_is_allowed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    StagingWriter(str(tmp_path / "link"), "job", 2).write("part-0", [], SCHEMA)
    assert delete_batch(str(tmp_path / "link"), "job", 2) is True
    assert not (real / "job" / "2").exists()


def test_s3_credentials_never_print() -> None:
    settings = S3Settings(access_key_id="AKIDEXAMPLE", secret_access_key="wJalrXUtnFEMI/K7MDENG")  # type: ignore[arg-type]
    connection = S3Connection.resolve(settings, {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
    shown = f"{connection} {connection!r} {settings!r} {settings}"
    assert "wJalrXUtnFEMI" not in shown and "AKIDEXAMPLE" not in shown, shown
    assert connection.explain(OSError("AWS Error ACCESS_DENIED for wJalrXUtnFEMI/K7MDENG"), "b").count("redacted") == 0
    assert "wJalrXUtnFEMI" not in connection.explain(OSError("odd failure wJalrXUtnFEMI/K7MDENG"), "b")


def test_settings_win_over_the_aws_variables_field_by_field() -> None:
    environ = {
        "AWS_ACCESS_KEY_ID": "env-id",
        "AWS_SECRET_ACCESS_KEY": "env-secret",
        "AWS_ENDPOINT_URL": "http://env:1",
        "AWS_REGION": "eu-west-1",
    }
    from_env = S3Connection.resolve(None, environ)
    assert (from_env.endpoint_url, from_env.region, from_env.credentials_from) == (
        "http://env:1",
        "eu-west-1",
        "environment",
    )
    settings = S3Settings(endpoint_url="http://set:2", access_key_id="id", secret_access_key="secret")  # type: ignore[arg-type]
    mixed = S3Connection.resolve(settings, environ)
    assert (mixed.endpoint_url, mixed.region, mixed.access_key_id) == ("http://set:2", "eu-west-1", "id")
    assert mixed.environment()["AWS_SECRET_ACCESS_KEY"] == "secret"
    assert StagingStore(settings, environ=environ).s3 == mixed


@pytest.mark.parametrize("module", ["onceflow.contract.staging", "onceflow.core.confinement", "onceflow.contract"])
def test_each_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    """Spark's Python workers import ``onceflow.contract.staging`` before anything else (the source's
    initial-offsets file): the staging and contract packages must not import each other circularly."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_the_checksum_switches_go_to_child_processes_with_the_connection() -> None:
    """An executor on another host gets the store's connection from its driver's ``environment()``:
    without S3Proxy's checksum switches its uploads fail (XAmzContentSHA256Mismatch)."""
    environ = {
        "AWS_ENDPOINT_URL": "http://s3proxy:8080",
        "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
        "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
    }
    child = S3Connection.resolve(None, environ).environment()
    assert child == environ
    assert (
        "when_required" not in repr(S3Connection.resolve(None, {})) and not S3Connection.resolve(None, {}).environment()
    )
