{{/* Names */}}

{{- define "onceflow.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "onceflow.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "onceflow.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of one component's resources: (dict "context" $ "component" "coordinator") */}}
{{- define "onceflow.componentName" -}}
{{- printf "%s-%s" (include "onceflow.fullname" .context) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels: (dict "context" $ "component" "coordinator") */}}
{{- define "onceflow.labels" -}}
helm.sh/chart: {{ include "onceflow.chart" .context }}
{{ include "onceflow.selectorLabels" . }}
app.kubernetes.io/version: {{ .context.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .context.Release.Service }}
app.kubernetes.io/part-of: onceflow
{{- end }}

{{- define "onceflow.selectorLabels" -}}
app.kubernetes.io/name: {{ include "onceflow.name" .context }}
app.kubernetes.io/instance: {{ .context.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* An image: (dict "context" $ "image" .Values.coordinator.image) */}}
{{- define "onceflow.image" -}}
{{- $tag := .image.tag | default .context.Values.image.tag | default .context.Chart.AppVersion -}}
{{- if .context.Values.image.registry -}}
{{- printf "%s/%s:%s" (trimSuffix "/" .context.Values.image.registry) .image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end }}

{{/* Addresses of the gRPC services (the ports are those of files/<service>.toml) */}}

{{/* Every coordinator, comma-separated (clients fail over along the list): one per pod, by its
name under the headless Service */}}
{{- define "onceflow.coordinator.target" -}}
{{- $name := include "onceflow.componentName" (dict "context" . "component" "coordinator") -}}
{{- $targets := list -}}
{{- range $i := until (int .Values.coordinator.replicas) -}}
{{- $targets = append $targets (printf "%s-%d.%s-headless:7100" $name $i $name) -}}
{{- end -}}
{{- join "," $targets -}}
{{- end }}

{{/* One participant shard's name: (dict "context" $ "shard" 0) */}}
{{- define "onceflow.participant.name" -}}
{{- printf "%s-%d" (include "onceflow.componentName" (dict "context" .context "component" "participant")) (int .shard) -}}
{{- end }}

{{- define "onceflow.participant.target" -}}
{{- printf "%s:7101" (include "onceflow.participant.name" .) -}}
{{- end }}

{{/* The number of participant shards (values.schema.json: 1 to 32, as onceflow.contract.shards) */}}
{{- define "onceflow.participant.shards" -}}
{{- int .Values.participant.shards -}}
{{- end }}

{{/* The staging claim: an existing one, or the chart's */}}
{{- define "onceflow.staging.claimName" -}}
{{- .Values.staging.existingClaim | default (printf "%s-staging" (include "onceflow.fullname" .)) -}}
{{- end }}

{{/* The Secret holding the PostgreSQL DSN */}}
{{- define "onceflow.postgresql.secretName" -}}
{{- if .Values.postgresql.existingSecret -}}
{{- .Values.postgresql.existingSecret -}}
{{- else if .Values.postgresql.dsn -}}
{{- printf "%s-postgresql" (include "onceflow.fullname" .) -}}
{{- else -}}
{{- fail "set postgresql.existingSecret (a Secret holding the DSN) or, for development, postgresql.dsn" -}}
{{- end -}}
{{- end }}

{{/*
Environment variables every container refers to with $(NAME) (Kubernetes expands them in the
values of the variables after them): KAFKA_PROPERTIES, the librdkafka properties as one JSON object:
the service's own login (<service>.kafkaPropertiesSecret, its principal for least-privilege ACLs),
else kafka.propertiesSecret, else kafka.properties. Takes (dict "context" . "service" .Values.<service>).
*/}}
{{- define "onceflow.kafkaPropertiesEnv" -}}
{{- $kafka := .context.Values.kafka -}}
{{- $own := default (dict) (default (dict) .service).kafkaPropertiesSecret -}}
- name: KAFKA_PROPERTIES
{{- if $own.name }}
  valueFrom:
    secretKeyRef:
      name: {{ $own.name }}
      key: {{ $own.key | default "properties.json" }}
{{- else if $kafka.propertiesSecret.name }}
  valueFrom:
    secretKeyRef:
      name: {{ $kafka.propertiesSecret.name }}
      key: {{ $kafka.propertiesSecret.key }}
{{- else }}
  value: {{ $kafka.properties | toJson | quote }}
{{- end }}
{{- end }}

{{/*
The coordinator's Kafka and decision-log settings, the same in its pods and in the init-log Job: its
login (coordinator.kafkaPropertiesSecret, its principal), the cluster, the replication.
*/}}
{{- define "onceflow.coordinator.kafkaEnv" -}}
{{ include "onceflow.kafkaPropertiesEnv" (dict "context" . "service" .Values.coordinator) }}
- name: ONCEFLOW_COORDINATOR__KAFKA__BOOTSTRAP_SERVERS
  value: {{ .Values.kafka.bootstrapServers | quote }}
- name: ONCEFLOW_COORDINATOR__KAFKA__PROPERTIES
  value: "$(KAFKA_PROPERTIES)"
- name: ONCEFLOW_COORDINATOR__KAFKA__REPLICATION_FACTOR
  value: {{ .Values.kafka.replicationFactor | quote }}
- name: ONCEFLOW_COORDINATOR__KAFKA__MIN_INSYNC_REPLICAS
  value: {{ .Values.kafka.minInsyncReplicas | quote }}
- name: ONCEFLOW_COORDINATOR__TRANSACTION_LOG__REPLICATION_FACTOR
  value: {{ .Values.kafka.replicationFactor | quote }}
{{- end }}

{{/* POSTGRES_DSN, from the Secret */}}
{{- define "onceflow.postgresDsnEnv" -}}
- name: POSTGRES_DSN
  valueFrom:
    secretKeyRef:
      name: {{ include "onceflow.postgresql.secretName" . }}
      key: {{ .Values.postgresql.secretKey }}
{{- end }}

{{/*
One shard's sinks, as YAML {sinks: [...]}: (dict "context" $ "shard" i). participant.sinks, where a
kafka sink gets options.kafka = {bootstrap_servers, properties, replication_factor,
min_insync_replicas} from kafka.* (properties: "@KAFKA_PROPERTIES@") and a postgres sink options.dsn
"$(POSTGRES_DSN)". With more than one shard a sink with sharded: true gets this shard's shard and
shards; shard 0 also serves every other sink.
*/}}
{{- define "onceflow.participant.sinkList" -}}
{{- $ctx := .context -}}
{{- $shard := int .shard -}}
{{- $shards := int (include "onceflow.participant.shards" $ctx) -}}
{{- $sinks := list -}}
{{- range $ctx.Values.participant.sinks -}}
{{- $split := and .sharded (gt $shards 1) -}}
{{- if or $split (eq $shard 0) -}}
{{- $options := deepCopy (.options | default (dict)) -}}
{{- if eq .kind "kafka" -}}
{{- $_ := set $options "kafka" (dict "bootstrap_servers" $ctx.Values.kafka.bootstrapServers "properties" "@KAFKA_PROPERTIES@" "replication_factor" (int $ctx.Values.kafka.replicationFactor) "min_insync_replicas" (int $ctx.Values.kafka.minInsyncReplicas)) -}}
{{- else if eq .kind "postgres" -}}
{{- $_ := set $options "dsn" "$(POSTGRES_DSN)" -}}
{{- end -}}
{{- $sink := dict "name" .name "kind" .kind "options" $options -}}
{{- if $split -}}
{{- $_ := set $sink "shard" $shard -}}
{{- $_ := set $sink "shards" $shards -}}
{{- end -}}
{{- $sinks = append $sinks $sink -}}
{{- end -}}
{{- end -}}
{{- toYaml (dict "sinks" $sinks) -}}
{{- end }}

{{/* One shard's ONCEFLOW_PARTICIPANT__SINKS: the list above, the Kafka login as $(KAFKA_PROPERTIES) */}}
{{- define "onceflow.participant.sinks" -}}
{{- (include "onceflow.participant.sinkList" . | fromYaml).sinks | toJson | replace "\"@KAFKA_PROPERTIES@\"" "$(KAFKA_PROPERTIES)" -}}
{{- end }}

{{/*
The job's participants (ONCEFLOW_SPARK__PARTICIPANTS), which the driver registers with the
coordinator: a sharded sink at every shard (targets, in shard order), any other at shard 0.
*/}}
{{- define "onceflow.spark.participants" -}}
{{- $shards := int (include "onceflow.participant.shards" .) -}}
{{- $participants := list -}}
{{- range .Values.participant.sinks -}}
{{- if and .sharded (gt $shards 1) -}}
{{- $targets := list -}}
{{- range $i := until $shards -}}
{{- $targets = append $targets (include "onceflow.participant.target" (dict "context" $ "shard" $i)) -}}
{{- end -}}
{{- $participants = append $participants (dict "sink" .name "targets" $targets) -}}
{{- else -}}
{{- $participants = append $participants (dict "sink" .name "target" (include "onceflow.participant.target" (dict "context" $ "shard" 0))) -}}
{{- end -}}
{{- end -}}
{{- toJson $participants -}}
{{- end }}

{{/*
The IP-count job's [outputs] (ONCEFLOW_SPARK__OUTPUTS): its results in every sink, upserted by
(window_start, ip) into ip_counts, or as IpCount records keyed by ip in a kafka sink's topic
(onceflow.ipcount.schema.results_outputs).
*/}}
{{- define "onceflow.spark.outputs" -}}
{{- $results := list -}}
{{- range .Values.participant.sinks -}}
{{- if eq .kind "kafka" -}}
{{- $topic := (.options | default dict).topic | default "ip_count_sink" -}}
{{- $results = append $results (dict "sink" .name "topic" $topic "keys" (list "ip") "value_format" "avro" "record_name" "io.onceflow.v1.IpCount") -}}
{{- else -}}
{{- $results = append $results (dict "sink" .name "table" "ip_counts" "mode" "upsert" "keys" (list "window_start" "ip")) -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "results" $results) -}}
{{- end }}

{{/*
What RunAudit and `onceflow audit --config` compare (ONCEFLOW_CONSUMER__AUDIT__SINKS): the kafka and
postgres sinks. A SQLite sink's file is on the participant's volume: audit it in the participant pod.
*/}}
{{- define "onceflow.consumer.auditSinks" -}}
{{- $sinks := list -}}
{{- range .Values.participant.sinks -}}
{{- if eq .kind "kafka" -}}
{{- $sinks = append $sinks (dict "name" .name "kind" "kafka" "topic" (dig "topic" "ip_count_sink" (.options | default (dict)))) -}}
{{- else if eq .kind "postgres" -}}
{{- $sinks = append $sinks (dict "name" .name "kind" "postgres" "dsn" "$(POSTGRES_DSN)") -}}
{{- end -}}
{{- end -}}
{{- toJson $sinks -}}
{{- end }}

{{/* The Kafka TLS Secret's volume and mount, when kafka.tlsSecret is set */}}
{{- define "onceflow.kafkaTlsVolume" -}}
{{- if .Values.kafka.tlsSecret }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafka.tlsSecret }}
{{- end }}
{{- end }}

