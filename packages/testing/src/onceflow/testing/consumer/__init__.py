"""Test support for the results consumer: :class:`ConsumerProcess`, a consumer child process to kill -9."""

from onceflow.core.toml_writer import to_toml
from onceflow.testing.consumer.process import ConsumerProcess

__all__ = ["ConsumerProcess", "to_toml"]
