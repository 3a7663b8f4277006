"""Consumer extensions, discovered through the ``onceflow.consumer.extensions`` entry-point group.

An extension adds to every consumer what an example or application owns: the stored tables it
derives from the consumer's settings (the IP-count example stores ``consumer.topic`` into
``results``), and its RPCs of the Results service (a subclass of the consumer's servicer; the
example serves GetIpCounts, GetTopIps and WatchResults over its views of ``results``, and RunAudit). The
consumer names no extension: it loads whatever is installed, the way the runtime loads its
connectors (``onceflow.connectors``).

Unlike a connector, a broken extension stops the consumer with a clear error naming it: skipping
it would silently store less than the settings ask for.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from onceflow.core.errors import InvalidConfig
from onceflow.core.plugins import load_group

if TYPE_CHECKING:
    from onceflow.consumer.api.servicer import ResultsApi, ResultsServicer
    from onceflow.consumer.settings import ConsumerSettings
    from onceflow.consumer.tables.stored import StoredTable

ENTRY_POINT_GROUP: Final = "onceflow.consumer.extensions"


class ConsumerExtension(abc.ABC):
    """What an installed extension adds to a consumer."""

    @abc.abstractmethod
    def stored_tables(self, settings: ConsumerSettings) -> Sequence[StoredTable]:
        """The tables this extension stores for ``settings`` (none is fine), before the ``[[tables]]`` entries."""

    def results_servicer(self, api: ResultsApi) -> ResultsServicer | None:
        """A :class:`~onceflow.consumer.api.ResultsServicer` subclass serving this extension's RPCs
        over ``api``, or None (the default) when it serves none. At most one extension may."""
        return None


def load_extensions() -> list[ConsumerExtension]:
    """An instance of every installed extension, by entry-point name.

    Raises :class:`~onceflow.core.plugins.PluginError` naming an entry point that does not load or
    is not a :class:`ConsumerExtension` class.
    """
    return [plugin.target() for plugin in load_group(ENTRY_POINT_GROUP, kind=ConsumerExtension)]


def results_servicer(extensions: Sequence[ConsumerExtension], api: ResultsApi) -> ResultsServicer:
    """The Results servicer of the one extension that serves RPCs, or the consumer's own.

    Raises :class:`~onceflow.core.errors.InvalidConfig` when two extensions would serve the service.
    """
    from onceflow.consumer.api.servicer import ResultsServicer

    found = [(type(e).__name__, servicer) for e in extensions if (servicer := e.results_servicer(api)) is not None]
    if len(found) > 1:
        names = [name for name, _ in found]
        raise InvalidConfig(ENTRY_POINT_GROUP, f"extensions {names} each serve the Results RPCs; one may")
    return found[0][1] if found else ResultsServicer(api)
