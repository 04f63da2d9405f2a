#!/usr/bin/env python3
"""Offline tests of the Helm chart helm/silo (no Kubernetes cluster needed).

For the default values, each values file in helm/silo/ci/ and a few --set combinations:
`helm lint --strict`, `helm template`, every object validated against the Kubernetes
OpenAPI schemas (validate.mjs, npm kubernetes-models), then the properties the chart
promises (docs/kubernetes.md): the pod contract (command, args, env, volumes), probes,
security context, PodDisruptionBudgets, StatefulSet update policy, HA wiring. Then the
schema must refuse bad values with a message naming them, silod must accept every
rendered silo.json, and the dashboard may name only metrics silod exports, with its panels
laid out without overlaps.

Tools: helm and the npm packages from tools/setup_k8s_tools.sh (build/tools/k8s; HELM and
SILO_K8S_TOOLS_DIR override). Without helm the test skips (exit 77). silod comes from
SILO_BIN_DIR or the repo's build/ (ci, release); without one those two checks are skipped.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHART = os.path.join(REPO, "helm", "silo")
TOOLS = os.environ.get("SILO_K8S_TOOLS_DIR", os.path.join(REPO, "build", "tools", "k8s"))
HELM = os.environ.get("HELM", os.path.join(TOOLS, "bin", "helm"))
RELEASE = "store"
NAMESPACE = "silo-test"
FULLNAME = f"{RELEASE}-silo"
DOMAIN = f"{NAMESPACE}.svc.cluster.local"

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def helm_template(args):
    return run([HELM, "template", RELEASE, CHART, "--namespace", NAMESPACE, *args])


def load_values(args):
    """The effective values of a render: defaults, then -f files, then --set (helm's order)."""
    values = read_yaml_json(os.path.join(CHART, "values.yaml"))
    i = 0
    while i < len(args):
        if args[i] == "-f":
            deep_merge(values, read_yaml_json(args[i + 1]))
            i += 2
        elif args[i] == "--set":
            for item in args[i + 1].split(","):
                key, value = item.split("=", 1)
                set_path(values, key, parse_scalar(value))
            i += 2
        else:
            i += 1
    return values


def read_yaml_json(path):
    """A YAML file as Python objects, parsed by node's yaml package (no PyYAML needed)."""
    script = ("const {createRequire}=require('module');"
              "const r=createRequire(process.argv[1]+'/package.json');"
              "const y=r('yaml');process.stdout.write(JSON.stringify(y.parse(require('fs').readFileSync(process.argv[2],'utf8'))??{}))")
    out = run(["node", "-e", script, TOOLS, path])
    if out.returncode != 0:
        raise RuntimeError(f"cannot read {path}: {out.stderr}")
    return json.loads(out.stdout)


def deep_merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            deep_merge(dst[k], v)
        else:
            dst[k] = v


def set_path(values, dotted, value):
    keys = dotted.split(".")
    for k in keys[:-1]:
        values = values.setdefault(k, {})
    values[keys[-1]] = value


def parse_scalar(text):
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def render(name, args):
    """lint + template + schema validation; returns the objects, or None on failure."""
    lint = run([HELM, "lint", CHART, "--strict", "--namespace", NAMESPACE, *args])
    check(lint.returncode == 0, f"[{name}] helm lint failed:\n{lint.stdout}{lint.stderr}")
    out = helm_template(args)
    if not check(out.returncode == 0, f"[{name}] helm template failed:\n{out.stderr}"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        manifest = os.path.join(tmp, "manifest.yaml")
        with open(manifest, "w") as f:
            f.write(out.stdout)
        objects_json = os.path.join(tmp, "objects.json")
        v = run(["node", os.path.join(HERE, "validate.mjs"), "--json", objects_json, manifest])
        check(v.returncode == 0, f"[{name}] Kubernetes schema validation failed:\n{v.stderr}")
        if not os.path.exists(objects_json):
            return None
        with open(objects_json) as f:
            return json.load(f)


def find(objects, kind, name):
    for o in objects:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            return o
    return None


def env_map(container):
    return {e["name"]: e for e in container.get("env", [])}


def expected_node_args(component, values, pod_mountpaths):
    headless = f"{FULLNAME}-{component}-hl"
    scheme = "https" if values["tls"]["enabled"] else "http"
    args = [
        "--config=/etc/silo/silo.json",
        f"--role={component}",
        "--id=$(POD_NAME)",
        "--host=0.0.0.0",
        "--port=8080",
        f"--public-url={scheme}://$(POD_NAME).{headless}.{DOMAIN}:8080",
        "--data-dir=/var/lib/silo/state",
    ]
    if component == "target" or not values["ha"]["enabled"]:
        args.append(f"--primary={scheme}://{FULLNAME}-proxy-0.{FULLNAME}-proxy-hl.{DOMAIN}:8080")
    args += [f"--mountpath=/var/lib/silo/mp{i}" for i in range(pod_mountpaths)]
    if values["tls"]["enabled"]:
        args += ["--tls-cert=/etc/silo-tls/tls.crt", "--tls-key=/etc/silo-tls/tls.key", "--tls-ca=/etc/silo-tls/ca.crt"]
    return args


def check_probe(name, probe, path, port, scheme="HTTP"):
    check(probe is not None, f"[{name}] probe missing")
    if probe:
        get = probe.get("httpGet", {})
        check(get.get("path") == path and get.get("port") == port and get.get("scheme", "HTTP") == scheme,
              f"[{name}] probe is {get}, want {scheme} GET {path} on port {port}")


def check_security(name, pod_spec, container):
    psc = pod_spec.get("securityContext", {})
    for key, want in (("runAsNonRoot", True), ("runAsUser", 65532), ("runAsGroup", 65532), ("fsGroup", 65532)):
        check(psc.get(key) == want, f"[{name}] pod securityContext.{key} = {psc.get(key)}, want {want}")
    check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"[{name}] seccompProfile not RuntimeDefault")
    csc = container.get("securityContext", {})
    check(csc.get("readOnlyRootFilesystem") is True, f"[{name}] readOnlyRootFilesystem not true")
    check(csc.get("allowPrivilegeEscalation") is False, f"[{name}] allowPrivilegeEscalation not false")
    check(csc.get("capabilities", {}).get("drop") == ["ALL"], f"[{name}] capabilities do not drop ALL")
    check(pod_spec.get("automountServiceAccountToken") is False, f"[{name}] service account token mounted")


def check_spread(name, pod_spec, component, mode):
    aff = pod_spec.get("affinity", {}).get("podAntiAffinity", {})
    if mode == "hard":
        terms = aff.get("requiredDuringSchedulingIgnoredDuringExecution", [])
        check(terms and terms[0]["labelSelector"]["matchLabels"].get("app.kubernetes.io/component") == component,
              f"[{name}] no required anti-affinity")
    elif mode == "soft":
        check(aff.get("preferredDuringSchedulingIgnoredDuringExecution"), f"[{name}] no preferred anti-affinity")
    check(len(pod_spec.get("topologySpreadConstraints", [])) >= 1, f"[{name}] no topologySpreadConstraints")


def check_statefulset_policy(name, sts):
    spec = sts["spec"]
    check(spec.get("podManagementPolicy") == "Parallel", f"[{name}] podManagementPolicy not Parallel")
    strategy = spec.get("updateStrategy", {})
    check(strategy.get("type") == "RollingUpdate", f"[{name}] updateStrategy not RollingUpdate")
    # Kubernetes' default: one pod at a time, highest ordinal first, each Ready before the next.
    check("maxUnavailable" not in strategy.get("rollingUpdate", {}), f"[{name}] rollingUpdate.maxUnavailable set")
    check(spec.get("persistentVolumeClaimRetentionPolicy", {}).get("whenScaled") == "Retain",
          f"[{name}] claims not retained on scale-down")


def check_node_statefulset(case, objects, values, component):
    name = f"{case}/{component}"
    group = values["proxies"] if component == "proxy" else values["targets"]
    sts = find(objects, "StatefulSet", f"{FULLNAME}-{component}")
    if not check(sts is not None, f"[{name}] StatefulSet {FULLNAME}-{component} missing"):
        return
    spec = sts["spec"]
    check(spec["replicas"] == group["replicas"], f"[{name}] replicas {spec['replicas']}, want {group['replicas']}")
    check(spec["serviceName"] == f"{FULLNAME}-{component}-hl", f"[{name}] serviceName {spec['serviceName']}")
    check_statefulset_policy(name, sts)
    pod = spec["template"]
    pod_spec = pod["spec"]
    ann = pod["metadata"].get("annotations", {})
    for key in ("checksum/config", "checksum/secret"):
        check(re.fullmatch(r"[0-9a-f]{64}", ann.get(key, "")), f"[{name}] pod annotation {key} missing")
    check(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == "8080"
          and ann.get("prometheus.io/path") == "/metrics", f"[{name}] prometheus.io annotations missing")
    labels = pod["metadata"]["labels"]
    for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                "app.kubernetes.io/managed-by", "helm.sh/chart"):
        check(key in labels, f"[{name}] pod label {key} missing")
    check(labels.get("app.kubernetes.io/component") == component, f"[{name}] component label")
    drain = values["config"]["http"]["drainTimeoutSeconds"]
    check(pod_spec.get("terminationGracePeriodSeconds") == drain + 10,
          f"[{name}] terminationGracePeriodSeconds {pod_spec.get('terminationGracePeriodSeconds')}, want {drain + 10}")

    containers = pod_spec["containers"]
    check(len(containers) == 1, f"[{name}] {len(containers)} containers, want 1")
    c = containers[0]
    check(c["command"] == ["/usr/bin/silod"], f"[{name}] command {c['command']}")
    host_path = component == "target" and values["targets"]["hostPath"]["enabled"]
    mountpaths = values["targets"]["mountpaths"] if component == "target" else 0
    want_args = expected_node_args(component, values, mountpaths)
    check(c["args"] == want_args, f"[{name}] args\n  {c['args']}\nwant\n  {want_args}")
    check(all(re.fullmatch(r"--[a-z-]+=\S+", a) for a in c["args"]), f"[{name}] an arg is not --flag=value")
    check(sum(a.startswith("--mountpath=") for a in c["args"]) == mountpaths, f"[{name}] mountpath count")
    env = env_map(c)
    check(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
          f"[{name}] POD_NAME not from metadata.name")
    check(env.get("POD_NAMESPACE", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace",
          f"[{name}] POD_NAMESPACE not from metadata.namespace")
    auth = values["auth"]
    secret = auth["existingSecret"] or f"{FULLNAME}-auth"
    keys = auth["existingSecretKeys"] if auth["existingSecret"] else {"accessKey": "access-key", "secretKey": "secret-key"}
    for var, key in (("SILO_ACCESS_KEY", keys["accessKey"]), ("SILO_SECRET_KEY", keys["secretKey"])):
        ref = env.get(var, {}).get("valueFrom", {}).get("secretKeyRef", {})
        check(ref == {"name": secret, "key": key}, f"[{name}] {var} from {ref}, want {secret}/{key}")
    for var, e in env.items():
        if var not in ("POD_NAME", "POD_NAMESPACE", "SILO_ACCESS_KEY", "SILO_SECRET_KEY"):
            check("value" in e and "valueFrom" not in e, f"[{name}] env {var} is not a literal value")
    check(c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}], f"[{name}] ports {c['ports']}")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        check_probe(f"{name} {probe}", c.get(probe), "/v1/health", "http", "HTTPS" if values["tls"]["enabled"] else "HTTP")
    check("resources" in c, f"[{name}] no resources")
    check_security(name, pod_spec, c)
    check_spread(name, pod_spec, component, "hard" if host_path else group["podAntiAffinity"])

    # Volumes: only the kinds of the pod contract, mounted where silod is told to look.
    allowed = {"configMap", "secret", "persistentVolumeClaim", "hostPath", "emptyDir"}
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    for v in volumes.values():
        kinds = set(v) - {"name"}
        check(kinds <= allowed, f"[{name}] volume {v['name']} of kind {kinds}")
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    check(volumes.get(mounts.get("/etc/silo"), {}).get("configMap", {}).get("name") == f"{FULLNAME}-config",
          f"[{name}] /etc/silo is not the ConfigMap")
    check("emptyDir" in volumes.get(mounts.get("/tmp"), {}), f"[{name}] /tmp is not an emptyDir")
    check(mounts.get("/var/lib/silo/state") == "state", f"[{name}] state not at /var/lib/silo/state")
    tls_mount = next((m for m in c["volumeMounts"] if m["mountPath"] == "/etc/silo-tls"), None)
    if values["tls"]["enabled"]:
        check(volumes.get(mounts.get("/etc/silo-tls"), {}).get("secret", {}).get("secretName") == values["tls"]["secretName"]
              and tls_mount is not None and tls_mount.get("readOnly") is True and "subPath" not in tls_mount,
              f"[{name}] /etc/silo-tls is not the Secret {values['tls']['secretName']}, read-only and whole")
        check(ann.get("prometheus.io/scheme") == "https", f"[{name}] prometheus.io/scheme is not https")
    else:
        check(tls_mount is None, f"[{name}] /etc/silo-tls mounted without tls.enabled")
    for i in range(mountpaths):
        check(mounts.get(f"/var/lib/silo/mp{i}") == f"mp{i}", f"[{name}] mp{i} not mounted")
    claims = [t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])]
    if host_path:
        base = values["targets"]["hostPath"]["path"].rstrip("/")
        check(claims == [], f"[{name}] claims {claims} in hostPath mode")
        for vol, path in [("state", f"{base}/state")] + [(f"mp{i}", f"{base}/mp{i}") for i in range(mountpaths)]:
            hp = volumes.get(vol, {}).get("hostPath", {})
            check(hp == {"path": path, "type": "DirectoryOrCreate"}, f"[{name}] volume {vol} is {hp}, want {path}")
        for init in pod_spec.get("initContainers", []):
            check(init["command"][0] == "chown", f"[{name}] init container {init['name']} runs {init['command']}")
    else:
        check(claims == ["state"] + [f"mp{i}" for i in range(mountpaths)], f"[{name}] claims {claims}")
        check("initContainers" not in pod_spec, f"[{name}] initContainers present")
        if component == "target":
            storage = values["targets"]["persistence"]
            mp0 = spec["volumeClaimTemplates"][1]["spec"]
            check(mp0["resources"]["requests"]["storage"] == storage["size"], f"[{name}] mp0 size")
            check(mp0.get("storageClassName", "") == storage["storageClass"], f"[{name}] mp0 storage class")


