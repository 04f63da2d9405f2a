"""silo.Client: Silo's native API from Python (CONTRACT.md "Python")."""

import json
import os
import random
import threading
import time
import urllib.parse
import weakref

from . import _hrw, _http, _sigv4
from .errors import (NotFound, SiloError, TLSError, Timeout, Unavailable, InvalidArgument,
                     error_of_answer)
from .tar import TarReader

DEFAULT_ENDPOINT = "http://127.0.0.1:8080"
DEFAULT_ACCESS_KEY = "silo-admin"
DEFAULT_SECRET_KEY = "silo-secret-key"
MAP_VERSION_HEADER = "X-Silo-Node-Map-Version"
ROUTES_TTL_S = 10.0  # as src/client: the owner map is fetched again after this


def default_config_path():
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return os.path.join(xdg, "silo", "config.json")
    home = os.environ.get("HOME")
    return os.path.join(home, ".config", "silo", "config.json") if home else ""


def read_settings(path, must_exist):
    """The CLI's settings file: {"endpoint", "access_key", "secret_key"}, each optional."""
    if not path or not os.path.exists(path):
        if must_exist:
            raise ValueError("config file %s does not exist" % path)
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError('config file %s: %s (expected {"endpoint": "http://host:port", '
                         '"access_key": "...", "secret_key": "..."})' % (path, e))
    if not isinstance(doc, dict):
        raise ValueError("config file %s is not a JSON object" % path)
    out = {}
    for k in ("endpoint", "access_key", "secret_key"):
        v = doc.get(k)
        if v is None:
            continue
        if not isinstance(v, str):
            raise ValueError("config file %s: %s is not a string" % (path, k))
        out[k] = v
    return out


def resolve_settings(endpoint=None, access_key=None, secret_key=None, config=None):
    """Endpoint and keys as the `silo` CLI finds them (cmd/silo/context.cc): arguments,
    else SILO_ENDPOINT / SILO_ACCESS_KEY / SILO_SECRET_KEY, else the config file (`config`,
    else $XDG_CONFIG_HOME/silo/config.json or ~/.config/silo/config.json), else the
    defaults (http://127.0.0.1:8080, silo-admin, silo-secret-key)."""
    file = read_settings(config or default_config_path(), must_exist=bool(config))

    def first(*values):
        for v in values:
            if v:
                return v
        return ""

    ep = first(endpoint, os.environ.get("SILO_ENDPOINT"), file.get("endpoint"), DEFAULT_ENDPOINT)
    if "://" not in ep:
        ep = "http://" + ep
    ak = first(access_key, os.environ.get("SILO_ACCESS_KEY"), file.get("access_key"),
               DEFAULT_ACCESS_KEY)
    sk = first(secret_key, os.environ.get("SILO_SECRET_KEY"), file.get("secret_key"),
               DEFAULT_SECRET_KEY)
    return ep.rstrip("/"), ak, sk


def resolve_tls(ca_bundle=None, client_cert=None, client_key=None):
    """TLS settings: each argument, else SILO_CA_BUNDLE / SILO_CLIENT_CERT /
    SILO_CLIENT_KEY; ca_bundle unset means the system's default trust store."""
    env = os.environ.get
    return _http.TLSConfig(ca_bundle or env("SILO_CA_BUNDLE"),
                           client_cert or env("SILO_CLIENT_CERT"),
                           client_key or env("SILO_CLIENT_KEY"))


def object_target(bucket, name):
    return "/v1/objects/%s/%s" % (_sigv4.percent_encode(bucket),
                                  _sigv4.percent_encode(name, keep_slash=True))


def _range_header(range):
    if range is None:
        return None
    if isinstance(range, str):
        return range if range.startswith("bytes=") else "bytes=" + range
    start, end = range
    return "bytes=%d-%s" % (start, "" if end is None else int(end))


def _query(**params):
    parts = []
    for k, v in params.items():
        if v is None or v == "" or v is False:
            continue
        if v is True:
            v = "true"
        parts.append("%s=%s" % (k, _sigv4.percent_encode(str(v))))
    return "&".join(parts)


