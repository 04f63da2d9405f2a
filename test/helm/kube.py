"""A small Kubernetes for tests: the parts of one that Silo's chart relies on, played by
local processes (test/helm/pods_test.py says how and why).

- `Manifests`: the objects `helm template` rendered; `expand()`: `$(VAR)` expansion.
- `Network`: a bridge, a network namespace and address per pod, one /etc/hosts for all.
- `Pod`: a StatefulSet's pod run as its container would (rendered command, args, env,
  volumes, user) in a chroot of its image; stop() is the kubelet's SIGTERM then SIGKILL.
- `ServiceProxy`: kube-proxy for one Service port, over the Ready pods it selects.
- `Cluster`: the pods of every StatefulSet, the client Service, rolling restarts and
  scaling up as the StatefulSet controller does them.
"""
import base64
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

NAMESPACE = "silo-test"
RELEASE = "silo"
DOMAIN = "cluster.local"


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, flush=True)


def skip(why):
    print(f"SKIPPED: {why}", flush=True)
    sys.exit(77)


def run(cmd, **kwargs):
    r = subprocess.run(cmd, text=True, capture_output=True, **kwargs)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


# --- Kubernetes semantics -------------------------------------------------------------

def expand(text, env):
    """Kubernetes' $(VAR) expansion: defined names are replaced, $$ is a literal $."""
    def replace(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", replace, text)


class Manifests:
    def __init__(self, docs):
        self.docs = [d for d in docs if d]

    def of_kind(self, kind):
        return [d for d in self.docs if d.get("kind") == kind]

    def named(self, kind, name):
        for d in self.of_kind(kind):
            if d["metadata"]["name"] == name:
                return d
        raise KeyError(f"no {kind} {name} in the rendered chart")


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


# --- the network ----------------------------------------------------------------------

class Network:
    """A bridge with the test's address, a namespace per pod, an /etc/hosts for all."""

    def __init__(self, workdir):
        self.tag = f"{os.getpid() % 100000}"
        self.bridge = f"silok{self.tag}"
        # A /16 in 10.200-249 that no interface uses.
        used = run(["ip", "-o", "-4", "addr"]).stdout
        for _ in range(100):
            second = random.randint(200, 249)
            if f" 10.{second}." not in used:
                break
        self.prefix = f"10.{second}"
        self.next_host = 2
        self.gateway = f"{self.prefix}.0.1"
        self.names = {}  # DNS name -> address
        self.hosts_path = os.path.join(workdir, "hosts")
        self.namespaces = []
        self.links = []
        run(["ip", "link", "add", self.bridge, "type", "bridge"])
        run(["ip", "addr", "add", f"{self.gateway}/16", "dev", self.bridge])
        run(["ip", "link", "set", self.bridge, "up"])
        self.write_hosts()

    def new_address(self):
        n = self.next_host
        self.next_host += 1
        return f"{self.prefix}.{n // 250}.{n % 250 + 2}"

    def add_service_address(self):
        address = self.new_address()
        run(["ip", "addr", "add", f"{address}/16", "dev", self.bridge])
        return address

    def add_pod(self, pod_name):
        """A fresh namespace with a fresh address; returns (namespace, address)."""
        address = self.new_address()
        n = address.split(".")[-2] + "x" + address.split(".")[-1]
        ns = f"silok{self.tag}-{n}"
        host_end, pod_end = f"vk{self.tag}h{n}"[:15], f"vk{self.tag}p{n}"[:15]
        run(["ip", "netns", "add", ns])
        run(["ip", "link", "add", host_end, "type", "veth", "peer", "name", pod_end])
        run(["ip", "link", "set", host_end, "master", self.bridge, "up"])
        run(["ip", "link", "set", pod_end, "netns", ns])
        run(["ip", "-n", ns, "addr", "add", f"{address}/16", "dev", pod_end])
        run(["ip", "-n", ns, "link", "set", pod_end, "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        run(["ip", "-n", ns, "route", "add", "default", "via", self.gateway])
        self.namespaces.append(ns)
        self.links.append(host_end)
        return ns, address

    def drop_pod(self, ns):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def set_name(self, name, address):
        self.names[name] = address
        self.write_hosts()

    def write_hosts(self):
        text = "127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for n, a in sorted(self.names.items()))
        # In place (one write), so every bind mount of the file sees it.
        with open(self.hosts_path, "r+" if os.path.exists(self.hosts_path) else "w") as f:
            f.seek(0)
            f.write(text)
            f.truncate()

    def close(self):
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


# --- pods -----------------------------------------------------------------------------

class Pod:
    def __init__(self, cluster, sts, ordinal):
        self.cluster = cluster
        self.sts = sts
        self.ordinal = ordinal
        self.name = f"{sts['metadata']['name']}-{ordinal}"
        spec = sts["spec"]
        self.template = spec["template"]
        self.labels = dict(self.template["metadata"].get("labels", {}))
        self.dns = f"{self.name}.{spec['serviceName']}.{NAMESPACE}.svc.{DOMAIN}"
        self.pod_spec = self.template["spec"]
        self.container = self.pod_spec["containers"][0]
        self.grace = self.pod_spec.get("terminationGracePeriodSeconds", 30)
        self.process = None
        self.ns = None
        self.address = None
        self.ready = False
        self.log_path = os.path.join(cluster.workdir, "logs", f"{self.name}.log")

    def user(self):
        """(uid, gid) the container runs as."""
        security = self.container.get("securityContext", {})
        pod_security = self.pod_spec.get("securityContext", {})
        uid = security.get("runAsUser", pod_security.get("runAsUser", 0))
        gid = security.get("runAsGroup", pod_security.get("runAsGroup", uid))
        return uid, gid

    def environment(self):
        env = {}
        for item in self.container.get("env", []):
            if "value" in item:
                env[item["name"]] = expand(str(item["value"]), env)
                continue
            source = item["valueFrom"]
            if "fieldRef" in source:
                field = source["fieldRef"]["fieldPath"]
                env[item["name"]] = {"metadata.name": self.name, "metadata.namespace": NAMESPACE,
                                     "status.podIP": self.address, "spec.nodeName": "node-1"}[field]
            elif "secretKeyRef" in source:
                ref = source["secretKeyRef"]
                env[item["name"]] = self.cluster.secret_value(ref["name"], ref["key"])
            elif "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                env[item["name"]] = self.cluster.manifests.named("ConfigMap", ref["name"])["data"][ref["key"]]
            else:
                raise ValueError(f"{self.name}: env {item['name']}: {source} is not emulated")
        return env

    def volume_dirs(self):
        """mountPath -> (host directory or file, read-only)."""
        claims = {c["metadata"]["name"] for c in self.sts["spec"].get("volumeClaimTemplates", [])}
        volumes = {v["name"]: v for v in self.pod_spec.get("volumes", [])}
        out = []
        for mount in self.container.get("volumeMounts", []):
            name = mount["name"]
            ro = mount.get("readOnly", False)
            if name in claims:
                # A PVC: <claim>-<pod>, kept across restarts.
                path = os.path.join(self.cluster.workdir, "pvc", f"{name}-{self.name}")
                if not os.path.isdir(path):
                    os.makedirs(path)
                    os.chown(path, *self.user())  # as fsGroup would
            else:
                v = volumes[name]
                path = os.path.join(self.cluster.workdir, "pods", self.name, "volumes", name)
                if "configMap" in v or "secret" in v:
                    shutil.rmtree(path, ignore_errors=True)
                    os.makedirs(path)
                    if "configMap" in v:
                        data = self.cluster.manifests.named("ConfigMap", v["configMap"]["name"]).get("data", {})
                    else:
                        data = {k: self.cluster.secret_value(v["secret"]["secretName"], k)
                                for k in self.cluster.secret_keys(v["secret"]["secretName"])}
                    for key, value in data.items():
                        with open(os.path.join(path, key), "w") as f:
                            f.write(value)
                    ro = True
                elif "emptyDir" in v:
                    shutil.rmtree(path, ignore_errors=True)
                    os.makedirs(path)
                    os.chmod(path, 0o1777)
                elif "hostPath" in v:
                    path = os.path.join(self.cluster.workdir, "hostpath", v["hostPath"]["path"].lstrip("/"))
                    os.makedirs(path, exist_ok=True)
                    os.chown(path, *self.user())
                elif "persistentVolumeClaim" in v:
                    path = os.path.join(self.cluster.workdir, "pvc", v["persistentVolumeClaim"]["claimName"])
                    os.makedirs(path, exist_ok=True)
                    os.chown(path, *self.user())
                else:
                    raise ValueError(f"{self.name}: volume {name}: {v} is not emulated")
            if "subPath" in mount:
                path = os.path.join(path, mount["subPath"])
            out.append((mount["mountPath"], path, ro))
        return out

    def start(self):
        self.ns, self.address = self.cluster.network.add_pod(self.name)
        self.cluster.network.set_name(self.dns, self.address)
        env = self.environment()
        command = [expand(c, env) for c in self.container.get("command", [])]
        args = [expand(a, env) for a in self.container.get("args", [])]
        argv = command + args
        rootfs = self.cluster.rootfs_for(argv[0])
        root = os.path.join(self.cluster.workdir, "pods", self.name, "root")
        os.makedirs(root, exist_ok=True)
        # The container: the image read-only, its volumes, the shared /etc/hosts.
        script = [f"mount --bind {q(rootfs)} {q(root)}", f"mount -o remount,bind,ro {q(root)}"]
        for mount_path, host, ro in self.volume_dirs():
            target = root + mount_path
            script.append(f"mount --bind {q(host)} {q(target)}")
            if ro:
                script.append(f"mount -o remount,bind,ro {q(target)}")
        script.append(f"mount --bind {q(self.cluster.network.hosts_path)} {q(root + '/etc/hosts')}")
        uid, gid = self.user()
        script.append(f"exec chroot --userspec={uid}:{gid} {q(root)} " + " ".join(q(a) for a in argv))
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        log_file = open(self.log_path, "a")
        log_file.write(f"--- start at {self.address}: {' '.join(argv)}\n")
        log_file.flush()
        # ip netns exec and unshare exec: the process is the pod's, and gets its signals.
        self.process = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, "unshare", "--mount", "--propagation", "private",
             "sh", "-c", "\n".join(script)],
            env={k: v for k, v in env.items()} | {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            stdout=log_file, stderr=subprocess.STDOUT, cwd="/", start_new_session=True)
        log_file.close()
        self.ready = False

    def probe(self, kind="readinessProbe"):
        spec = self.container.get(kind)
        if spec is None or self.process is None or self.process.poll() is not None:
            return self.process is not None and self.process.poll() is None
        get = spec["httpGet"]
        port = get["port"]
        if isinstance(port, str):
            port = next(p["containerPort"] for p in self.container["ports"] if p["name"] == port)
        try:
            with urllib.request.urlopen(f"http://{self.address}:{port}{get['path']}", timeout=2) as r:
                return 200 <= r.status < 400
        except Exception:
            return False

    def stop(self):
        """What the kubelet does: SIGTERM, SIGKILL after the grace period."""
        if self.process is None:
            return
        self.ready = False
        began = time.time()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=self.grace)
            except subprocess.TimeoutExpired:
                log(f"{self.name}: still running after {self.grace} s: SIGKILL")
                self.process.kill()
                self.process.wait()
        log(f"{self.name}: stopped in {time.time() - began:.1f} s (exit {self.process.returncode})")
        self.cluster.network.drop_pod(self.ns)
        self.process = None


def q(text):
    return "'" + str(text).replace("'", "'\\''") + "'"


# --- the Service ----------------------------------------------------------------------

class ServiceProxy:
    """kube-proxy for one Service port: each connection to a random ready endpoint."""

    def __init__(self, cluster, service, address):
        self.cluster = cluster
        self.selector = service["spec"]["selector"]
        port = service["spec"]["ports"][0]
        self.port = port["port"]
        self.target_port = port.get("targetPort", self.port)
        self.address = address
        self.listener = socket.create_server((address, self.port))
        self.stopped = False
        threading.Thread(target=self.accept, daemon=True).start()

    def endpoints(self):
        return [p for p in self.cluster.pods if p.ready and matches(self.selector, p.labels)]

    def accept(self):
        while not self.stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.forward, args=(client,), daemon=True).start()

    def forward(self, client):
        ready = self.endpoints()
        if not ready:
            client.close()
            return
        pod = random.choice(ready)
        port = self.target_port
        if isinstance(port, str):
            port = next(p["containerPort"] for p in pod.container["ports"] if p["name"] == port)
        try:
            upstream = socket.create_connection((pod.address, port), timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)

        def pump(src, dst):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (dst,):
                    try:
                        s.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass

        t = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        t.start()
        pump(client, upstream)
        t.join()
        client.close()
        upstream.close()

    def close(self):
        self.stopped = True
        self.listener.close()