{{- define "onceflow.kafkaTlsVolumeMount" -}}
{{- if .Values.kafka.tlsSecret }}
- name: kafka-tls
  mountPath: /etc/onceflow/kafka-tls
  readOnly: true
{{- end }}
{{- end }}

{{/* The gRPC bearer token (grpcAuth.existingSecret), at /run/secrets/grpc_token in every service */}}
{{- define "onceflow.grpcTokenVolume" -}}
- name: grpc-token
  secret:
    secretName: {{ required "grpcAuth.existingSecret: the Secret holding the gRPC token" .Values.grpcAuth.existingSecret }}
    items:
      - key: {{ .Values.grpcAuth.secretKey }}
        path: grpc_token
{{- end }}

{{- define "onceflow.grpcTokenVolumeMount" -}}
- name: grpc-token
  mountPath: /run/secrets
  readOnly: true
{{- end }}

{{/*
The staging root of the job, the participants and the coordinator, and how they reach it: a
volume (the chart's claim or staging.existingClaim) mounted at /var/lib/onceflow/staging, or
staging.s3.root with the store's settings and the credentials Secret as the AWS variables.
*/}}
{{- define "onceflow.staging.root" -}}
{{- .Values.staging.s3.root | default "/var/lib/onceflow/staging" -}}
{{- end }}