def check_config(case, objects, values):
    cm = find(objects, "ConfigMap", f"{FULLNAME}-config")
    if not check(cm is not None, f"[{case}] ConfigMap {FULLNAME}-config missing"):
        return None
    config = json.loads(cm["data"]["silo.json"])
    check(set(config) == {"node", "cluster"}, f"[{case}] silo.json sections {set(config)}")
    cluster = config["cluster"]
    check(cluster["http"]["drain_timeout_s"] == values["config"]["http"]["drainTimeoutSeconds"], f"[{case}] drain_timeout_s")
    check(cluster["s3"]["region"] == values["config"]["s3"]["region"], f"[{case}] s3.region")
    if not values["config"]["s3"]["domains"]:
        check(f"{FULLNAME}.{DOMAIN}" in cluster["s3"]["domains"], f"[{case}] s3.domains lacks the Service name")
    check("auth" not in cluster, f"[{case}] credentials in the ConfigMap")
    tls = values["tls"]
    want_tls = {"require_client_cert": tls["requireClientCert"]} if tls["enabled"] else None
    check(config["node"].get("tls") == want_tls, f"[{case}] node.tls {config['node'].get('tls')}, want {want_tls}")
    check(config["node"].get("open_files") == values["config"]["openFiles"], f"[{case}] node.open_files")
    if values["ha"]["enabled"]:
        meta = cluster.get("meta_store", {})
        etcd = values["ha"]["etcd"]
        if etcd["bundled"]:
            want = [f"http://{FULLNAME}-etcd-{i}.{FULLNAME}-etcd-hl.{DOMAIN}:2379" for i in range(etcd["replicas"])]
        else:
            want = etcd["endpoints"]
        check(meta == {"kind": "etcd", "etcd_endpoints": want, "etcd_prefix": etcd["prefix"],
                       "primary_lease_s": values["ha"]["primaryLeaseSeconds"]}, f"[{case}] meta_store {meta}")
    else:
        check("meta_store" not in cluster, f"[{case}] meta_store without ha.enabled")
    return cm["data"]["silo.json"]


