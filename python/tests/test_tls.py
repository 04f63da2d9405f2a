"""The client over TLS without silod: a CA and certificates made with the openssl CLI,
and a small threaded HTTPS server in this process that answers what the calls need (the
node map, a bucket's props, an object)."""

import http.server
import json
import os
import pickle
import shutil
import socket
import ssl
import subprocess
import threading
import time

import pytest

import silo

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl CLI")

BODY = b"hello over TLS"
TLS_ENV = ("SILO_CA_BUNDLE", "SILO_CLIENT_CERT", "SILO_CLIENT_KEY")


def _openssl(cwd, *args):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


def _leaf(d, ca, name, cn, extensions):
    """NAME.key and NAME.pem signed by the CA `ca` (CA.key, CA.pem)."""
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write(extensions + "basicConstraints=CA:FALSE\nsubjectKeyIdentifier=hash\n"
                "authorityKeyIdentifier=keyid,issuer\n")
    _openssl(d, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn)
    _openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
             "-set_serial", str(abs(hash(name)) % 10**9 + 1), "-days", "2",
             "-extfile", name + ".ext", "-out", name + ".pem")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("pki"))
    for ca in ("ca", "other-ca"):
        _openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "2",
                 "-subj", "/CN=silo test " + ca)
    server = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
    _leaf(d, "ca", "server", "localhost", server)
    _leaf(d, "ca", "misnamed", "elsewhere", "subjectAltName=DNS:elsewhere.example\n"
          "extendedKeyUsage=serverAuth\n")
    _leaf(d, "ca", "client", "silo-test-client", "extendedKeyUsage=clientAuth\n")
    _leaf(d, "other-ca", "stranger", "stranger", "extendedKeyUsage=clientAuth\n")
    return lambda name: os.path.join(d, name)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client's pools reuse connections

    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        peer = self.connection.getpeercert() if hasattr(self.connection, "getpeercert") else None
        with srv.lock:
            srv.requests.append((self.headers.get("Host"), self.path,
                                 dict(x[0] for x in peer["subject"]) if peer else None))
        if self.path == "/v1/cluster/map":
            body = json.dumps({"version": 1, "nodes": [
                {"id": "p1", "role": "proxy", "url": srv.url, "state": "online", "mode": "normal"},
                {"id": "t1", "role": "target", "url": srv.target_url, "state": "online",
                 "mode": "normal"}]}).encode()
        elif self.path == "/v1/buckets/b/props":
            body = json.dumps({"name": "b", "id": 7, "props": {}}).encode()
        elif self.path.startswith("/v1/objects/b/") or self.path == "/v1/health":
            body = BODY
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Silo-Node-Map-Version", "1")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_HEAD = do_GET


class _Server(http.server.ThreadingHTTPServer):
    """HTTPS (or plain HTTP with ctx None) on 127.0.0.1; the handshake runs in each
    connection's thread. Counts connections, so that a test can tell retries. After a
    failed handshake it reads what the client still sends before it closes (so that its
    alert arrives), or with `abrupt` closes at once (the client's bytes then reset the
    connection, and the alert may be lost)."""

    daemon_threads = True

    def __init__(self, ctx, abrupt=False):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.ctx = ctx
        self.abrupt = abrupt
        self.lock = threading.Lock()
        self.connections = 0
        self.handshake_errors = []
        self.requests = []
        port = self.server_address[1]
        scheme = "https" if ctx else "http"
        self.url = "%s://127.0.0.1:%d" % (scheme, port)
        self.target_url = "%s://localhost:%d" % (scheme, port)  # the DNS name of the SAN
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    def finish_request(self, request, client_address):
        with self.lock:
            self.connections += 1
        request.settimeout(5)
        if self.ctx is not None:
            request = self.ctx.wrap_socket(request, server_side=True,
                                           do_handshake_on_connect=False)
            try:
                request.do_handshake()
            except (ssl.SSLError, OSError) as e:
                with self.lock:
                    self.handshake_errors.append(e)
                if not self.abrupt:
                    try:
                        request.shutdown(socket.SHUT_WR)  # plain TCP from here on
                        request.settimeout(1)
                        while request.recv(4096):
                            pass
                    except OSError:
                        pass
                request.close()
                return
        try:
            self.RequestHandlerClass(request, client_address, self)
        finally:
            request.close()

    def handle_error(self, request, client_address):
        pass  # a client that goes away mid-connection is no failure here

    def stop(self):
        self.shutdown()
        self.server_close()


def _server_context(pki, cert="server", require_client_cert=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki(cert + ".pem"), pki(cert + ".key"))
    if require_client_cert:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(pki("ca.pem"))
    return ctx


@pytest.fixture
def serve(pki):
    servers = []

    def start(abrupt=False, **kw):
        s = _Server(_server_context(pki, **kw) if kw.get("cert", True) else None, abrupt)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(autouse=True)
def no_tls_env(monkeypatch):
    for k in TLS_ENV:
        monkeypatch.delenv(k, raising=False)


_CLIENTS = []


def _client(url, **kw):
    c = silo.Client(url, "ak", "sk", config=None, timeout=5, connect_timeout=2, **kw)
    _CLIENTS.append(c)
    return c


