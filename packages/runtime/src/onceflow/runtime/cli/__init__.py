"""The runtime's admin commands: ``onceflow connect ...`` and ``onceflow topics`` (the worker's own command
is :mod:`onceflow.runtime.command`)."""
