"""Errors of the connect runtime. Each names the connector (and task) it is about."""

from __future__ import annotations

from onceflow.core.errors import OnceflowError


class ConnectError(OnceflowError):
    """Base class of the runtime's errors."""


class ConnectorNotFound(ConnectError):  # noqa: N818 - reads as an outcome
    """No connector of that name is configured."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"connector {name!r} not found")


class ConnectorExists(ConnectError):  # noqa: N818
    """A connector of that name is already configured."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"connector {name!r} already exists")


class TaskNotFound(ConnectError):  # noqa: N818
    """The connector has no task with that id."""

    def __init__(self, connector: str, task: int) -> None:
        self.connector = connector
        self.task = task
        super().__init__(f"connector {connector!r} has no task {task}")


class PluginNotFound(ConnectError):  # noqa: N818
    """No installed connector plugin has that name or class."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        super().__init__(
            f"connector.class {name!r} is not a registered connector plugin (the onceflow.connectors entry points); "
            f"known plugins: {', '.join(sorted(known)) or 'none'}"
        )


class ConnectorNotStopped(ConnectError):  # noqa: N818
    """Offsets can only be altered or reset while the connector is STOPPED (KIP-875)."""

    def __init__(self, name: str, state: str) -> None:
        self.name = name
        super().__init__(f"connector {name!r} is {state}; stop it first (offsets change only while STOPPED)")


class TaskFailed(ConnectError):  # noqa: N818
    """A task stopped with an error it could not recover from."""
