"""A real Silo cluster for the integration tests: deploy/local/cluster.sh with the
binaries of SILO_BIN_DIR, else the repository's build/ci or build/release. SILO_KEEP=1
keeps the cluster's directory (config, logs, certificates) after down()."""

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACCESS_KEY = "py-test-admin"
SECRET_KEY = "py-test-secret-key-0123456789"


def find_bin_dir():
    """(directory holding silod, None) or (None, why not)."""
    candidates = []
    if os.environ.get("SILO_BIN_DIR"):
        candidates.append(os.environ["SILO_BIN_DIR"])
    for preset in ("ci", "release"):
        candidates.append(os.path.join(REPO, "build", preset, "cmd", "silod"))
    for d in candidates:
        if os.access(os.path.join(d, "silod"), os.X_OK):
            return d, None
    return None, "no silod binary (looked in %s; build it or set SILO_BIN_DIR)" % ", ".join(candidates)


class Cluster:
    """`tls=True`: cluster.sh up --tls (HTTPS only, https:// node URLs); `self.ca` is the
    cluster's CA (DIR/tls/ca.pem) for ca_bundle=, else None."""

    def __init__(self, bin_dir, proxies=1, targets=3, tls=False):
        self.dir = tempfile.mkdtemp(prefix="silo-py-")
        self.tls = bool(tls)
        self.ca = os.path.join(self.dir, "tls", "ca.pem") if self.tls else None
        self.script = os.path.join(REPO, "deploy", "local", "cluster.sh")
        self.env = dict(os.environ, SILO_BIN_DIR=bin_dir, SILO_ACCESS_KEY=ACCESS_KEY,
                        SILO_SECRET_KEY=SECRET_KEY, SILO_DURABILITY="page_cache",
                        SILO_KEEPALIVE_TIMEOUT_MS="3000")
        self.env.pop("SILO_ENDPOINT", None)
        args = [self.script, "up", "--proxies", str(proxies), "--targets", str(targets),
                "--base-port", "0", "--dir", self.dir]
        if self.tls:
            args.append("--tls")
        out = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=180)
        if out.returncode != 0:
            logs = self.log_tails()  # down() removes them (unless SILO_KEEP)
            self.down()
            raise RuntimeError("cluster.sh up failed:\n%s\n%s%s" % (out.stdout, out.stderr, logs))
        self.refresh()

    def log_tails(self, lines=5):
        """The last lines of every node's silod.log, for an error message."""
        nodes = os.path.join(self.dir, "nodes")
        text = ""
        for node in sorted(os.listdir(nodes)) if os.path.isdir(nodes) else []:
            try:
                with open(os.path.join(nodes, node, "silod.log"), errors="replace") as f:
                    tail = f.read().splitlines()[-lines:]
            except OSError:
                continue
            text += "\n-- %s/silod.log:\n%s" % (node, "\n".join(tail))
        return text

    def refresh(self):
        out = subprocess.run([self.script, "status", "--json", "--dir", self.dir], env=self.env,
                             capture_output=True, text=True, check=True)
        self.status = json.loads(out.stdout)
        self.endpoint = self.status["endpoint"]
        self.nodes = {n["id"]: n for n in self.status["nodes"]}
        return self.status

    def targets(self):
        return [n for n in self.status["nodes"] if n["role"] == "target"]

    def kill(self, node_id):
        os.kill(self.nodes[node_id]["pid"], signal.SIGKILL)

    def ssl_context(self):
        """An SSLContext that trusts the cluster's CA and presents the node certificate
        (for clusters started with SILO_TLS_REQUIRE_CLIENT_CERT=true); None without TLS."""
        if not self.tls:
            return None
        ctx = ssl.create_default_context(cafile=self.ca)
        cert = os.path.join(self.dir, "tls", "node.pem")
        key = os.path.join(self.dir, "tls", "node-key.pem")
        if os.path.exists(cert) and os.path.exists(key):
            ctx.load_cert_chain(cert, key)
        return ctx

    def metric(self, url, name):
        import urllib.request
        total = 0.0
        ctx = self.ssl_context() if url.startswith("https://") else None
        with urllib.request.urlopen(url + "/metrics", timeout=10, context=ctx) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name) and (line[len(name)] in " {"):
                    total += float(line.rsplit(" ", 1)[1])
        return total

    def down(self):
        subprocess.run([self.script, "down", "--dir", self.dir], env=self.env,
                       capture_output=True, timeout=120)
        if os.environ.get("SILO_KEEP"):
            print("SILO_KEEP: the cluster's directory is kept: %s" % self.dir, file=sys.stderr)
            return
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Moto:
    """moto_server (the machine image's python3 has it) on a free loopback port."""

    ACCESS_KEY = "test-key"
    SECRET_KEY = "test-secret"

    def __init__(self):
        exe = shutil.which("moto_server")
        if exe is None:
            raise RuntimeError("moto_server is not on PATH")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto_server did not start")
                time.sleep(0.1)

    def request(self, method, path, body=b""):
        import hashlib
        import http.client

        from silo import _sigv4
        payload = hashlib.sha256(body).hexdigest()
        headers = {"Host": "127.0.0.1:%d" % self.port, "x-amz-date": _sigv4.amz_date(),
                   "x-amz-content-sha256": payload}
        headers["Authorization"] = _sigv4.sign(method, path, "", headers, payload,
                                               self.ACCESS_KEY, self.SECRET_KEY)
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        if r.status >= 300:
            raise RuntimeError("moto %s %s: HTTP %d %s" % (method, path, r.status, data[:200]))
        return data

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
