"""``onceflow acls plan``: the grants come from the services' settings (defaults or config files), and
bad arguments are refused naming them. (Applying them on real brokers, and the pipeline running on
exactly these ACLs, is ``tests/security/test_least_privilege.py``.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from onceflow.acls import Grant, Topology, plan
from onceflow.acls.cli import principal_map
from onceflow.broker.acl import AclOperation, PatternType, ResourceType
from onceflow.core.errors import InvalidConfig

ONCEFLOW = str(Path(sys.executable).parent / "onceflow")


def _owned(grants: list[Grant], resource_type: ResourceType, name: str, operation: AclOperation) -> set[str]:
    return {g.service for g in grants if (g.resource_type, g.name, g.operation) == (resource_type, name, operation)}


def test_each_internal_resource_has_exactly_one_owner_by_default() -> None:
    grants = plan(Topology.load({}))
    topic, txn = ResourceType.TOPIC, ResourceType.TRANSACTIONAL_ID
    assert _owned(grants, topic, "_onceflow_coordinator_log", AclOperation.WRITE) == {"coordinator"}
    assert _owned(grants, txn, "onceflow-coordinator", AclOperation.WRITE) == {"coordinator"}
    for internal in ("_onceflow_connect_configs", "_onceflow_connect_offsets", "_onceflow_connect_status"):
        assert _owned(grants, topic, internal, AclOperation.WRITE) == {"connect"}
    assert _owned(grants, txn, "onceflow-src-", AclOperation.WRITE) == {"connect"}
    assert _owned(grants, txn, "onceflow-sink-", AclOperation.WRITE) == {"participant"}
    # the consumer reads the source and dead letters only for its audit's topic truth (RunAudit)
    assert _owned(grants, topic, "ip_count_source", AclOperation.READ) == {"spark", "consumer"}
    assert _owned(grants, topic, "ip_count_dlq", AclOperation.READ) == {"consumer"}
    assert _owned(grants, topic, "ip_count_sink", AclOperation.READ) == {"consumer"}
    assert not [g for g in grants if g.service == "consumer" and g.operation != AclOperation.READ]
    # nobody may delete, alter or manage anything: that is the operator's super user
    forbidden = {AclOperation.DELETE, AclOperation.ALTER, AclOperation.ALTER_CONFIGS, AclOperation.ALL}
    assert not [g for g in grants if g.operation in forbidden or g.resource_type == ResourceType.CLUSTER]
    assert {g.pattern_type for g in grants if g.resource_type == txn and g.service != "coordinator"} == {
        PatternType.PREFIXED
    }


def test_names_come_from_the_config_files(tmp_path: Path) -> None:
    coordinator = tmp_path / "coordinator.toml"
    coordinator.write_text(
        '[transaction_log]\ntopic = "_onceflow_decisions"\ntransactional_id = "onceflow-coordinator-b"\n'
        '[standby]\nenabled = true\ngroup_id = "onceflow-coordinator-ha"\n'
    )
    participant = tmp_path / "participant.toml"
    participant.write_text(
        "".join(
            f'[[sinks]]\nname = "{name}"\nkind = "kafka"\n[sinks.options]\ntopic = "{topic}"\nstate_dir = "/x"\n'
            for name, topic in (("k1", "out-one"), ("k2", "out-two"))
        )
    )
    grants = plan(Topology.load({"coordinator": coordinator, "participant": participant}))
    assert _owned(grants, ResourceType.TOPIC, "_onceflow_decisions", AclOperation.WRITE) == {"coordinator"}
    assert _owned(grants, ResourceType.TRANSACTIONAL_ID, "onceflow-coordinator-b", AclOperation.WRITE) == {
        "coordinator"
    }
    assert _owned(grants, ResourceType.GROUP, "onceflow-coordinator-ha", AclOperation.READ) == {"coordinator"}
    participant_txns = {
        g.name for g in grants if g.service == "participant" and g.resource_type == ResourceType.TRANSACTIONAL_ID
    }
    assert participant_txns == {"onceflow-sink-k1-", "onceflow-sink-k2-"}
    assert _owned(grants, ResourceType.TOPIC, "out-two", AclOperation.WRITE) == {"participant"}


def test_principal_map_is_checked() -> None:
    assert principal_map("coordinator=User:c, spark=s") == {"coordinator": "User:c", "spark": "User:s"}
    with pytest.raises(InvalidConfig, match="unknown service 'broker'"):
        principal_map("broker=User:b")
    with pytest.raises(InvalidConfig, match="KEY=VALUE"):
        principal_map("coordinator")
    with pytest.raises(InvalidConfig, match="--config"):
        Topology.load({"brokr": Path("x.toml")})


def test_plan_prints_one_acl_a_line_for_the_services_named() -> None:
    result = subprocess.run(
        [ONCEFLOW, "acls", "plan", "--principal-map", "coordinator=User:coord,consumer=User:results"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "# coordinator (User:coord)"
    assert any("User:coord" in line and "TRANSACTIONAL_ID:LITERAL:onceflow-coordinator " in line for line in lines)
    assert any("User:results" in line and "GROUP:LITERAL:onceflow-results " in line for line in lines)
    assert not any("User:spark" in line or "# spark" in line for line in lines)
    bad = subprocess.run([ONCEFLOW, "acls", "plan", "--principal-map", "nobody=User:x"],
                         capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert bad.returncode == 2 and "unknown service 'nobody'" in bad.stderr


def test_the_embedded_broker_protects_every_transactional_id_the_services_use() -> None:
    """The broker's ``protected_transactional_id_prefixes`` cover what the services really name
    (derived from their code by the plan), so none of them is ever open by default."""
    from onceflow.broker.config import BrokerConfig

    protected = tuple(BrokerConfig().protected_transactional_id_prefixes)
    owned = [g.name for g in plan(Topology.load({})) if g.resource_type == ResourceType.TRANSACTIONAL_ID]
    assert owned
    assert all(name.startswith(protected) for name in owned), (owned, protected)


def test_each_shard_of_a_sharded_kafka_sink_owns_its_own_prefix(tmp_path: Path) -> None:
    participant = tmp_path / "participant.toml"
    participant.write_text(
        '[[sinks]]\nname = "k"\nkind = "kafka"\nshard = 1\nshards = 3\n[sinks.options]\nstate_dir = "/x"\n'
    )
    grants = plan(Topology.load({"participant": participant}))
    owned = {g.name for g in grants if g.service == "participant" and g.resource_type == ResourceType.TRANSACTIONAL_ID}
    assert owned == {"onceflow-sink-k#1-"}


def test_the_embedded_broker_protects_the_coordinators_groups(tmp_path: Path) -> None:
    """The standby election and the log replay groups of the coordinator are protected groups."""
    from onceflow.broker.config import BrokerConfig

    coordinator = tmp_path / "coordinator.toml"
    coordinator.write_text("[standby]\nenabled = true\n")
    protected = tuple(BrokerConfig().protected_group_prefixes)
    groups = [
        g.name
        for g in plan(Topology.load({"coordinator": coordinator}))
        if g.service == "coordinator" and g.resource_type == ResourceType.GROUP
    ]
    assert len(groups) == 2
    assert all(name.startswith(protected) for name in groups), (groups, protected)


def test_the_shards_and_jobs_of_one_principal_each_bring_their_names(tmp_path: Path) -> None:
    """One principal, several processes (the compose deploy's two shards, its two Spark jobs): one
    ``--config`` each, every name planned once; a second file for a one-process service is refused."""
    shards = []
    for shard in (0, 1):
        shards.append(tmp_path / f"participant-{shard}.toml")
        shards[-1].write_text(
            f'[[sinks]]\nname = "k"\nkind = "kafka"\nshard = {shard}\nshards = 2\n[sinks.options]\nstate_dir = "/x"\n'
        )
    jobs = []
    for name in ("one", "two"):
        jobs.append(tmp_path / f"{name}.toml")
        jobs[-1].write_text(
            f'entrypoint = "m:job"\ndead_letter_topic = "dlq-{name}"\n[source]\ntopic = "in-{name}"\n'
            '[[participants]]\nsink = "s"\ntarget = "p:7101"\n[[outputs.o]]\nsink = "s"\ntable = "t"\n'
        )
    result = subprocess.run(
        [ONCEFLOW, "acls", "plan", "--principal-map", "participant=p,spark=s",
         *(arg for path in shards for arg in ("--config", f"participant={path}")),
         *(arg for path in jobs for arg in ("--config", f"spark={path}"))],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    acls = [line.split(" # ")[0].split() for line in result.stdout.splitlines() if not line.startswith("#")]
    assert len(acls) == len({tuple(acl) for acl in acls}), "an ACL planned twice"
    owned = {acl[3] for acl in acls if acl[3].startswith("TRANSACTIONAL_ID:")}
    assert owned == {"TRANSACTIONAL_ID:PREFIXED:onceflow-sink-k#0-", "TRANSACTIONAL_ID:PREFIXED:onceflow-sink-k#1-"}
    spark = {(acl[2], acl[3]) for acl in acls if acl[0] == "User:s" and acl[3].startswith("TOPIC:")}
    assert spark == {("READ", "TOPIC:LITERAL:in-one"), ("READ", "TOPIC:LITERAL:in-two"),
                     ("WRITE", "TOPIC:LITERAL:dlq-one"), ("WRITE", "TOPIC:LITERAL:dlq-two")}  # fmt: skip
    with pytest.raises(InvalidConfig, match="coordinator runs with one config file"):
        Topology.load({"coordinator": [tmp_path / "a.toml", tmp_path / "b.toml"]})


def test_apply_names_an_unreadable_command_config_and_never_its_values(tmp_path: Path) -> None:
    login = tmp_path / "admin.properties"
    login.write_text("sasl.password=s3cr3t-value\nsasl.username\n")
    for path, error in ((tmp_path / "missing", "cannot read"), (login, "line 2: expected name=value")):
        result = subprocess.run(
            [ONCEFLOW, "acls", "apply", "--bootstrap-servers", "127.0.0.1:1", "--command-config", str(path),
             "--principal-map", "coordinator=c"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert "--command-config" in result.stderr and error in result.stderr and "s3cr3t" not in result.stderr
