"""Test support for onceflow.broker."""