# --- the cluster ----------------------------------------------------------------------

class Cluster:
    def __init__(self, manifests, workdir, silo_rootfs):
        self.manifests = manifests
        self.workdir = workdir
        self.silo_rootfs = silo_rootfs
        self.other_rootfs = {}
        self.network = Network(workdir)
        self.pods = []
        self.sets = {}
        for sts in manifests.of_kind("StatefulSet"):
            pods = [Pod(self, sts, i) for i in range(sts["spec"].get("replicas", 1))]
            self.sets[sts["metadata"]["name"]] = pods
            self.pods += pods
        for pod in self.pods:
            for path, _, _ in pod.volume_dirs():
                self.make_mount_point(pod.container.get("command", ["?"])[0], path)
        self.services = []
        svc = manifests.named("Service", RELEASE)
        address = self.network.add_service_address()
        self.service_url = f"http://{RELEASE}.{NAMESPACE}.svc.{DOMAIN}:{svc['spec']['ports'][0]['port']}"
        self.network.set_name(f"{RELEASE}.{NAMESPACE}.svc.{DOMAIN}", address)
        self.services.append(ServiceProxy(self, svc, address))

    def secret_keys(self, name):
        secret = self.manifests.named("Secret", name)
        return list(secret.get("data", {})) + list(secret.get("stringData", {}))

    def secret_value(self, name, key):
        secret = self.manifests.named("Secret", name)
        if key in secret.get("stringData", {}):
            return secret["stringData"][key]
        return base64.b64decode(secret["data"][key]).decode()

    def rootfs_for(self, program):
        if program.startswith("/usr/bin/silo"):
            return self.silo_rootfs
        # Another image (etcd): its binary from this machine, with its libraries.
        name = os.path.basename(program)
        if name not in self.other_rootfs:
            binary = shutil.which(name)
            if binary is None:
                skip(f"{name} is not installed (the chart runs it)")
            root = os.path.join(self.workdir, "images", name)
            os.makedirs(os.path.join(root, "usr/bin"))
            shutil.copy(binary, os.path.join(root, "usr/bin", name))
            libraries = subprocess.run(["ldd", binary], text=True, capture_output=True).stdout
            for lib in re.findall(r"(/\S+\.so[.\d]*)", libraries):
                dest = root + lib
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy(lib, dest)
            for d in ("etc", "tmp"):
                os.makedirs(os.path.join(root, d), exist_ok=True)
            open(os.path.join(root, "etc/hosts"), "w").close()
            with open(os.path.join(root, "etc/nsswitch.conf"), "w") as f:
                f.write("hosts: files dns\n")
            self.other_rootfs[name] = root
        return self.other_rootfs[name]

    def make_mount_point(self, program, path):
        root = self.rootfs_for(program if program.startswith("/") else program)
        os.makedirs(root + path, exist_ok=True)

    def start_all(self):
        for pod in self.pods:
            pod.start()

    def wait_ready(self, pods, timeout=180):
        deadline = time.time() + timeout
        pending = list(pods)
        while pending:
            for pod in list(pending):
                if pod.process.poll() is not None:
                    raise RuntimeError(f"{pod.name} exited ({pod.process.returncode}); log: {tail(pod.log_path)}")
                if pod.probe():
                    pod.ready = True
                    pending.remove(pod)
            if pending and time.time() > deadline:
                raise RuntimeError(f"not ready after {timeout} s: {[p.name for p in pending]}; "
                                   f"{pending[0].name}'s log: {tail(pending[0].log_path)}")
            time.sleep(0.3)

    def rolling_restart(self, set_name):
        """The StatefulSet controller's RollingUpdate: highest ordinal first, one at a time."""
        for pod in reversed(self.sets[set_name]):
            log(f"rolling {pod.name}")
            pod.stop()
            pod.start()
            self.wait_ready([pod])
            log(f"{pod.name} ready again at {pod.address}")

    def scale_up(self, set_name):
        """One more replica: the next ordinal, started and Ready."""
        pods = self.sets[set_name]
        pod = Pod(self, pods[0].sts, len(pods))
        for path, _, _ in pod.volume_dirs():
            self.make_mount_point(pod.container.get("command", ["?"])[0], path)
        pods.append(pod)
        self.pods.append(pod)
        pod.start()
        self.wait_ready([pod])
        return pod

    def close(self):
        for s in self.services:
            s.close()
        for pod in self.pods:
            if pod.process is not None and pod.process.poll() is None:
                pod.process.kill()
                pod.process.wait()
        self.network.close()


def tail(path, lines=15):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)"
