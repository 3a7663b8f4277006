"""Supervision of the demo's child processes: ChildProcess, the restart policy and the Supervisor."""

from onceflow.demo.supervisor.child import ChildProcess, session_members
from onceflow.demo.supervisor.events import EventJournal, EventKind, SupervisorEvent
from onceflow.demo.supervisor.policy import RestartPolicy
from onceflow.demo.supervisor.supervisor import Probe, ServiceFailedError, ServiceState, SupervisedService, Supervisor

__all__ = [
    "ChildProcess",
    "EventJournal",
    "EventKind",
    "Probe",
    "RestartPolicy",
    "ServiceFailedError",
    "ServiceState",
    "SupervisedService",
    "Supervisor",
    "SupervisorEvent",
    "session_members",
]
