"""S3 conformance: malformed input and authentication (signatures, clocks, users, anonymous reads)."""
import base64
import email.utils
import hashlib
import hmac
import re

import harness
from harness import *  # noqa: F401,F403 (clients, helpers, Base)


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
            ("GET", f"/{b}/k?partNumber=2", {}, b"", "InvalidPartNumber", 400),
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

    def test_dates_in_rfc2822_form_and_x_amz_date_first(self):
        # A SigV2 request dated as Python's email.utils.formatdate() writes it: a numeric
        # zone ("Fri, 27 Nov 2026 13:45:00 -0000"), which AWS accepts (issue #25 item 7).
        self.s3.put_object(Bucket=self.bucket, Key="dated", Body=b"by date")
        path = f"/{self.bucket}/dated"

        def sigv2(date_line, amz_headers=""):
            to_sign = f"GET\n\n\n{date_line}\n{amz_headers}{path}"
            digest = hmac.new(harness.SECRET_KEY.encode(), to_sign.encode(), hashlib.sha1).digest()
            return f"AWS {harness.ACCESS_KEY}:{base64.b64encode(digest).decode()}"

        date = email.utils.formatdate(usegmt=False)
        self.assertTrue(date.endswith("-0000"), date)
        status_code, _, body = raw("GET", path, headers={"Date": date, "Authorization": sigv2(date)}, sign=False)
        self.assertEqual((status_code, body), (200, b"by date"))
        # Both Date and x-amz-date: x-amz-date dates the request and the Date line is empty,
        # so a stale or odd Date does not matter.
        amz = email.utils.formatdate(usegmt=True)
        headers = {"Date": "Sun, 06 Nov 1994 08:49:37 GMT", "x-amz-date": amz,
                   "Authorization": sigv2("", f"x-amz-date:{amz}\n")}
        status_code, _, body = raw("GET", path, headers=headers, sign=False)
        self.assertEqual((status_code, body), (200, b"by date"))

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
        # An expiry out of range (never valid) is denied as an expired URL is: 403 AccessDenied.
        signed_v4 = v4.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "shared"},
                                              ExpiresIn=60)
        for expires in ("0", "-5", "604801"):
            with self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(re.sub(r"X-Amz-Expires=\d+", "X-Amz-Expires=" + expires, signed_v4))
            self.assertEqual((cm.exception.code, xml_code(cm.exception.read())), (403, "AccessDenied"), expires)
        tampered = url.replace("shared", "sharee")
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(tampered)
        self.assertEqual(cm.exception.code, 403)

    def test_virtual_host_style(self):
        self.s3.put_object(Bucket=self.bucket, Key="vh/key", Body=b"virtual")
        port = urllib.parse.urlsplit(harness.endpoint).port
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
