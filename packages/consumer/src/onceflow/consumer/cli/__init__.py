"""The consumer's client commands: ``onceflow results ...`` and ``onceflow audit`` (the service's own
command is :mod:`onceflow.consumer.command`)."""