class ObjectInfo:
    """HEAD's answer: size, etag (no quotes), headers."""

    def __init__(self, status, headers):
        self.status = status
        self.headers = headers
        self.size = int(headers.get("Content-Length") or 0)
        self.etag = (headers.get("ETag") or "").strip('"')

    def __repr__(self):
        return "ObjectInfo(size=%d, etag=%r)" % (self.size, self.etag)


class ObjectStream:
    """A GET answer read as it arrives: a read-only file-like (read, readinto, iteration
    by chunks, close; a context manager). When the connection breaks midway, the rest is
    asked again (Range from the byte reached, through the next holder or the proxy) up
    to `resume_tries` times, and the object's ETag must be unchanged; otherwise the read
    raises Unavailable. A body shorter than its Content-Length is never taken as whole."""

    def __init__(self, client, bucket, name, query, range_start, range_end, resume_tries):
        self._client = client
        self.bucket, self.name = bucket, name
        self._query = query
        self._start = range_start  # absolute offset of the next byte
        self._end = range_end      # inclusive, or None
        self._tries = resume_tries
        self._resp = None
        self.etag = None
        self.size = None  # bytes this stream delivers in all (None when unknown)
        self.read_bytes = 0
        self._open(first=True)

    def _open(self, first):
        headers = {}
        if not first or self._start or self._end is not None:
            headers["Range"] = _range_header((self._start, self._end))
        if self.etag and not first:
            headers["If-Match"] = '"%s"' % self.etag
        resp = self._client._object_call("GET", self.bucket, self.name, self._query, headers,
                                         stream=True, avoid=None if first else self._failed_url)
        self._resp = resp
        etag = (resp.headers.get("ETag") or "").strip('"')
        if first:
            self.etag = etag
            self.headers = resp.headers
            self.status = resp.status
            if resp.length is not None:
                self.size = resp.length
        elif self.etag and etag and etag != self.etag:
            resp.close()
            raise Unavailable("GET %s/%s: the object changed (ETag %s, was %s) while it was "
                              "read" % (self.bucket, self.name, etag, self.etag),
                              bucket=self.bucket, object=self.name)

    def _recover(self, error):
        self._failed_url = self._resp.base_url if self._resp is not None else None
        if self._resp is not None:
            self._resp.close()
            self._resp = None
        if self._tries <= 0 or self._query:
            raise Unavailable("GET %s/%s: the answer broke after %d bytes: %s"
                              % (self.bucket, self.name, self.read_bytes, error),
                              bucket=self.bucket, object=self.name) from error
        self._tries -= 1
        self._client._forget_routes()
        self._open(first=False)

    def read(self, n=-1):
        if self._resp is None:
            return b""
        if n is None or n < 0:
            parts = []
            while True:
                chunk = self.read(1 << 20)
                if not chunk:
                    return b"".join(parts)
                parts.append(chunk)
        while True:
            try:
                data = self._resp.read(n)
            except (OSError, _http.http.client.HTTPException) as e:
                self._recover(e)
                continue
            if not data:
                if self.size is not None and self.read_bytes < self.size:
                    self._recover(EOFError("the body ended after %d of %d bytes"
                                           % (self.read_bytes, self.size)))
                    continue
                self._resp = None
                return b""
            self.read_bytes += len(data)
            self._start += len(data)
            return data

    def readinto(self, b):
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)

    def readable(self):
        return True

    def __iter__(self):
        while True:
            chunk = self.read(1 << 20)
            if not chunk:
                return
            yield chunk

    def close(self):
        if self._resp is not None:
            self._resp.close()
            self._resp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_CLIENTS = weakref.WeakSet()


