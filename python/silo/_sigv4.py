"""AWS Signature Version 4 in the standard library (hmac, hashlib), as Silo verifies it
(src/s3/sigv4.cc): S3-style canonical URI (the path decoded, then percent-encoded once,
slashes kept), the query decoded and re-encoded, pairs sorted; every header handed in is
signed."""

import datetime
import hashlib
import hmac
import urllib.parse

ALGORITHM = "AWS4-HMAC-SHA256"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
_SAFE = "-_.~"  # with letters and digits: RFC 3986's unreserved characters


def percent_encode(text, keep_slash=False):
    """Every byte but the unreserved ones as %XX (uppercase), as src/base/text.cc does."""
    return urllib.parse.quote(text, safe=_SAFE + ("/" if keep_slash else ""))


def canonical_uri(raw_path):
    try:
        decoded = urllib.parse.unquote_to_bytes(raw_path)
    except Exception:  # pragma: no cover
        return raw_path
    out = urllib.parse.quote_from_bytes(decoded, safe=_SAFE + "/")
    return out or "/"


def canonical_query(raw_query):
    pairs = []
    for part in raw_query.split("&"):
        if not part:
            continue
        k, _, v = part.partition("=")
        k = urllib.parse.unquote(k)
        v = urllib.parse.unquote(v)
        pairs.append((percent_encode(k), percent_encode(v)))
    pairs.sort()
    return "&".join("%s=%s" % kv for kv in pairs)


def _canonical_value(value):
    return " ".join(str(value).split())


def signing_key(secret_key, date, region, service):
    k = hmac.new(("AWS4" + secret_key).encode(), date.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def amz_date(now=None):
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


def sign(method, raw_path, raw_query, headers, payload_hash, access_key, secret_key,
         region="us-east-1", service="s3", date=None):
    """The Authorization header for a request whose `headers` (a list of (name, value)
    pairs or a dict, `host` and `x-amz-date` among them) are all signed. `date` is the
    x-amz-date value (YYYYMMDDTHHMMSSZ); taken from the headers when None."""
    items = list(headers.items()) if isinstance(headers, dict) else list(headers)
    merged = {}
    for name, value in items:
        merged.setdefault(name.lower(), []).append(_canonical_value(value))
    if date is None:
        date = merged.get("x-amz-date", [None])[0]
        if date is None:
            raise ValueError("sign(): no x-amz-date header and no date")
    names = sorted(merged)
    canonical_headers = "".join("%s:%s\n" % (n, ",".join(merged[n])) for n in names)
    signed_headers = ";".join(names)
    request = "\n".join([method, canonical_uri(raw_path), canonical_query(raw_query),
                         canonical_headers, signed_headers, payload_hash])
    day = date[:8]
    scope = "%s/%s/%s/aws4_request" % (day, region, service)
    to_sign = "\n".join([ALGORITHM, date, scope, hashlib.sha256(request.encode()).hexdigest()])
    signature = hmac.new(signing_key(secret_key, day, region, service), to_sign.encode(),
                         hashlib.sha256).hexdigest()
    return "%s Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        ALGORITHM, access_key, scope, signed_headers, signature)


class Signer:
    """Signs requests for one set of keys (service s3): adds x-amz-date,
    x-amz-content-sha256 and Authorization to `headers` (a dict; `Host` must be in it)."""

    def __init__(self, access_key, secret_key, region="us-east-1", service="s3"):
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region
        self.service = service

    def __call__(self, method, target, headers, payload_hash=UNSIGNED_PAYLOAD):
        path, _, query = target.partition("?")
        for k in [k for k in headers if k.lower() in ("authorization", "x-amz-date",
                                                      "x-amz-content-sha256")]:
            del headers[k]
        headers["x-amz-date"] = amz_date()
        headers["x-amz-content-sha256"] = payload_hash
        headers["Authorization"] = sign(method, path, query, headers, payload_hash,
                                        self.access_key, self.secret_key, self.region,
                                        self.service)
        return headers
