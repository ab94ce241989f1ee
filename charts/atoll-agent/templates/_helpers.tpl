{{/* The agent keeps its credential in atoll-system: the release must go there. */}}
{{- define "atoll-agent.namespace" -}}
{{- if ne .Release.Namespace "atoll-system" -}}
{{- fail (printf "install atoll-agent into namespace atoll-system (-n atoll-system --create-namespace), not %q: the agent keeps its cluster credential there" .Release.Namespace) -}}
{{- end -}}
{{- .Release.Namespace -}}
{{- end -}}

{{- define "atoll-agent.labels" -}}
app.kubernetes.io/name: atoll-work-agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The selector: as manifests/agent has it (a Deployment's selector cannot change). */}}
{{- define "atoll-agent.selector" -}}
app.kubernetes.io/name: atoll-work-agent
{{- end -}}
