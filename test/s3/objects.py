"""S3 conformance: objects, conditional requests, integrity (checksums, Content-MD5, aws-chunked) and multipart uploads."""
import email.header
import http.client
import threading
import urllib.parse

import harness
from harness import *  # noqa: F401,F403 (clients, helpers, Base)


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


    def test_utf8_metadata_is_kept_and_comes_back_rfc2047_encoded(self):
        """AWS decodes RFC 2047 words before storing user metadata and encodes non-ASCII
        values as =?UTF-8?B?...?= on the way out, so every HTTP client reads them intact."""
        value = "héllo wörld ✓"
        encoded = "=?UTF-8?B?" + base64.b64encode(value.encode()).decode() + "?="

        def put_with_metadata(key, header):
            # Presigned (SigV4 signs only the host), so the header's raw bytes go out as they
            # are (http.client sends a str header as latin-1, byte for byte).
            url = urllib.parse.urlsplit(client(signature_version="s3v4").generate_presigned_url(
                "put_object", Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=300))
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
            conn.request("PUT", url.path + "?" + url.query, body=b"x", headers={"x-amz-meta-name": header.decode("latin-1")})
            response = conn.getresponse()
            answer = response.read()
            conn.close()
            return response.status, answer

        for key, header in (("utf8-raw", value.encode()), ("utf8-word", encoded.encode()),
                            ("utf8-q", b"=?utf-8?q?h=C3=A9llo?= =?utf-8?q?_w=C3=B6rld_=E2=9C=93?=")):
            status_code, body = put_with_metadata(key, header)
            self.assertEqual(status_code, 200, body)
            got = self.s3.head_object(Bucket=self.bucket, Key=key)["Metadata"]["name"]
            self.assertEqual(got, encoded, key)
            decoded = "".join(part.decode(charset) if isinstance(part, bytes) else part
                              for part, charset in email.header.decode_header(got))
            self.assertEqual(decoded, value, key)
        self.s3.put_object(Bucket=self.bucket, Key="ascii-meta", Body=b"x", Metadata={"plain": "just ascii"})
        self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="ascii-meta")["Metadata"], {"plain": "just ascii"})
        status_code, body = put_with_metadata("latin1", b"caf\xe9")
        self.assertEqual((status_code, xml_code(body)), (400, "InvalidArgument"))
        self.assertClientError("404", 404, self.s3.head_object, Bucket=self.bucket, Key="latin1")

    def test_put_of_a_chunked_body_without_content_length(self):
        """curl -T - and streaming writers send Transfer-Encoding: chunked and no length;
        S3 and native PUT take it, and the size limit still applies."""
        data = os.urandom(3 * MiB + 17)
        url = self.s3.generate_presigned_url("put_object", Params={"Bucket": self.bucket, "Key": "streamed"},
                                             ExpiresIn=300)
        status_code, answer = put_chunked(url, data)
        self.assertEqual(status_code, 200, answer)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="streamed")["Body"].read(), data)
        native = presigned_native_url("PUT", f"/v1/objects/{self.bucket}/streamed-native")
        status_code, answer = put_chunked(native, data[:1000])
        self.assertEqual(status_code, 200, answer)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="streamed-native")["Body"].read(), data[:1000])
        set_config({"s3": {"max_object_size": MiB}})
        try:
            status_code, answer = put_chunked(self.s3.generate_presigned_url(
                "put_object", Params={"Bucket": self.bucket, "Key": "too-big"}, ExpiresIn=300), data)
        finally:
            set_config({"s3": {"max_object_size": None}})
        self.assertEqual(status_code, 400, answer)
        self.assertClientError("404", 404, self.s3.head_object, Bucket=self.bucket, Key="too-big")


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
        parsed = urllib.parse.urlsplit(harness.endpoint)
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

    def test_upload_part_copy_range_outside_the_source(self):
        self.s3.put_object(Bucket=self.bucket, Key="small-src", Body=b"0123456789")
        uid = self.s3.create_multipart_upload(Bucket=self.bucket, Key="copied-small")["UploadId"]
        for bad in ("bytes=0-10", "bytes=10-12", "bytes=5-", "bytes=-3", "bytes=3-2"):
            self.assertClientError("InvalidArgument", 400, self.s3.upload_part_copy, Bucket=self.bucket,
                                   Key="copied-small", UploadId=uid, PartNumber=1, CopySourceRange=bad,
                                   CopySource={"Bucket": self.bucket, "Key": "small-src"})
        etag = self.s3.upload_part_copy(Bucket=self.bucket, Key="copied-small", UploadId=uid, PartNumber=1,
                                        CopySource={"Bucket": self.bucket, "Key": "small-src"},
                                        CopySourceRange="bytes=2-9")["CopyPartResult"]["ETag"]
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key="copied-small", UploadId=uid,
                                          MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="copied-small")["Body"].read(), b"23456789")

    def test_retried_completion_gets_the_same_answer(self):
        uid = self.s3.create_multipart_upload(Bucket=self.bucket, Key="retried")["UploadId"]
        etag = self.s3.upload_part(Bucket=self.bucket, Key="retried", UploadId=uid, PartNumber=1, Body=b"once")["ETag"]
        parts = {"Parts": [{"PartNumber": 1, "ETag": etag}]}
        first = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="retried", UploadId=uid, MultipartUpload=parts)
        again = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="retried", UploadId=uid, MultipartUpload=parts)
        self.assertEqual(again["ETag"], first["ETag"])
        self.assertEqual(again["ResponseMetadata"]["HTTPStatusCode"], 200)
        # Other parts name another upload, which does not exist; so does another key's.
        self.assertClientError("NoSuchUpload", 404, self.s3.complete_multipart_upload, Bucket=self.bucket,
                               Key="retried", UploadId=uid,
                               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"%s"' % ("0" * 32)}]})
        self.assertClientError("NoSuchUpload", 404, self.s3.complete_multipart_upload, Bucket=self.bucket,
                               Key="retried-other", UploadId=uid, MultipartUpload=parts)
        self.assertClientError("NoSuchUpload", 404, self.s3.upload_part, Bucket=self.bucket, Key="retried",
                               UploadId=uid, PartNumber=1, Body=b"late")
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="retried")["Body"].read(), b"once")

    def test_the_last_completed_upload_of_a_part_wins(self):
        """Two uploads of part 1 overlap; the one that started first finishes last. Its
        bytes are the part, completion takes its ETag and refuses the other's."""
        uid = self.s3.create_multipart_upload(Bucket=self.bucket, Key="raced")["UploadId"]
        url = urllib.parse.urlsplit(self.s3.generate_presigned_url(
            "upload_part", Params={"Bucket": self.bucket, "Key": "raced", "UploadId": uid, "PartNumber": 1},
            ExpiresIn=300))
        answers = {}

        def upload(name, data, pause):
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
            conn.putrequest("PUT", url.path + "?" + url.query)
            conn.putheader("Content-Length", str(len(data)))
            conn.endheaders()
            conn.send(data[:1000])
            time.sleep(pause)
            conn.send(data[1000:])
            response = conn.getresponse()
            response.read()
            answers[name] = (time.monotonic(), response.status, response.getheader("ETag"))

        slow, fast = b"s" * (2 * MiB), b"f" * (2 * MiB)
        first = threading.Thread(target=upload, args=("slow", slow, 2.0))
        first.start()
        time.sleep(0.3)
        upload("fast", fast, 0)
        first.join()
        self.assertEqual((answers["slow"][1], answers["fast"][1]), (200, 200))
        self.assertGreater(answers["slow"][0], answers["fast"][0])
        listed = self.s3.list_parts(Bucket=self.bucket, Key="raced", UploadId=uid)["Parts"]
        self.assertEqual([p["ETag"] for p in listed], [answers["slow"][2]])
        self.assertClientError("InvalidPart", 400, self.s3.complete_multipart_upload, Bucket=self.bucket,
                               Key="raced", UploadId=uid,
                               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": answers["fast"][2]}]})
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key="raced", UploadId=uid,
                                          MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": answers["slow"][2]}]})
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="raced")["Body"].read(), slow)

    def test_multipart_checksums_composite_and_full_object(self):
        data = [os.urandom(5 * MiB), os.urandom(1000)]

        def crc32(b):
            return zlib.crc32(b).to_bytes(4, "big")

        for algorithm, kind in (("CRC32", "COMPOSITE"), ("CRC32", "FULL_OBJECT"), ("SHA256", "COMPOSITE")):
            key = f"summed-{algorithm}-{kind}"
            created = self.s3.create_multipart_upload(Bucket=self.bucket, Key=key, ChecksumAlgorithm=algorithm,
                                                      ChecksumType=kind)
            self.assertEqual((created["ChecksumAlgorithm"], created.get("ChecksumType")), (algorithm, kind))
            uid = created["UploadId"]
            parts = []
            for n, part in enumerate(data, 1):
                got = self.s3.upload_part(Bucket=self.bucket, Key=key, UploadId=uid, PartNumber=n, Body=part,
                                          ChecksumAlgorithm=algorithm)
                parts.append({"PartNumber": n, "ETag": got["ETag"], "Checksum" + algorithm: got["Checksum" + algorithm]})
            listed = self.s3.list_parts(Bucket=self.bucket, Key=key, UploadId=uid)
            self.assertEqual(listed.get("ChecksumAlgorithm"), algorithm)
            if algorithm == "CRC32":
                raw_sums = [crc32(p) for p in data]
                whole = base64.b64encode(crc32(b"".join(data))).decode()
            else:
                raw_sums = [hashlib.sha256(p).digest() for p in data]
            if kind == "COMPOSITE":
                inner = crc32(b"".join(raw_sums)) if algorithm == "CRC32" else hashlib.sha256(b"".join(raw_sums)).digest()
                expected = base64.b64encode(inner).decode() + "-2"
            else:
                expected = whole
            done = self.s3.complete_multipart_upload(Bucket=self.bucket, Key=key, UploadId=uid,
                                                     MultipartUpload={"Parts": parts})
            self.assertEqual(done["Checksum" + algorithm], expected, key)
            self.assertEqual(done.get("ChecksumType"), kind)
            head = self.s3.head_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED")
            self.assertEqual((head["Checksum" + algorithm], head.get("ChecksumType")), (expected, kind), key)
            got = self.s3.get_object(Bucket=self.bucket, Key=key, ChecksumMode="ENABLED")
            self.assertEqual(got["Body"].read(), b"".join(data))
        # A part's checksum that does not match, a full-object value that does not, and a
        # type an algorithm does not have are refused.
        uid = self.s3.create_multipart_upload(Bucket=self.bucket, Key="summed-bad", ChecksumAlgorithm="CRC32")["UploadId"]
        etag = self.s3.upload_part(Bucket=self.bucket, Key="summed-bad", UploadId=uid, PartNumber=1, Body=b"p",
                                   ChecksumAlgorithm="CRC32")["ETag"]
        self.assertClientError("InvalidPart", 400, self.s3.complete_multipart_upload, Bucket=self.bucket,
                               Key="summed-bad", UploadId=uid,
                               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag, "ChecksumCRC32": "AAAAAA=="}]})
        self.assertClientError("BadDigest", 400, self.s3.complete_multipart_upload, Bucket=self.bucket,
                               Key="summed-bad", UploadId=uid, ChecksumCRC32="AAAAAA==-1",
                               MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
        self.assertClientError("InvalidRequest", 400, self.s3.create_multipart_upload, Bucket=self.bucket,
                               Key="summed-bad", ChecksumAlgorithm="SHA256", ChecksumType="FULL_OBJECT")

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
