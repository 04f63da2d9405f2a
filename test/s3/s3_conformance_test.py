#!/usr/bin/env python3
"""S3 behaviour of a real Silo cluster (1 proxy + 3 targets), checked against what AWS S3
documents: status codes, error codes, headers and bodies, with boto3 for the ordinary
calls and hand-signed requests where a stock client cannot produce the case (signed
aws-chunked bodies, skewed clocks, virtual-host addressing, tampered signatures).

Run: python3 test/s3/s3_conformance_test.py  (SILO_BIN_DIR points at the silod to use)
"""
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
ACCESS_KEY = os.environ.get("SILO_ACCESS_KEY", "silo-admin")
SECRET_KEY = os.environ.get("SILO_SECRET_KEY", "silo-secret-key")
REGION = "us-east-1"
MiB = 1024 * 1024

cluster_dir = None
endpoint = None


def setUpModule():
    global cluster_dir, endpoint
    cluster_dir = tempfile.mkdtemp(prefix="silo-s3-conformance-")
    env = dict(os.environ, SILO_ACCESS_KEY=ACCESS_KEY, SILO_SECRET_KEY=SECRET_KEY)
    subprocess.run([str(CLUSTER), "up", "--dir", cluster_dir, "--base-port", "0", "--targets", "3"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    endpoint = (pathlib.Path(cluster_dir) / "primary_url").read_text().strip()


def tearDownModule():
    if cluster_dir is None:
        return
    failed = hasattr(sys, "last_traceback")
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


def raw(method, path, body=b"", headers=None, host=None, sign=True, when=None, secret=SECRET_KEY):
    """Sends one request with http.client, SigV4-signed by botocore unless sign=False."""
    parsed = urllib.parse.urlsplit(endpoint)
    host = host or parsed.netloc
    headers = dict(headers or {})
    if not any(k.lower() == "host" for k in headers):
        headers["Host"] = host
    if sign:
        request = AWSRequest(method=method, url=f"http://{host}{path}", data=body, headers=headers)
        request.context["payload_signing_enabled"] = True
        auth = S3SigV4Auth(Credentials(ACCESS_KEY, secret), "s3", REGION)
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


class BucketTest(Base):
    def test_create_is_listed_and_located(self):
        self.s3.create_bucket(Bucket="conf-located", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
        names = [b["Name"] for b in self.s3.list_buckets()["Buckets"]]
        self.assertIn("conf-located", names)
        self.assertIsNone(self.s3.get_bucket_location(Bucket=self.bucket).get("LocationConstraint"))
        self.s3.head_bucket(Bucket="conf-located")
        self.s3.delete_bucket(Bucket="conf-located")

    def test_create_twice_is_already_owned(self):
        self.assertClientError("BucketAlreadyOwnedByYou", 409, self.s3.create_bucket, Bucket=self.bucket)

    def test_invalid_names(self):
        for name in ["ab", "Upper-case", "under_score", "-dash", "a..b", "192.168.1.1", "x" * 64]:
            status_code, _, body = raw("PUT", "/" + name)
            self.assertEqual(status_code, 400, name)
            self.assertEqual(xml_code(body), "InvalidBucketName", name)

    def test_missing_bucket(self):
        self.assertClientError("NoSuchBucket", 404, self.s3.list_objects_v2, Bucket="conf-nonexistent")
        self.assertClientError("NoSuchBucket", 404, self.s3.delete_bucket, Bucket="conf-nonexistent")
        self.assertClientError("NoSuchBucket", 404, self.s3.put_object, Bucket="conf-nonexistent", Key="k", Body=b"x")
        self.assertClientError("404", 404, self.s3.head_bucket, Bucket="conf-nonexistent")

    def test_delete_not_empty_then_empty(self):
        self.s3.create_bucket(Bucket="conf-full")
        self.s3.put_object(Bucket="conf-full", Key="a/b", Body=b"1")
        self.assertClientError("BucketNotEmpty", 409, self.s3.delete_bucket, Bucket="conf-full")
        self.s3.delete_object(Bucket="conf-full", Key="a/b")
        self.s3.delete_bucket(Bucket="conf-full")
        self.assertClientError("404", 404, self.s3.head_bucket, Bucket="conf-full")

    def test_delete_racing_with_puts_never_drops_an_acknowledged_object(self):
        """Writers PUT then DELETE their own keys while the bucket is deleted: every delete
        either finds an object (BucketNotEmpty) or wins, and after it wins no PUT into the
        bucket is acknowledged (the targets refuse commits into a bucket being deleted)."""
        import threading
        for _ in range(5):
            self.s3.create_bucket(Bucket="conf-race")
            stop = threading.Event()
            acks, errors = [], []

            def writer(i):
                c = client()
                n = 0
                while not stop.is_set():
                    key = f"w{i}-{n}"
                    n += 1
                    try:
                        c.put_object(Bucket="conf-race", Key=key, Body=b"x" * 1000)
                        acks.append(time.monotonic())
                        c.delete_object(Bucket="conf-race", Key=key)
                    except ClientError as e:
                        if error_code(e) != "NoSuchBucket":
                            errors.append(error_code(e))

            threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
            for t in threads:
                t.start()
            time.sleep(0.1)
            while True:
                try:
                    self.s3.delete_bucket(Bucket="conf-race")
                    deleted_at = time.monotonic()
                    break
                except ClientError as e:
                    self.assertEqual(error_code(e), "BucketNotEmpty")
            stop.set()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            self.assertEqual([t for t in acks if t > deleted_at], [])

    def test_versioning_is_answered_consistently(self):
        self.s3.create_bucket(Bucket="conf-versioning")
        self.assertNotIn("Status", self.s3.get_bucket_versioning(Bucket="conf-versioning"))
        self.s3.put_bucket_versioning(Bucket="conf-versioning", VersioningConfiguration={"Status": "Suspended"})
        self.assertEqual(self.s3.get_bucket_versioning(Bucket="conf-versioning")["Status"], "Suspended")
        self.assertClientError("NotImplemented", 501, self.s3.put_bucket_versioning, Bucket="conf-versioning",
                               VersioningConfiguration={"Status": "Enabled"})

    def test_unimplemented_features_answer_at_once(self):
        self.assertClientError("NoSuchBucketPolicy", 404, self.s3.get_bucket_policy, Bucket=self.bucket)
        self.assertClientError("NotImplemented", 501, self.s3.put_bucket_lifecycle_configuration, Bucket=self.bucket,
                               LifecycleConfiguration={"Rules": [{"ID": "r", "Status": "Enabled",
                                                                  "Filter": {"Prefix": ""},
                                                                  "Expiration": {"Days": 1}}]})
        self.assertClientError("NotImplemented", 501, self.s3.put_bucket_acl, Bucket=self.bucket, ACL="public-read")
        acl = self.s3.get_bucket_acl(Bucket=self.bucket)
        self.assertEqual(acl["Grants"][0]["Permission"], "FULL_CONTROL")


class ListingTest(Base):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.keys = sorted(["a", "a/b", "a/b/c", "a/c", "b/x", "b/y/z", "c", "d e/f", "é/ü", "z+plus", "k=v,w"] +
                          [f"many/{i:03d}" for i in range(30)])
        for key in cls.keys:
            cls.s3.put_object(Bucket=cls.bucket, Key=key, Body=key.encode())

    def all_pages_v2(self, **kwargs):
        keys, prefixes, token = [], [], None
        while True:
            args = dict(kwargs, Bucket=self.bucket)
            if token:
                args["ContinuationToken"] = token
            page = self.s3.list_objects_v2(**args)
            keys += [o["Key"] for o in page.get("Contents", [])]
            prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
            self.assertEqual(page["KeyCount"], len(page.get("Contents", [])) + len(page.get("CommonPrefixes", [])))
            if not page["IsTruncated"]:
                return keys, prefixes
            token = page["NextContinuationToken"]

    def test_v2_pages_cover_everything_once(self):
        keys, prefixes = self.all_pages_v2(MaxKeys=7)
        self.assertEqual(keys, self.keys)
        self.assertEqual(prefixes, [])

    def test_v2_delimiter_folds_into_common_prefixes(self):
        keys, prefixes = self.all_pages_v2(Delimiter="/")
        self.assertEqual(keys, ["a", "c", "k=v,w", "z+plus"])
        self.assertEqual(prefixes, ["a/", "b/", "d e/", "many/", "é/"])
        keys, prefixes = self.all_pages_v2(Delimiter="/", MaxKeys=1)
        self.assertEqual(keys, ["a", "c", "k=v,w", "z+plus"])
        self.assertEqual(prefixes, ["a/", "b/", "d e/", "many/", "é/"])
        keys, prefixes = self.all_pages_v2(Delimiter="/", Prefix="a/")
        self.assertEqual(keys, ["a/b", "a/c"])
        self.assertEqual(prefixes, ["a/b/"])

    def test_any_delimiter(self):
        keys, prefixes = self.all_pages_v2(Delimiter="b")
        self.assertIn("a/b", prefixes)
        self.assertIn("b", prefixes)
        self.assertNotIn("a/b/c", keys)

    def test_start_after_and_max_keys_zero(self):
        keys, _ = self.all_pages_v2(StartAfter="many/028")
        self.assertEqual(keys, [k for k in self.keys if k > "many/028"])
        page = self.s3.list_objects_v2(Bucket=self.bucket, MaxKeys=0)
        self.assertEqual(page["KeyCount"], 0)
        self.assertNotIn("Contents", page)

    def test_v1_markers(self):
        keys, marker = [], ""
        while True:
            page = self.s3.list_objects(Bucket=self.bucket, Marker=marker, MaxKeys=5)
            keys += [o["Key"] for o in page.get("Contents", [])]
            if not page["IsTruncated"]:
                break
            marker = page.get("NextMarker", keys[-1])
        self.assertEqual(keys, self.keys)
        page = self.s3.list_objects(Bucket=self.bucket, Delimiter="/", MaxKeys=2)
        self.assertTrue(page["IsTruncated"])
        self.assertEqual(page["NextMarker"], "a/")
        rest = self.s3.list_objects(Bucket=self.bucket, Delimiter="/", Marker="a/")
        self.assertEqual([p["Prefix"] for p in rest["CommonPrefixes"]], ["b/", "d e/", "many/", "é/"])

    def test_encoding_type_url(self):
        status_code, _, body = raw("GET", f"/{self.bucket}?list-type=2&encoding-type=url&prefix=d%20e")
        self.assertEqual(status_code, 200)
        self.assertIn(b"<Key>d%20e/f</Key>", body)
        self.assertIn(b"<EncodingType>url</EncodingType>", body)
        keys, _ = self.all_pages_v2(EncodingType="url")  # asked for by the caller: boto3 keeps them encoded
        self.assertEqual([urllib.parse.unquote(k) for k in keys], self.keys)

    def test_fetch_owner(self):
        page = self.s3.list_objects_v2(Bucket=self.bucket, MaxKeys=1)
        self.assertNotIn("Owner", page["Contents"][0])
        page = self.s3.list_objects_v2(Bucket=self.bucket, MaxKeys=1, FetchOwner=True)
        self.assertIn("ID", page["Contents"][0]["Owner"])

    def test_object_versions_of_an_unversioned_bucket(self):
        page = self.s3.list_object_versions(Bucket=self.bucket, Prefix="a/")
        self.assertEqual([v["Key"] for v in page["Versions"]], ["a/b", "a/b/c", "a/c"])
        self.assertTrue(all(v["VersionId"] == "null" and v["IsLatest"] for v in page["Versions"]))

    def test_pages_stay_stable_while_objects_change(self):
        bucket = "conf-churn"
        self.s3.create_bucket(Bucket=bucket)
        for i in range(40):
            self.s3.put_object(Bucket=bucket, Key=f"k{i:03d}", Body=b"x")
        seen, token = [], None
        i = 0
        while True:
            args = {"Bucket": bucket, "MaxKeys": 6}
            if token:
                args["ContinuationToken"] = token
            page = self.s3.list_objects_v2(**args)
            seen += [o["Key"] for o in page.get("Contents", [])]
            # Between pages: delete a key already listed, add one behind the cursor and one ahead.
            self.s3.delete_object(Bucket=bucket, Key=seen[0])
            self.s3.put_object(Bucket=bucket, Key=f"a-before-{i}", Body=b"x")
            self.s3.put_object(Bucket=bucket, Key=f"k{i:03d}z", Body=b"x")
            i += 1
            if not page["IsTruncated"]:
                break
            token = page["NextContinuationToken"]
        self.assertEqual(seen, sorted(seen))
        self.assertEqual(len(seen), len(set(seen)))
        for n in range(40):
            self.assertIn(f"k{n:03d}", seen)


class ObjectTest(Base):
    def test_put_get_head_with_attributes(self):
        body = os.urandom(1000)
        put = self.s3.put_object(Bucket=self.bucket, Key="attrs", Body=body, ContentType="text/x-test",
                                 ContentEncoding="identity", ContentDisposition="attachment; filename=a.bin",
                                 ContentLanguage="de", CacheControl="max-age=60",
                                 Expires=datetime.datetime(2030, 1, 2, 3, 4, 5), Metadata={"Color": "Blue"},
                                 Tagging="t1=v1&t2=v2")
        self.assertEqual(put["ETag"], '"%s"' % hashlib.md5(body).hexdigest())
        got = self.s3.get_object(Bucket=self.bucket, Key="attrs")
        self.assertEqual(got["Body"].read(), body)
        self.assertEqual(got["ContentType"], "text/x-test")
        self.assertEqual(got["ContentEncoding"], "identity")
        self.assertEqual(got["ContentDisposition"], "attachment; filename=a.bin")
        self.assertEqual(got["ContentLanguage"], "de")
        self.assertEqual(got["CacheControl"], "max-age=60")
        self.assertEqual(got["Metadata"], {"color": "Blue"})
        self.assertEqual(got["TagCount"], 2)
        self.assertEqual(got["ExpiresString"], "Wed, 02 Jan 2030 03:04:05 GMT")
        head = self.s3.head_object(Bucket=self.bucket, Key="attrs")
        self.assertEqual(head["ContentLength"], 1000)
        self.assertEqual(head["ETag"], put["ETag"])
        self.assertEqual(head["AcceptRanges"], "bytes")

    def test_default_content_type(self):
        self.s3.put_object(Bucket=self.bucket, Key="untyped", Body=b"x")
        status_code, headers, _ = raw("HEAD", f"/{self.bucket}/untyped")
        self.assertEqual(headers["content-type"], "binary/octet-stream")

    def test_ranges(self):
        body = bytes(range(256)) * 4
        self.s3.put_object(Bucket=self.bucket, Key="ranged", Body=body)
        for header, first, last in [("bytes=0-9", 0, 9), ("bytes=1000-", 1000, 1023), ("bytes=-24", 1000, 1023),
                                    ("bytes=10-5000", 10, 1023)]:
            got = self.s3.get_object(Bucket=self.bucket, Key="ranged", Range=header)
            self.assertEqual(got["ResponseMetadata"]["HTTPStatusCode"], 206)
            self.assertEqual(got["ContentRange"], f"bytes {first}-{last}/1024")
            self.assertEqual(got["Body"].read(), body[first:last + 1])
        self.assertClientError("InvalidRange", 416, self.s3.get_object, Bucket=self.bucket, Key="ranged",
                               Range="bytes=1024-")

    def test_response_overrides(self):
        self.s3.put_object(Bucket=self.bucket, Key="override", Body=b"x")
        got = self.s3.get_object(Bucket=self.bucket, Key="override", ResponseContentType="text/plain",
                                 ResponseContentDisposition="inline", ResponseCacheControl="no-cache")
        self.assertEqual(got["ContentType"], "text/plain")
        self.assertEqual(got["ContentDisposition"], "inline")
        self.assertEqual(got["CacheControl"], "no-cache")

    def test_missing_key_and_idempotent_delete(self):
        self.assertClientError("NoSuchKey", 404, self.s3.get_object, Bucket=self.bucket, Key="nope")
        self.assertClientError("404", 404, self.s3.head_object, Bucket=self.bucket, Key="nope")
        self.assertEqual(self.s3.delete_object(Bucket=self.bucket, Key="nope")["ResponseMetadata"]["HTTPStatusCode"],
                         204)

    def test_keys_that_are_prefixes_of_each_other(self):
        self.s3.put_object(Bucket=self.bucket, Key="dir", Body=b"file")
        self.s3.put_object(Bucket=self.bucket, Key="dir/child", Body=b"child")
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="dir")["Body"].read(), b"file")
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="dir/child")["Body"].read(), b"child")

    def test_odd_keys(self):
        for key in ["sp ace", "plus+sign", "q?mark", "hash#", "pct%20", "uni/ÿ中文", "a//b", "eq=,;:@$&'()*!"]:
            self.s3.put_object(Bucket=self.bucket, Key=key, Body=key.encode())
            self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read(), key.encode(), key)

    def test_key_too_long(self):
        self.assertClientError("KeyTooLongError", 400, self.s3.put_object, Bucket=self.bucket, Key="k" * 1025,
                               Body=b"x")

    def test_delete_objects_verbose_and_quiet(self):
        for i in range(5):
            self.s3.put_object(Bucket=self.bucket, Key=f"del/{i}", Body=b"x")
        result = self.s3.delete_objects(Bucket=self.bucket, Delete={
            "Objects": [{"Key": f"del/{i}"} for i in range(5)] + [{"Key": "del/missing"}]})
        self.assertEqual(sorted(d["Key"] for d in result["Deleted"]),
                         sorted([f"del/{i}" for i in range(5)] + ["del/missing"]))
        self.assertNotIn("Errors", result)
        self.s3.put_object(Bucket=self.bucket, Key="del/q", Body=b"x")
        quiet = self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": [{"Key": "del/q"}], "Quiet": True})
        self.assertNotIn("Deleted", quiet)
        self.assertClientError("404", 404, self.s3.head_object, Bucket=self.bucket, Key="del/q")

    def test_copy(self):
        self.s3.put_object(Bucket=self.bucket, Key="src", Body=b"source bytes", ContentType="text/a",
                           Metadata={"m": "1"}, Tagging="a=1")
        self.s3.copy_object(Bucket=self.bucket, Key="dst", CopySource={"Bucket": self.bucket, "Key": "src"})
        got = self.s3.get_object(Bucket=self.bucket, Key="dst")
        self.assertEqual(got["Body"].read(), b"source bytes")
        self.assertEqual(got["ContentType"], "text/a")
        self.assertEqual(got["Metadata"], {"m": "1"})
        self.assertEqual(self.s3.get_object_tagging(Bucket=self.bucket, Key="dst")["TagSet"],
                         [{"Key": "a", "Value": "1"}])
        self.s3.copy_object(Bucket=self.bucket, Key="dst2", CopySource=f"{self.bucket}/src", MetadataDirective="REPLACE",
                            ContentType="text/b", Metadata={"n": "2"})
        got = self.s3.head_object(Bucket=self.bucket, Key="dst2")
        self.assertEqual((got["ContentType"], got["Metadata"]), ("text/b", {"n": "2"}))
        self.assertClientError("InvalidRequest", 400, self.s3.copy_object, Bucket=self.bucket, Key="src",
                               CopySource={"Bucket": self.bucket, "Key": "src"})
        self.s3.copy_object(Bucket=self.bucket, Key="src", CopySource={"Bucket": self.bucket, "Key": "src"},
                            MetadataDirective="REPLACE", Metadata={"new": "yes"})
        got = self.s3.get_object(Bucket=self.bucket, Key="src")
        self.assertEqual((got["Body"].read(), got["Metadata"]), (b"source bytes", {"new": "yes"}))
        etag = got["ETag"]
        self.assertClientError("PreconditionFailed", 412, self.s3.copy_object, Bucket=self.bucket, Key="dst3",
                               CopySource={"Bucket": self.bucket, "Key": "src"}, CopySourceIfMatch='"0000"')
        self.s3.copy_object(Bucket=self.bucket, Key="dst3", CopySource={"Bucket": self.bucket, "Key": "src"},
                            CopySourceIfMatch=etag)
        self.assertClientError("NoSuchKey", 404, self.s3.copy_object, Bucket=self.bucket, Key="dst4",
                               CopySource={"Bucket": self.bucket, "Key": "missing"})

    def test_tagging(self):
        self.s3.put_object(Bucket=self.bucket, Key="tagged", Body=b"x")
        self.assertEqual(self.s3.get_object_tagging(Bucket=self.bucket, Key="tagged")["TagSet"], [])
        self.s3.put_object_tagging(Bucket=self.bucket, Key="tagged",
                                   Tagging={"TagSet": [{"Key": "k", "Value": "v"}, {"Key": "e", "Value": ""}]})
        tags = self.s3.get_object_tagging(Bucket=self.bucket, Key="tagged")["TagSet"]
        self.assertEqual(sorted((t["Key"], t["Value"]) for t in tags), [("e", ""), ("k", "v")])
        self.s3.delete_object_tagging(Bucket=self.bucket, Key="tagged")
        self.assertEqual(self.s3.get_object_tagging(Bucket=self.bucket, Key="tagged")["TagSet"], [])
        self.assertClientError("InvalidTag", 400, self.s3.put_object_tagging, Bucket=self.bucket, Key="tagged",
                               Tagging={"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]})
        self.assertClientError("NoSuchKey", 404, self.s3.get_object_tagging, Bucket=self.bucket, Key="untagged-missing")


class ConditionalTest(Base):
    def test_read_conditions(self):
        put = self.s3.put_object(Bucket=self.bucket, Key="c", Body=b"conditional")
        etag = put["ETag"]
        past = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
        future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="c", IfMatch=etag)["Body"].read(), b"conditional")
        self.assertClientError("PreconditionFailed", 412, self.s3.get_object, Bucket=self.bucket, Key="c",
                               IfMatch='"deadbeef"')
        self.assertClientError("304", 304, self.s3.get_object, Bucket=self.bucket, Key="c", IfNoneMatch=etag)
        self.assertClientError("304", 304, self.s3.get_object, Bucket=self.bucket, Key="c", IfModifiedSince=future)
        self.assertClientError("PreconditionFailed", 412, self.s3.get_object, Bucket=self.bucket, Key="c",
                               IfUnmodifiedSince=past)
        self.assertClientError("412", 412, self.s3.head_object, Bucket=self.bucket, Key="c", IfMatch='"x"')
        # If-Match true wins over If-Unmodified-Since false; If-None-Match false over If-Modified-Since.
        self.s3.get_object(Bucket=self.bucket, Key="c", IfMatch=etag, IfUnmodifiedSince=past)
        self.s3.get_object(Bucket=self.bucket, Key="c", IfNoneMatch='"other"', IfModifiedSince=future)

    def test_write_conditions(self):
        status_code, _, body = raw("PUT", f"/{self.bucket}/new-once", body=b"1", headers={"If-None-Match": "*"})
        self.assertEqual(status_code, 200, body)
        status_code, _, body = raw("PUT", f"/{self.bucket}/new-once", body=b"2", headers={"If-None-Match": "*"})
        self.assertEqual((status_code, xml_code(body)), (412, "PreconditionFailed"))
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="new-once")["Body"].read(), b"1")
        etag = '"%s"' % hashlib.md5(b"1").hexdigest()
        status_code, _, _ = raw("PUT", f"/{self.bucket}/new-once", body=b"3", headers={"If-Match": etag})
        self.assertEqual(status_code, 200)
        status_code, _, body = raw("PUT", f"/{self.bucket}/new-once", body=b"4", headers={"If-Match": etag})
        self.assertEqual((status_code, xml_code(body)), (412, "PreconditionFailed"))