def check_services(case, objects, values):
    svc = find(objects, "Service", FULLNAME)
    if check(svc is not None, f"[{case}] client Service missing"):
        s = svc["spec"]
        check(s["type"] == values["service"]["type"], f"[{case}] Service type {s['type']}")
        check(s["selector"].get("app.kubernetes.io/component") == "proxy", f"[{case}] client Service selects {s['selector']}")
        check(s["ports"][0]["port"] == values["service"]["port"] and s["ports"][0]["targetPort"] == "http",
              f"[{case}] client Service ports {s['ports']}")
        if values["service"]["annotations"]:
            check(svc["metadata"].get("annotations") == values["service"]["annotations"], f"[{case}] Service annotations")
    components = ["proxy", "target"] + (["etcd"] if values["ha"]["enabled"] and values["ha"]["etcd"]["bundled"] else [])
    for component in components:
        hl = find(objects, "Service", f"{FULLNAME}-{component}-hl")
        if check(hl is not None, f"[{case}] headless Service {FULLNAME}-{component}-hl missing"):
            check(hl["spec"].get("clusterIP") == "None", f"[{case}] {component}-hl not headless")
            check(hl["spec"].get("publishNotReadyAddresses") is True, f"[{case}] {component}-hl hides not-ready pods")
        if values["podDisruptionBudget"]["enabled"]:
            pdb = find(objects, "PodDisruptionBudget", f"{FULLNAME}-{component}")
            if check(pdb is not None, f"[{case}] PodDisruptionBudget {component} missing"):
                check(pdb["spec"].get("maxUnavailable") == 1, f"[{case}] PDB {component} maxUnavailable")
                check(pdb["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/component") == component,
                      f"[{case}] PDB {component} selector")
    secret = find(objects, "Secret", f"{FULLNAME}-auth")
    if values["auth"]["existingSecret"]:
        check(secret is None, f"[{case}] Secret rendered although auth.existingSecret is set")
    elif check(secret is not None, f"[{case}] Secret missing"):
        check(set(secret["data"]) == {"access-key", "secret-key"}, f"[{case}] Secret keys {set(secret['data'])}")


