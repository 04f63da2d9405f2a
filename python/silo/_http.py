"""Persistent HTTP/1.1 connections, one pool per node (http.client), over TLS for
https:// nodes. Thread-safe: a connection is used by one request at a time; idle ones
wait in their node's pool."""

import http.client
import os
import socket
import ssl
import threading
import urllib.parse
import weakref

from .errors import TLSError, Timeout, Unavailable

# A connection that was idle may have been closed by the server meanwhile: a request
# that fails on it with one of these before any answer is sent again on a new one.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
          ConnectionAbortedError, ssl.SSLEOFError, ssl.SSLZeroReturnError)

_DEFAULT_PORTS = {"http": 80, "https": 443}


class TLSConfig:
    """A client's TLS settings (paths; None for none): `ca_bundle` (a PEM file, or an
    OpenSSL hashed directory, of CA certificates to trust instead of the system's store),
    `client_cert` and `client_key` (for servers that require mutual TLS; the key may be
    in the certificate's file). The server's chain and host name are always verified."""

    def __init__(self, ca_bundle=None, client_cert=None, client_key=None):
        self.ca_bundle = ca_bundle or None
        self.client_cert = client_cert or None
        self.client_key = client_key or None

    def __bool__(self):
        return bool(self.ca_bundle or self.client_cert or self.client_key)

    def trust(self):
        """Where trusted CAs come from, in words (for error messages)."""
        return ("ca_bundle %s" % self.ca_bundle if self.ca_bundle
                else "the system's default trust store")

    def make_context(self):
        """A new SSLContext: TLS 1.2 at least, CERT_REQUIRED, host names checked.
        ValueError naming the setting when a file is missing or unusable."""
        if self.client_key and not self.client_cert:
            raise ValueError("TLS: client_key (SILO_CLIENT_KEY) is set but client_cert "
                             "(SILO_CLIENT_CERT) is not")
        for name, env, path in (("ca_bundle", "SILO_CA_BUNDLE", self.ca_bundle),
                                ("client_cert", "SILO_CLIENT_CERT", self.client_cert),
                                ("client_key", "SILO_CLIENT_KEY", self.client_key)):
            if path and not os.path.exists(path):
                raise ValueError("TLS: %s (%s) %s does not exist" % (name, env, path))
        try:
            if self.ca_bundle and os.path.isdir(self.ca_bundle):
                ctx = ssl.create_default_context(capath=self.ca_bundle)
            else:
                ctx = ssl.create_default_context(cafile=self.ca_bundle)
        except (ssl.SSLError, OSError) as e:
            raise ValueError("TLS: ca_bundle (SILO_CA_BUNDLE) %s holds no usable CA "
                             "certificate: %s" % (self.ca_bundle, e)) from e
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.verify_mode = ssl.CERT_REQUIRED  # create_default_context's; stated: never relaxed
        ctx.check_hostname = True
        if self.client_cert:
            try:
                ctx.load_cert_chain(self.client_cert, self.client_key)
            except (ssl.SSLError, OSError) as e:
                raise ValueError("TLS: cannot load the client certificate %s (key: %s): %s"
                                 % (self.client_cert, self.client_key or "in the same file",
                                    e)) from e
        return ctx


