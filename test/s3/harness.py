#!/usr/bin/env python3
"""What every S3 conformance module shares: the cluster (started once by the runner,
s3_conformance_test.py), boto3 clients, hand-signed raw requests, the Base test case."""
import base64
import datetime
import hashlib
import hmac
import http.client
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
import zlib

try:
    import boto3
    import botocore
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
    from botocore.exceptions import ClientError
except ImportError:
    print("skipped: boto3 is not installed for", sys.executable)
    sys.exit(77)

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "deploy" / "local" / "cluster.sh"
# The cluster's admin keys are the test's own, never the caller's: a shell that exported
# other SILO_ACCESS_KEY / SILO_SECRET_KEY values (the README walkthrough) must not change it.
ACCESS_KEY = "silo-admin"
SECRET_KEY = "silo-secret-key"
REGION = "us-east-1"
MiB = 1024 * 1024

cluster_dir = None
endpoint = None


def start_cluster():
    global cluster_dir, endpoint
    cluster_dir = tempfile.mkdtemp(prefix="silo-s3-conformance-")
    env = dict(os.environ, SILO_ACCESS_KEY=ACCESS_KEY, SILO_SECRET_KEY=SECRET_KEY)
    subprocess.run([str(CLUSTER), "up", "--dir", cluster_dir, "--base-port", "0", "--targets", "3"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    endpoint = (pathlib.Path(cluster_dir) / "primary_url").read_text().strip()


def stop_cluster(failed):
    if cluster_dir is None:
        return
    subprocess.run([str(CLUSTER), "down", "--dir", cluster_dir], check=False, stdout=subprocess.DEVNULL)
    if not failed and not os.environ.get("SILO_KEEP"):
        shutil.rmtree(cluster_dir, ignore_errors=True)


def client(access_key=ACCESS_KEY, secret_key=SECRET_KEY, **config):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key, region_name=REGION,
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **config))


def error_code(e):
    return e.response["Error"]["Code"]


def status(e):
    return e.response["ResponseMetadata"]["HTTPStatusCode"]


def raw(method, path, body=b"", headers=None, host=None, sign=True, when=None, secret=SECRET_KEY,
        access_key=ACCESS_KEY, base=None):
    """Sends one request with http.client, SigV4-signed by botocore unless sign=False, to
    the cluster's endpoint or to `base` (another node's URL)."""
    parsed = urllib.parse.urlsplit(base or endpoint)
    host = host or parsed.netloc
    headers = dict(headers or {})
    if not any(k.lower() == "host" for k in headers):
        headers["Host"] = host
    if sign:
        request = AWSRequest(method=method, url=f"http://{host}{path}", data=body, headers=headers)
        request.context["payload_signing_enabled"] = True
        auth = S3SigV4Auth(Credentials(access_key, secret), "s3", REGION)
        if when is not None:
            real = botocore.auth.datetime.datetime

            class Fixed(real):
                @classmethod
                def utcnow(cls):
                    return when

                @classmethod
                def now(cls, tz=None):
                    return when.replace(tzinfo=tz) if tz else when

            botocore.auth.datetime.datetime = Fixed
            try:
                auth.add_auth(request)
            finally:
                botocore.auth.datetime.datetime = real
        else:
            auth.add_auth(request)
        headers = dict(request.headers.items())
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict((k.lower(), v) for k, v in response.getheaders()), data


def wait_until(condition, timeout=10):
    """Polls `condition` until it holds (bucket props reach every node through the map)."""
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError("condition did not hold within %s s" % timeout)
        time.sleep(0.1)


def raw_client_error(method, path, headers=None, body=b""):
    """A signed raw request that must fail: raises a ClientError-like error for
    Base.assertClientError."""
    status_code, _, answer = raw(method, path, body=body, headers=headers)
    if status_code < 300:
        return status_code
    raise ClientError({"Error": {"Code": xml_code(answer)}, "ResponseMetadata": {"HTTPStatusCode": status_code}},
                      method)


def set_config(patch):
    """PUT /v1/config (a JSON merge-patch of the cluster section); waits until the proxy
    that serves the tests shows it."""
    status_code, _, body = raw("PUT", "/v1/config", body=json.dumps(patch).encode(),
                               headers={"Content-Type": "application/json"})
    assert status_code == 200, (status_code, body)


def put_chunked(url, data, piece=64 * 1024):
    """PUTs `data` to a (presigned) `url` as Transfer-Encoding: chunked, without a
    Content-Length, as curl -T - does. Returns (status, body)."""
    parsed = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
    conn.putrequest("PUT", parsed.path + ("?" + parsed.query if parsed.query else ""))
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    try:
        for at in range(0, len(data), piece):
            chunk = data[at:at + piece]
            conn.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        conn.send(b"0\r\n\r\n")
    except OSError:
        pass  # the server answered (and closed) before the end: its answer follows
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body


def presigned_native_url(method, path, expires=300):
    """A presigned SigV4 URL of the native API (`path` such as /v1/objects/B/K)."""
    request = AWSRequest(method=method, url=endpoint + path)
    botocore.auth.S3SigV4QueryAuth(Credentials(ACCESS_KEY, SECRET_KEY), "s3", REGION, expires=expires).add_auth(request)
    return request.url


def sign_by_hand(method, path, headers, payload_hash):
    """SigV4 by the book, for payload modes botocore will not produce on demand. Returns the
    headers to send and what chunk signing needs (key, seed, date, scope)."""
    now = datetime.datetime.utcnow()
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = amz_date[:8]
    scope = f"{date}/{REGION}/s3/aws4_request"
    headers = dict(headers, host=urllib.parse.urlsplit(endpoint).netloc)
    headers["x-amz-content-sha256"] = payload_hash
    headers["x-amz-date"] = amz_date
    names = sorted(headers)
    canonical = "\n".join([method, path, "", "".join(f"{n}:{headers[n]}\n" for n in names), ";".join(names),
                           payload_hash])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + SECRET_KEY).encode()
    for part in [date, REGION, "s3", "aws4_request"]:
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    seed = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={seed}")
    return headers, k, seed, amz_date, scope


def xml_code(body):
    text = body.decode()
    start = text.find("<Code>")
    return text[start + 6:text.find("</Code>")] if start >= 0 else None


class Base(unittest.TestCase):
    bucket = None

    @classmethod
    def setUpClass(cls):
        cls.s3 = client()
        cls.bucket = "conf-" + cls.__name__.lower().replace("test", "")[:40]
        cls.s3.create_bucket(Bucket=cls.bucket)

    def assertClientError(self, code, http_status, fn, *args, **kwargs):
        with self.assertRaises(ClientError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(error_code(cm.exception), code, cm.exception.response)
        self.assertEqual(status(cm.exception), http_status)
        return cm.exception
