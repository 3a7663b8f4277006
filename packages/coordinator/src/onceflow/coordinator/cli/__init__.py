"""The coordinator's admin commands: ``onceflow txn`` (the service's own command is
:mod:`onceflow.coordinator.command`)."""