def _after_fork_in_child():
    for c in list(_CLIENTS):
        c._lock = threading.Lock()  # a thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Client:
    """A client of Silo's native API (thread-safe; share one per process).

    Object calls go straight to the object's owner target (HRW over the node map,
    GET /v1/cluster/map, the same computation as the cluster's) through a keep-alive
    connection pool per target; when the owner cannot be reached the call is sent to the
    next holder (buckets with copies) and then through the endpoint (a proxy). The node
    map and bucket ids are fetched again after `map_ttl` seconds, whenever a direct call
    reaches no target, and when an answer names a newer node map than the one it routes by
    (every node sends X-Silo-Node-Map-Version). direct=False sends everything to the endpoint.

    Every request is signed with SigV4 (service s3, UNSIGNED-PAYLOAD).

    TLS: https:// endpoints (and the https:// node URLs of a TLS cluster's map) are
    reached over TLS 1.2+, the server's certificate chain and host name always verified
    against `ca_bundle` (a PEM file or a hashed directory; default SILO_CA_BUNDLE, else
    the system's trust store). `client_cert` / `client_key` (default SILO_CLIENT_CERT /
    SILO_CLIENT_KEY) for servers that require mutual TLS. One SSLContext per client,
    shared by every connection. A certificate failure raises TLSError (never retried)."""

    def __init__(self, endpoint=None, access_key=None, secret_key=None, *, config=None,
                 direct=True, region="us-east-1", timeout=60.0, connect_timeout=5.0,
                 map_ttl=ROUTES_TTL_S, pool_size=64, ca_bundle=None, client_cert=None,
                 client_key=None):
        self.endpoint, self.access_key, self._secret_key = resolve_settings(
            endpoint, access_key, secret_key, config)
        _http.split_url(self.endpoint)  # checks it
        tls = resolve_tls(ca_bundle, client_cert, client_key)
        self.ca_bundle, self.client_cert, self.client_key = (tls.ca_bundle, tls.client_cert,
                                                             tls.client_key)
        self.direct = direct
        self.region = region
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.map_ttl = map_ttl
        self.pool_size = pool_size
        self._setup()

    def _setup(self):
        tls = _http.TLSConfig(self.ca_bundle, self.client_cert, self.client_key)
        self._transport = _http.Transport(
            _sigv4.Signer(self.access_key, self._secret_key, self.region),
            self.timeout, self.connect_timeout, self.pool_size, on_answer=self._saw_answer,
            tls=tls)
        if tls or self.endpoint.startswith("https://"):
            self._transport.tls_context()  # a missing or bad file is an error now, not later
        self._lock = threading.Lock()
        _CLIENTS.add(self)
        self._owners = None
        self._owners_at = 0.0
        self._stale_for = 0  # the newest node map version an answer named
        self._buckets = {}  # name -> (id, copies)
        self._batch_turn = random.randrange(1 << 16)

    # Pickling (DataLoader workers started with spawn): keys and settings travel, the
    # connections and routes are made again.
    def __getstate__(self):
        return {k: getattr(self, k) for k in ("endpoint", "access_key", "_secret_key", "direct",
                                              "region", "timeout", "connect_timeout",
                                              "map_ttl", "pool_size", "ca_bundle",
                                              "client_cert", "client_key")}

    def __setstate__(self, state):
        for k in ("ca_bundle", "client_cert", "client_key"):
            state.setdefault(k, None)
        self.__dict__.update(state)
        self._setup()

    def __repr__(self):
        return "silo.Client(%r, access_key=%r, direct=%r)" % (self.endpoint, self.access_key,
                                                             self.direct)

    @property
    def ssl_context(self):
        """The ssl.SSLContext every https:// connection of this client uses (made on
        first use)."""
        return self._transport.tls_context()

    def close(self):
        self._transport.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- raw requests -----------------------------------------------------------------
    def request(self, method, target, body=None, headers=None, base_url=None, stream=False):
        """One signed request to the endpoint (or `base_url`), the answer whatever its
        status (transport failures raise)."""
        return self._transport.request(base_url or self.endpoint, method, target, headers, body,
                                       stream=stream, what="%s %s" % (method, target))

    def _checked(self, method, target, body=None, headers=None, bucket=None, obj=None,
                 base_url=None):
        r = self.request(method, target, body, headers, base_url)
        if r.status >= 300:
            raise error_of_answer(r.status, r.body, "%s %s" % (method, target), bucket, obj)
        return r

    def _json(self, method, target, body=None, bucket=None):
        headers = {"Content-Type": "application/json"} if body is not None else None
        r = self._checked(method, target, body, headers, bucket)
        return json.loads(r.body) if r.body else None

    # -- cluster and buckets --------------------------------------------------------
    def health(self):
        """True when the endpoint answers GET /v1/health with 200; False when it cannot
        be reached. A TLSError (an untrusted certificate) is raised: waiting cannot mend it."""
        try:
            return self.request("GET", "/v1/health").status == 200
        except Unavailable:
            return False

    def node_map(self):
        """GET /v1/cluster/map: {"version", "primary", "nodes": [{"id", "role", "url",
        "state", "mode"}], ...}."""
        return self._json("GET", "/v1/cluster/map")

    def create_bucket(self, bucket, props=None):
        """PUT /v1/buckets/{bucket}, with properties, e.g. {"copies": 2} or {"backend":
        {"url": "s3://origin", "endpoint": ..., "access_key": ..., "secret_key": ...}}."""
        body = json.dumps(props).encode() if props else None
        self._json("PUT", "/v1/buckets/" + _sigv4.percent_encode(bucket), body, bucket)

    def delete_bucket(self, bucket):
        self._checked("DELETE", "/v1/buckets/" + _sigv4.percent_encode(bucket), bucket=bucket)
        with self._lock:
            self._buckets.pop(bucket, None)

    def list_buckets(self):
        return self._json("GET", "/v1/buckets")

    def bucket_props(self, bucket):
        """GET /v1/buckets/{bucket}/props: {"name", "id", "created", "props": {...}}."""
        return self._json("GET", "/v1/buckets/%s/props" % _sigv4.percent_encode(bucket),
                          bucket=bucket)

    def bucket_policy(self, bucket):
        """GET /v1/buckets/{bucket}/policy: the bucket policy as a dict (docs/security.md);
        NotFound when the bucket has none."""
        return self._json("GET", "/v1/buckets/%s/policy" % _sigv4.percent_encode(bucket), bucket=bucket)

    def set_bucket_policy(self, bucket, policy):
        """PUT /v1/buckets/{bucket}/policy: `policy` is a dict or its JSON text (S3's grammar);
        InvalidArgument naming the problem when malformed."""
        text = policy if isinstance(policy, (str, bytes)) else json.dumps(policy)
        self._json("PUT", "/v1/buckets/%s/policy" % _sigv4.percent_encode(bucket),
                   text.encode() if isinstance(text, str) else text, bucket)

    def delete_bucket_policy(self, bucket):
        self._checked("DELETE", "/v1/buckets/%s/policy" % _sigv4.percent_encode(bucket), bucket=bucket)

    # -- routing --------------------------------------------------------------------
    def _forget_routes(self):
        with self._lock:
            self._owners = None
            self._buckets.clear()

    def _saw_answer(self, headers):
        """Every node names the node map it serves under (X-Silo-Node-Map-Version): one
        newer than the map this client routes by makes the next call fetch the map again
        (once per version, so a node that lags cannot make every call fetch it)."""
        value = headers.get(MAP_VERSION_HEADER)
        if not value:
            return
        try:
            version = int(value)
        except ValueError:
            return
        with self._lock:
            owners = self._owners
            if owners is not None and version > owners.version and version > self._stale_for:
                self._stale_for = version
                self._owners_at = float("-inf")

    def owner_map(self):
        """The current OwnerMap (fetched when older than map_ttl)."""
        with self._lock:
            owners = self._owners
            if owners is not None and time.monotonic() - self._owners_at < self.map_ttl:
                return owners
        owners = _hrw.OwnerMap(self.node_map())
        with self._lock:
            if self._owners is None or self._owners.version != owners.version:
                self._buckets.clear()  # a bucket made again has a new id
            self._owners = owners
            self._owners_at = time.monotonic()
        return owners

    def _bucket_route(self, bucket):
        with self._lock:
            got = self._buckets.get(bucket)
        if got is None:
            props = self.bucket_props(bucket)
            p = props.get("props") or {}
            ec = p.get("ec")
            holders = int(p.get("copies") or 1)
            if ec:  # coded objects: the owner holds the object, the others slices
                holders = 1
            got = (int(props["id"]), holders)
            with self._lock:
                self._buckets[bucket] = got
        return got

    def route(self, bucket, name):
        """The base URLs to try for an object, best first: its holders (owner first), then
        the endpoint. Just the endpoint when direct is off or routes cannot be had."""
        if not self.direct:
            return [self.endpoint]
        try:
            owners = self.owner_map()
            bucket_id, holders = self._bucket_route(bucket)
        except (NotFound, TLSError):
            raise
        except SiloError:
            return [self.endpoint]
        urls = owners.holder_urls(bucket_id, name, holders)
        return urls + [self.endpoint]

    def _object_call(self, method, bucket, name, query="", headers=None, body=None,
                     stream=False, avoid=None):
        target = object_target(bucket, name) + ("?" + query if query else "")
        what = "%s %s" % (method, target)
        urls = self.route(bucket, name)
        if avoid in urls[:-1]:
            urls.remove(avoid)
        if method not in ("GET", "HEAD"):
            urls = [urls[0]] + ([urls[-1]] if len(urls) > 1 else [])  # owner, then the proxy
        last = None
        for i, base in enumerate(urls):
            try:
                r = self._transport.request(base, method, target, headers, body, stream=stream,
                                            what=what)
            except Unavailable as e:
                last = e
                if hasattr(body, "read"):
                    raise
                if i == 0 and base != self.endpoint:
                    self._forget_routes()
                continue
            # 503 from a target: maps converging or the holder it would forward to is down;
            # try the next (the proxy picks a holder that is up).
            if r.status == 503 and i + 1 < len(urls):
                if stream:
                    r.close()
                self._forget_routes()
                last = error_of_answer(503, b"", what, bucket, name)
                continue
            if r.status >= 300:
                data = r.read() if stream else r.body
                if stream:
                    r.close()
                raise error_of_answer(r.status, data, what, bucket, name)
            return r
        raise Unavailable("%s (bucket %r, object %r): no node answered (tried %s): %s"
                          % (what, bucket, name, ", ".join(urls), last), bucket=bucket,
                          object=name, code=getattr(last, "code", "UNAVAILABLE"),
                          request=what) from last

    # -- objects --------------------------------------------------------------------
    def get(self, bucket, name, range=None, archpath=None, archmode=None):
        """The object's bytes. range: (first, last) inclusive (last None: to the end) or
        "bytes=..."; archpath: one member of an archive (a range applies within it);
        archpath + archmode ("wdskey", "regexp", "prefix", "suffix", "substr"): a tar of
        the members selected (a sample with "wdskey")."""
        headers = {}
        if range is not None:
            headers["Range"] = _range_header(range)
        q = _query(archpath=archpath, archmode=archmode) if archpath is not None else ""
        if archmode and archpath is None:
            raise ValueError("archmode needs archpath")
        return self._object_call("GET", bucket, name, q, headers).body

    def get_sample(self, bucket, shard, key):
        """The WebDataset sample `key` of a shard as {"__key__", ext: bytes, ...}
        (archpath=key&archmode=wdskey)."""
        from .tar import group_samples
        data = self.get(bucket, shard, archpath=key, archmode="wdskey")
        import io
        members = ((m.name, m.data) for m in TarReader(io.BytesIO(data), "%s/%s" % (bucket, shard)))
        samples = list(group_samples(members, url="%s/%s" % (bucket, shard)))
        if not samples:
            raise NotFound("sample %r of %s/%s: no members" % (key, bucket, shard),
                           bucket=bucket, object=shard, code="NOT_FOUND")
        return samples[0]

    def get_stream(self, bucket, name, range=None, archpath=None, archmode=None,
                   resume_tries=3):
        """An ObjectStream (file-like) of the object or a range of it; for shards and
        other large objects. Resumes a broken whole-object read where it stopped."""
        start, end = 0, None
        if range is not None:
            if isinstance(range, str):
                raise ValueError("get_stream takes range=(first, last)")
            start, end = range
        q = _query(archpath=archpath, archmode=archmode) if archpath is not None else ""
        return ObjectStream(self, bucket, name, q, start, end, resume_tries)

    def put(self, bucket, name, data, headers=None):
        """Stores `data` (bytes, or a file-like with a length: Content-Length must be in
        headers then). The answer's JSON ({"name", "size", "etag"})."""
        if isinstance(data, str):
            raise TypeError("put() takes bytes, not str")
        if not hasattr(data, "read"):
            data = bytes(data)
        r = self._object_call("PUT", bucket, name, "", dict(headers or {}), data)
        try:
            return json.loads(r.body) if r.body else {"etag": (r.headers.get("ETag") or "").strip('"')}
        except ValueError:
            return {"etag": (r.headers.get("ETag") or "").strip('"')}

    def head(self, bucket, name):
        r = self._object_call("HEAD", bucket, name)
        return ObjectInfo(r.status, r.headers)

    def delete(self, bucket, name):
        self._object_call("DELETE", bucket, name)

    def list_page(self, bucket, prefix="", limit=0, token="", cached_only=False):
        """One page of GET /v1/buckets/{bucket}?prefix=&limit=&token=: (objects, next_token);
        each object {"name", "size", "etag", "mtime"[, "cached"]}; next_token "" on the
        last page."""
        q = _query(prefix=prefix, limit=limit or None, token=token, cached=cached_only)
        target = "/v1/buckets/" + _sigv4.percent_encode(bucket) + ("?" + q if q else "")
        doc = json.loads(self._checked("GET", target, bucket=bucket).body)
        return doc.get("objects", []), doc.get("next_token", "")

    def list(self, bucket, prefix="", page_size=0):
        """Every object of the bucket under `prefix`, page after page (an iterator)."""
        token = ""
        while True:
            objects, next_token = self.list_page(bucket, prefix, page_size, token)
            for o in objects:
                yield o
            if not next_token:
                return
            if next_token == token:
                raise SiloError("listing %s: the next token did not advance" % bucket,
                                bucket=bucket)
            token = next_token

    def list_members(self, bucket, name):
        """An archive's members from its index (?archlist=true): [{"name", "offset",
        "size"}] in archive order."""
        r = self._object_call("GET", bucket, name, "archlist=true")
        return json.loads(r.body).get("members", [])

    # -- batch ----------------------------------------------------------------------
    def _batch_url(self):
        if not self.direct:
            return self.endpoint
        try:
            owners = self.owner_map()
        except TLSError:
            raise
        except SiloError:
            return self.endpoint
        with self._lock:
            self._batch_turn += 1
            turn = self._batch_turn
        return owners.urls[turn % len(owners.urls)]

    def batch_stream(self, entries, continue_on_error=False):
        """POST /v1/batch (docs/shards.md "Batch GET"): an iterator of TarMember objects
        (.name, .data) in request order, parsed from the tar answer as it streams in.
        `entries`: dicts {"bucket", "name"[, "archpath"[, "archmode"]][, "start",
        "length"]} or tuples (bucket, name[, archpath]). Member names are
        BUCKET/NAME[/ARCHPATH]; with continue_on_error a missing entry is an empty member
        __404__/BUCKET/NAME[/ARCHPATH]. Served by a target (taking turns) when direct,
        else by the endpoint; one that cannot be reached before the answer starts is
        replaced by the endpoint."""
        docs = []
        for e in entries:
            if isinstance(e, dict):
                docs.append(e)
            else:
                d = {"bucket": e[0], "name": e[1]}
                if len(e) > 2 and e[2] is not None:
                    d["archpath"] = e[2]
                docs.append(d)
        body = json.dumps({"entries": docs, "continue_on_error": bool(continue_on_error)}).encode()
        headers = {"Content-Type": "application/json"}
        what = "POST /v1/batch (%d entries)" % len(docs)
        base = self._batch_url()
        try:
            resp = self._transport.request(base, "POST", "/v1/batch", headers, body, stream=True,
                                           what=what)
        except Unavailable:
            if base == self.endpoint:
                raise
            self._forget_routes()
            resp = self._transport.request(self.endpoint, "POST", "/v1/batch", headers, body,
                                           stream=True, what=what)
        if resp.status != 200:
            data = resp.read()
            resp.close()
            raise error_of_answer(resp.status, data, what)
        return _BatchMembers(resp, what)

    def get_batch(self, entries, continue_on_error=False):
        """batch_stream() as (name, bytes) pairs."""
        for m in self.batch_stream(entries, continue_on_error):
            yield m.name, m.data


class _BatchMembers:
    def __init__(self, resp, what):
        self._resp = resp
        self._what = what

    def _read(self, n):
        try:
            return self._resp.read(n)
        except (OSError, _http.http.client.HTTPException) as e:
            # The server cuts the stream when an entry fails after the first byte.
            raise Unavailable("%s: the answer was cut short: %s" % (self._what, e),
                              request=self._what) from e

    def __iter__(self):
        try:
            for m in TarReader(self._read, self._what):
                yield m
        finally:
            self._resp.close()

    def close(self):
        self._resp.close()
