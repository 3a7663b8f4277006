"""deploy/helm/onceflow, checked by Helm itself: ``helm lint --strict``, ``helm template`` for Kubernetes
1.31, and every rendered manifest decoded strictly into the Kubernetes API types by kubecheck
(tools/kubecheck, on k8s.io/api), so a misspelt field fails. ``make helm kubecheck`` builds both from
the Go module proxy; the chart is rendered and checked, never installed (no cluster runs here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.coordinator.log.refusals import LogNotInitialised
from onceflow.coordinator.service import transaction_log_for
from onceflow.spark.runner.topology import check_shared_storage

from .deploy_support import CHART, load_yaml
from .helm_support import (
    HELM,
    KUBE_VERSION,
    KUBECHECK,
    REQUIRED,
    config_file,
    hook,
    kubernetes_env,
    loaded,
    manifests,
    pod_spec,
    render,
    run,
    secret_refs,
    template,
    workloads,
)

ONCEFLOW = Path(sys.executable).parent / "onceflow"


@pytest.fixture(scope="module")
def default_manifests() -> str:
    return render()


def test_helm_lint_strict_passes() -> None:
    result = run(HELM, "lint", "--strict", "--kube-version", KUBE_VERSION, str(CHART), *REQUIRED)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


def test_every_rendered_manifest_decodes_strictly_into_the_kubernetes_types(default_manifests: str) -> None:
    result = run(KUBECHECK, "-", stdin=default_manifests)
    assert result.returncode == 0, result.stdout + result.stderr
    kinds = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("ok ")]
    assert len(kinds) == len(manifests(default_manifests)) >= 15
    assert {"Deployment", "StatefulSet", "Service", "ConfigMap", "Job"} <= set(kinds)


def test_kubecheck_refuses_a_misspelt_field_and_an_unknown_kind(default_manifests: str) -> None:
    misspelt = default_manifests.replace("  replicas: 1\n", "  replica: 1\n", 1)
    result = run(KUBECHECK, "-", stdin=misspelt)
    assert result.returncode == 1 and 'unknown field "replica"' in result.stdout, result.stdout
    unknown = "apiVersion: apps/v1\nkind: Deploymnet\nmetadata:\n  name: x\n"
    result = run(KUBECHECK, "-", stdin=unknown)
    assert result.returncode == 1 and "no such kind" in result.stdout


def test_every_workload_mounts_the_grpc_token_and_probes_its_servers(default_manifests: str) -> None:
    for name, workload in workloads(manifests(default_manifests)).items():
        spec = pod_spec(workload)
        secrets = {v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v}
        if workload["kind"] == "Job":
            continue
        assert "onceflow-grpc-token" in secrets, name
        for container in spec["containers"]:
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            assert "/run/secrets" in mounts, f"{name}/{container['name']}"
            assert "readinessProbe" in container, f"{name}/{container['name']} has no readiness probe"
            assert spec["securityContext"]["runAsNonRoot"] is True, name


def test_replicas_and_resources_follow_the_values() -> None:
    docs = workloads(
        manifests(
            render(
                "--set",
                "consumer.replicas=3",
                "--set",
                "connectWorker.replicas=2",
                "--set",
                "consumer.resources.limits.memory=1Gi",
            )
        )
    )
    consumer = docs["onceflow-consumer"]
    assert consumer["spec"]["replicas"] == 3
    assert docs["onceflow-connect-worker"]["spec"]["replicas"] == 2
    assert pod_spec(consumer)["containers"][0]["resources"] == {"limits": {"memory": "1Gi"}}


# --- least privilege: the ACL Job ------------------------------------------------------------------

ACLS = ("--set", "kafka.acls.apply=true", "--set", "kafka.acls.adminSecret.name=onceflow-kafka-admin")


def acl_plan(docs: list[dict[str, Any]], directory: Path) -> set[tuple[str, ...]]:
    """``onceflow acls plan`` of exactly what the ACL Job runs with (its ConfigMap's files and its
    environment): one (principal, permission, operation, resource) per ACL."""
    (container,) = pod_spec(workloads(docs)["onceflow-acls"])["containers"]
    argv = container["command"]
    config_map = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "onceflow-acls")
    mount = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "config")
    for name, text in config_map["data"].items():
        (directory / name).write_text(text)
    plan_argv, rest = ["plan"], iter(argv[3:])
    for arg in rest:
        if arg in ("--bootstrap-servers", "-X", "--command-config"):  # apply's alone: the broker and the login
            next(rest)
        else:
            plan_argv.append(arg.replace(mount, str(directory)))
    result = subprocess.run([str(ONCEFLOW), "acls", *plan_argv], env={**os.environ, **kubernetes_env(container)},
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return {tuple(line.split(" # ")[0].split()) for line in result.stdout.splitlines() if not line.startswith("#")}


def test_the_acl_job_applies_each_services_acls_as_the_admin_before_the_services_start(tmp_path: Path) -> None:
    """Off by default; on, a hook after the topics Job runs ``onceflow acls apply`` as the admin (its
    Secret, also the topics Job's login) with the principal map of the values, on the services' own
    files and rendered settings: the plan it computes from them holds each service's names."""
    assert "onceflow-acls" not in workloads(manifests(render()))
    values = ("coordinator.extraEnv[0].name=ONCEFLOW_COORDINATOR__TRANSACTION_LOG__TOPIC",
              "coordinator.extraEnv[0].value=_onceflow_decisions", "kafka.acls.principals.spark=",
              "consumer.kafkaPropertiesSecret.name=results-login")  # fmt: skip
    docs = manifests(render(*ACLS, *(arg for value in values for arg in ("--set", value))))
    jobs = workloads(docs)
    job, topics = jobs["onceflow-acls"], jobs["onceflow-topics"]
    weight = "helm.sh/hook-weight"
    assert int(job["metadata"]["annotations"][weight]) > int(topics["metadata"]["annotations"][weight])
    assert "pre-install" in job["metadata"]["annotations"]["helm.sh/hook"]
    (container,) = pod_spec(job)["containers"]
    argv = container["command"]
    assert argv[:3] == ["onceflow", "acls", "apply"] and "--service-env" in argv
    admin = argv[argv.index("--command-config") + 1]
    for workload in (job, topics):
        volumes = {v["name"]: v for v in pod_spec(workload)["volumes"]}
        assert volumes["kafka-admin"]["secret"]["secretName"] == "onceflow-kafka-admin"
    assert kubernetes_env(pod_spec(topics)["containers"][0])["KAFKA_PROPERTIES_FILE"] == admin
    # each service logs in with its own Secret when given one
    consumer = pod_spec(workloads(docs)["onceflow-consumer"])["containers"][0]
    login = next(v for v in consumer["env"] if v["name"] == "KAFKA_PROPERTIES")
    assert login["valueFrom"]["secretKeyRef"]["name"] == "results-login"
    acls = acl_plan(docs, tmp_path)
    assert ("User:participant", "ALLOW", "WRITE", "TOPIC:LITERAL:ip_count_sink") in acls
    assert ("User:participant", "ALLOW", "WRITE", "TRANSACTIONAL_ID:PREFIXED:onceflow-sink-kafka-") in acls
    # a service's extraEnv reaches the Job too
    assert ("User:coordinator", "ALLOW", "WRITE", "TOPIC:LITERAL:_onceflow_decisions") in acls
    assert ("User:consumer", "ALLOW", "READ", "TOPIC:LITERAL:ip_count_sink") in acls
    assert not [acl for acl in acls if acl[0] == "User:spark"], "a service left out of the map gets no ACLs"


# --- the cluster values (deploy/helm/values/cluster.yaml) --------------------------------------

CLUSTER = ("-f", str(CHART.parent / "values" / "cluster.yaml"))


@pytest.fixture(scope="module")
def cluster_values() -> dict[str, Any]:
    return load_yaml(CHART.parent / "values" / "cluster.yaml")


@pytest.fixture(scope="module")
def cluster_docs() -> list[dict[str, Any]]:
    return manifests(render(*CLUSTER))


def test_cluster_shards_standby_and_s3_staging_load_through_the_services_settings(
    cluster_docs: list[dict[str, Any]], cluster_values: dict[str, Any], tmp_path: Path
) -> None:
    """Every shard serves its share of the sharded sinks (shard 0 also the SQLite sink), the job
    registers every shard with the coordinator, every client names both coordinators, and the
    staging root is the S3 one in the job, every shard and the coordinators, whose credentials come
    from the Secret."""
    coordinators = ",".join(f"onceflow-coordinator-{i}.onceflow-coordinator-headless:7100" for i in (0, 1))
    root = cluster_values["staging"]["s3"]["root"]
    for shard in (0, 1):
        participant, container = loaded(cluster_docs, f"onceflow-participant-{shard}", "participant", tmp_path)
        sharded = {s.name: (s.shard, s.shards) for s in participant.sinks}
        assert sharded == {"kafka": (shard, 2), "postgres": (shard, 2), **({"sqlite": (0, 1)} if shard == 0 else {})}
        kafka = next(s for s in participant.sinks if s.name == "kafka").options.kafka
        assert (kafka.replication_factor, kafka.min_insync_replicas) == (3, 2)
        assert participant.coordinator.target == coordinators
        assert participant.staging.roots == [root] and participant.staging.allowed_schemes == ["s3"]
        assert secret_refs(container)["AWS_SECRET_ACCESS_KEY"] == "onceflow-s3"
    spark, container = loaded(cluster_docs, "onceflow-spark-worker", "spark-worker", tmp_path)
    refs = [(ref.name, ref.target) for p in spark.participants for ref in p.refs()]
    assert refs == [("kafka#0", "onceflow-participant-0:7101"), ("kafka#1", "onceflow-participant-1:7101"),
                    ("sqlite", "onceflow-participant-0:7101"), ("postgres#0", "onceflow-participant-0:7101"),
                    ("postgres#1", "onceflow-participant-1:7101")]  # fmt: skip
    assert spark.coordinator.target == coordinators and spark.staging_root == root
    assert spark.spark.master == "spark://onceflow-spark-master:7077"
    check_shared_storage(spark, spark.spark.master)  # the checkpoint volume is declared shared
    assert spark.spark.conf["spark.driver.host"] == "onceflow-spark-worker"
    assert (
        spark.spark.conf["spark.executor.memory"] == cluster_values["sparkWorker"]["sparkConf"]["spark.executor.memory"]
    )
    assert secret_refs(container)["AWS_ACCESS_KEY_ID"] == "onceflow-s3"
    coordinator, container = loaded(cluster_docs, "onceflow-coordinator", "coordinator", tmp_path)
    assert coordinator.standby.enabled and coordinator.staging_root == root
    assert coordinator.kafka.replication_factor == 3 and coordinator.kafka.min_insync_replicas == 2
    # each pod advertises its own name, one of the clients' list (the kubelet sets POD_NAME)
    advertised = kubernetes_env(container, {"POD_NAME": "onceflow-coordinator-1"})
    assert advertised["ONCEFLOW_COORDINATOR__STANDBY__ADVERTISED_TARGET"] == coordinators.split(",")[1]
    names = {d["metadata"]["name"] for d in cluster_docs if d["kind"] == "PersistentVolumeClaim"}
    assert names == {"onceflow-checkpoints"}, "S3 staging needs no staging volume"


def test_the_acl_job_grants_every_shard_its_transactional_ids(tmp_path: Path) -> None:
    """With least privilege on the cluster values, the ACL Job reads each shard's own file: a Kafka
    shard's transactional ids carry its index."""
    docs = manifests(render(*CLUSTER, "-f", str(CHART.parent / "values" / "least-privilege.yaml")))
    acls = acl_plan(docs, tmp_path)
    granted = {acl[3] for acl in acls if acl[0] == "User:participant" and acl[3].startswith("TRANSACTIONAL_ID")}
    assert granted == {f"TRANSACTIONAL_ID:PREFIXED:onceflow-sink-kafka#{shard}-" for shard in (0, 1)}


def test_cluster_replicas_secrets_probes_and_resources(
    cluster_docs: list[dict[str, Any]], cluster_values: dict[str, Any]
) -> None:
    docs = workloads(cluster_docs)
    replicas = {name: doc["spec"]["replicas"] for name, doc in docs.items() if doc["kind"] != "Job"}
    assert replicas == {"onceflow-coordinator": 2, "onceflow-participant-0": 1, "onceflow-participant-1": 1,
                        "onceflow-spark-worker": 1, "onceflow-spark-master": 1, "onceflow-spark-standalone-worker": 2,
                        "onceflow-consumer": 2, "onceflow-connect-worker": 2}  # fmt: skip
    resources = {
        "onceflow-coordinator": cluster_values["coordinator"]["resources"],
        "onceflow-participant-1": cluster_values["participant"]["resources"],
        "onceflow-spark-worker": cluster_values["sparkWorker"]["resources"],
        "onceflow-spark-master": cluster_values["sparkStandalone"]["master"]["resources"],
        "onceflow-spark-standalone-worker": cluster_values["sparkStandalone"]["workers"]["resources"],
        "onceflow-consumer": cluster_values["consumer"]["resources"],
    }
    for name, wanted in resources.items():
        assert pod_spec(docs[name])["containers"][0]["resources"] == wanted, name
    for name, doc in docs.items():
        spec = pod_spec(doc)
        container = spec["containers"][0]
        secrets = {v["name"]: v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v}
        if doc["kind"] != "Job" and "spark-master" not in name and "standalone" not in name:
            assert secrets["grpc-token"] == "onceflow-grpc-token", name
            assert secrets["kafka-tls"] == "onceflow-kafka-tls", name
            assert secret_refs(container)["KAFKA_PROPERTIES"] == "onceflow-kafka-login", f"{name}: the SASL login"
        if doc["kind"] != "Job":
            assert {"startupProbe", "readinessProbe"} <= set(container) or name == "onceflow-spark-worker", name
        assert "sasl.password" not in json.dumps(doc), f"{name}: a credential inline"
    # a standby reports NOT_SERVING: alive by TCP, out of the Service by its gRPC readiness
    coordinator = pod_spec(docs["onceflow-coordinator"])["containers"][0]
    assert "tcpSocket" in coordinator["livenessProbe"] and "tcpSocket" in coordinator["startupProbe"]
    assert coordinator["readinessProbe"]["grpc"] == {"port": 7100}
    headless = next(d for d in cluster_docs if d["metadata"]["name"] == "onceflow-coordinator-headless")
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"] is True


def test_cluster_spark_authenticates_master_workers_and_driver_with_one_secret(
    cluster_docs: list[dict[str, Any]], cluster_values: dict[str, Any]
) -> None:
    """Spark's standalone cluster runs code for whoever reaches it: the master and the workers (which
    hand it to their executors) read the shared secret from the Secret, the driver from its conf."""
    secret = cluster_values["sparkStandalone"]["authSecret"]["name"]
    docs = workloads(cluster_docs)
    for name in ("onceflow-spark-master", "onceflow-spark-standalone-worker"):
        container = pod_spec(docs[name])["containers"][0]
        assert secret_refs(container)["_SPARK_AUTH_SECRET"] == secret, name
        assert "-Dspark.authenticate=true" in kubernetes_env(container)["SPARK_DAEMON_JAVA_OPTS"].split(), name
    driver = pod_spec(docs["onceflow-spark-worker"])["containers"][0]
    env = kubernetes_env(driver, {"SPARK_AUTH_SECRET": "c2hhcmVk+/="})
    conf = json.loads(env["ONCEFLOW_SPARK__SPARK__CONF"])
    assert secret_refs(driver)["SPARK_AUTH_SECRET"] == secret
    assert conf["spark.authenticate"] == "true" and conf["spark.authenticate.secret"] == "c2hhcmVk+/="
    assert secret not in json.dumps(cluster_values["sparkWorker"]), "the secret itself is never a value"


@pytest.mark.parametrize(
    ("component", "workload"),
    [("coordinator", "onceflow-coordinator"), ("participant", "onceflow-participant-1"),
     ("spark-standalone-worker", "onceflow-spark-standalone-worker"), ("consumer", "onceflow-consumer"),
     ("connect-worker", "onceflow-connect-worker")],
)  # fmt: skip
def test_cluster_spreads_each_component_over_nodes_with_a_disruption_budget(
    cluster_docs: list[dict[str, Any]], component: str, workload: str
) -> None:
    """Required anti-affinity on the component's label (every shard avoids every other shard), and a
    PodDisruptionBudget over the same pods: a drain takes one at a time."""
    labels = {"app.kubernetes.io/name": "onceflow", "app.kubernetes.io/instance": "onceflow",
              "app.kubernetes.io/component": component}  # fmt: skip
    spec = pod_spec(workloads(cluster_docs)[workload])
    (term,) = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term == {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": labels}}
    assert labels.items() <= workloads(cluster_docs)[workload]["spec"]["template"]["metadata"]["labels"].items()
    budgets = {d["metadata"]["name"]: d["spec"] for d in cluster_docs if d["kind"] == "PodDisruptionBudget"}
    assert budgets[f"onceflow-{component}"] == {"maxUnavailable": 1, "selector": {"matchLabels": labels}}


def test_default_values_run_one_of_each_preferably_apart() -> None:
    """The defaults: one coordinator with gRPC probes and no standby, one participant whose sinks keep
    their unsharded names, preferred anti-affinity, no budgets; podAntiAffinity=none drops it."""
    docs = manifests(render())
    assert not [d for d in docs if d["kind"] == "PodDisruptionBudget"]
    coordinator = pod_spec(workloads(docs)["onceflow-coordinator"])["containers"][0]
    assert coordinator["livenessProbe"]["grpc"] == {"port": 7100}
    assert not [v for v in coordinator["env"] if "STANDBY" in v["name"]]
    participant = pod_spec(workloads(docs)["onceflow-participant-0"])
    sinks = json.loads(kubernetes_env(participant["containers"][0])["ONCEFLOW_PARTICIPANT__SINKS"])
    assert [("shard" in s, s["name"]) for s in sinks] == [(False, "kafka"), (False, "sqlite"), (False, "postgres")]
    (preferred,) = participant["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred["weight"] == 100 and preferred["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    none = workloads(manifests(render("--set", "podAntiAffinity=none")))
    assert "affinity" not in pod_spec(none["onceflow-participant-0"])


def test_a_k8s_master_gets_its_executors_the_image_and_the_shared_volumes() -> None:
    docs = manifests(render("--set", "sparkWorker.master=k8s://https://kubernetes.default.svc"))
    container = pod_spec(workloads(docs)["onceflow-spark-worker"])["containers"][0]
    conf = json.loads(kubernetes_env(container)["ONCEFLOW_SPARK__SPARK__CONF"])
    volume = "spark.kubernetes.executor.volumes.persistentVolumeClaim"
    assert conf[f"{volume}.checkpoints.options.claimName"] == "onceflow-checkpoints"
    assert conf[f"{volume}.staging.mount.path"] == "/var/lib/onceflow/staging"
    assert conf["spark.kubernetes.container.image"] == container["image"]
    assert kubernetes_env(container)["ONCEFLOW_SPARK__STAGING_SHARED"] == "true"
    assert "onceflow-spark-master" not in workloads(docs)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (("participant.shards=0",), "at '/participant/shards': minimum: got 0, want 1"),
        (("participant.shards=33",), "at '/participant/shards': maximum: got 33, want 32"),
        (("coordinator.replicas=0",), "at '/coordinator/replicas': minimum: got 0, want 1"),
        (("podAntiAffinity=sometimes",), "at '/podAntiAffinity': value must be one of"),
        (("staging.s3.root=http://store/bucket",), "at '/staging/s3/root': 'http://store/bucket' does not match"),
        (("kafka.replicationFactor=2", "kafka.minInsyncReplicas=3"),
         "kafka.minInsyncReplicas: 3 is more than kafka.replicationFactor (2)"),
        (("sparkStandalone.enabled=true", "sparkWorker.master=yarn"),
         'sparkWorker.master: "yarn" and sparkStandalone.enabled'),
    ],
)  # fmt: skip
def test_a_bad_value_fails_helm_template_naming_it(values: tuple[str, ...], message: str) -> None:
    result = template(*(arg for value in values for arg in ("--set", value)))
    assert result.returncode == 1 and message in result.stderr, result.stderr


# --- the decision log: initialised once, by a hook Job (issue 23) ------------------------------

INIT = "onceflow-coordinator-init"


def test_the_init_log_job_runs_on_install_after_topics_and_acls_as_the_coordinator(tmp_path: Path) -> None:
    """A pre-install hook after the topics and ACL Jobs (the topic exists, the coordinator may write it),
    before the coordinators are created, never on upgrade (a log lost since must be refused); it loads
    the coordinator's own file and settings (extraEnv included), whose init_if_missing is off, with
    the coordinator's Kafka login and CA and no other Secret."""
    topic = ("--set", "coordinator.extraEnv[0].name=ONCEFLOW_COORDINATOR__TRANSACTION_LOG__TOPIC",
             "--set", "coordinator.extraEnv[0].value=_onceflow_decisions")  # fmt: skip
    docs = manifests(render(*CLUSTER, "-f", str(CHART.parent / "values" / "least-privilege.yaml"), *topic))
    jobs = workloads(docs)
    phases, weight = hook(jobs[INIT])
    assert phases == {"pre-install"}
    for name in ("onceflow-topics", "onceflow-acls"):
        assert "pre-install" in hook(jobs[name])[0] and hook(jobs[name])[1] < weight, name
    config_map = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == INIT)
    assert hook(config_map) == ({"pre-install"}, -10), "the Job's file exists before the Job"
    init, container = loaded(docs, INIT, "coordinator", tmp_path)
    coordinator, served = loaded(docs, "onceflow-coordinator", "coordinator", tmp_path)
    assert container["command"][:3] == ["onceflow", "txn", "init-log"] and container["image"] == served["image"]
    assert (init.kafka, init.transaction_log) == (coordinator.kafka, coordinator.transaction_log)
    assert coordinator.transaction_log.init_if_missing is False and coordinator.kafka.replication_factor == 3
    assert init.transaction_log.topic == "_onceflow_decisions", "the coordinator's extraEnv reaches the Job"

    def secrets(name: str, container: dict[str, Any]) -> set[str]:
        volumes = pod_spec(jobs[name])["volumes"]
        return {v["secret"]["secretName"] for v in volumes if "secret" in v} | set(secret_refs(container).values())

    assert secrets(INIT, container) == {"onceflow-kafka-coordinator", "onceflow-kafka-tls"}
    assert secrets(INIT, container) < secrets("onceflow-coordinator", served)
    coordinators = jobs["onceflow-coordinator"]["metadata"]
    assert "helm.sh/hook" not in coordinators.get("annotations", {}), "created after the pre-install hooks"