def check_etcd(case, objects, values):
    sts = find(objects, "StatefulSet", f"{FULLNAME}-etcd")
    bundled = values["ha"]["enabled"] and values["ha"]["etcd"]["bundled"]
    if not bundled:
        check(sts is None, f"[{case}] etcd StatefulSet without ha.etcd.bundled")
        return
    if not check(sts is not None, f"[{case}] etcd StatefulSet missing"):
        return
    name = f"{case}/etcd"
    check(sts["spec"]["podManagementPolicy"] == "Parallel", f"[{name}] podManagementPolicy")
    pod_spec = sts["spec"]["template"]["spec"]
    c = pod_spec["containers"][0]
    check(c["command"] == ["etcd"], f"[{name}] command {c['command']}")
    check(c["image"].startswith("quay.io/coreos/etcd:v3.5."), f"[{name}] image {c['image']}")
    n = values["ha"]["etcd"]["replicas"]
    domain = f"{FULLNAME}-etcd-hl.{DOMAIN}"
    peers = ",".join(f"{FULLNAME}-etcd-{i}=http://{FULLNAME}-etcd-{i}.{domain}:2380" for i in range(n))
    for arg in ("--name=$(POD_NAME)", f"--initial-cluster={peers}", "--listen-client-urls=http://0.0.0.0:2379",
                "--listen-peer-urls=http://0.0.0.0:2380", f"--advertise-client-urls=http://$(POD_NAME).{domain}:2379",
                f"--initial-advertise-peer-urls=http://$(POD_NAME).{domain}:2380"):
        check(arg in c["args"], f"[{name}] arg {arg} missing from {c['args']}")
    check(env_map(c).get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
          f"[{name}] POD_NAME")
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        check_probe(f"{name} {probe}", c.get(probe), "/health", "client")
    check({"name": "client", "containerPort": 2379, "protocol": "TCP"} in c["ports"], f"[{name}] port 2379")
    check_security(name, pod_spec, c)
    check([t["metadata"]["name"] for t in sts["spec"]["volumeClaimTemplates"]] == ["data"], f"[{name}] claims")