class IntegrityTest(Base):
    def test_content_md5(self):
        good = base64.b64encode(hashlib.md5(b"payload").digest()).decode()
        self.s3.put_object(Bucket=self.bucket, Key="md5", Body=b"payload", ContentMD5=good)
        bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
        self.assertClientError("BadDigest", 400, self.s3.put_object, Bucket=self.bucket, Key="md5", Body=b"payload",
                               ContentMD5=bad)
        status_code, _, body = raw("PUT", f"/{self.bucket}/md5", body=b"payload", headers={"Content-MD5": "nope"})
        self.assertEqual((status_code, xml_code(body)), (400, "InvalidDigest"))
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="md5")["Body"].read(), b"payload")

    def test_checksums_are_checked_stored_and_returned(self):
        body = b"checksummed bytes"
        for algorithm in ["CRC32", "SHA1", "SHA256"]:  # CRC32C needs botocore[crt]; unit tests cover it
            key = "sum-" + algorithm
            put = self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ChecksumAlgorithm=algorithm)
            value = put["Checksum" + algorithm]
            head = self.s3.head_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED")
            self.assertEqual(head["Checksum" + algorithm], value, algorithm)
        crc = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
        self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="sum-CRC32", ChecksumMode="ENABLED")["ChecksumCRC32"],
                         crc)
        wrong = base64.b64encode((zlib.crc32(body) ^ 1).to_bytes(4, "big")).decode()
        status_code, _, answer = raw("PUT", f"/{self.bucket}/sum-bad", body=body,
                                     headers={"x-amz-checksum-crc32": wrong})
        self.assertEqual((status_code, xml_code(answer)), (400, "BadDigest"))
        self.assertClientError("NoSuchKey", 404, self.s3.get_object, Bucket=self.bucket, Key="sum-bad")

    def test_signed_payload_hash_is_checked(self):
        for declared, expected in [(b"abd", (400, "XAmzContentSHA256Mismatch")), (b"abc", (200, None))]:
            headers, *_ = sign_by_hand("PUT", f"/{self.bucket}/hashed", {}, hashlib.sha256(declared).hexdigest())
            status_code, _, answer = raw("PUT", f"/{self.bucket}/hashed", body=b"abc", headers=headers, sign=False)
            self.assertEqual((status_code, xml_code(answer)), expected)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="hashed")["Body"].read(), b"abc")

    def streaming_put(self, key, chunks, tamper=False, trailer=None, signed=True):
        """A hand-built aws-chunked PUT: STREAMING-AWS4-HMAC-SHA256-PAYLOAD (signed chunks) or
        STREAMING-UNSIGNED-PAYLOAD-TRAILER with a checksum trailer."""
        decoded = sum(len(c) for c in chunks)
        mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" if signed else "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        headers = {"x-amz-decoded-content-length": str(decoded), "content-encoding": "aws-chunked"}
        if trailer:
            headers["x-amz-trailer"] = trailer[0]
        headers, k, seed, amz_date, scope = sign_by_hand("PUT", f"/{self.bucket}/{key}", headers, mode)
        body = b""
        previous = seed
        empty = hashlib.sha256(b"").hexdigest()
        for chunk in list(chunks) + [b""]:
            if signed:
                string = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, previous, empty,
                                    hashlib.sha256(chunk).hexdigest()])
                signature = hmac.new(k, string.encode(), hashlib.sha256).hexdigest()
                previous = signature
                data = chunk
                if tamper and chunk:
                    data = bytes([chunk[0] ^ 1]) + chunk[1:]
                body += f"{len(chunk):x};chunk-signature={signature}\r\n".encode() + data + b"\r\n"
            elif chunk:
                body += f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        if not signed:
            body = body + b"0\r\n"
            if trailer:
                body += f"{trailer[0]}:{trailer[1]}\r\n".encode()
            body += b"\r\n"
        parsed = urllib.parse.urlsplit(endpoint)
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=60)
        conn.request("PUT", f"/{self.bucket}/{key}", body=body, headers=headers)
        response = conn.getresponse()
        answer = response.read()
        conn.close()
        return response.status, answer

    def test_signed_streaming_upload(self):
        chunks = [os.urandom(64 * 1024), os.urandom(64 * 1024), os.urandom(1000)]
        status_code, answer = self.streaming_put("streamed", chunks)
        self.assertEqual(status_code, 200, answer)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="streamed")["Body"].read(), b"".join(chunks))
        status_code, answer = self.streaming_put("streamed-bad", chunks, tamper=True)
        self.assertEqual((status_code, xml_code(answer)), (403, "SignatureDoesNotMatch"))
        self.assertClientError("NoSuchKey", 404, self.s3.get_object, Bucket=self.bucket, Key="streamed-bad")

    def test_unsigned_streaming_upload_with_trailer(self):
        chunks = [b"a" * 8192, b"b" * 100]
        data = b"".join(chunks)
        crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
        status_code, answer = self.streaming_put("trailed", chunks, trailer=("x-amz-checksum-crc32", crc), signed=False)
        self.assertEqual(status_code, 200, answer)
        head = self.s3.head_object(Bucket=self.bucket, Key="trailed", ChecksumMode="ENABLED")
        self.assertEqual(head["ChecksumCRC32"], crc)
        wrong = base64.b64encode((zlib.crc32(data) ^ 1).to_bytes(4, "big")).decode()
        status_code, answer = self.streaming_put("trailed-bad", chunks, trailer=("x-amz-checksum-crc32", wrong),
                                                 signed=False)
        self.assertEqual((status_code, xml_code(answer)), (400, "BadDigest"))