class _Connection(http.client.HTTPConnection):
    def __init__(self, host, port, timeout, connect_timeout, tls_context=None):
        super().__init__(host, port, timeout=timeout)
        self._connect_timeout = connect_timeout
        self.tls_context = tls_context  # the Client's one SSLContext, for https:// nodes
        self.reused = False

    def connect(self):
        # self.sock stays None until the TLS handshake is done: the transport tells a
        # failed handshake by that.
        sock = socket.create_connection((self.host, self.port), self._connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls_context is not None:  # the handshake runs under connect_timeout
                sock = self.tls_context.wrap_socket(sock, server_hostname=self.host)
            sock.settimeout(self.timeout)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class Response:
    """A whole answer: status, headers (http.client.HTTPMessage: case-insensitive .get),
    body (bytes)."""

    __slots__ = ("status", "headers", "body", "url")

    def __init__(self, status, headers, body, url):
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url


class StreamedResponse:
    """An answer whose body is read as it arrives. read(n) / readinto(b); the
    connection goes back to its pool once the body was read to the end, and is closed
    when the answer is closed before that."""

    def __init__(self, pool, conn, resp, url, base_url):
        self.base_url = base_url
        self._pool = pool
        self._conn = conn
        self._resp = resp
        self.status = resp.status
        self.headers = resp.headers
        self.url = url
        self.length = resp.length  # None for chunked answers
        self._done = False

    def read(self, n=-1):
        if self._done:
            return b""
        data = self._resp.read() if n is None or n < 0 else self._resp.read(n)
        if not data or (n is not None and n < 0):
            self._finish()
        elif self._resp.isclosed():
            self._finish()
        return data

    def readinto(self, b):
        if self._done:
            return 0
        n = self._resp.readinto(b)
        if n == 0 or self._resp.isclosed():
            self._finish()
        return n

    def _finish(self):
        if not self._done:
            self._done = True
            if self._resp.isclosed() and not self._resp.will_close:
                self._pool.put(self._conn)
            else:
                self._conn.close()

    def close(self):
        if not self._done:
            self._done = True
            self._conn.close()  # the rest of the body was not read: the connection is spent

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Pool:
    def __init__(self, host, port, timeout, connect_timeout, max_idle, tls_context=None):
        self.host, self.port = host, port
        self.tls_context = tls_context
        self._timeout, self._connect_timeout = timeout, connect_timeout
        self._max_idle = max_idle
        self._idle = []
        self._lock = threading.Lock()

    def get(self):
        with self._lock:
            if self._idle:
                conn = self._idle.pop()
                conn.reused = True
                return conn
        return _Connection(self.host, self.port, self._timeout, self._connect_timeout,
                           self.tls_context)

    def put(self, conn):
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def close(self):
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()


def split_url(url):
    """("https", "host", port, "host:port") of "https://host:port" (http or https)."""
    u = urllib.parse.urlsplit(url)
    if u.scheme not in _DEFAULT_PORTS or not u.hostname:
        raise ValueError("only http:// and https:// endpoints are supported, not %r" % url)
    return u.scheme, u.hostname, u.port or _DEFAULT_PORTS[u.scheme], u.netloc


def _tls_error(e, base_url, what, tls, in_handshake):
    """The TLSError for an SSLError that no retry can mend (an untrusted or misnamed
    certificate, a refused client certificate, a node that does not speak TLS), or
    None for one that may pass (the connection cut, a timeout)."""
    if isinstance(e, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError,
                      ssl.SSLWantReadError, ssl.SSLWantWriteError)):
        return None
    reason = (getattr(e, "reason", None) or "").upper()
    if isinstance(e, ssl.SSLCertVerificationError):
        why = str(e.verify_message or e).rstrip(".")
        if e.verify_code in (62, 64):  # X509_V_ERR_HOSTNAME_MISMATCH, _IP_ADDRESS_MISMATCH
            fix = ("the certificate must list the host of the URL in its subjectAltName (or "
                   "reach the node by a name the certificate lists)")
        else:
            fix = ("point SILO_CA_BUNDLE (or ca_bundle=) at the certificate of the CA that "
                   "signed the server's")
        text = ("%s: the TLS certificate of %s is not trusted: %s (trusting %s); %s"
                % (what, base_url, why, tls.trust(), fix))
    elif "WRONG_VERSION_NUMBER" in reason or "HTTP_REQUEST" in reason:
        text = "%s: %s does not speak TLS (%s); is it an http:// node?" % (what, base_url, e)
    elif "ALERT" in reason and ("CERTIFICATE" in reason or "UNKNOWN_CA" in reason
                                or "HANDSHAKE_FAILURE" in reason):
        text = ("%s: %s refused the TLS handshake (%s): it may require a client certificate "
                "its CA trusts (client_cert=/client_key= or SILO_CLIENT_CERT/SILO_CLIENT_KEY; "
                "now: %s)" % (what, base_url, e.reason,
                              tls.client_cert or "no client certificate"))
    elif in_handshake or "ALERT" in reason:
        text = "%s: the TLS handshake with %s failed: %s" % (what, base_url, e)
    else:
        return None
    return TLSError(text, request=what)


_TRANSPORTS = weakref.WeakSet()