def check_case(case, args):
    values = load_values(args)
    objects = render(case, args)
    if objects is None:
        return None
    check_services(case, objects, values)
    for component in ("proxy", "target"):
        check_node_statefulset(case, objects, values, component)
    check_etcd(case, objects, values)
    sm = find(objects, "ServiceMonitor", FULLNAME)
    check((sm is not None) == values["metrics"]["serviceMonitor"]["enabled"], f"[{case}] ServiceMonitor presence")
    if sm is not None:
        endpoint = sm["spec"]["endpoints"][0]
        tls = values["tls"]
        check(endpoint["scheme"] == ("https" if tls["enabled"] else "http"), f"[{case}] ServiceMonitor scheme {endpoint['scheme']}")
        if tls["enabled"]:
            tls_config = endpoint.get("tlsConfig", {})
            check(tls_config.get("ca", {}).get("secret") == {"name": tls["secretName"], "key": "ca.crt"}
                  and tls_config.get("serverName") == f"{FULLNAME}.{DOMAIN}",
                  f"[{case}] ServiceMonitor tlsConfig {tls_config}")
            check(("keySecret" in tls_config) == tls["requireClientCert"], f"[{case}] ServiceMonitor client certificate")
    dash = find(objects, "ConfigMap", f"{FULLNAME}-dashboard")
    if values["metrics"]["dashboard"]["enabled"]:
        if check(dash is not None, f"[{case}] dashboard ConfigMap missing"):
            check(dash["metadata"]["labels"].get("grafana_dashboard") == "1", f"[{case}] dashboard label")
            json.loads(dash["data"]["silo.json"])
    else:
        check(dash is None, f"[{case}] dashboard without metrics.dashboard.enabled")
    for o in objects:
        check(o["metadata"].get("namespace") == NAMESPACE, f"[{case}] {o['kind']} {o['metadata']['name']} not in {NAMESPACE}")
    return check_config(case, objects, values)


