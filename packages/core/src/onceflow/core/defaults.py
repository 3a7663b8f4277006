"""Defaults of the IP-count job from docs/design.md ("The first job: IP count"). Every one is configurable."""

from __future__ import annotations

from typing import Final

#: Tumbling event-time window size.
WINDOW_MS: Final = 5_000
#: Late events are accepted for this long after a window closes (watermark delay).
ALLOWED_LATENESS_MS: Final = 5_000
#: One checkpoint (Spark micro-batch trigger) every this many milliseconds.
CHECKPOINT_INTERVAL_MS: Final = 5_000
#: Fixed-delay restart strategy.
RESTART_ATTEMPTS: Final = 3
RESTART_DELAY_MS: Final = 10_000
#: Kafka transaction timeout used by onceflow's transactional producers.
KAFKA_TRANSACTION_TIMEOUT_MS: Final = 60_000
#: Kafka bootstrap servers used when nothing is configured (the embedded broker's default port).
BOOTSTRAP_SERVERS: Final = "127.0.0.1:9092"
