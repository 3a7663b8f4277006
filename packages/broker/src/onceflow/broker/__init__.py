"""onceflow.broker: an embedded single-node Kafka-protocol broker."""