def _after_fork_in_child():
    # A child process (DataLoader workers are forked) must not share its parent's sockets:
    # both would read answers off the same connection. Forget the pools (the parent still
    # uses those sockets; the child's copies close with it) and make fresh locks.
    for t in list(_TRANSPORTS):
        t._pools = {}
        t._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Transport:
    """Sends signed requests to any node by base URL ("http://host:port" or
    "https://host:port") through the node's pool. Every https:// pool, the endpoint's
    and the targets' the node map lists alike, uses the one SSLContext made from `tls`
    (a TLSConfig). A forked child starts with no connections (and keeps the context)."""

    def __init__(self, signer, timeout=60.0, connect_timeout=5.0, max_idle=64, on_answer=None,
                 tls=None):
        _TRANSPORTS.add(self)
        self._signer = signer
        self._on_answer = on_answer  # called with every answer's headers
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._max_idle = max_idle
        self.tls = tls if tls is not None else TLSConfig()
        self._tls_context = None
        self._pools = {}
        self._lock = threading.Lock()
        self.sent = {}  # base URL -> requests sent there (tests and benchmarks read it)

    def tls_context(self):
        """The one SSLContext of this transport, made on first use."""
        ctx = self._tls_context
        if ctx is None:
            with self._lock:
                if self._tls_context is None:
                    self._tls_context = self.tls.make_context()
                ctx = self._tls_context
        return ctx

    def _closed_hint(self):
        # A TLS 1.3 server checks the client's certificate after the client has finished
        # its handshake: when it refuses one, its alert may be lost to the reset of the
        # connection, and the client sees only a connection closed before any answer.
        return ("; the connection closed during or right after its TLS handshake: if the "
                "node requires a client certificate (mutual TLS), set SILO_CLIENT_CERT / "
                "SILO_CLIENT_KEY (or client_cert= / client_key=; now: %s)"
                % (self.tls.client_cert or "none"))

    def _pool(self, base_url):
        pool = self._pools.get(base_url)
        if pool is None:
            scheme, host, port, _ = split_url(base_url)
            ctx = self.tls_context() if scheme == "https" else None
            with self._lock:
                pool = self._pools.setdefault(
                    base_url, Pool(host, port, self._timeout, self._connect_timeout,
                                   self._max_idle, ctx))
        return pool

    def close(self):
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for p in pools:
            p.close()

    def request(self, base_url, method, target, headers=None, body=None, stream=False,
                what=""):
        """One request; the answer whatever its status (Response, or StreamedResponse
        with stream=True). Transport failures raise Unavailable / Timeout naming `what`."""
        pool = self._pool(base_url)
        netloc = split_url(base_url)[3]
        for attempt in (0, 1):
            conn = pool.get()
            h = dict(headers or {})
            h["Host"] = netloc
            if body is not None and not hasattr(body, "read"):
                h["Content-Length"] = str(len(body))
            self._signer(method, target, h)
            self.sent[base_url] = self.sent.get(base_url, 0) + 1  # racy += is fine for a tally
            try:
                conn.request(method, target, body=body, headers=h)
                resp = conn.getresponse()
            except _STALE as e:
                conn.close()
                if conn.reused and attempt == 0 and not hasattr(body, "read"):
                    continue
                hint = self._closed_hint() if conn.tls_context and not conn.reused else ""
                raise Unavailable("%s: %s at %s: %s%s" % (what or method + " " + target,
                                                          type(e).__name__, base_url, e, hint),
                                  code="UNAVAILABLE", request=what) from e
            except socket.timeout as e:
                conn.close()
                raise Timeout("%s: no answer from %s within %.0f s" % (what or target, base_url,
                                                                       self._timeout),
                              code="DEADLINE_EXCEEDED", request=what) from e
            except ssl.SSLError as e:
                # TLSError is no Unavailable: neither this loop nor a caller retries it (an
                # untrusted certificate stays untrusted).
                in_handshake = conn.sock is None
                conn.close()
                failure = _tls_error(e, base_url, what or method + " " + target, self.tls,
                                     in_handshake)
                if failure is not None:
                    raise failure from e
                raise Unavailable("%s: TLS with %s failed: %s" % (what or method + " " + target,
                                                                 base_url, e),
                                  code="UNAVAILABLE", request=what) from e
            except OSError as e:
                conn.close()
                raise Unavailable("%s: cannot reach %s: %s" % (what or method + " " + target,
                                                              base_url, e),
                                  code="UNAVAILABLE", request=what) from e
            url = base_url + target
            if self._on_answer is not None:
                self._on_answer(resp.headers)
            if stream:
                return StreamedResponse(pool, conn, resp, url, base_url)
            try:
                data = resp.read()
            except (http.client.HTTPException, OSError) as e:
                conn.close()
                raise Unavailable("%s: the answer from %s was cut short: %s"
                                  % (what or target, base_url, e), code="UNAVAILABLE",
                                  request=what) from e
            if resp.will_close:
                conn.close()
            else:
                pool.put(conn)
            return Response(resp.status, resp.headers, data, url)
        raise AssertionError("unreachable")
