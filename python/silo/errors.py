"""Exceptions: every failure of a call is a SiloError naming the request, the bucket and
object, the HTTP status and the server's error code (its JSON {"error": {"code",
"message", "reason"}})."""


class SiloError(Exception):
    """A failed call. Attributes: status (HTTP status, 0 when no answer came), code (the
    server's code: NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE, ...; for transport errors
    UNAVAILABLE or DEADLINE_EXCEEDED, for TLS failures UNAUTHENTICATED), reason (e.g.
    NoSuchKey, NoSuchArchiveMember), message (the server's message), request ("GET
    /v1/objects/b/o"), bucket, object."""

    def __init__(self, message, *, status=0, code="UNKNOWN", reason="", request="",
                 bucket=None, object=None, server_message=""):
        super().__init__(message)
        self.status = status
        self.code = code
        self.reason = reason
        self.request = request
        self.bucket = bucket
        self.object = object
        self.message = server_message or message


class NotFound(SiloError):
    """404: no such bucket, object or archive member (see .reason)."""


class AlreadyExists(SiloError):
    """409."""


class InvalidArgument(SiloError):
    """400: a bad request, an object that is no archive (NotAnArchive), a corrupt one."""


class AccessDenied(SiloError):
    """401 / 403: wrong keys or not allowed."""


class RangeNotSatisfiable(SiloError):
    """416."""


class Unavailable(SiloError):
    """503, or no answer at all (connection refused, reset, cut short)."""


class Timeout(Unavailable):
    """No answer within the client's timeout (code DEADLINE_EXCEEDED)."""


class TLSError(SiloError):
    """No TLS session with a node (code UNAUTHENTICATED, status 0): its certificate is not
    trusted or does not name the host, it refused this client's certificate (mutual TLS),
    or it does not speak TLS. Retrying does not help, so this is no Unavailable: calls do
    not try other nodes with it and health() raises it. The message names the node and
    the setting to fix (SILO_CA_BUNDLE, SILO_CLIENT_CERT / SILO_CLIENT_KEY)."""

    def __init__(self, message, **kw):
        kw.setdefault("code", "UNAUTHENTICATED")
        super().__init__(message, **kw)


class DataLoss(SiloError):
    """500 DATA_LOSS: every copy of the object (or more slices than its parity) fails its
    checksum. Retrying does not help; a scrub reports it."""


class TarError(SiloError):
    """A tar stream that is not a tar, is corrupt, or ends early (a truncated shard)."""

    def __init__(self, message, **kw):
        kw.setdefault("code", "DATA_LOSS")
        super().__init__(message, **kw)


_BY_CODE = {
    "NOT_FOUND": NotFound,
    "ALREADY_EXISTS": AlreadyExists,
    "INVALID_ARGUMENT": InvalidArgument,
    "FAILED_PRECONDITION": InvalidArgument,
    "PERMISSION_DENIED": AccessDenied,
    "UNAUTHENTICATED": AccessDenied,
    "OUT_OF_RANGE": RangeNotSatisfiable,
    "UNAVAILABLE": Unavailable,
    "DEADLINE_EXCEEDED": Timeout,
    "DATA_LOSS": DataLoss,
}
_BY_STATUS = {400: InvalidArgument, 401: AccessDenied, 403: AccessDenied, 404: NotFound,
              409: AlreadyExists, 416: RangeNotSatisfiable, 503: Unavailable, 504: Timeout}
_CODE_OF_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                   404: "NOT_FOUND", 409: "ALREADY_EXISTS", 412: "FAILED_PRECONDITION",
                   416: "OUT_OF_RANGE", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE",
                   504: "DEADLINE_EXCEEDED"}


def error_of_answer(status, body, request, bucket=None, obj=None):
    """The SiloError for a non-2xx answer (its JSON body when there is one)."""
    import json

    code = _CODE_OF_STATUS.get(status, "INTERNAL" if status >= 500 else "UNKNOWN")
    reason, message = "", ""
    try:
        doc = json.loads(body.decode("utf-8", "replace")) if body else None
        err = doc.get("error") if isinstance(doc, dict) else None
        if isinstance(err, dict):
            code = err.get("code") or code
            reason = err.get("reason") or ""
            message = err.get("message") or ""
        elif body:
            message = body[:300].decode("utf-8", "replace")
    except ValueError:
        message = body[:300].decode("utf-8", "replace")
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status, SiloError)
    what = request
    if obj is not None:
        what += " (bucket %r, object %r)" % (bucket, obj)
    elif bucket is not None:
        what += " (bucket %r)" % (bucket,)
    text = "%s: HTTP %d %s%s: %s" % (what, status, code, " (%s)" % reason if reason else "",
                                     message or "(no message)")
    return cls(text, status=status, code=code, reason=reason, request=request, bucket=bucket,
               object=obj, server_message=message)
