#!/usr/bin/env python3
"""The chart's rendered pods, run as local processes (issue 22, docs/kubernetes.md).

No Kubernetes cluster runs on these machines, so this test plays the parts of one that
matter to Silo, with the manifests `helm template` renders:

- each pod of each StatefulSet runs its rendered command, arguments (with Kubernetes'
  `$(VAR)` expansion) and environment (downward API, Secret keys), as user 65532 in a
  chroot of the image's root file system (deploy/container/rootfs.sh), read-only, with
  its volumes mounted where the pod says (ConfigMap and Secret files, one directory per
  PersistentVolumeClaim that outlives the pod, hostPath, emptyDir);
- each pod has its own network namespace and address on a bridge, and its DNS name
  (`POD.HEADLESS.NS.svc.cluster.local`) in an /etc/hosts that every pod and the test see
  (a private mount namespace); a restarted pod comes back at a new address, as it does
  in Kubernetes, and the names are rewritten;
- the client Service is a TCP proxy at its own address and DNS name that sends each
  connection to a Ready pod that its selector matches, like kube-proxy (Ready: its
  readiness probe passed after it started; it leaves the Service when it is stopped);
- a rolling restart does what the StatefulSet controller does: from the highest ordinal
  down, one pod at a time: out of the Service, SIGTERM, SIGKILL after the pod's
  terminationGracePeriodSeconds, the same name and volumes back, ready before the next.

Checked: the cluster forms (every node online in the map), aws-cli and the silo CLI work
through the Service's name, and a reader of a copies=2 bucket through the Service sees
no failed GET while every StatefulSet restarts (the targets, then the proxies; with
`--ha`, also the bundled etcd), and while a fourth target joins (a rebalance gives it
its share), is decommissioned, is started again by the "kubelet" and stays out (health
503 "decommissioned"), and is scaled away; with `--ha` that target joins through proxy 0
while another proxy is the primary. Needs root (network and mount namespaces), helm
(tools/setup_k8s_tools.sh) and, for --ha, etcd; exits 77 (skipped) without them.

    python3 test/helm/pods_test.py [--ha] [--keep]   (SILO_BIN_DIR: the silod to run)
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube import NAMESPACE, RELEASE, Cluster, Manifests, log, run, skip  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACCESS_KEY = "k8s-admin"
SECRET_KEY = "k8s-secret-key-0123"


def find_helm():
    for path in (os.path.join(REPO, "build/tools/k8s/bin/helm"), os.path.join(REPO, "build/tools/k8s/helm"),
                 shutil.which("helm")):
        if path and os.access(path, os.X_OK):
            return path
    return None


# --- clients --------------------------------------------------------------------------

def client_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SILO_", "AWS_"))}
    env.update(AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_DEFAULT_REGION="us-east-1",
               AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    return env


def silo_cli(cluster, *args):
    cli = os.path.join(os.path.dirname(os.environ["SILO_BIN_DIR"]), "silo", "silo")
    return run([cli, "-e", cluster.service_url, "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, *args],
               env=client_env())


def aws(cluster, *args, **kwargs):
    return run(["aws", "--endpoint-url", cluster.service_url, "s3", *args], env=client_env(), **kwargs)


class Reader(threading.Thread):
    """GETs random objects through the Service until stopped; counts failed GETs."""

    def __init__(self, url, bucket, objects):
        super().__init__(daemon=True)
        import boto3
        from botocore.config import Config
        self.s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=ACCESS_KEY,
                               aws_secret_access_key=SECRET_KEY, region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"},
                                             retries={"mode": "standard", "max_attempts": 3},
                                             connect_timeout=5, read_timeout=30))
        self.bucket = bucket
        self.objects = objects
        self.gets = 0
        self.failures = []
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.is_set():
            name, body = random.choice(list(self.objects.items()))
            try:
                got = self.s3.get_object(Bucket=self.bucket, Key=name)["Body"].read()
                if got != body:
                    self.failures.append(f"{name}: other bytes")
            except Exception as e:
                self.failures.append(f"{time.strftime('%H:%M:%S')} {name}: {e}")
            self.gets += 1
            time.sleep(0.01)


# --- the test -------------------------------------------------------------------------

def render(helm, values, workdir):
    path = os.path.join(workdir, "values.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(values, f)
    out = run([helm, "template", RELEASE, os.path.join(REPO, "helm/silo"), "--namespace", NAMESPACE,
               "-f", path]).stdout
    return Manifests(list(yaml.safe_load_all(out)))


def check_map(cluster, expected_nodes):
    text = silo_cli(cluster, "--json", "cluster", "show").stdout
    doc = json.loads(text)
    nodes = doc.get("nodes", doc.get("map", {}).get("nodes", []))
    online = sorted(n["id"] for n in nodes if n.get("state", "online") == "online")
    assert online == sorted(expected_nodes), f"online nodes {online}, want {sorted(expected_nodes)}: {text}"


def health_of(pod):
    """(HTTP status, "status" of the body) of the pod's /v1/health, or (0, error)."""
    try:
        with urllib.request.urlopen(f"http://{pod.address}:8080/v1/health", timeout=2) as r:
            return r.status, json.loads(r.read()).get("status")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}").get("status")
    except Exception as e:
        return 0, str(e)


