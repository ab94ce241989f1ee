{{/* The hub keeps its state in atoll-system: the release must go there. */}}
{{- define "atoll-hub.namespace" -}}
{{- if ne .Release.Namespace "atoll-system" -}}
{{- fail (printf "install atoll-hub into namespace atoll-system (-n atoll-system --create-namespace), not %q: the hub keeps its CA, tokens and member records there" .Release.Namespace) -}}
{{- end -}}
{{- .Release.Namespace -}}
{{- end -}}

{{- define "atoll-hub.labels" -}}
app.kubernetes.io/name: atoll-hub
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The selector: as manifests/hub has it (a Deployment's selector cannot change). */}}
{{- define "atoll-hub.selector" -}}
app.kubernetes.io/name: atoll-hub
{{- end -}}
