"""S3 conformance: bucket operations and listings (v1, v2, versions, delimiters, paging)."""
import harness
from harness import *  # noqa: F401,F403 (clients, helpers, Base)


class BucketTest(Base):
    def test_create_is_listed_and_located(self):
        self.s3.create_bucket(Bucket="conf-located", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
        names = [b["Name"] for b in self.s3.list_buckets()["Buckets"]]
        self.assertIn("conf-located", names)
        self.assertIsNone(self.s3.get_bucket_location(Bucket=self.bucket).get("LocationConstraint"))
        self.s3.head_bucket(Bucket="conf-located")
        self.s3.delete_bucket(Bucket="conf-located")

    def test_create_twice_is_200_in_us_east_1_and_409_elsewhere(self):
        """AWS answers a create of a bucket one owns 200 in us-east-1 (the default region),
        409 BucketAlreadyOwnedByYou in every other region."""
        self.s3.put_object(Bucket=self.bucket, Key="kept", Body=b"kept")
        self.assertEqual(self.s3.create_bucket(Bucket=self.bucket)["ResponseMetadata"]["HTTPStatusCode"], 200)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="kept")["Body"].read(), b"kept")
        set_config({"s3": {"region": "eu-west-1"}})
        try:
            self.assertClientError("BucketAlreadyOwnedByYou", 409, self.s3.create_bucket, Bucket=self.bucket)
        finally:
            set_config({"s3": {"region": "us-east-1"}})

    def test_invalid_names(self):
        for name in ["ab", "Upper-case", "under_score", "-dash", "a..b", "192.168.1.1", "x" * 64]:
            status_code, _, body = raw("PUT", "/" + name)
            self.assertEqual(status_code, 400, name)
            self.assertEqual(xml_code(body), "InvalidBucketName", name)

    def test_missing_bucket(self):
        # Anonymous requests too: a bucket that does not exist is not a denied one.
        for method in ("GET", "DELETE", "HEAD"):
            status_code, _, body = raw(method, "/conf-nonexistent/k", sign=False)
            self.assertEqual(status_code, 404, method)
            if method != "HEAD":
                self.assertEqual(xml_code(body), "NoSuchBucket", method)
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
        self.assertClientError("NotImplemented", 501, self.s3.put_bucket_acl, Bucket=self.bucket,
                               ACL="public-read-write")
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
        # AWS: nothing listed and not truncated (no token to follow), v1 alike.
        self.assertFalse(page["IsTruncated"])
        self.assertNotIn("NextContinuationToken", page)
        page = self.s3.list_objects(Bucket=self.bucket, MaxKeys=0)
        self.assertFalse(page["IsTruncated"])
        self.assertNotIn("NextMarker", page)

    def test_empty_continuation_token_starts_at_the_start(self):
        status_code, _, body = raw("GET", f"/{self.bucket}?list-type=2&continuation-token=&max-keys=1000")
        self.assertEqual(status_code, 200, body)
        self.assertEqual(body.count(b"<Key>"), min(len(self.keys), 1000))

    def test_control_characters_come_back_as_sent_without_encoding_type(self):
        self.s3.put_object(Bucket=self.bucket, Key="ctl/a\nb\tc", Body=b"x")
        for query in ("list-type=2&prefix=ctl%2Fa%0A", "prefix=ctl%2Fa%0A"):
            status_code, _, body = raw("GET", f"/{self.bucket}?{query}")
            self.assertEqual(status_code, 200, body)
            root = ET.fromstring(body)
            ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
            self.assertEqual(root.find("s3:Prefix", ns).text, "ctl/a\n")
            self.assertEqual([k.text for k in root.findall("s3:Contents/s3:Key", ns)], ["ctl/a\nb\tc"])
            self.assertIsNone(root.find("s3:EncodingType", ns))
        self.s3.delete_object(Bucket=self.bucket, Key="ctl/a\nb\tc")

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


class AclTest(Base):
    def test_canned_acls_map_onto_bucket_access(self):
        """Silo keeps access per bucket (anonymous reads or none): canned ACLs that mean one
        of those are honoured, grants and what Silo can not honour are NotImplemented."""
        self.s3.put_object(Bucket=self.bucket, Key="doc", Body=b"shared")
        self.assertEqual(raw("GET", f"/{self.bucket}/doc", sign=False)[0], 403)
        self.s3.put_bucket_acl(Bucket=self.bucket, ACL="public-read")
        self.assertEqual(self.s3.get_bucket_acl(Bucket=self.bucket)["Grants"][-1]["Grantee"].get("URI"),
                         "http://acs.amazonaws.com/groups/global/AllUsers")
        wait_until(lambda: raw("GET", f"/{self.bucket}/doc", sign=False)[:3:2] == (200, b"shared"))
        # An object's ACL is honoured when it asks what its bucket gives.
        self.s3.put_object_acl(Bucket=self.bucket, Key="doc", ACL="public-read")
        self.assertClientError("NotImplemented", 501, self.s3.put_object_acl, Bucket=self.bucket, Key="doc",
                               ACL="private")
        self.assertClientError("NoSuchKey", 404, self.s3.put_object_acl, Bucket=self.bucket, Key="absent",
                               ACL="public-read")
        self.s3.put_bucket_acl(Bucket=self.bucket, ACL="private")
        wait_until(lambda: raw("GET", f"/{self.bucket}/doc", sign=False)[0] == 403)
        for acl in ("authenticated-read", "bucket-owner-full-control"):
            self.s3.put_object_acl(Bucket=self.bucket, Key="doc", ACL=acl)
        self.assertClientError("NotImplemented", 501, self.s3.put_bucket_acl, Bucket=self.bucket,
                               GrantRead='uri="http://acs.amazonaws.com/groups/global/AllUsers"')
        self.assertClientError("InvalidArgument", 400, raw_client_error, "PUT", f"/{self.bucket}?acl",
                               {"x-amz-acl": "everyone"})