@pytest.fixture(autouse=True)
def close_clients():
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def test_ca_bundle_smart_client_reaches_https_targets_with_one_context(pki, serve):
    srv = serve()
    with _client(srv.url, ca_bundle=pki("ca.pem")) as c:
        assert c.get("b", "o1") == BODY
        assert c.get("b", "o2", range=(0, 4)) == BODY  # the server ignores ranges
        assert c.head("b", "o1").size == len(BODY)
        assert c.health()
        # The map lists the target as https://localhost:PORT: the object GETs went there,
        # over pools that share the client's one context, TLS 1.2 at least.
        sent = c._transport.sent
        assert sent.get(srv.target_url, 0) >= 3 and sent.get(srv.url, 0) >= 2, sent
        pools = list(c._transport._pools.values())
        assert len(pools) == 2 and all(p.tls_context is c.ssl_context for p in pools)
        assert c.ssl_context.minimum_version >= ssl.TLSVersion.TLSv1_2
        assert c.ssl_context.verify_mode == ssl.CERT_REQUIRED and c.ssl_context.check_hostname
    hosts = {h for h, path, _ in srv.requests if path.startswith("/v1/objects/")}
    assert hosts == {srv.target_url[len("https://"):]}
    assert srv.connections <= 3  # keep-alive: one per pool (and at most one more)


def test_untrusted_certificate_is_a_clear_error_not_retried(serve):
    srv = serve()
    c = _client(srv.url)  # the system's trust store does not know the test CA
    t0 = time.monotonic()
    with pytest.raises(silo.TLSError) as e:
        c.get("b", "o")
    assert time.monotonic() - t0 < 2
    err = e.value
    assert not isinstance(err, silo.Unavailable) and err.code == "UNAUTHENTICATED"
    text = str(err)
    assert srv.url in text and "SILO_CA_BUNDLE" in text and "not trusted" in text, text
    assert "system's default trust store" in text, text
    assert srv.connections == 1  # once: no second node, no retry
    with pytest.raises(silo.TLSError):
        c.health()  # not False: a loop waiting for health would never end
    with pytest.raises(silo.TLSError):
        list(c.get_batch([("b", "o")]))
    assert srv.connections == 3


def test_host_name_is_verified(pki, serve):
    srv = serve(cert="misnamed")  # signed by the trusted CA, names elsewhere.example
    c = _client(srv.url, ca_bundle=pki("ca.pem"))
    with pytest.raises(silo.TLSError) as e:
        c.get("b", "o")
    assert "127.0.0.1" in str(e.value) and "mismatch" in str(e.value), str(e.value)
    assert srv.connections == 1


def test_ca_bundle_from_environment(pki, serve, monkeypatch):
    srv = serve()
    monkeypatch.setenv("SILO_CA_BUNDLE", pki("ca.pem"))
    c = _client(srv.url)
    assert c.ca_bundle == pki("ca.pem")
    assert c.get("b", "o") == BODY
    # Pickled (DataLoader workers started with spawn): the settings travel, the context
    # is made again.
    monkeypatch.delenv("SILO_CA_BUNDLE")
    d = pickle.loads(pickle.dumps(c))
    _CLIENTS.append(d)
    assert d.get("b", "o") == BODY and d.ssl_context is not c.ssl_context
    monkeypatch.setenv("SILO_CA_BUNDLE", pki("missing.pem"))
    with pytest.raises(ValueError, match="SILO_CA_BUNDLE"):
        _client(srv.url)


def test_mutual_tls(pki, serve, monkeypatch):
    srv = serve(require_client_cert=True)
    c = _client(srv.url, ca_bundle=pki("ca.pem"), client_cert=pki("client.pem"),
                client_key=pki("client.key"))
    assert c.get("b", "o") == BODY
    assert srv.requests[-1][2] == {"commonName": "silo-test-client"}

    monkeypatch.setenv("SILO_CLIENT_CERT", pki("client.pem"))
    monkeypatch.setenv("SILO_CLIENT_KEY", pki("client.key"))
    assert _client(srv.url, ca_bundle=pki("ca.pem")).get("b", "o") == BODY
    monkeypatch.delenv("SILO_CLIENT_CERT")
    monkeypatch.delenv("SILO_CLIENT_KEY")

    for kw in ({}, {"client_cert": pki("stranger.pem"), "client_key": pki("stranger.key")}):
        before = srv.connections
        c = _client(srv.url, ca_bundle=pki("ca.pem"), **kw)
        with pytest.raises(silo.TLSError) as e:
            c.get("b", "o")  # the node map's GET is refused: not retried, not routed around
        assert srv.url in str(e.value) and "SILO_CLIENT_CERT" in str(e.value), str(e.value)
        assert srv.connections == before + 1


def test_mutual_tls_refused_by_a_server_that_resets(pki, serve):
    # The refusal's alert may be lost to the reset: Unavailable then (each node tried
    # once), naming the client certificate all the same.
    srv = serve(require_client_cert=True, abrupt=True)
    for _ in range(3):
        before = srv.connections
        c = _client(srv.url, ca_bundle=pki("ca.pem"))
        with pytest.raises((silo.TLSError, silo.Unavailable)) as e:
            c.get("b", "o")
        assert srv.url in str(e.value) and "SILO_CLIENT_CERT" in str(e.value), str(e.value)
        assert srv.connections - before <= 2  # the node map, then the object at the endpoint


def test_https_client_against_plain_http_node(serve, pki):
    srv = serve(cert=None)
    c = _client("https" + srv.url[len("http"):], ca_bundle=pki("ca.pem"))
    with pytest.raises(silo.TLSError, match="does not speak TLS"):
        c.get("b", "o")


def test_bad_settings_fail_at_construction(pki):
    with pytest.raises(ValueError, match="client_cert"):
        _client("https://127.0.0.1:1", client_key=pki("client.key"))
    with pytest.raises(ValueError, match="does not exist"):
        _client("https://127.0.0.1:1", ca_bundle=pki("nope.pem"))
    with pytest.raises(ValueError, match="http:// and https://"):
        _client("ftp://127.0.0.1:1")
    c = _client("http://127.0.0.1:1")  # plain http: no context made until one is needed
    assert c._transport._tls_context is None
