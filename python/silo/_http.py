"""Persistent HTTP/1.1 connections, one pool per node (http.client). Thread-safe: a
connection is used by one request at a time; idle ones wait in their node's pool."""

import http.client
import os
import socket
import threading
import urllib.parse
import weakref

from .errors import Timeout, Unavailable

# A connection that was idle may have been closed by the server meanwhile: a request
# that fails on it with one of these before any answer is sent again on a new one.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
          ConnectionAbortedError)


class _Connection(http.client.HTTPConnection):
    def __init__(self, host, port, timeout, connect_timeout):
        super().__init__(host, port, timeout=timeout)
        self._connect_timeout = connect_timeout
        self.reused = False

    def connect(self):
        self.sock = socket.create_connection((self.host, self.port), self._connect_timeout)
        self.sock.settimeout(self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


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
    def __init__(self, host, port, timeout, connect_timeout, max_idle):
        self.host, self.port = host, port
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
        return _Connection(self.host, self.port, self._timeout, self._connect_timeout)

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
    """("http", "host", port) of "http://host:port"."""
    u = urllib.parse.urlsplit(url)
    if u.scheme != "http":
        raise ValueError("only http:// endpoints are supported, not %r" % url)
    return u.hostname, u.port or 80, u.netloc


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
    """Sends signed requests to any node by base URL ("http://host:port") through the
    node's pool. A forked child starts with no connections."""

    def __init__(self, signer, timeout=60.0, connect_timeout=5.0, max_idle=64, on_answer=None):
        _TRANSPORTS.add(self)
        self._signer = signer
        self._on_answer = on_answer  # called with every answer's headers
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._max_idle = max_idle
        self._pools = {}
        self._lock = threading.Lock()
        self.sent = {}  # base URL -> requests sent there (tests and benchmarks read it)

    def _pool(self, base_url):
        pool = self._pools.get(base_url)
        if pool is None:
            host, port, _ = split_url(base_url)
            with self._lock:
                pool = self._pools.setdefault(
                    base_url, Pool(host, port, self._timeout, self._connect_timeout, self._max_idle))
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
        netloc = split_url(base_url)[2]
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
                raise Unavailable("%s: %s at %s: %s" % (what or method + " " + target,
                                                        type(e).__name__, base_url, e),
                                  code="UNAVAILABLE", request=what) from e
            except socket.timeout as e:
                conn.close()
                raise Timeout("%s: no answer from %s within %.0f s" % (what or target, base_url,
                                                                       self._timeout),
                              code="DEADLINE_EXCEEDED", request=what) from e
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