class MultipartTest(Base):
    def test_complete_upload(self):
        parts_data = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(1234)]
        upload = self.s3.create_multipart_upload(Bucket=self.bucket, Key="mp", ContentType="video/x", Metadata={"a": "b"})
        uid = upload["UploadId"]
        parts = []
        for n, data in enumerate(parts_data, 1):
            etag = self.s3.upload_part(Bucket=self.bucket, Key="mp", UploadId=uid, PartNumber=n, Body=data)["ETag"]
            self.assertEqual(etag, '"%s"' % hashlib.md5(data).hexdigest())
            parts.append({"PartNumber": n, "ETag": etag})
        listed = self.s3.list_parts(Bucket=self.bucket, Key="mp", UploadId=uid)
        self.assertEqual([p["PartNumber"] for p in listed["Parts"]], [1, 2, 3])
        self.assertEqual([p["Size"] for p in listed["Parts"]], [len(d) for d in parts_data])
        uploads = self.s3.list_multipart_uploads(Bucket=self.bucket)["Uploads"]
        self.assertIn(uid, [u["UploadId"] for u in uploads])
        done = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mp", UploadId=uid,
                                                 MultipartUpload={"Parts": parts})
        expected = hashlib.md5(b"".join(hashlib.md5(d).digest() for d in parts_data)).hexdigest() + "-3"
        self.assertEqual(done["ETag"], f'"{expected}"')
        got = self.s3.get_object(Bucket=self.bucket, Key="mp")
        self.assertEqual(got["Body"].read(), b"".join(parts_data))
        self.assertEqual((got["ContentType"], got["Metadata"], got["ETag"]), ("video/x", {"a": "b"}, f'"{expected}"'))
        second = self.s3.get_object(Bucket=self.bucket, Key="mp", PartNumber=2)
        self.assertEqual(second["Body"].read(), parts_data[1])
        self.assertEqual(second["PartsCount"], 3)
        self.assertClientError("NoSuchUpload", 404, self.s3.list_parts, Bucket=self.bucket, Key="mp", UploadId=uid)
        self.assertNotIn(uid, [u["UploadId"] for u in
                               self.s3.list_multipart_uploads(Bucket=self.bucket).get("Uploads", [])])
        listing = self.s3.list_objects_v2(Bucket=self.bucket, Prefix="mp")["Contents"]
        self.assertEqual(listing[0]["ETag"], f'"{expected}"')

    def test_complete_errors(self):
        uid = self.s3.create_multipart_upload(Bucket=self.bucket, Key="bad")["UploadId"]
        small = self.s3.upload_part(Bucket=self.bucket, Key="bad", UploadId=uid, PartNumber=1, Body=b"tiny")["ETag"]
        last = self.s3.upload_part(Bucket=self.bucket, Key="bad", UploadId=uid, PartNumber=2, Body=b"end")["ETag"]
        complete = self.s3.complete_multipart_upload
        self.assertClientError("EntityTooSmall", 400, complete, Bucket=self.bucket, Key="bad", UploadId=uid,
                               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": small},
                                                          {"PartNumber": 2, "ETag": last}]})
        self.assertClientError("InvalidPart", 400, complete, Bucket=self.bucket, Key="bad", UploadId=uid,
                               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"0123"'}]})
        self.assertClientError("InvalidPartOrder", 400, complete, Bucket=self.bucket, Key="bad", UploadId=uid,
                               MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": last},
                                                          {"PartNumber": 1, "ETag": small}]})
        self.assertClientError("MalformedXML", 400, complete, Bucket=self.bucket, Key="bad", UploadId=uid,
                               MultipartUpload={"Parts": []})
        self.s3.abort_multipart_upload(Bucket=self.bucket, Key="bad", UploadId=uid)
        self.assertClientError("NoSuchUpload", 404, self.s3.upload_part, Bucket=self.bucket, Key="bad", UploadId=uid,
                               PartNumber=1, Body=b"x")
        self.assertClientError("NoSuchUpload", 404, self.s3.abort_multipart_upload, Bucket=self.bucket, Key="bad",
                               UploadId=uid)
        self.assertClientError("404", 404, self.s3.head_object, Bucket=self.bucket, Key="bad")

    def test_upload_part_copy_with_range(self):
        source = os.urandom(6 * MiB)
        self.s3.put_object(Bucket=self.bucket, Key="copy-src", Body=source)
        uid = self.s3.create_multipart_upload(Bucket=self.bucket, Key="copied")["UploadId"]
        p1 = self.s3.upload_part_copy(Bucket=self.bucket, Key="copied", UploadId=uid, PartNumber=1,
                                      CopySource={"Bucket": self.bucket, "Key": "copy-src"},
                                      CopySourceRange=f"bytes=0-{5 * MiB - 1}")["CopyPartResult"]["ETag"]
        p2 = self.s3.upload_part_copy(Bucket=self.bucket, Key="copied", UploadId=uid, PartNumber=2,
                                      CopySource={"Bucket": self.bucket, "Key": "copy-src"},
                                      CopySourceRange=f"bytes={5 * MiB}-{6 * MiB - 1}")["CopyPartResult"]["ETag"]
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key="copied", UploadId=uid, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": p1}, {"PartNumber": 2, "ETag": p2}]})
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="copied")["Body"].read(), source)

    def test_complete_with_if_none_match(self):
        self.s3.put_object(Bucket=self.bucket, Key="exists", Body=b"x")
        uid = self.s3.create_multipart_upload(Bucket=self.bucket, Key="exists")["UploadId"]
        etag = self.s3.upload_part(Bucket=self.bucket, Key="exists", UploadId=uid, PartNumber=1, Body=b"y")["ETag"]
        body = (f'<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part>'
                f'</CompleteMultipartUpload>').encode()
        status_code, _, answer = raw("POST", f"/{self.bucket}/exists?uploadId={uid}", body=body,
                                     headers={"If-None-Match": "*"})
        self.assertEqual((status_code, xml_code(answer)), (412, "PreconditionFailed"))
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="exists")["Body"].read(), b"x")


