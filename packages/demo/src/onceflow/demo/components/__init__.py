"""The services of the pipeline, one module each: how to configure, start and probe them."""

from onceflow.demo.components.base import HOST, Component, Context, onceflow_command
from onceflow.demo.components.broker import BrokerComponent
from onceflow.demo.components.connect import (
    FILE_CONNECTOR,
    GENERATOR,
    ConnectComponent,
    connector_config,
    connector_name,
    generator_config,
)
from onceflow.demo.components.consumer import ConsumerComponent
from onceflow.demo.components.coordinator import CoordinatorComponent
from onceflow.demo.components.participant import ParticipantComponent
from onceflow.demo.components.spark import JOB, SparkComponent

__all__ = [
    "FILE_CONNECTOR",
    "GENERATOR",
    "HOST",
    "JOB",
    "BrokerComponent",
    "Component",
    "ConnectComponent",
    "ConsumerComponent",
    "Context",
    "CoordinatorComponent",
    "ParticipantComponent",
    "SparkComponent",
    "connector_config",
    "connector_name",
    "generator_config",
    "onceflow_command",
]
