"""DistributedHerder: workers with the same group id share the tasks.

Configs, offsets and statuses live in compacted internal topics; ownership comes from consumer-group
membership (see :mod:`onceflow.runtime.herder.assignment`). Any worker answers the admin API: its
writes go to the configs topic, and every worker acts on what it reads there.
"""

from __future__ import annotations

from onceflow.runtime.herder.assignment import SlotMembership, slot_of
from onceflow.runtime.herder.herder import Herder
from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.status import TaskId
from onceflow.runtime.storage.configs import ClusterConfig
from onceflow.runtime.storage.stores import BackingStores
from onceflow.runtime.worker.worker import Worker


class DistributedHerder(Herder):
    def __init__(
        self,
        worker: Worker,
        stores: BackingStores,
        plugins: PluginRegistry,
        *,
        membership: SlotMembership,
    ) -> None:
        super().__init__(worker, stores, plugins)
        self.membership = membership

    def owns(self, task: TaskId, cluster: ClusterConfig) -> bool:
        ordinal = cluster.tasks().index(task)
        return slot_of(ordinal, self.membership.slots) in self.membership.owned()

    def start_membership(self) -> None:
        self.membership.join(on_assign=lambda slots: self.wakeup(), on_revoke=self._slots_revoked)

    def _slots_revoked(self, slots: set[int]) -> None:
        """Step 1 of a rebalance (eager): stop the tasks of the revoked slots before rejoining, so their
        new owners start after these committed and reported UNASSIGNED."""
        cluster = self.configs.snapshot()
        ordinals = {t: i for i, t in enumerate(cluster.tasks())}
        revoked = [
            t
            for t in self.worker.tasks()
            if slot_of(ordinals.get(t, -1), self.membership.slots) in slots or t not in ordinals
        ]
        if revoked:
            self.stop_tasks(revoked)

    def wait_for_work(self, timeout: float) -> None:
        self.membership.poll(timeout)
        self._wake.clear()

    def leave_membership(self) -> None:
        self.membership.leave()