class BadInputTest(Base):
    def test_bad_input_gets_the_right_4xx_and_hurts_nothing(self):
        self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"kept")
        b = self.bucket
        cases = [
            ("GET", f"/{b}/k", {"Authorization": "AWS4-HMAC-SHA256 garbage"}, b"", "AuthorizationHeaderMalformed", 400),
            ("GET", f"/{b}/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=0", {}, b"",
             "AuthorizationQueryParametersError", 400),
            ("POST", f"/{b}/k?uploadId=00000000000000000000000000000000", {}, b"<not xml", None, None),
            ("PUT", f"/{b}/c", {"x-amz-copy-source": "%%%"}, b"", "InvalidArgument", 400),
            ("PUT", f"/{b}/c", {"x-amz-copy-source": f"/{b}/k", "x-amz-metadata-directive": "MAYBE"}, b"",
             "InvalidArgument", 400),
            ("GET", f"/{b}/k?partNumber=abc", {}, b"", "InvalidArgument", 400),
            ("GET", f"/{b}/k?partNumber=2", {}, b"", "InvalidPartNumber", 416),
            ("GET", f"/{b}?list-type=2&max-keys=-1", {}, b"", "InvalidArgument", 400),
            ("GET", f"/{b}?list-type=2&continuation-token=zz", {}, b"", "InvalidArgument", 400),
            ("GET", f"/{b}?list-type=3", {}, b"", "InvalidArgument", 400),
            ("GET", f"/{b}?list-type=2&encoding-type=base64", {}, b"", "InvalidArgument", 400),
            ("POST", f"/{b}?delete", {}, b"<Delete></Delete>", "MalformedXML", 400),
            ("PUT", f"/{b}/k?tagging", {}, b"<Tagging><TagSet><Tag><Key></Key><Value>v</Value></Tag></TagSet></Tagging>",
             "InvalidTag", 400),
            ("PUT", f"/{b}/k", {"x-amz-checksum-crc32": "AAAAAA==", "x-amz-checksum-sha1": "AAAA"}, b"x",
             "InvalidRequest", 400),
            ("PUT", f"/{b}/k", {"x-amz-meta-big": "v" * 3000}, b"x", "MetadataTooLarge", 400),
            ("PUT", f"/{b}/k", {"x-amz-tagging": "a=1&a=2"}, b"x", "InvalidTag", 400),
            ("GET", f"/{b}/k", {"Range": "bytes=abc"}, b"", None, 200),
        ]
        for method, path, headers, body, code, http_status in cases:
            status_code, _, answer = raw(method, path, body=body, headers=headers,
                                         sign="Authorization" not in headers and "X-Amz-Algorithm" not in path)
            where = f"{method} {path} {headers}: {status_code} {answer[:300]!r}"
            self.assertLess(status_code, 500, where)
            if code is not None:
                self.assertEqual(xml_code(answer), code, where)
            if http_status is not None:
                self.assertEqual(status_code, http_status, where)
        headers, *_ = sign_by_hand("PUT", f"/{b}/s", {}, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
        status_code, _, answer = raw("PUT", f"/{b}/s", body=b"5\r\nhello\r\n", headers=headers, sign=False)
        self.assertEqual((status_code, xml_code(answer)), (411, "MissingContentLength"))
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="k")["Body"].read(), b"kept")


