{{/* Names ------------------------------------------------------------------- */}}

{{- define "silo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every resource name. Not truncated: a StatefulSet's name must stay within 52
characters (its pods' controller-revision-hash label), so silo.validate refuses a longer one.
*/}}
{{- define "silo.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "silo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* StatefulSet and headless Service names of a component: (dict "ctx" $ "component" "proxy") */}}
{{- define "silo.componentName" -}}
{{- printf "%s-%s" (include "silo.fullname" .ctx) .component -}}
{{- end -}}
{{- define "silo.headlessName" -}}
{{- printf "%s-%s-hl" (include "silo.fullname" .ctx) .component -}}
{{- end -}}

{{- define "silo.configMapName" -}}
{{- printf "%s-config" (include "silo.fullname" .) -}}
{{- end -}}

{{- define "silo.secretName" -}}
{{- if .Values.auth.existingSecret -}}
{{- .Values.auth.existingSecret -}}
{{- else -}}
{{- printf "%s-auth" (include "silo.fullname" .) -}}
{{- end -}}
{{- end -}}
{{- define "silo.secretAccessKeyKey" -}}
{{- if .Values.auth.existingSecret -}}{{ .Values.auth.existingSecretKeys.accessKey }}{{- else -}}access-key{{- end -}}
{{- end -}}
{{- define "silo.secretSecretKeyKey" -}}
{{- if .Values.auth.existingSecret -}}{{ .Values.auth.existingSecretKeys.secretKey }}{{- else -}}secret-key{{- end -}}
{{- end -}}

{{- define "silo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "silo.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "silo.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* Labels ------------------------------------------------------------------ */}}

{{/* (dict "ctx" $ "component" "proxy") */}}
{{- define "silo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "silo.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{- define "silo.labels" -}}
helm.sh/chart: {{ include "silo.chart" .ctx }}
{{ include "silo.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Values.image.tag | default .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* DNS names and URLs ------------------------------------------------------ */}}

{{/* <namespace>.svc.<clusterDomain> */}}
{{- define "silo.svcDomain" -}}
{{- printf "%s.svc.%s" .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/* The scheme of the nodes' URLs: https with tls.enabled (silod then serves only HTTPS). */}}
{{- define "silo.scheme" -}}
{{- ternary "https" "http" .Values.tls.enabled -}}
{{- end -}}

{{/*
The URL of pod `ordinal` of a component: (dict "ctx" $ "component" "proxy" "pod" "0" "port" 8080);
"scheme" "https" for another scheme than http.
*/}}
{{- define "silo.podURL" -}}
{{- printf "%s://%s-%s.%s.%s:%v" (.scheme | default "http") (include "silo.componentName" .) (toString .pod) (include "silo.headlessName" .) (include "silo.svcDomain" .ctx) .port -}}
{{- end -}}

{{- define "silo.primaryURL" -}}
{{- include "silo.podURL" (dict "ctx" . "component" "proxy" "pod" "0" "port" 8080 "scheme" (include "silo.scheme" .)) -}}
{{- end -}}

{{/* Where the pods mount tls.secretName (tls.crt, tls.key, ca.crt). */}}
{{- define "silo.tlsDir" -}}/etc/silo-tls{{- end -}}

{{/* etcd client URLs, one per line */}}
{{- define "silo.etcdEndpoints" -}}
{{- if .Values.ha.etcd.bundled -}}
{{- range $i := until (int .Values.ha.etcd.replicas) }}
{{ include "silo.podURL" (dict "ctx" $ "component" "etcd" "pod" $i "port" 2379) }}
{{- end -}}
{{- else -}}
{{- range .Values.ha.etcd.endpoints }}
{{ . }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* silo.json ------------------------------------------------------------------ */}}

{{- define "silo.configJSON" -}}
{{- $c := .Values.config -}}
{{- $domains := $c.s3.domains -}}
{{- if not $domains -}}
{{- $svc := include "silo.fullname" . -}}
{{- $domains = list $svc (printf "%s.%s" $svc .Release.Namespace) (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s" $svc (include "silo.svcDomain" .)) -}}
{{- end -}}
{{- $cluster := dict
  "keepalive_interval_ms" $c.keepaliveIntervalMs
  "keepalive_timeout_ms" $c.keepaliveTimeoutMs
  "rebalance_give_up_s" $c.rebalanceGiveUpSeconds
  "durability" $c.durability
  "proxy_mode" $c.proxyMode
  "http" (dict
    "drain_timeout_s" $c.http.drainTimeoutSeconds
    "max_connections" $c.http.maxConnections
    "max_header_bytes" $c.http.maxHeaderBytes
    "idle_timeout_s" $c.http.idleTimeoutSeconds)
  "s3" (dict
    "region" $c.s3.region
    "domains" $domains
    "multipart_upload_ttl_h" $c.s3.multipartUploadTtlHours)
-}}
{{- with $c.cache }}
{{- $_ := set $cluster "cache" (deepCopy .) -}}
{{- end }}
{{- if .Values.ha.enabled }}
{{- $_ := set $cluster "meta_store" (dict
  "kind" "etcd"
  "etcd_endpoints" (include "silo.etcdEndpoints" . | trim | splitList "\n")
  "etcd_prefix" .Values.ha.etcd.prefix
  "primary_lease_s" .Values.ha.primaryLeaseSeconds) -}}
{{- end }}
{{- $cluster = mergeOverwrite $cluster (deepCopy $c.extra) -}}
{{- $node := dict "log_level" $c.logLevel "io_threads" $c.ioThreads "disk_threads_per_mountpath" $c.diskThreadsPerMountpath "open_files" $c.openFiles -}}
{{- if .Values.tls.enabled }}
{{- /* The files come as flags (--tls-cert, --tls-key, --tls-ca): they are the pods' mounts. */ -}}
{{- $_ := set $node "tls" (dict "require_client_cert" .Values.tls.requireClientCert) -}}
{{- end }}
{{- toPrettyJson (dict "node" $node "cluster" $cluster) -}}
{{- end -}}

{{/*
A credential of the Secret: the value given, else the one the Secret already holds (an
upgrade keeps generated keys), else a new random one. (dict "ctx" $ "key" "secret-key" "value" "..." "length" 40)
*/}}
{{- define "silo.credential" -}}
{{- if .value -}}
{{- .value -}}
{{- else -}}
{{- $existing := lookup "v1" "Secret" .ctx.Release.Namespace (include "silo.secretName" .ctx) -}}
{{- if and $existing (hasKey ($existing.data | default dict) .key) -}}
{{- index $existing.data .key | b64dec -}}
{{- else -}}
{{- randAlphaNum (int .length) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Checks the values the schema cannot (cross-field rules); fails with a message. */}}
{{- define "silo.validate" -}}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) -}}
{{- fail "tls.secretName: tls.enabled needs the name of a Secret with tls.crt, tls.key and ca.crt (as cert-manager writes them; README.md \"TLS\")" -}}
{{- end -}}
{{- if and .Values.tls.requireClientCert (not .Values.tls.enabled) -}}
{{- fail "tls.requireClientCert needs tls.enabled=true" -}}
{{- end -}}
{{- $fullname := include "silo.fullname" . -}}
{{- if gt (len $fullname) 45 -}}
{{- fail (printf "the resource name prefix %q is %d characters, more than 45 (StatefulSet names must stay within 52): set fullnameOverride or a shorter release name" $fullname (len $fullname)) -}}
{{- end -}}
{{- if and .Values.ha.enabled (not .Values.ha.etcd.bundled) (empty .Values.ha.etcd.endpoints) -}}
{{- fail "ha.etcd.endpoints: HA with ha.etcd.bundled=false needs the client URLs of an etcd (e.g. --set ha.etcd.endpoints={http://etcd:2379})" -}}
{{- end -}}
{{- if and (not .Values.auth.existingSecret) .Values.auth.secretKey (lt (len .Values.auth.secretKey) 8) -}}
{{- fail "auth.secretKey: the secret key must have at least 8 characters" -}}
{{- end -}}
{{- if lt (int .Values.config.keepaliveTimeoutMs) (mul 2 (int .Values.config.keepaliveIntervalMs)) -}}
{{- fail "config.keepaliveTimeoutMs must be at least 2 x config.keepaliveIntervalMs" -}}
{{- end -}}
{{- end -}}

{{/* Pods ---------------------------------------------------------------------- */}}

{{/* Affinity: (dict "ctx" $ "component" "proxy" "values" .Values.proxies "mode" "soft") */}}
{{- define "silo.affinity" -}}
{{- if .values.affinity -}}
{{ toYaml .values.affinity }}
{{- else if eq .mode "hard" -}}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "silo.selectorLabels" . | nindent 10 }}
{{- else if eq .mode "soft" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "silo.selectorLabels" . | nindent 12 }}
{{- end -}}
{{- end -}}

{{- define "silo.topologySpread" -}}
{{- $ts := .ctx.Values.topologySpread -}}
{{- if $ts.enabled -}}
{{- range $ts.topologyKeys }}
- maxSkew: {{ $ts.maxSkew }}
  topologyKey: {{ . }}
  whenUnsatisfiable: {{ $ts.whenUnsatisfiable }}
  labelSelector:
    matchLabels:
      {{- include "silo.selectorLabels" $ | nindent 6 }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* (dict "probe" .Values.probes.startup "scheme" "HTTP"|"HTTPS") */}}
{{- define "silo.probe" -}}
httpGet:
  path: /v1/health
  port: http
  scheme: {{ .scheme }}
periodSeconds: {{ .probe.periodSeconds }}
timeoutSeconds: {{ .probe.timeoutSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
{{- end -}}

{{/*
The StatefulSet of proxies or targets (the pod contract: docs/kubernetes.md "The pods").
(dict "ctx" $ "component" "proxy"|"target" "values" .Values.proxies|.Values.targets)
*/}}
{{- define "silo.nodeStatefulSet" -}}
{{- $ctx := .ctx -}}
{{- $component := .component -}}
{{- $v := .values -}}
{{- $isTarget := eq $component "target" -}}
{{- $hostPath := and $isTarget $ctx.Values.targets.hostPath.enabled -}}
{{- $name := include "silo.componentName" . -}}
{{- $headless := include "silo.headlessName" . -}}
{{- $tls := $ctx.Values.tls.enabled -}}
{{- $tlsDir := include "silo.tlsDir" $ctx -}}
{{- $probeScheme := ternary "HTTPS" "HTTP" $tls -}}
{{- $antiAffinity := $v.podAntiAffinity -}}
{{- if $hostPath }}{{ $antiAffinity = "hard" }}{{ end -}}
{{- $mountpaths := list -}}
{{- if $isTarget }}{{ range $i := until (int $v.mountpaths) }}{{ $mountpaths = append $mountpaths (printf "mp%d" $i) }}{{ end }}{{ end -}}
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ $name }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "silo.labels" . | nindent 4 }}
spec:
  serviceName: {{ $headless }}
  replicas: {{ $v.replicas }}
  # Parallel: every pod starts at once on install; updates still go one pod at a time,
  # highest ordinal first, each Ready before the next (RollingUpdate).
  podManagementPolicy: Parallel
  updateStrategy:
    type: RollingUpdate
  # Claims stay when the StatefulSet is deleted or scaled down: the data is never removed.
  persistentVolumeClaimRetentionPolicy:
    whenDeleted: Retain
    whenScaled: Retain
  selector:
    matchLabels:
      {{- include "silo.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "silo.labels" . | nindent 8 }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        checksum/config: {{ include "silo.configJSON" $ctx | sha256sum }}
        # Generated keys never change (kept on upgrades), so the values stand for the Secret.
        checksum/secret: {{ toJson $ctx.Values.auth | sha256sum }}
        {{- if $ctx.Values.metrics.podAnnotations }}
        prometheus.io/scrape: "true"
        prometheus.io/port: "8080"
        prometheus.io/path: /metrics
        {{- if $tls }}
        prometheus.io/scheme: https
        {{- end }}
        {{- end }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "silo.serviceAccountName" $ctx }}
      automountServiceAccountToken: {{ $ctx.Values.serviceAccount.automountServiceAccountToken }}
      {{- with $ctx.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      # The drain timeout, then 10 s to close the drives.
      terminationGracePeriodSeconds: {{ add (int $ctx.Values.config.http.drainTimeoutSeconds) 10 }}
      securityContext:
        {{- toYaml $ctx.Values.podSecurityContext | nindent 8 }}
      {{- with (include "silo.affinity" (dict "ctx" $ctx "component" $component "values" $v "mode" $antiAffinity)) }}
      affinity:
        {{- . | nindent 8 }}
      {{- end }}
      {{- with (include "silo.topologySpread" . | trim) }}
      topologySpreadConstraints:
        {{- . | nindent 8 }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if and $hostPath $ctx.Values.targets.hostPath.volumePermissions.enabled }}
      {{- $vp := $ctx.Values.targets.hostPath.volumePermissions }}
      initContainers:
        # chown of the host directories, run directly (no shell).
        - name: volume-permissions
          image: {{ printf "%s:%s" $vp.image.repository $vp.image.tag }}
          imagePullPolicy: {{ $vp.image.pullPolicy }}
          command:
            - chown
            - {{ printf "%v:%v" $ctx.Values.podSecurityContext.runAsUser $ctx.Values.podSecurityContext.fsGroup | quote }}
            - /var/lib/silo/state
            {{- range $mountpaths }}
            - /var/lib/silo/{{ . }}
            {{- end }}
          securityContext:
            runAsNonRoot: false
            runAsUser: 0
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: [ALL]
              add: [CHOWN]
          volumeMounts:
            - name: state
              mountPath: /var/lib/silo/state
            {{- range $mountpaths }}
            - name: {{ . }}
              mountPath: /var/lib/silo/{{ . }}
            {{- end }}
      {{- end }}
      containers:
        - name: silod
          image: {{ include "silo.image" $ctx }}
          imagePullPolicy: {{ $ctx.Values.image.pullPolicy }}
          command: ["/usr/bin/silod"]
          args:
            - --config=/etc/silo/silo.json
            - --role={{ $component }}
            - --id=$(POD_NAME)
            - --host=0.0.0.0
            - --port=8080
            - --public-url={{ include "silo.scheme" $ctx }}://$(POD_NAME).{{ $headless }}.{{ include "silo.svcDomain" $ctx }}:8080
            - --data-dir=/var/lib/silo/state
            {{- if or $isTarget (not $ctx.Values.ha.enabled) }}
            - --primary={{ include "silo.primaryURL" $ctx }}
            {{- end }}
            {{- range $mountpaths }}
            - --mountpath=/var/lib/silo/{{ . }}
            {{- end }}
            {{- if $tls }}
            - --tls-cert={{ $tlsDir }}/tls.crt
            - --tls-key={{ $tlsDir }}/tls.key
            - --tls-ca={{ $tlsDir }}/ca.crt
            {{- end }}
          env:
            - name: POD_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            - name: SILO_ACCESS_KEY
              valueFrom:
                secretKeyRef:
                  name: {{ include "silo.secretName" $ctx }}
                  key: {{ include "silo.secretAccessKeyKey" $ctx }}
            - name: SILO_SECRET_KEY
              valueFrom:
                secretKeyRef:
                  name: {{ include "silo.secretName" $ctx }}
                  key: {{ include "silo.secretSecretKeyKey" $ctx }}
            {{- range $v.extraEnv }}
            - name: {{ .name }}
              value: {{ .value | quote }}
            {{- end }}
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
          startupProbe:
            {{- include "silo.probe" (dict "probe" $ctx.Values.probes.startup "scheme" $probeScheme) | nindent 12 }}
          readinessProbe:
            {{- include "silo.probe" (dict "probe" $ctx.Values.probes.readiness "scheme" $probeScheme) | nindent 12 }}
          livenessProbe:
            {{- include "silo.probe" (dict "probe" $ctx.Values.probes.liveness "scheme" $probeScheme) | nindent 12 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $ctx.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/silo
              readOnly: true
            {{- if $tls }}
            # The whole Secret, not subPath items: Kubernetes then updates the files in
            # place when the certificate is renewed.
            - name: tls
              mountPath: {{ $tlsDir }}
              readOnly: true
            {{- end }}
            - name: state
              mountPath: /var/lib/silo/state
            {{- range $mountpaths }}
            - name: {{ . }}
              mountPath: /var/lib/silo/{{ . }}
            {{- end }}
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: config
          configMap:
            name: {{ include "silo.configMapName" $ctx }}
            items:
              - key: silo.json
                path: silo.json
        - name: tmp
          emptyDir: {}
        {{- if $tls }}
        - name: tls
          secret:
            secretName: {{ $ctx.Values.tls.secretName }}
            # 0440 (group fsGroup, which silod runs in) or, without an fsGroup, 0444.
            defaultMode: {{ ternary 288 292 (not (empty $ctx.Values.podSecurityContext.fsGroup)) }}
        {{- end }}
        {{- if $hostPath }}
        {{- $base := trimSuffix "/" $ctx.Values.targets.hostPath.path }}
        - name: state
          hostPath:
            path: {{ $base }}/state
            type: DirectoryOrCreate
        {{- range $mountpaths }}
        - name: {{ . }}
          hostPath:
            path: {{ $base }}/{{ . }}
            type: DirectoryOrCreate
        {{- end }}
        {{- end }}
  {{- if not $hostPath }}
  volumeClaimTemplates:
    - metadata:
        name: state
        labels:
          {{- include "silo.selectorLabels" . | nindent 10 }}
      spec:
        accessModes: [ReadWriteOnce]
        {{- with $v.state.storageClass }}
        storageClassName: {{ . }}
        {{- end }}
        resources:
          requests:
            storage: {{ $v.state.size }}
    {{- range $mountpaths }}
    - metadata:
        name: {{ . }}
        labels:
          {{- include "silo.selectorLabels" (dict "ctx" $ctx "component" "target") | nindent 10 }}
        {{- with $ctx.Values.targets.persistence.annotations }}
        annotations:
          {{- toYaml . | nindent 10 }}
        {{- end }}
      spec:
        accessModes:
          {{- toYaml $ctx.Values.targets.persistence.accessModes | nindent 10 }}
        {{- with $ctx.Values.targets.persistence.storageClass }}
        storageClassName: {{ . }}
        {{- end }}
        resources:
          requests:
            storage: {{ $ctx.Values.targets.persistence.size }}
    {{- end }}
  {{- end }}
{{- end -}}
