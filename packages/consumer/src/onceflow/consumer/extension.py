"""Consumer extensions, discovered through the ``onceflow.consumer.extensions`` entry-point group.

An extension adds to every consumer what an example or application owns: the stored tables it
derives from the consumer's settings (the IP-count example stores ``consumer.topic`` into
``results``), and gRPC services of its own, served on the consumer's one server beside Results,
behind the same authorization, stream limits, health and reflection (the example serves
``onceflow.v1.IpCounts``: GetIpCounts, GetTopIps and WatchResults over its views of ``results``, and
RunAudit). Any number of extensions may add services; two that would serve the same service name
stop the consumer with an error naming both. The consumer names no extension: it loads whatever is
installed, the way the runtime loads its connectors (``onceflow.connectors``).

Unlike a connector, a broken extension stops the consumer with a clear error naming it: skipping
it would silently store less than the settings ask for.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from onceflow.core.errors import InvalidConfig
from onceflow.core.plugins import load_group

if TYPE_CHECKING:
    import grpc

    from onceflow.consumer.api.servicer import ResultsApi
    from onceflow.consumer.settings import ConsumerSettings
    from onceflow.consumer.tables.stored import StoredTable

ENTRY_POINT_GROUP: Final = "onceflow.consumer.extensions"


def _nothing_to_close() -> None:
    return None


@dataclass(frozen=True)
class ExtensionService:
    """One gRPC service an extension serves on the consumer's server.

    ``name`` is the service's full name (``onceflow.v1.IpCounts``: its descriptor's ``full_name``), for
    health, reflection and the one-owner check; ``add_to_server`` is the generated
    ``add_XServicer_to_server`` and ``servicer`` what it registers. ``close`` stops what the servicer
    runs beside its calls (the example's running audits); the consumer calls it before it stops serving.
    """

    name: str
    servicer: Any
    add_to_server: Callable[[Any, grpc.Server], None]
    close: Callable[[], None] = _nothing_to_close


class ConsumerExtension(abc.ABC):
    """What an installed extension adds to a consumer."""

    @abc.abstractmethod
    def stored_tables(self, settings: ConsumerSettings) -> Sequence[StoredTable]:
        """The tables this extension stores for ``settings`` (none is fine), before the ``[[tables]]`` entries."""

    def services(self, api: ResultsApi) -> Sequence[ExtensionService]:
        """The gRPC services this extension serves over ``api`` (none, the default, is fine)."""
        return ()


def load_extensions() -> list[ConsumerExtension]:
    """An instance of every installed extension, by entry-point name.

    Raises :class:`~onceflow.core.plugins.PluginError` naming an entry point that does not load or
    is not a :class:`ConsumerExtension` class.
    """
    return [plugin.target() for plugin in load_group(ENTRY_POINT_GROUP, kind=ConsumerExtension)]


def extension_services(
    extensions: Sequence[ConsumerExtension], api: ResultsApi, *, reserved: Sequence[str] = ()
) -> list[ExtensionService]:
    """Every service of every extension, in the extensions' order.

    Raises :class:`~onceflow.core.errors.InvalidConfig` naming both owners when two extensions (or an
    extension and the consumer, which serves ``reserved``) would serve the same service name.
    """
    owners = dict.fromkeys(reserved, "the consumer")
    found: list[ExtensionService] = []
    for extension in extensions:
        owner = f"{type(extension).__module__}.{type(extension).__qualname__}"
        for service in extension.services(api):
            if service.name in owners:
                raise InvalidConfig(
                    ENTRY_POINT_GROUP, f"{owners[service.name]} and {owner} both serve {service.name}; one may"
                )
            owners[service.name] = owner
            found.append(service)
    return found