def rebalance_ids(cluster):
    jobs = json.loads(silo_cli(cluster, "--json", "job", "ls").stdout)["jobs"]
    return {j["id"] for j in jobs if j["kind"] == "rebalance"}


def wait_for_new_rebalance(cluster, before, timeout=120):
    deadline = time.time() + timeout
    while True:
        jobs = json.loads(silo_cli(cluster, "--json", "job", "ls").stdout)["jobs"]
        new = [j for j in jobs if j["kind"] == "rebalance" and j["id"] not in before]
        if new and all(j["state"] == "finished" for j in new):
            return
        assert time.time() < deadline, f"no new rebalance finished: {new}"
        time.sleep(1)


def wait_for_map(cluster, expected_nodes, timeout=60):
    deadline = time.time() + timeout
    while True:
        try:
            check_map(cluster, expected_nodes)
            return
        except (AssertionError, RuntimeError):
            if time.time() > deadline:
                raise
            time.sleep(1)


def scenario(args, helm, workdir):
    values = {
        "auth": {"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY},
        "proxies": {"replicas": 2},
        "targets": {"replicas": 3, "mountpaths": 2},
        "config": {"keepaliveIntervalMs": 500, "keepaliveTimeoutMs": 3000},
    }
    if args.ha:
        values["ha"] = {"enabled": True, "etcd": {"bundled": True}}
    manifests = render(helm, values, workdir)
    rootfs = os.path.join(workdir, "rootfs")
    bin_dir = os.environ["SILO_BIN_DIR"]
    run([os.path.join(REPO, "deploy/container/rootfs.sh"), rootfs, "--silod", os.path.join(bin_dir, "silod"),
         "--silo", os.path.join(os.path.dirname(bin_dir), "silo", "silo")])
    os.makedirs(os.path.join(rootfs, "etc"), exist_ok=True)
    if not os.path.exists(os.path.join(rootfs, "etc/hosts")):
        open(os.path.join(rootfs, "etc/hosts"), "w").close()
    cluster = Cluster(manifests, workdir, rootfs)
    try:
        log(f"starting {len(cluster.pods)} pods: {[p.name for p in cluster.pods]}")
        cluster.start_all()
        cluster.wait_ready(cluster.pods)
        silo_pods = [p.name for p in cluster.pods if p.container.get("command", [""])[0].startswith("/usr/bin/silo")]
        wait_for_map(cluster, silo_pods)
        log("the cluster formed: every pod online in the node map")

        # aws-cli and the CLI through the client Service's name.
        silo_cli(cluster, "bucket", "create", "k8s", "copies=2")
        src = os.path.join(workdir, "hello.txt")
        with open(src, "w") as f:
            f.write("hello from a pod\n")
        aws(cluster, "cp", src, "s3://k8s/hello.txt")
        listed = aws(cluster, "ls", "s3://k8s/").stdout
        assert "hello.txt" in listed, listed
        got = silo_cli(cluster, "cat", "k8s/hello.txt").stdout
        assert got == "hello from a pod\n", got

        objects = {f"obj-{i:03}": os.urandom(random.randint(1, 200_000)) for i in range(60)}
        reader = Reader(cluster.service_url, "k8s", objects)
        for name, body in objects.items():
            reader.s3.put_object(Bucket="k8s", Key=name, Body=body)
        reader.start()
        sets = [s for s in cluster.sets if s.endswith("-target")] + [s for s in cluster.sets if s.endswith("-proxy")]
        sets += [s for s in cluster.sets if s not in sets]
        for name in sets:
            cluster.rolling_restart(name)
        time.sleep(2)
        reader.stopped.set()
        reader.join()
        log(f"reader: {reader.gets} GETs, {len(reader.failures)} failed")
        assert reader.gets > 50, reader.gets
        assert not reader.failures, reader.failures[:10]
        for name, body in objects.items():
            assert reader.s3.get_object(Bucket="k8s", Key=name)["Body"].read() == body, name
        wait_for_map(cluster, silo_pods)
        log("after the rolling restart: every pod online, every object intact")

        # Scaling the targets up: the new pod joins and a rebalance gives it its share;
        # down: decommission it (its objects move off), then the StatefulSet removes it
        # (docs/kubernetes.md "Scaling"). The reader runs through both.
        targets = next(s for s in cluster.sets if s.endswith("-target"))
        primary = json.loads(silo_cli(cluster, "--json", "cluster", "show").stdout)["primary"]
        if args.ha and primary == f"{RELEASE}-proxy-0":
            # The new target must join through proxy 0 (its --primary) while another
            # proxy holds the role: proxy 0, stopped, hands the role over.
            proxy0 = cluster.sets[f"{RELEASE}-proxy"][0]
            proxy0.stop()
            # Started again before another proxy has taken the role, proxy 0 may win the
            # election again: wait for the handover first.
            deadline = time.time() + 30
            while True:
                try:
                    primary = json.loads(silo_cli(cluster, "--json", "cluster", "show").stdout)["primary"]
                except (RuntimeError, ValueError, KeyError):
                    primary = ""
                if primary and primary != f"{RELEASE}-proxy-0":
                    break
                assert time.time() < deadline, "no other proxy took the primary role from proxy 0"
                time.sleep(0.5)
            proxy0.start()
            cluster.wait_ready([proxy0])
            wait_for_map(cluster, silo_pods)
            primary = json.loads(silo_cli(cluster, "--json", "cluster", "show").stdout)["primary"]
            assert primary != f"{RELEASE}-proxy-0", primary
        log(f"the primary: {primary}")
        before = rebalance_ids(cluster)
        reader = Reader(cluster.service_url, "k8s", objects)
        reader.start()
        added = cluster.scale_up(targets)
        wait_for_map(cluster, silo_pods + [added.name])
        wait_for_new_rebalance(cluster, before)
        log(f"{added.name} joined and a rebalance gave it its share")
        silo_cli(cluster, "node", "decommission", added.name, "--wait")
        wait_for_map(cluster, silo_pods)
        added.process.wait(timeout=60)  # it leaves and exits; the kubelet starts it again
        added.stop()
        added.start()
        deadline = time.time() + 60
        while health_of(added) != (503, "decommissioned"):
            assert time.time() < deadline, f"{added.name} restarted: health {health_of(added)}"
            time.sleep(0.5)
        time.sleep(3)
        check_map(cluster, silo_pods)  # it did not join again
        added.stop()  # the StatefulSet scaled down
        cluster.sets[targets].remove(added)
        cluster.pods.remove(added)
        reader.stopped.set()
        reader.join()
        log(f"reader while scaling: {reader.gets} GETs, {len(reader.failures)} failed")
        assert not reader.failures, reader.failures[:10]
        for name, body in objects.items():
            assert reader.s3.get_object(Bucket="k8s", Key=name)["Body"].read() == body, name
        log("scaled up and back down: every object intact")
    finally:
        cluster.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ha", action="store_true", help="HA: proxies on a bundled 3-member etcd")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    if os.geteuid() != 0:
        skip("needs root (network and mount namespaces)")
    helm = find_helm()
    if helm is None:
        skip("no helm (tools/setup_k8s_tools.sh installs it)")
    for tool in ("ip", "unshare", "chroot", "aws"):
        if shutil.which(tool) is None:
            skip(f"no {tool}")
    if "SILO_BIN_DIR" not in os.environ:
        os.environ["SILO_BIN_DIR"] = os.path.join(REPO, "build/ci/cmd/silod")
    if os.environ.get("SILO_PODS_TEST_NS") != "1":
        # A private mount namespace: the pods' /etc/hosts is bound over this machine's
        # only in here.
        os.environ["SILO_PODS_TEST_NS"] = "1"
        os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, *sys.argv])
    workdir = tempfile.mkdtemp(prefix="silo-pods-")
    hosts = os.path.join(workdir, "hosts")
    open(hosts, "w").close()
    ok = False
    try:
        subprocess.run(["mount", "--bind", hosts, "/etc/hosts"], check=True)
        scenario(args, helm, workdir)
        ok = True
    finally:
        if ok and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"work directory (logs/): {workdir}", flush=True)
    print("PASSED", flush=True)


if __name__ == "__main__":
    main()
