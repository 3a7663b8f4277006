"""The checkpoint manager onceflow picks for each kind of checkpoint location."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from onceflow.spark.runner.checkpoint_manager import FILE_SYSTEM_MANAGER, MANAGER_SETTING, checkpoint_manager_conf


@pytest.mark.parametrize(
    "location",
    ["./var/spark/checkpoints/ipcount", "/data/checkpoints/ipcount", "file:///data/checkpoints/ipcount",
     "s3a://bucket/checkpoints/ipcount", "s3://bucket/checkpoints/ipcount"],
)  # fmt: skip
def test_local_and_object_store_checkpoints_get_the_file_system_manager(location: str) -> None:
    assert checkpoint_manager_conf(location) == {MANAGER_SETTING: FILE_SYSTEM_MANAGER}


@pytest.mark.parametrize("location", ["hdfs://namenode:8020/checkpoints/ipcount", "abfs://c@a.dfs.core.windows.net/x"])
def test_other_file_systems_keep_sparks_default_manager(location: str) -> None:
    assert checkpoint_manager_conf(location) == {}


def test_the_driver_session_of_a_local_checkpoint_uses_the_file_system_manager(spark: SparkSession) -> None:
    assert spark.conf.get(MANAGER_SETTING) == FILE_SYSTEM_MANAGER
