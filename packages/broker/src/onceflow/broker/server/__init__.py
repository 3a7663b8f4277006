"""The Kafka-protocol network layer: listener and per-connection request pipeline."""

from onceflow.broker.server.connection import Connection
from onceflow.broker.server.listener import BrokerServer

__all__ = ["BrokerServer", "Connection"]