# Each must be refused, with a message naming the value.
BAD_VALUES = [
    (["--set", "proxies.replicas=two"], "/proxies/replicas"),
    (["--set", "proxies.replicas=0"], "/proxies/replicas"),
    (["--set", "targets.replicas=0"], "/targets/replicas"),
    (["--set", "targets.replicas=1.5"], "/targets/replicas"),
    (["--set", "service.type=Foo"], "/service/type"),
    (["--set", "targets.mountpaths=0"], "/targets/mountpaths"),
    (["--set", "targets.mountpaths=65"], "/targets/mountpaths"),
    (["--set", "targets.mountpaths=two"], "/targets/mountpaths"),
    (["--set", "config.ioThreads=-1"], "/config/ioThreads"),
    (["--set", "config.ioThreads=257"], "/config/ioThreads"),
    (["--set", "config.openFiles=-1"], "/config/openFiles"),
    (["--set", "config.openFiles=1048577"], "/config/openFiles"),
    (["--set", "ha.enabled=yes"], "/ha/enabled"),
    (["--set", "ha.etcd.replicas=2"], "/ha/etcd/replicas"),
    (["--set", "image.repository=null"], "repository"),
    (["--set", "proxies=null"], "proxies"),
    (["--set", "replicas=3"], "replicas"),
    (["--set", "config.durability=sometimes"], "/config/durability"),
    (["--set", "targets.hostPath.path=relative/dir"], "/targets/hostPath/path"),
    (["--set", "auth.secretKey=short"], "/auth/secretKey"),
    (["--set", "tls.enabled=true"], "tls.secretName"),
    (["--set", "tls.requireClientCert=true"], "tls.requireClientCert needs tls.enabled"),
    (["--set", "tls.enabled=true,tls.secretName=silo-tls,tls.requireClientCert=yes"], "/tls/requireClientCert"),
    (["--set", "ha.enabled=true,ha.etcd.bundled=false"], "ha.etcd.endpoints"),
    (["--set", "config.keepaliveTimeoutMs=1500"], "keepaliveTimeoutMs"),
    (["--set", "fullnameOverride=a-very-long-name-that-makes-statefulset-names-too-long"], "fullnameOverride"),
]


def check_bad_values():
    for args, needle in BAD_VALUES:
        out = helm_template(args)
        what = " ".join(args)
        if check(out.returncode != 0, f"[schema] {what} was accepted"):
            check(needle in out.stderr, f"[schema] {what}: message does not name {needle!r}:\n{out.stderr}")