class AuthTest(Base):
    def test_wrong_secret_and_unknown_key(self):
        self.assertClientError("SignatureDoesNotMatch", 403, client(secret_key="wrong-secret").list_buckets)
        self.assertClientError("InvalidAccessKeyId", 403, client(access_key="nobody").list_buckets)

    def test_anonymous_is_denied_unless_the_bucket_allows_reads(self):
        self.s3.put_object(Bucket=self.bucket, Key="private", Body=b"secret")
        status_code, _, body = raw("GET", f"/{self.bucket}/private", sign=False)
        self.assertEqual((status_code, xml_code(body)), (403, "AccessDenied"))
        self.s3.create_bucket(Bucket="conf-public", ACL="public-read")
        self.s3.put_object(Bucket="conf-public", Key="open", Body=b"for all")
        status_code, _, body = raw("GET", "/conf-public/open", sign=False)
        self.assertEqual((status_code, body), (200, b"for all"))
        status_code, _, _ = raw("GET", "/conf-public?list-type=2", sign=False)
        self.assertEqual(status_code, 200)
        status_code, _, body = raw("PUT", "/conf-public/write", body=b"x", sign=False)
        self.assertEqual((status_code, xml_code(body)), (403, "AccessDenied"))

    def test_skewed_clock(self):
        when = datetime.datetime.utcnow() - datetime.timedelta(hours=1)
        status_code, _, body = raw("GET", "/", when=when)
        self.assertEqual((status_code, xml_code(body)), (403, "RequestTimeTooSkewed"))

    def test_presigned_urls(self):
        self.s3.put_object(Bucket=self.bucket, Key="shared", Body=b"presigned")
        v4 = client(signature_version="s3v4")
        url = v4.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "shared"}, ExpiresIn=60)
        self.assertIn("X-Amz-Signature=", url)
        self.assertEqual(urllib.request.urlopen(url).read(), b"presigned")
        # boto3's default presigned URLs for S3 are still SigV2 (AWSAccessKeyId, Expires).
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "shared"},
                                             ExpiresIn=60)
        self.assertEqual(urllib.request.urlopen(url).read(), b"presigned")
        put_url = v4.generate_presigned_url("put_object", Params={"Bucket": self.bucket, "Key": "up"},
                                                 ExpiresIn=60)
        urllib.request.urlopen(urllib.request.Request(put_url, data=b"uploaded", method="PUT")).read()
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="up")["Body"].read(), b"uploaded")
        short = self.s3.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "shared"},
                                               ExpiresIn=1)
        time.sleep(2.1)
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(short)
        self.assertEqual(cm.exception.code, 403)
        self.assertEqual(xml_code(cm.exception.read()), "AccessDenied")
        tampered = url.replace("shared", "sharee")
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(tampered)
        self.assertEqual(cm.exception.code, 403)

    def test_virtual_host_style(self):
        self.s3.put_object(Bucket=self.bucket, Key="vh/key", Body=b"virtual")
        port = urllib.parse.urlsplit(endpoint).port
        status_code, _, body = raw("GET", "/vh/key", host=f"{self.bucket}.localhost:{port}")
        self.assertEqual((status_code, body), (200, b"virtual"))
        status_code, _, body = raw("GET", "/?list-type=2&prefix=vh/", host=f"{self.bucket}.localhost:{port}")
        self.assertEqual(status_code, 200)
        self.assertIn(b"<Key>vh/key</Key>", body)

    def test_native_api_needs_a_signature(self):
        status_code, _, _ = raw("GET", "/v1/buckets", sign=False)
        self.assertEqual(status_code, 403)
        status_code, _, body = raw("GET", "/v1/buckets")
        self.assertEqual(status_code, 200)
        self.assertIn(self.bucket, [b["name"] for b in json.loads(body)["buckets"]])
        status_code, _, _ = raw("GET", "/v1/internal/list/" + self.bucket, sign=False)
        self.assertEqual(status_code, 403)
        forged = {"X-Silo-Cluster-Auth": f"p1:{int(time.time())}:" + "0" * 64, "X-Silo-Forwarded": "p1"}
        status_code, _, _ = raw("GET", f"/{self.bucket}/private", headers=forged, sign=False)
        self.assertEqual(status_code, 403)

    def test_users_added_through_the_native_api(self):
        status_code, _, body = raw("PUT", "/v1/users/reader-1", body=json.dumps({"secret_key": "reader-secret-1"}).encode())
        self.assertEqual(status_code, 200, body)
        deadline = time.time() + 10
        while True:
            try:
                client("reader-1", "reader-secret-1").list_buckets()
                break
            except ClientError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        status_code, _, body = raw("GET", "/v1/users")
        self.assertNotIn(b"reader-secret-1", body)
        status_code, _, _ = raw("DELETE", "/v1/users/reader-1")
        self.assertEqual(status_code, 204)


if __name__ == "__main__":
    unittest.main(verbosity=2)
