"""Test support for the results consumer: :class:`ConsumerProcess`, a consumer child process to kill -9,
and :class:`HeldAuditsConsumerProcess`, one whose audits a test holds at their start."""

from onceflow.core.toml_writer import to_toml
from onceflow.testing.consumer.process import ConsumerProcess, HeldAuditsConsumerProcess

__all__ = ["ConsumerProcess", "HeldAuditsConsumerProcess", "to_toml"]
