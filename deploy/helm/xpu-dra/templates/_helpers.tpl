{{/* The namespace of every namespaced object. */}}
{{- define "xpu-dra.namespace" -}}
{{- .Values.namespace.name | default .Release.Namespace -}}
{{- end -}}

{{/* Object names: the release name, with the chart name unless the release already has it. */}}
{{- define "xpu-dra.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "xpu-dra.controller.name" -}}{{ include "xpu-dra.fullname" . }}-controller{{- end -}}
{{- define "xpu-dra.plugin.name" -}}{{ include "xpu-dra.fullname" . }}-plugin{{- end -}}

{{/* Labels on every object. */}}
{{- define "xpu-dra.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: xpu-dra
{{- end -}}

{{/* Selector labels of one component: include with (list . "controller"). */}}
{{- define "xpu-dra.selector" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ $.Chart.Name }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "xpu-dra.image" -}}
{{- $image := index . 1 -}}
{{- printf "%s:%s" $image.repository ($image.tag | default (index . 0).Chart.AppVersion) -}}
{{- end -}}

{{/* The service-account user names the admission policies match. */}}
{{- define "xpu-dra.controller.user" -}}
system:serviceaccount:{{ include "xpu-dra.namespace" . }}:{{ include "xpu-dra.controller.name" . }}
{{- end -}}
{{- define "xpu-dra.plugin.user" -}}
system:serviceaccount:{{ include "xpu-dra.namespace" . }}:{{ include "xpu-dra.plugin.name" . }}
{{- end -}}

{{/*
The plugin's --cdi-driver-files from plugin.cdi.driverFiles: "auto" or "off" as they are, a map
as "off,nvidia=auto"-style pairs (vendors not named: auto).
*/}}
{{- define "xpu-dra.plugin.driverFiles" -}}
{{- if kindIs "map" . -}}
{{- $pairs := list -}}
{{- range $vendor, $mode := . -}}
{{- $pairs = append $pairs (printf "%s=%s" $vendor $mode) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}
