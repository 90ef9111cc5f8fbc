{{/* Names and labels. */}}
{{- define "sink.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sink.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "sink.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "sink.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sink.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sink.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sink.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "sink.selectorLabels" . }}
app.kubernetes.io/version: {{ include "sink.imageTag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: consumer
{{- end -}}

{{- define "sink.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- define "sink.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sink.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The metrics port: the port of config.metrics.address (":9464" when unset, like the daemon). */}}
{{- define "sink.metricsPort" -}}
{{- $addr := ":9464" -}}
{{- with .Values.config.metrics -}}{{- with .address -}}{{- $addr = . -}}{{- end -}}{{- end -}}
{{- splitList ":" $addr | last | int -}}
{{- end -}}

{{/*
sink.shutdownSeconds: config.writer.shutdown_timeout in whole seconds, rounded up. It accepts
the forms of the config's Duration made of whole numbers ("30s", "1m30s", "500ms", "1h", "1d").
*/}}
{{- define "sink.shutdownSeconds" -}}
{{- $d := "30s" -}}
{{- with .Values.config.writer -}}{{- with .shutdown_timeout -}}{{- $d = toString . -}}{{- end -}}{{- end -}}
{{- if not (regexMatch "^([0-9]+(ms|s|m|h|d|w))+$" $d) -}}
{{- fail (printf "config.writer.shutdown_timeout %q: the chart reads whole-number durations like 30s, 1m30s or 500ms; set it in that form" $d) -}}
{{- end -}}
{{- $ms := 0 -}}
{{- range regexFindAll "[0-9]+(ms|s|m|h|d|w)" $d -1 -}}
{{- $n := regexFind "^[0-9]+" . | int -}}
{{- $unit := trimPrefix (regexFind "^[0-9]+" .) . -}}
{{- $scale := get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 "w" 604800000) $unit -}}
{{- $ms = add $ms (mul $n $scale) -}}
{{- end -}}
{{- div (add $ms 999) 1000 -}}
{{- end -}}

{{/* terminationGracePeriodSeconds: explicit (and checked) or shutdown_timeout + 15s. A stop takes at most
shutdown_timeout + 11s and sink run exits by shutdown_timeout + 12s whatever happens (docs/PIPELINE.md,
"Shutdown"), so an explicit value needs shutdown_timeout + 13s: one second for the exit itself. */}}
{{- define "sink.terminationGracePeriodSeconds" -}}
{{- $shutdown := include "sink.shutdownSeconds" . | int -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds -}}
{{- add $shutdown 15 -}}
{{- else -}}
{{- $grace := .Values.terminationGracePeriodSeconds | int -}}
{{- $least := add $shutdown 13 -}}
{{- if lt $grace $least -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be at least config.writer.shutdown_timeout (%ds) + 13s = %ds: a stop may take shutdown_timeout + 12s (drain, final commit, leaving the group, closing the clients), and the pod would be killed before it ends; leave it null to derive it" $grace $shutdown $least) -}}
{{- end -}}
{{- $grace -}}
{{- end -}}
{{- end -}}

{{/* The Kafka topic names of config.topics (a topic's `topic` key, else its map key), sorted. */}}
{{- define "sink.kafkaTopics" -}}
{{- $names := list -}}
{{- range $key, $t := .Values.config.topics -}}
{{- $names = append $names (default $key (($t | default dict).topic)) -}}
{{- end -}}
{{- $names | sortAlpha | uniq | toJson -}}
{{- end -}}

{{/* Combinations of values that render but cannot work. */}}
{{- define "sink.checkValues" -}}
{{- if and (not .Values.autoscaling.enabled) (gt (int .Values.replicaCount) (int .Values.partitions)) -}}
{{- fail (printf "replicaCount (%d) exceeds partitions (%d): Kafka gives each partition to one group member, so the extra pods would sit idle" (int .Values.replicaCount) (int .Values.partitions)) -}}
{{- end -}}
{{- if and .Values.secrets.kafkaSasl.existingSecret (not ((.Values.config.kafka.sasl | default dict).mechanism)) -}}
{{- fail "secrets.kafkaSasl.existingSecret is set but config.kafka.sasl.mechanism is not: the password would be ignored" -}}
{{- end -}}
{{- $kafka := .Values.config.kafka -}}
{{- if and .Values.autoscaling.enabled (not .Values.autoscaling.authenticationRef) (or (($kafka.sasl | default dict).mechanism) (($kafka.tls | default dict).enabled)) -}}
{{- fail "autoscaling.authenticationRef must name a KEDA TriggerAuthentication: Kafka uses SASL or TLS, and the lag scaler could not connect without it" -}}
{{- end -}}
{{- end -}}

{{/* The KEDA replica cap: autoscaling.maxReplicaCount, never above partitions. */}}
{{- define "sink.maxReplicas" -}}
{{- $max := .Values.partitions | int -}}
{{- with .Values.autoscaling.maxReplicaCount }}{{ $max = min (int .) $max }}{{ end -}}
{{- $max -}}
{{- end -}}
