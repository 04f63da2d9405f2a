"""S3 conformance: access control (docs/security.md). Users own the buckets they create and
get nothing else unless a bucket policy grants it; an explicit Deny wins; the S3 API, the
native API, requests sent straight to a target and batch GETs obey the same decisions."""
import json

import harness
from harness import *  # noqa: F401,F403 (clients, helpers, Base)

ALICE = ("alice-key", "alice-secret-0001")
BOB = ("bob-key", "bob-secret-0001")
BUCKET = "acl-alice"

POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Sid": "ReadShared", "Effect": "Allow", "Principal": {"AWS": ["bob-key"]},
         "Action": ["s3:GetObject"], "Resource": f"arn:aws:s3:::{BUCKET}/shared/*"},
        {"Sid": "ListShared", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::000000000000:user/bob-key"},
         "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{BUCKET}",
         "Condition": {"StringLike": {"s3:prefix": ["shared/*"]}}},
        {"Sid": "WriteInbox", "Effect": "Allow", "Principal": {"AWS": "bob-key"},
         "Action": ["s3:PutObject", "s3:DeleteObject"], "Resource": f"arn:aws:s3:::{BUCKET}/inbox/*"},
        {"Sid": "NeverSecrets", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
         "Resource": f"arn:aws:s3:::{BUCKET}/shared/secret*"},
    ],
}


def add_user(key, secret):
    code, _, body = raw("PUT", f"/v1/users/{key}", body=json.dumps({"secret_key": secret}).encode())
    assert code == 200, body

    def signs():
        try:
            client(key, secret).list_buckets()
            return True
        except ClientError:
            return False
    wait_until(signs)


def denied(fn, *args, **kwargs):
    """The ClientError code of a call that must fail."""
    try:
        fn(*args, **kwargs)
    except ClientError as e:
        return error_code(e), status(e)
    raise AssertionError("the call succeeded")


def targets():
    code, _, body = raw("GET", "/v1/cluster/map")
    assert code == 200, body
    return [n["url"] for n in json.loads(body)["nodes"] if n["role"] == "target"]


class AccessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        add_user(*ALICE)
        add_user(*BOB)
        cls.admin = client()
        cls.alice = client(*ALICE)
        cls.bob = client(*BOB)
        cls.alice.create_bucket(Bucket=BUCKET)
        for key in ("shared/a.txt", "shared/secret.txt", "private/b.txt"):
            cls.alice.put_object(Bucket=BUCKET, Key=key, Body=key.encode())

    def tearDown(self):
        self.alice.delete_bucket_policy(Bucket=BUCKET)
        wait_until(lambda: denied(self.bob.get_object, Bucket=BUCKET, Key="shared/a.txt")[0] == "AccessDenied")

    def put_policy(self, policy=POLICY):
        self.alice.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps(policy))

        def effective():
            try:
                self.bob.get_object(Bucket=BUCKET, Key="shared/a.txt")
                return True
            except ClientError:
                return False
        wait_until(effective)

    def test_users_get_nothing_they_are_not_granted(self):
        self.assertEqual(denied(self.bob.get_object, Bucket=BUCKET, Key="shared/a.txt"), ("AccessDenied", 403))
        self.assertEqual(denied(self.bob.put_object, Bucket=BUCKET, Key="x", Body=b"x"), ("AccessDenied", 403))
        self.assertEqual(denied(self.bob.delete_object, Bucket=BUCKET, Key="private/b.txt"), ("AccessDenied", 403))
        self.assertEqual(denied(self.bob.list_objects_v2, Bucket=BUCKET), ("AccessDenied", 403))
        self.assertEqual(denied(self.bob.head_object, Bucket=BUCKET, Key="private/b.txt")[1], 403)
        self.assertEqual(denied(self.bob.get_bucket_policy, Bucket=BUCKET), ("AccessDenied", 403))
        self.assertEqual(denied(self.bob.put_bucket_policy, Bucket=BUCKET, Policy=json.dumps(POLICY)),
                         ("AccessDenied", 403))
        self.assertEqual(denied(self.bob.delete_bucket, Bucket=BUCKET), ("AccessDenied", 403))
        # Someone else's name is taken, not BucketAlreadyOwnedByYou.
        self.assertEqual(denied(self.bob.create_bucket, Bucket=BUCKET), ("BucketAlreadyExists", 409))
        # Nothing was changed by the refusals.
        self.assertEqual(self.alice.get_object(Bucket=BUCKET, Key="private/b.txt")["Body"].read(), b"private/b.txt")
        # ListBuckets shows each user its own; admins see everything.
        self.assertIn(BUCKET, [b["Name"] for b in self.alice.list_buckets()["Buckets"]])
        self.assertNotIn(BUCKET, [b["Name"] for b in self.bob.list_buckets()["Buckets"]])
        self.assertIn(BUCKET, [b["Name"] for b in self.admin.list_buckets()["Buckets"]])
        self.assertEqual(self.admin.get_object(Bucket=BUCKET, Key="private/b.txt")["Body"].read(), b"private/b.txt")

    def test_a_bucket_policy_grants_and_an_explicit_deny_wins(self):
        self.assertClientError = Base.assertClientError.__get__(self)
        self.assertClientError("NoSuchBucketPolicy", 404, self.alice.get_bucket_policy, Bucket=BUCKET)
        self.put_policy()
        self.assertEqual(json.loads(self.alice.get_bucket_policy(Bucket=BUCKET)["Policy"]), POLICY)
        self.assertEqual(self.bob.get_object(Bucket=BUCKET, Key="shared/a.txt")["Body"].read(), b"shared/a.txt")
        self.assertEqual(denied(self.bob.get_object, Bucket=BUCKET, Key="private/b.txt"), ("AccessDenied", 403))
        self.assertEqual(denied(self.bob.get_object, Bucket=BUCKET, Key="shared/secret.txt"), ("AccessDenied", 403))
        # Deny wins over ownership too; admins stay outside bucket policies.
        self.assertEqual(denied(self.alice.get_object, Bucket=BUCKET, Key="shared/secret.txt"), ("AccessDenied", 403))
        self.assertEqual(self.admin.get_object(Bucket=BUCKET, Key="shared/secret.txt")["Body"].read(),
                         b"shared/secret.txt")
        # Listing only under the granted prefix.
        keys = [o["Key"] for o in self.bob.list_objects_v2(Bucket=BUCKET, Prefix="shared/")["Contents"]]
        self.assertEqual(keys, ["shared/a.txt", "shared/secret.txt"])
        self.assertEqual(denied(self.bob.list_objects_v2, Bucket=BUCKET), ("AccessDenied", 403))
        self.assertEqual(denied(self.bob.list_objects_v2, Bucket=BUCKET, Prefix="private/"), ("AccessDenied", 403))
        # Writes only where granted; DeleteObjects decides key by key.
        self.bob.put_object(Bucket=BUCKET, Key="inbox/from-bob", Body=b"hi")
        self.assertEqual(denied(self.bob.put_object, Bucket=BUCKET, Key="shared/x", Body=b"x"), ("AccessDenied", 403))
        answer = self.bob.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "inbox/from-bob"},
                                                                             {"Key": "private/b.txt"}]})
        self.assertEqual([d["Key"] for d in answer.get("Deleted", [])], ["inbox/from-bob"])
        self.assertEqual([(e["Key"], e["Code"]) for e in answer["Errors"]], [("private/b.txt", "AccessDenied")])
        self.alice.head_object(Bucket=BUCKET, Key="private/b.txt")
        # A bucket with a policy that names bob shows in his ListBuckets.
        self.assertIn(BUCKET, [b["Name"] for b in self.bob.list_buckets()["Buckets"]])
        # The owner can always manage the policy, even one that denies it everything.
        self.alice.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [f"arn:aws:s3:::{BUCKET}",
                                                                                  f"arn:aws:s3:::{BUCKET}/*"]}]}))
        wait_until(lambda: denied(self.alice.get_object, Bucket=BUCKET, Key="private/b.txt")[0] == "AccessDenied")
        self.alice.get_bucket_policy(Bucket=BUCKET)

    def test_a_copy_needs_to_read_its_source(self):
        self.bob.create_bucket(Bucket="acl-bob")
        self.assertEqual(denied(self.bob.copy_object, Bucket="acl-bob", Key="stolen",
                                CopySource={"Bucket": BUCKET, "Key": "private/b.txt"}), ("AccessDenied", 403))
        self.put_policy()
        self.bob.copy_object(Bucket="acl-bob", Key="copied", CopySource={"Bucket": BUCKET, "Key": "shared/a.txt"})
        self.assertEqual(self.bob.get_object(Bucket="acl-bob", Key="copied")["Body"].read(), b"shared/a.txt")
        self.assertEqual(denied(self.alice.get_object, Bucket="acl-bob", Key="copied"), ("AccessDenied", 403))

    def test_malformed_policies_are_refused(self):
        for policy in ("{not json", json.dumps({"Statement": []}),
                       json.dumps({"Version": "2012-10-17", "Statement": {
                           "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                           "Resource": "arn:aws:s3:::another-bucket/*"}}),
                       json.dumps({"Version": "2012-10-17", "Statement": {
                           "Effect": "Allow", "Principal": "*", "Action": "s3:Fly", "Resource": f"arn:aws:s3:::{BUCKET}/*"}})):
            self.assertEqual(denied(self.alice.put_bucket_policy, Bucket=BUCKET, Policy=policy),
                             ("MalformedPolicy", 400), policy)
        self.assertEqual(denied(self.alice.get_bucket_policy, Bucket=BUCKET)[0], "NoSuchBucketPolicy")

    def test_anonymous_reads_through_a_policy(self):
        self.put_policy({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{BUCKET}/shared/*",
             "Condition": {"IpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}}]})
        code, _, body = raw("GET", f"/{BUCKET}/shared/a.txt", sign=False)
        self.assertEqual((code, body), (200, b"shared/a.txt"))
        code, _, _ = raw("GET", f"/{BUCKET}/private/b.txt", sign=False)
        self.assertEqual(code, 403)
        code, _, _ = raw("PUT", f"/{BUCKET}/shared/new", body=b"x", sign=False)
        self.assertEqual(code, 403)

    def test_the_native_api_targets_and_batch_gets_obey_the_same_decisions(self):
        as_bob = dict(access_key=BOB[0], secret=BOB[1])
        path = f"/v1/objects/{BUCKET}/private/b.txt"
        self.assertEqual(raw("GET", path, **as_bob)[0], 403)
        self.assertEqual(raw("PUT", f"/v1/objects/{BUCKET}/bob-was-here", body=b"x", **as_bob)[0], 403)
        # Straight to every target (the Python client's path), and with a forged header that
        # only the cluster's nodes may send.
        for url in targets():
            self.assertEqual(raw("GET", path, base=url, **as_bob)[0], 403, url)
            self.assertEqual(raw("GET", path, base=url, headers={"X-Silo-Forwarded": "p1"}, **as_bob)[0], 403, url)
        code, _, body = raw("POST", "/v1/batch", body=json.dumps(
            {"entries": [{"bucket": BUCKET, "name": "private/b.txt"}]}).encode(), **as_bob)
        self.assertEqual(code, 403, body)
        code, _, body = raw("GET", "/v1/buckets", **as_bob)
        self.assertNotIn(BUCKET.encode(), body)
        self.assertEqual(raw("PUT", f"/v1/buckets/{BUCKET}/props", body=b'{"copies": 2}', **as_bob)[0], 403)
        self.assertEqual(raw("GET", f"/v1/buckets/{BUCKET}", **as_bob)[0], 403)
        self.assertEqual(raw("DELETE", f"/v1/buckets/{BUCKET}", **as_bob)[0], 403)
        # Once granted: the native read and the batch work, for what is granted only.
        code, _, _ = raw("PUT", f"/v1/buckets/{BUCKET}/policy", body=json.dumps(POLICY).encode(),
                         access_key=ALICE[0], secret=ALICE[1])
        self.assertEqual(code, 204)
        wait_until(lambda: raw("GET", f"/v1/objects/{BUCKET}/shared/a.txt", **as_bob)[0] == 200)
        for url in targets():
            code, _, body = raw("GET", f"/v1/objects/{BUCKET}/shared/a.txt", base=url, **as_bob)
            self.assertEqual((code, body), (200, b"shared/a.txt"), url)
        code, _, body = raw("POST", "/v1/batch", body=json.dumps(
            {"entries": [{"bucket": BUCKET, "name": "shared/a.txt"}]}).encode(), **as_bob)
        self.assertEqual(code, 200, body)
        self.assertIn(b"shared/a.txt", body)
        self.assertEqual(raw("GET", path, **as_bob)[0], 403)
        code, _, body = raw("GET", f"/v1/buckets/{BUCKET}/policy", **as_bob)
        self.assertEqual(code, 403, body)
        code, _, body = raw("GET", f"/v1/buckets/{BUCKET}/policy", access_key=ALICE[0], secret=ALICE[1])
        self.assertEqual((code, json.loads(body)), (200, POLICY))

    def test_a_bucket_created_through_the_native_api_is_its_creators(self):
        code, _, body = raw("PUT", "/v1/buckets/acl-native-bob", body=b"{}", access_key=BOB[0], secret=BOB[1])
        self.assertEqual(code, 200, body)
        self.bob.put_object(Bucket="acl-native-bob", Key="k", Body=b"v")
        self.assertEqual(denied(self.alice.get_object, Bucket="acl-native-bob", Key="k"), ("AccessDenied", 403))
        code, _, body = raw("GET", "/v1/buckets/acl-native-bob/props")
        self.assertEqual(json.loads(body)["props"]["owner"], BOB[0])