class CorsTest(Base):
    RULES = {"CORSRules": [
        {"ID": "app", "AllowedOrigins": ["https://*.example.com"], "AllowedMethods": ["GET", "PUT"],
         "AllowedHeaders": ["x-amz-*", "content-type"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600},
        {"AllowedOrigins": ["*"], "AllowedMethods": ["HEAD"]}]}

    def preflight(self, path, origin=None, method=None, headers=None):
        sent = {}
        if origin:
            sent["Origin"] = origin
        if method:
            sent["Access-Control-Request-Method"] = method
        if headers:
            sent["Access-Control-Request-Headers"] = headers
        return raw("OPTIONS", path, headers=sent, sign=False)

    def test_configuration_preflight_and_cross_origin_answers(self):
        path = f"/{self.bucket}/page.html"
        self.assertClientError("NoSuchCORSConfiguration", 404, self.s3.get_bucket_cors, Bucket=self.bucket)
        status_code, _, body = self.preflight(path, "https://app.example.com", "GET")
        self.assertEqual((status_code, xml_code(body)), (403, "AccessForbidden"))
        self.s3.put_bucket_cors(Bucket=self.bucket, CORSConfiguration=self.RULES)
        got = self.s3.get_bucket_cors(Bucket=self.bucket)["CORSRules"]
        self.assertEqual(got[0]["AllowedOrigins"], ["https://*.example.com"])
        self.assertEqual(got[0]["MaxAgeSeconds"], 600)
        # Without Origin: 400 as AWS; an origin, method or header no rule allows: 403.
        status_code, _, body = self.preflight(path, None, "GET")
        self.assertEqual((status_code, xml_code(body)), (400, "BadRequest"))
        for origin, method, headers in (("https://evil.org", "GET", None), ("https://app.example.com", "DELETE", None),
                                        ("https://app.example.com", "PUT", "authorization")):
            status_code, _, body = self.preflight(path, origin, method, headers)
            self.assertEqual((status_code, xml_code(body)), (403, "AccessForbidden"), (origin, method, headers))
        status_code, headers, _ = self.preflight(path, "https://app.example.com", "PUT", "Content-Type, X-Amz-Date")
        self.assertEqual(status_code, 200)
        self.assertEqual(headers["access-control-allow-origin"], "https://app.example.com")
        self.assertEqual(headers["access-control-allow-methods"], "GET, PUT")
        self.assertEqual(headers["access-control-allow-headers"], "Content-Type, X-Amz-Date")
        self.assertEqual(headers["access-control-max-age"], "600")
        self.assertEqual(headers["access-control-expose-headers"], "ETag")
        status_code, headers, _ = self.preflight(f"/{self.bucket}", "https://anywhere.net", "HEAD")
        self.assertEqual((status_code, headers["access-control-allow-origin"]), (200, "*"))
        # The actual cross-origin requests carry the headers too, relayed answers included.
        self.s3.put_object(Bucket=self.bucket, Key="page.html", Body=b"<html/>")
        status_code, headers, body = raw("GET", path, headers={"Origin": "https://app.example.com"})
        self.assertEqual((status_code, body), (200, b"<html/>"))
        self.assertEqual(headers["access-control-allow-origin"], "https://app.example.com")
        self.assertEqual(headers["access-control-expose-headers"], "ETag")
        status_code, headers, _ = raw("GET", path, headers={"Origin": "https://evil.org"})
        self.assertEqual(status_code, 200)
        self.assertNotIn("access-control-allow-origin", headers)
        bad = b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>" \
              b"</CORSRule></CORSConfiguration>"
        status_code, _, body = raw("PUT", f"/{self.bucket}?cors", body=bad)
        self.assertEqual((status_code, xml_code(body)), (400, "InvalidRequest"))
        self.s3.delete_bucket_cors(Bucket=self.bucket)
        self.assertClientError("NoSuchCORSConfiguration", 404, self.s3.get_bucket_cors, Bucket=self.bucket)
        status_code, _, body = self.preflight(path, "https://app.example.com", "GET")
        self.assertEqual((status_code, xml_code(body)), (403, "AccessForbidden"))
