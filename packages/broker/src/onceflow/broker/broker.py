"""The broker object: configuration, topics, producer ids, group and transaction coordinators, and
the listener.

Lifecycle guarantees:
- ``start`` opens all durable state before the listener accepts its first connection, in dependency
  order: partition logs, then the group coordinator, then the transaction coordinator (whose recovery
  writes markers to the partitions and completes transactional offsets in the groups);
- ``stop`` stops accepting and closes connections first, then stops background work, the transaction
  coordinator and the group coordinator (reverse order), snapshots producer state, flushes (fsyncs)
  every partition log and closes all state.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

from onceflow.broker.acl import AclStore, Authorizer, ProtectedResources
from onceflow.broker.auth import CredentialStore
from onceflow.broker.config import BrokerConfig
from onceflow.broker.groups import GroupCoordinator
from onceflow.broker.maintenance import Maintenance
from onceflow.broker.producer_ids import ProducerIdAllocator
from onceflow.broker.server import BrokerServer
from onceflow.broker.storage.config import LogConfig
from onceflow.broker.topics import Topic, TopicRegistry
from onceflow.broker.transactions import TransactionCoordinator
from onceflow.broker.txn_markers import PartitionMarkerWriter
from onceflow.broker.waiters import PartitionWaiters
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker")

NODE_ID = 0
META_FILE = "meta.json"
GROUPS_DIR = "groups"
TRANSACTIONS_DIR = "transactions"
ACLS_DIR = "acls"


def _load_cluster_id(data_dir: Path) -> str:
    path = data_dir / META_FILE
    if path.exists():
        return str(json.loads(path.read_text())["cluster_id"])
    cluster_id = uuid.uuid4().hex[:22]
    path.write_text(json.dumps({"cluster_id": cluster_id, "node_id": NODE_ID}))
    return cluster_id


def default_log_config(config: BrokerConfig) -> LogConfig:
    """Log config of a topic without overrides, derived from the broker settings."""
    return LogConfig(
        segment_bytes=config.log_segment_bytes,
        retention_ms=config.log_retention_ms,
        retention_bytes=config.log_retention_bytes,
        max_message_bytes=config.message_max_bytes,
        fsync=config.fsync,
    )


class Broker:
    """A single-node Kafka-protocol broker (node id 0) serving ``config.data_dir``."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = NODE_ID
        config.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = _load_cluster_id(config.data_dir)
        self.topics = TopicRegistry(config.data_dir, default_log_config(config))
        self.waiters = PartitionWaiters()
        self.producer_ids = ProducerIdAllocator(config.data_dir)
        self.groups = GroupCoordinator(
            config.data_dir / GROUPS_DIR,
            fsync=config.fsync == "always",
            group_initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        )
        self.transactions = TransactionCoordinator(
            config.data_dir / TRANSACTIONS_DIR,
            markers=PartitionMarkerWriter(self.topics, self.waiters),
            groups=self.groups,
            allocate_producer_id=self.producer_ids.allocate,
            fsync=config.fsync == "always",
            transaction_max_timeout_ms=config.transaction_max_timeout_ms,
            abort_timed_out_transactions_interval_ms=config.transaction_abort_timed_out_interval_ms,
        )
        self.credentials = CredentialStore(config.data_dir)
        """The SASL users of the data dir (read on every login) and its decoys for unknown users."""
        self.authorizer: Authorizer | None = None
        """The ACL authorizer once started, when ``config.authorizes``; None: everything is allowed."""
        self.server = BrokerServer(self)
        self._maintenance = Maintenance(self)
        self._topic_lock = asyncio.Lock()

    @property
    def port(self) -> int:
        """The bound port."""
        return self.server.port

    @property
    def advertised(self) -> tuple[str, int]:
        """(host, port) that Metadata and FindCoordinator tell clients."""
        return self.config.advertised_address(self.server.port)

    async def start(self) -> None:
        """Open durable state, start background work, then listen."""
        if self.config.authorizes:
            self.authorizer = Authorizer(
                AclStore.open(self.config.data_dir / ACLS_DIR),
                super_users=self.config.super_users,
                allow_everyone_if_no_acl_found=self.config.allow_everyone_if_no_acl_found,
                protected=ProtectedResources(
                    transactional_id_prefixes=tuple(self.config.protected_transactional_id_prefixes),
                    group_prefixes=tuple(self.config.protected_group_prefixes),
                ),
            )
        self.topics.open()
        (self.config.data_dir / GROUPS_DIR).mkdir(exist_ok=True)
        (self.config.data_dir / TRANSACTIONS_DIR).mkdir(exist_ok=True)
        await self.groups.start()
        await self.transactions.start()
        self._maintenance.start()
        await self.server.start()

    async def stop(self) -> None:
        """Stop gracefully (see module docs). Safe to call after a failed start."""
        await self.server.stop()
        await self._maintenance.stop()
        await self.transactions.stop()
        await self.groups.stop()
        self.topics.close()
        if self.authorizer is not None:
            self.authorizer.acls.close()

    async def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> Topic:
        """Create a topic durably; serialized with other topic changes (errors as TopicRegistry)."""
        async with self._topic_lock:
            return self.topics.create(name, partitions, configs)

    async def auto_create_topic(self, name: str) -> Topic | None:
        """Create ``name`` with default settings if auto-creation is on; None if it is off or illegal."""
        if not self.config.auto_create_topics:
            return None
        async with self._topic_lock:
            existing = self.topics.get(name)
            if existing is not None:
                return existing
            try:
                return self.topics.create(name, self.config.default_partitions, {})
            except Exception as exc:
                log.info("topic.auto_create_refused", topic=name, reason=exc)
                return None

    async def delete_topic(self, name: str) -> Topic | None:
        """Delete a topic; returns it, or None if it did not exist."""
        async with self._topic_lock:
            return self.topics.delete(name)
