"""StandaloneHerder: one worker runs every task. Connector configs come from files (and the admin
API), kept in memory; offsets are kept in the broker (the offsets topic)."""

from __future__ import annotations

from onceflow.runtime.herder.herder import Herder
from onceflow.runtime.status import TaskId
from onceflow.runtime.storage.configs import ClusterConfig


class StandaloneHerder(Herder):
    def owns(self, task: TaskId, cluster: ClusterConfig) -> bool:
        return True