{{- define "onceflow.staging.s3Env" -}}
{{- $s3 := .Values.staging.s3 -}}
{{- if $s3.root }}
{{- with $s3.endpointUrl }}
- name: AWS_ENDPOINT_URL
  value: {{ . | quote }}
{{- end }}
{{- with $s3.region }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- with $s3.credentialsSecret.name }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $s3.credentialsSecret.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $s3.credentialsSecret.secretAccessKeyKey }}
{{- end }}
{{- if $s3.checksumsWhenRequired }}
- name: AWS_REQUEST_CHECKSUM_CALCULATION
  value: when_required
- name: AWS_RESPONSE_CHECKSUM_VALIDATION
  value: when_required
{{- end }}
{{- end }}
{{- end }}

{{- define "onceflow.staging.volume" -}}
{{- if not .Values.staging.s3.root }}
- name: staging
  persistentVolumeClaim:
    claimName: {{ include "onceflow.staging.claimName" . }}
{{- end }}
{{- end }}

{{- define "onceflow.staging.volumeMount" -}}
{{- if not .Values.staging.s3.root }}
- name: staging
  mountPath: /var/lib/onceflow/staging
{{- end }}
{{- end }}

{{/* The job's Spark master: sparkWorker.master, else the chart's standalone cluster; empty = the file's */}}
{{- define "onceflow.spark.master" -}}
{{- if .Values.sparkWorker.master -}}
{{- .Values.sparkWorker.master -}}
{{- else if .Values.sparkStandalone.enabled -}}
{{- printf "spark://%s:7077" (include "onceflow.componentName" (dict "context" . "component" "spark-master")) -}}
{{- end -}}
{{- end }}

