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

{{- define "onceflow.coordinator.target" -}}
{{- printf "%s:7100" (include "onceflow.componentName" (dict "context" . "component" "coordinator")) -}}
{{- end }}

{{- define "onceflow.participant.target" -}}
{{- printf "%s:7101" (include "onceflow.componentName" (dict "context" . "component" "participant")) -}}
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

{{/* POSTGRES_DSN, from the Secret */}}
{{- define "onceflow.postgresDsnEnv" -}}
- name: POSTGRES_DSN
  valueFrom:
    secretKeyRef:
      name: {{ include "onceflow.postgresql.secretName" . }}
      key: {{ .Values.postgresql.secretKey }}
{{- end }}

{{/*
The participant's sinks (ONCEFLOW_PARTICIPANT__SINKS): participant.sinks, where a kafka sink gets
options.kafka = {bootstrap_servers, properties} from kafka.* and a postgres sink options.dsn from the
Secret, both through the $(KAFKA_PROPERTIES) and $(POSTGRES_DSN) variables of the container.
*/}}
{{- define "onceflow.participant.sinks" -}}
{{- $sinks := list -}}
{{- range .Values.participant.sinks -}}
{{- $options := deepCopy (.options | default (dict)) -}}
{{- if eq .kind "kafka" -}}
{{- $_ := set $options "kafka" (dict "bootstrap_servers" $.Values.kafka.bootstrapServers "properties" "@KAFKA_PROPERTIES@") -}}
{{- else if eq .kind "postgres" -}}
{{- $_ := set $options "dsn" "$(POSTGRES_DSN)" -}}
{{- end -}}
{{- $sinks = append $sinks (dict "name" .name "kind" .kind "options" $options) -}}
{{- end -}}
{{- toJson $sinks | replace "\"@KAFKA_PROPERTIES@\"" "$(KAFKA_PROPERTIES)" -}}
{{- end }}

{{/* The job's participants (ONCEFLOW_SPARK__PARTICIPANTS): every sink, at the participant server */}}
{{- define "onceflow.spark.participants" -}}
{{- $target := include "onceflow.participant.target" . -}}
{{- $participants := list -}}
{{- range .Values.participant.sinks -}}
{{- $participants = append $participants (dict "sink" .name "target" $target) -}}
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

{{/* Pod-level settings shared by every workload */}}
{{- define "onceflow.podSpecCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
