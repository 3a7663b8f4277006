"""What a multi-host master is, and the refusal of a local checkpoint or staging root on one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onceflow.cli.app import main
from onceflow.core.errors import InvalidConfig
from onceflow.core.toml_writer import to_toml
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.topology import check_shared_storage, is_local_path, is_single_host

CLUSTER = "spark://10.0.0.5:7077"


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[2]",
        "local[*]",
        "local-cluster[2,1,1024]",
        "spark://127.0.0.1:7077",
        "spark://127.0.1.1:7077",
        "spark://localhost:7077",
        "spark://[::1]:7077",
        "spark://127.0.0.1:7077,127.0.0.1:7078",
    ],
)
def test_single_host_masters(master: str) -> None:
    assert is_single_host(master)


@pytest.mark.parametrize(
    "master",
    [
        CLUSTER,
        "spark://spark-master:7077",  # a name is another host, wherever it resolves
        "spark://127.0.0.1:7077,10.0.0.6:7077",  # a standby master elsewhere
        "spark://[2001:db8::1]:7077",
        "k8s://https://kubernetes.default.svc:443",
        "yarn",
    ],
)
def test_multi_host_masters(master: str) -> None:
    assert not is_single_host(master)


@pytest.mark.parametrize(
    ("location", "local"),
    [
        ("./var/checkpoint", True),
        ("/mnt/nfs/checkpoint", True),
        ("file:///mnt/nfs/checkpoint", True),
        ("s3a://bucket/checkpoints/ipcount", False),
        ("hdfs://namenode:8020/checkpoints", False),
        ("s3://bucket/staging", False),
    ],
)
def test_local_paths(location: str, local: bool) -> None:
    assert is_local_path(location) is local


def _settings(**overrides: Any) -> SparkJobSettings:
    doc: dict[str, Any] = {
        "entrypoint": "my_jobs.counts:job",
        "checkpoint_location": "/var/onceflow/checkpoint",
        "staging_root": "/var/onceflow/staging",
        "participants": [{"sink": "sqlite", "target": "127.0.0.1:7101"}],
        "outputs": {"results": [{"sink": "sqlite", "table": "counts", "mode": "append"}]},
    }
    return SparkJobSettings.model_validate({**doc, **overrides})


def test_a_local_checkpoint_is_refused_on_a_multi_host_master_naming_the_setting() -> None:
    with pytest.raises(InvalidConfig) as refused:
        check_shared_storage(_settings(), CLUSTER)
    assert refused.value.setting == "checkpoint_location"
    message = str(refused.value)
    assert "/var/onceflow/checkpoint" in message and CLUSTER in message and "checkpoint_shared = true" in message


def test_a_local_staging_root_is_refused_on_a_multi_host_master_naming_the_setting() -> None:
    with pytest.raises(InvalidConfig) as refused:
        check_shared_storage(_settings(checkpoint_location="s3a://bucket/checkpoint"), CLUSTER)
    assert refused.value.setting == "staging_root"
    assert "staging_shared = true" in str(refused.value)


def test_declared_shared_paths_and_remote_storage_pass() -> None:
    check_shared_storage(_settings(checkpoint_shared=True, staging_shared=True), CLUSTER)
    check_shared_storage(
        _settings(checkpoint_location="s3a://bucket/checkpoint", staging_root="s3://bucket/staging"), CLUSTER
    )
    # the at-least-once baseline stages nothing
    check_shared_storage(
        _settings(checkpoint_shared=True, guarantee="at-least-once", participants=[], outputs={}), CLUSTER
    )


def test_local_paths_pass_on_a_single_host_master() -> None:
    for master in ("local[2]", "spark://127.0.0.1:7077"):
        check_shared_storage(_settings(), master)


def test_onceflow_job_run_refuses_before_starting_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The refusal is exit 2 with one line naming the setting, before any JVM starts (this takes no time)."""
    config = tmp_path / "job.toml"
    config.write_text(
        to_toml(
            {
                "checkpoint_location": str(tmp_path / "checkpoint"),
                "staging_root": "s3://bucket/staging",
                "participants": [{"sink": "sqlite", "target": "127.0.0.1:7101"}],
                "outputs": {"results": [{"sink": "sqlite", "table": "counts", "mode": "append"}]},
            }
        )
    )
    argv = ["job", "run", "onceflow.ipcount.job:job", "--config", str(config), "--master", CLUSTER]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "invalid setting 'checkpoint_location'" in error and "checkpoint_shared = true" in error
    assert not (tmp_path / "checkpoint").exists()