def check_notes():
    out = run([HELM, "install", RELEASE, CHART, "--namespace", NAMESPACE, "--dry-run=client"])
    if not check(out.returncode == 0, f"[notes] helm install --dry-run failed:\n{out.stderr}"):
        return
    notes = out.stdout.split("NOTES:", 1)[-1]
    for needle in ("aws --endpoint-url", "base64 -d", f"get secret {FULLNAME}-auth",
                   "silo -e $SILO_ENDPOINT --access-key $SILO_ACCESS_KEY --secret-key $SILO_SECRET_KEY",
                   "silo node decommission"):
        check(needle in notes, f"[notes] NOTES.txt lacks {needle!r}")


def find_silod():
    candidates = []
    if os.environ.get("SILO_BIN_DIR"):
        candidates.append(os.path.join(os.environ["SILO_BIN_DIR"], "silod"))
    candidates += [os.path.join(REPO, "build", b, "cmd", "silod", "silod") for b in ("ci", "release", "dev")]
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def start_silod(silod, args, tmp):
    log = open(os.path.join(tmp, "silod.log"), "w")
    # Not the caller's SILO_* settings (a shell that exported other keys): the rendered file's.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SILO_", "SILOD_"))}
    proc = subprocess.Popen([silod, *args, "--host=127.0.0.1", "--port=0", f"--data-dir={tmp}/data",
                             f"--ready-file={tmp}/ready.json"], stdout=log, stderr=subprocess.STDOUT, env=env)
    return proc


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def check_silod_accepts(case, silo_json, silod):
    """silod refuses unknown keys and bad values at start: it must start on the rendered file
    (with TLS, and certificate files where the pods mount the Secret's)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "silo.json")
        with open(config, "w") as f:
            f.write(silo_json)
        args = [f"--config={config}", "--role=proxy"]
        if "tls" in json.loads(silo_json)["node"]:
            certs = os.path.join(tmp, "tls")
            made = run([os.path.join(REPO, "deploy", "local", "tls-certs.sh"), certs])
            check(made.returncode == 0, f"[{case}] tls-certs.sh failed:\n{made.stderr}")
            args += [f"--tls-cert={certs}/node.pem", f"--tls-key={certs}/node-key.pem", f"--tls-ca={certs}/ca.pem"]
        proc = start_silod(silod, args, tmp)
        log_path = os.path.join(tmp, "silod.log")
        try:
            listening = wait_for(lambda: proc.poll() is not None or "listening on" in open(log_path).read(), 15)
            log = open(log_path).read()
            check(listening and proc.poll() is None, f"[{case}] silod refused the rendered silo.json:\n{log[-2000:]}")
        finally:
            stop(proc)


def exported_metrics(silod):
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_silod(silod, ["--role=all"], tmp)
        ready = os.path.join(tmp, "ready.json")
        try:
            if not wait_for(lambda: os.path.exists(ready) and os.path.getsize(ready) > 0, 30):
                check(False, f"[dashboard] silod --role all did not start:\n{open(os.path.join(tmp, 'silod.log')).read()[-2000:]}")
                return None
            port = json.load(open(ready))["port"]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                text = r.read().decode()
            return series_names(text)
        finally:
            stop(proc)


def series_names(text):
    """The series names a query may use, from Prometheus text.

    A family counts once its `# TYPE` line is there, with or without samples: gauge families
    print samples only when they have some (silo_jobs once a job ran, silo_job_* while one
    runs). A histogram `h` is queried as h_bucket, h_sum and h_count, a summary as h, h_sum
    and h_count; neither has a series named plain `h` beside those.
    """
    suffixes = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}
    names = set()
    for name, kind in re.findall(r"^# TYPE (\w+) (\w+)", text, re.M):
        names.update(name + s for s in suffixes.get(kind, ("",)))
    names.update(re.findall(r"^([a-zA-Z_:][\w:]*)[{ ]", text, re.M))
    return names


def check_dashboard_layout(dash):
    """Unique panel ids; panels inside the 24 columns and not on top of each other; a query in
    every panel but the rows (no text placeholders)."""
    ids = [p.get("id") for p in dash["panels"]]
    check(len(ids) == len(set(ids)) and None not in ids, f"[dashboard] panel ids not unique: {ids}")
    taken = {}
    overlaps = set()
    for i, p in enumerate(dash["panels"]):
        g = p["gridPos"]
        if not check(g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24 and g["h"] > 0,
                     f"[dashboard] panel {p['title']!r} outside the grid: {g}"):
            continue
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                other = taken.setdefault((x, y), i)
                if other != i:
                    overlaps.add((dash["panels"][other]["title"], p["title"]))
        if p["type"] != "row":
            check(p.get("targets"), f"[dashboard] panel {p['title']!r} ({p['type']}) queries nothing")
    for a, b in sorted(overlaps):
        check(False, f"[dashboard] panels {a!r} and {b!r} overlap")


def check_dashboard(silod):
    with open(os.path.join(CHART, "dashboards", "silo.json")) as f:
        dash = json.load(f)
    titles = " ".join(p["title"].lower() for p in dash["panels"])
    for topic in ("throughput", "latency", "errors", "capacity per mountpath", "jobs", "rebalance"):
        check(topic in titles, f"[dashboard] no panel about {topic}")
    check_dashboard_layout(dash)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    used = set(re.findall(r"\bsilo_[a-z0-9_]+", " ".join(exprs)))
    check(used, "[dashboard] names no silo metric")
    if silod is None:
        print("chart_test: no silod build: the dashboard's metric names are not checked against /metrics")
        return
    known = exported_metrics(silod)
    if known is not None:
        missing = sorted(used - known)
        check(not missing, f"[dashboard] metrics silod does not export: {missing}")


def value_paths(values, prefix=""):
    """Dotted paths of the values a user sets; objects passed through whole are one path."""
    whole = {"podSecurityContext", "containerSecurityContext", "resources", "affinity", "nodeSelector",
             "podAnnotations", "podLabels", "annotations", "labels", "cache", "extra", "commonLabels"}
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in whole:
            yield from value_paths(value, path + ".")
        else:
            yield path


def check_readme():
    """Every value of values.yaml is in the README's table, and nothing else is."""
    with open(os.path.join(CHART, "README.md")) as f:
        rows = [line for line in f if line.startswith("| `")]
    documented = set()
    for row in rows:
        documented.update(re.findall(r"`([A-Za-z][\w.]*)`", row.split("|")[1]))
    paths = set(value_paths(read_yaml_json(os.path.join(CHART, "values.yaml"))))
    missing = sorted(paths - documented)
    check(not missing, f"[readme] values not in helm/silo/README.md's table: {missing}")
    unknown = sorted(d for d in documented - paths if "." in d or d in ("replicas",))
    check(not unknown, f"[readme] README.md documents values that do not exist: {unknown}")