{{/*
Spark's authentication on the chart's standalone cluster (sparkStandalone.authSecret): the shared
secret as _SPARK_AUTH_SECRET, which Spark's daemons read, and their switches.
*/}}
{{- define "onceflow.spark.authEnv" -}}
{{- with .Values.sparkStandalone.authSecret.name }}
- name: _SPARK_AUTH_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.sparkStandalone.authSecret.key }}
- name: SPARK_DAEMON_JAVA_OPTS
  value: "-Dspark.authenticate=true -Dspark.master.rest.enabled=false -Dspark.ui.killEnabled=false"
{{- end }}
{{- end }}

{{/* The shared checkpoint claim of a multi-host master */}}
{{- define "onceflow.checkpoints.claimName" -}}
{{- .Values.sparkStandalone.checkpoints.existingClaim | default (printf "%s-checkpoints" (include "onceflow.fullname" .)) -}}
{{- end }}

{{/*
The pod's affinity: (dict "context" $ "component" "coordinator"). The affinity value, plus, unless
it has a podAntiAffinity of its own, one that spreads the component's pods over nodes
(podAntiAffinity: preferred, required or none).
*/}}
{{- define "onceflow.affinity" -}}
{{- $values := .context.Values -}}
{{- $affinity := deepCopy ($values.affinity | default (dict)) -}}
{{- if not (hasKey $affinity "podAntiAffinity") -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "onceflow.selectorLabels" . | fromYaml)) -}}
{{- if eq $values.podAntiAffinity "required" -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (list $term)) -}}
{{- else if eq $values.podAntiAffinity "preferred" -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- end -}}
{{- end -}}
{{- with $affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Pod-level settings shared by every workload: (dict "context" $ "component" "coordinator"); the
hook Jobs pass no component and get no anti-affinity.
*/}}
{{- define "onceflow.podSpecCommon" -}}
{{- $values := .context.Values -}}
{{- with $values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $values.podSecurityContext | nindent 2 }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .component }}
{{- include "onceflow.affinity" . }}
{{- else }}
{{- with $values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
A PodDisruptionBudget of one component whose pods stand in for each other: a voluntary
disruption (a node drain) takes at most one at a time. (dict "context" $ "component" "x" "pods" n);
nothing for one pod, which a budget would only pin.
*/}}
{{- define "onceflow.pdb" -}}
{{- if gt (int .pods) 1 }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "onceflow.componentName" . }}
  labels:
    {{- include "onceflow.labels" . | nindent 4 }}
spec:
  maxUnavailable: 1
  selector:
    matchLabels:
      {{- include "onceflow.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}
