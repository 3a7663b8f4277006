"""Test support for the results consumer: :class:`ConsumerProcess`, a consumer child process to kill -9."""

from onceflow.consumer.testing.process import ConsumerProcess
from onceflow.core.toml_writer import to_toml

__all__ = ["ConsumerProcess", "to_toml"]
