"""A driver that imports onceflow.spark before grpc launches PySpark's JVM gateway (a fork with a
``preexec_fn``) with gRPC's fork handlers off (onceflow.core.grpc_fork), even when it makes gRPC calls
before it builds its session."""

from __future__ import annotations

import os
import subprocess
import sys


def test_importing_onceflow_spark_turns_grpcs_fork_handlers_off_before_grpc_loads() -> None:
    program = "import sys, os, onceflow.spark; print(os.environ.get('GRPC_ENABLE_FORK_SUPPORT'), 'grpc' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["false", "False"]