def main():
    if not os.access(HELM, os.X_OK):
        print(f"chart_test: SKIP: no helm at {HELM} (tools/setup_k8s_tools.sh installs it)")
        return 77
    if shutil.which("node") is None or not os.path.isdir(os.path.join(TOOLS, "node_modules", "kubernetes-models")):
        print(f"chart_test: node or the npm packages under {TOOLS} are missing (run tools/setup_k8s_tools.sh)")
        return 1
    cases = [("default", [])]
    for f in sorted(os.listdir(os.path.join(CHART, "ci"))):
        if f.endswith(".yaml"):
            cases.append((f"ci/{f}", ["-f", os.path.join(CHART, "ci", f)]))
    # The values that outside scripts set (CONTRACT.md "Kubernetes").
    cases.append(("scripted", ["--set", "proxies.replicas=3,targets.replicas=5,targets.mountpaths=3,ha.enabled=true"]))
    cases.append(("one-mountpath", ["--set", "targets.mountpaths=1,targets.replicas=1,podDisruptionBudget.enabled=false"]))
    cases.append(("mtls", ["--set", "tls.enabled=true,tls.secretName=silo-tls,tls.requireClientCert=true,"
                                    "ha.enabled=true,proxies.replicas=3,metrics.serviceMonitor.enabled=true"]))
    silod = find_silod()
    for case, args in cases:
        silo_json = check_case(case, args)
        if silo_json is not None and silod is not None:
            check_silod_accepts(case, silo_json, silod)
        print(f"chart_test: {case}: checked")
    if silod is None:
        print("chart_test: no silod build: rendered silo.json files were not started")
    check_bad_values()
    print(f"chart_test: {len(BAD_VALUES)} bad values: checked")
    check_notes()
    check_readme()
    check_dashboard(silod)
    for f in failures:
        print(f"FAIL {f}")
    print(f"chart_test: {'FAILED' if failures else 'OK'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