def test_the_init_log_job_initialises_the_log_the_coordinator_refuses_to_create(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    """The install's hooks in order on a real broker: the topics Job creates the log topic empty, the
    coordinator's rendered settings refuse it, the init Job's command writes the genesis, the
    coordinator opens it; run again, the Job leaves the log alone."""
    docs = manifests(render(*(arg for value in (f"kafka.bootstrapServers={broker.bootstrap_servers}",
                                                "kafka.replicationFactor=1", "kafka.minInsyncReplicas=1")
                              for arg in ("--set", value))))  # fmt: skip
    jobs = workloads(docs)
    (topics,) = pod_spec(jobs["onceflow-topics"])["containers"]
    script = str(CHART / "files" / "create_topics.py")
    created = subprocess.run([sys.executable, script], env={**os.environ, **kubernetes_env(topics)},
                             capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert created.returncode == 0, created.stderr
    coordinator, _ = loaded(docs, "onceflow-coordinator", "coordinator", tmp_path)
    with pytest.raises(LogNotInitialised, match=r"no genesis record.*onceflow txn init-log"):
        transaction_log_for(coordinator).open()
    (container,) = pod_spec(jobs[INIT])["containers"]
    argv = [str(ONCEFLOW), *container["command"][1:-1], str(config_file(docs, jobs[INIT], tmp_path))]
    env = {**os.environ, **kubernetes_env(container)}
    for wanted in ("initialised at", "already initialised (1 records): nothing to do"):
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0 and wanted in result.stdout, result.stdout + result.stderr
    log = transaction_log_for(coordinator)
    assert log.open() == []
    log.close()
