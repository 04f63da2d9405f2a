#!/usr/bin/env python3
"""Stock S3 clients, unmodified, against a real Silo cluster (1 proxy + 3 targets) through
the proxy: aws-cli, boto3 with default settings (also on an erasure-coded bucket), s3cmd,
rclone, an s3fs-fuse mount and curl (presigned URLs and --aws-sigv4). A client that is not installed skips its test (exit 77
when every selected test skipped), saying why.

Run one client: python3 test/clients/clients_test.py AwsCliTest   (SILO_BIN_DIR = silod's folder)
With SILO_CLIENTS_TLS=1 the cluster serves HTTPS only (cluster.sh up --tls) and every client
trusts its CA the way its users would: aws-cli AWS_CA_BUNDLE, boto3 verify=, s3cmd
ca_certs_file, rclone --ca-cert, s3fs and curl CURL_CA_BUNDLE.
"""
import filecmp
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

try:
    import boto3
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config
except ImportError:
    print("skipped: boto3 is not installed for", sys.executable)
    sys.exit(77)

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "deploy" / "local" / "cluster.sh"
# The cluster's admin keys are the test's own, never the caller's: a shell that exported
# other SILO_ACCESS_KEY / SILO_SECRET_KEY values (the README walkthrough) must not change it.
ACCESS_KEY = "silo-admin"
SECRET_KEY = "silo-secret-key"
MiB = 1024 * 1024
TLS = os.environ.get("SILO_CLIENTS_TLS") == "1"

cluster_dir = None
endpoint = None
work = None
ca = None  # the cluster's CA file over TLS


def setUpModule():
    global cluster_dir, endpoint, work, ca
    cluster_dir = tempfile.mkdtemp(prefix="silo-clients-")
    work = pathlib.Path(tempfile.mkdtemp(prefix="silo-clients-work-"))
    subprocess.run([str(CLUSTER), "up", "--dir", cluster_dir, "--base-port", "0", "--targets", "3"] +
                   (["--tls"] if TLS else []), check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, SILO_ACCESS_KEY=ACCESS_KEY,
                                                       SILO_SECRET_KEY=SECRET_KEY))
    endpoint = (pathlib.Path(cluster_dir) / "primary_url").read_text().strip()
    assert endpoint.startswith("https://" if TLS else "http://"), endpoint
    if TLS:
        ca = str(pathlib.Path(cluster_dir) / "tls" / "ca.pem")


def tearDownModule():
    subprocess.run([str(CLUSTER), "down", "--dir", cluster_dir], check=False, stdout=subprocess.DEVNULL)
    shutil.rmtree(work, ignore_errors=True)
    if not os.environ.get("SILO_KEEP"):
        shutil.rmtree(cluster_dir, ignore_errors=True)


def env():
    e = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
             AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    for name in ("AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        e.pop(name, None)
    if TLS:
        e.update(AWS_CA_BUNDLE=ca, CURL_CA_BUNDLE=ca)
    return e


def run(*args, check=True, **kwargs):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=kwargs.pop("env", env()),
                            timeout=600, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {result.returncode}\n"
                             f"stdout: {result.stdout[-3000:]}\nstderr: {result.stderr[-3000:]}")
    return result


def boto():
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                        region_name="us-east-1", verify=ca if TLS else None)


def write_tree(root, count, big=None):
    """`count` small files in nested folders (plus one of `big` bytes): name -> sha256."""
    files = {}
    for i in range(count):
        path = root / f"d{i % 4}" / f"sub{i % 3}" / f"file-{i}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = os.urandom(100 + i * 37)
        path.write_bytes(data)
        files[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    if big:
        data = os.urandom(big)
        (root / "big.bin").write_bytes(data)
        files["big.bin"] = hashlib.sha256(data).hexdigest()
    return files


def require(tool):
    if shutil.which(tool) is None:
        raise unittest.SkipTest(f"{tool} is not installed (tools/setup.sh installs it)")


class AwsCliTest(unittest.TestCase):
    def aws(self, *args, **kwargs):
        return run("aws", "--endpoint-url", endpoint, *args, **kwargs)

    def test_cp_sync_ls_rm_and_multipart_by_hand(self):
        require("aws")
        self.aws("s3", "mb", "s3://cli")
        small, big = work / "small.bin", work / "big20.bin"
        small.write_bytes(os.urandom(1000))
        big.write_bytes(os.urandom(20 * MiB))
        for f in [small, big]:
            self.aws("s3", "cp", f, f"s3://cli/one/{f.name}")
            self.aws("s3", "cp", f"s3://cli/one/{f.name}", work / (f.name + ".back"))
            self.assertTrue(filecmp.cmp(f, work / (f.name + ".back"), shallow=False), f.name)

        tree = work / "tree"
        files = write_tree(tree, 50)
        out = self.aws("s3", "sync", tree, "s3://cli/tree").stdout
        self.assertEqual(out.count("upload:"), 50, out)
        out = self.aws("s3", "sync", tree, "s3://cli/tree").stdout
        self.assertEqual(out.strip(), "", "a second sync transferred something")
        changed = tree / "d1" / "sub1" / "file-1.bin"
        time.sleep(1.1)
        changed.write_bytes(b"changed content")
        out = self.aws("s3", "sync", tree, "s3://cli/tree").stdout
        self.assertEqual(out.count("upload:"), 1, out)
        self.assertIn("file-1.bin", out)

        listing = self.aws("s3", "ls", "--recursive", "s3://cli/tree/").stdout
        self.assertEqual(len(listing.strip().splitlines()), 50)
        top = self.aws("s3", "ls", "s3://cli/tree/").stdout
        self.assertEqual(sorted(line.split()[-1] for line in top.strip().splitlines()), ["d0/", "d1/", "d2/", "d3/"])
        self.aws("s3", "rm", "--recursive", "s3://cli/tree/")
        self.assertEqual(self.aws("s3", "ls", "--recursive", "s3://cli/tree/", check=False).stdout.strip(), "")

        # Multipart of a 100 MiB file by hand with s3api.
        hundred = work / "hundred.bin"
        hundred.write_bytes(os.urandom(100 * MiB))
        import json
        uid = json.loads(self.aws("s3api", "create-multipart-upload", "--bucket", "cli", "--key", "mp/hundred").stdout)[
            "UploadId"]
        parts = []
        data = hundred.read_bytes()
        chunk = 8 * MiB
        for n, offset in enumerate(range(0, len(data), chunk), 1):
            part = work / f"part{n}"
            part.write_bytes(data[offset:offset + chunk])
            etag = json.loads(self.aws("s3api", "upload-part", "--bucket", "cli", "--key", "mp/hundred",
                                       "--upload-id", uid, "--part-number", n, "--body", part).stdout)["ETag"]
            parts.append({"PartNumber": n, "ETag": etag})
        listed = json.loads(self.aws("s3api", "list-parts", "--bucket", "cli", "--key", "mp/hundred",
                                     "--upload-id", uid).stdout)
        self.assertEqual([p["PartNumber"] for p in listed["Parts"]], list(range(1, len(parts) + 1)))
        (work / "parts.json").write_text(json.dumps({"Parts": parts}))
        self.aws("s3api", "complete-multipart-upload", "--bucket", "cli", "--key", "mp/hundred", "--upload-id", uid,
                 "--multipart-upload", f"file://{work / 'parts.json'}")
        head = json.loads(self.aws("s3api", "head-object", "--bucket", "cli", "--key", "mp/hundred").stdout)
        self.assertEqual(head["ContentLength"], 100 * MiB)
        self.assertTrue(head["ETag"].endswith(f'-{len(parts)}"'), head["ETag"])
        self.aws("s3api", "get-object", "--bucket", "cli", "--key", "mp/hundred", work / "hundred.back")
        self.assertTrue(filecmp.cmp(hundred, work / "hundred.back", shallow=False))
        second = json.loads(self.aws("s3api", "create-multipart-upload", "--bucket", "cli", "--key", "mp/x").stdout)
        self.aws("s3api", "abort-multipart-upload", "--bucket", "cli", "--key", "mp/x", "--upload-id",
                 second["UploadId"])
        uploads = json.loads(self.aws("s3api", "list-multipart-uploads", "--bucket", "cli").stdout or "{}")
        self.assertEqual(uploads.get("Uploads", []), [])
        self.aws("s3", "rm", "--recursive", "s3://cli/")
        self.aws("s3", "rb", "s3://cli")


class Boto3DefaultsTest(unittest.TestCase):
    def test_default_client(self):
        s3 = boto()
        s3.create_bucket(Bucket="boto")
        put = s3.put_object(Bucket="boto", Key="k", Body=b"hello")
        self.assertEqual(put["ETag"], '"%s"' % hashlib.md5(b"hello").hexdigest())
        self.assertIn("ChecksumCRC32", put)  # boto3 >= 1.36 sends one by default
        self.assertEqual(s3.get_object(Bucket="boto", Key="k")["Body"].read(), b"hello")
        big = work / "boto40.bin"
        big.write_bytes(os.urandom(40 * MiB))
        s3.upload_file(str(big), "boto", "big", Config=TransferConfig(multipart_threshold=8 * MiB,
                                                                        multipart_chunksize=8 * MiB))
        self.assertTrue(s3.head_object(Bucket="boto", Key="big")["ETag"].endswith('-5"'))
        s3.download_file("boto", "big", str(work / "boto40.back"))
        self.assertTrue(filecmp.cmp(big, work / "boto40.back", shallow=False))
        for i in range(30):
            s3.put_object(Bucket="boto", Key=f"p/{i:02d}", Body=b"x")
        keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket="boto", Prefix="p/",
                                                                                 PaginationConfig={"PageSize": 7})
                for o in page.get("Contents", [])]
        self.assertEqual(keys, [f"p/{i:02d}" for i in range(30)])


class ErasureCodedBucketTest(unittest.TestCase):
    """A bucket coded 2+1 (docs/data-protection.md) behaves like any other to stock clients."""

    def test_boto3_multipart_ranges_and_listing(self):
        require("curl")
        run("curl", "-sf", "-X", "PUT", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{ACCESS_KEY}:{SECRET_KEY}",
            "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-d", '{"ec": {"data": 2, "parity": 1}}',
            f"{endpoint}/v1/buckets/coded")
        s3 = boto()
        big = work / "coded40.bin"
        big.write_bytes(os.urandom(40 * MiB + 5))
        config = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4)
        s3.upload_file(str(big), "coded", "shard-000.tar", Config=config)
        head = s3.head_object(Bucket="coded", Key="shard-000.tar")
        self.assertEqual(head["ContentLength"], 40 * MiB + 5)
        self.assertTrue(head["ETag"].endswith('-6"'), head["ETag"])
        # Parallel ranged GETs of the coded object through the gateway.
        s3.download_file("coded", "shard-000.tar", str(work / "coded40.back"), Config=config)
        self.assertTrue(filecmp.cmp(big, work / "coded40.back", shallow=False))
        data = big.read_bytes()
        part = s3.get_object(Bucket="coded", Key="shard-000.tar", Range="bytes=1048570-3145733")["Body"].read()
        self.assertEqual(part, data[1048570:3145734])
        s3.put_object(Bucket="coded", Key="small", Body=b"tiny")
        self.assertEqual(s3.get_object(Bucket="coded", Key="small")["Body"].read(), b"tiny")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="coded")["Contents"]]
        self.assertEqual(keys, ["shard-000.tar", "small"])
        s3.delete_object(Bucket="coded", Key="shard-000.tar")
        self.assertEqual([o["Key"] for o in s3.list_objects_v2(Bucket="coded")["Contents"]], ["small"])


class S3cmdTest(unittest.TestCase):
    def test_s3cmd(self):
        require("s3cmd")
        host = endpoint.split("//", 1)[1]
        config = work / "s3cfg"
        config.write_text(f"[default]\naccess_key = {ACCESS_KEY}\nsecret_key = {SECRET_KEY}\nhost_base = {host}\n"
                          f"host_bucket = {host}\nuse_https = {TLS}\nsignature_v2 = False\nbucket_location = us-east-1\n" +
                          (f"ca_certs_file = {ca}\ncheck_ssl_certificate = True\n" if TLS else ""))

        def s3cmd(*args):
            return run("s3cmd", "-c", config, *args)

        s3cmd("mb", "s3://cmd")
        f = work / "cmd.bin"
        f.write_bytes(os.urandom(3 * MiB))
        s3cmd("put", f, "s3://cmd/a/cmd.bin")
        self.assertIn("s3://cmd/a/cmd.bin", s3cmd("ls", "--recursive", "s3://cmd").stdout)
        self.assertIn("s3://cmd/a/", s3cmd("la").stdout)
        s3cmd("get", "s3://cmd/a/cmd.bin", work / "cmd.back")
        self.assertTrue(filecmp.cmp(f, work / "cmd.back", shallow=False))
        info = s3cmd("info", "s3://cmd/a/cmd.bin").stdout
        self.assertIn(hashlib.md5(f.read_bytes()).hexdigest(), info)
        tree = work / "cmdtree"
        write_tree(tree, 12)
        s3cmd("sync", f"{tree}/", "s3://cmd/tree/")
        self.assertEqual(len(s3cmd("ls", "--recursive", "s3://cmd/tree/").stdout.strip().splitlines()), 12)
        again = s3cmd("sync", f"{tree}/", "s3://cmd/tree/").stdout
        self.assertNotIn("upload:", again)
        s3cmd("del", "--recursive", "--force", "s3://cmd/")
        s3cmd("rb", "s3://cmd")


class RcloneTest(unittest.TestCase):
    def test_sync_then_check(self):
        require("rclone")
        e = dict(env(), RCLONE_CONFIG_SILO_TYPE="s3", RCLONE_CONFIG_SILO_PROVIDER="Other",
                 RCLONE_CONFIG_SILO_ENDPOINT=endpoint, RCLONE_CONFIG_SILO_ACCESS_KEY_ID=ACCESS_KEY,
                 RCLONE_CONFIG_SILO_SECRET_ACCESS_KEY=SECRET_KEY, RCLONE_CONFIG_SILO_REGION="us-east-1")
        # rclone's S3 SDK refuses a custom CA bundle on its own transport; plain http needs none.
        e.pop("AWS_CA_BUNDLE", None)
        tls = ["--ca-cert", ca] if TLS else []
        boto().create_bucket(Bucket="rclone")
        tree = work / "rtree"
        files = write_tree(tree, 100, big=30 * MiB)
        run("rclone", "sync", tree, "silo:rclone/data", "--s3-upload-cutoff", "8M", "--s3-chunk-size", "8M", *tls, env=e)
        check = run("rclone", "check", tree, "silo:rclone/data", *tls, env=e, check=False)
        self.assertEqual(check.returncode, 0, check.stderr[-3000:])
        self.assertIn("0 differences found", check.stderr)
        listing = run("rclone", "lsl", "silo:rclone/data", *tls, env=e).stdout
        self.assertEqual(len(listing.strip().splitlines()), len(files))
        run("rclone", "delete", "silo:rclone/data", *tls, env=e)
        self.assertEqual(run("rclone", "lsl", "silo:rclone/data", *tls, env=e).stdout.strip(), "")


class S3fsTest(unittest.TestCase):
    def test_mount(self):
        require("s3fs")
        if not os.path.exists("/dev/fuse") or os.geteuid() != 0:
            raise unittest.SkipTest("s3fs needs /dev/fuse and root")
        s3 = boto()
        s3.create_bucket(Bucket="fuse")
        s3.put_object(Bucket="fuse", Key="hello.txt", Body=b"hello from silo\n")
        mount = work / "mnt"
        mount.mkdir()
        passwd = work / "passwd-s3fs"
        passwd.write_text(f"{ACCESS_KEY}:{SECRET_KEY}\n")
        passwd.chmod(0o600)
        run("s3fs", "fuse", mount, "-o", f"url={endpoint},use_path_request_style,passwd_file={passwd},"
                                         "endpoint=us-east-1,sigv4,nonempty")
        try:
            deadline = time.time() + 20
            while not os.path.ismount(mount):
                self.assertLess(time.time(), deadline, "s3fs did not mount")
                time.sleep(0.1)
            self.assertIn("hello.txt", os.listdir(mount))
            self.assertEqual((mount / "hello.txt").read_bytes(), b"hello from silo\n")
            data = os.urandom(2 * MiB + 17)
            (work / "to-mount.bin").write_bytes(data)
            shutil.copy(work / "to-mount.bin", mount / "copied.bin")
            (mount / "dir").mkdir()
            (mount / "dir" / "inner.txt").write_bytes(b"inner")
            os.sync()
        finally:
            subprocess.run(["fusermount3", "-u", str(mount)], check=False)
            subprocess.run(["umount", str(mount)], check=False, stderr=subprocess.DEVNULL)
        self.assertEqual(s3.get_object(Bucket="fuse", Key="copied.bin")["Body"].read(), data)
        self.assertEqual(s3.get_object(Bucket="fuse", Key="dir/inner.txt")["Body"].read(), b"inner")


class CurlTest(unittest.TestCase):
    def test_presigned_and_sigv4(self):
        require("curl")
        s3 = boto()
        s3.create_bucket(Bucket="curl")
        s3.put_object(Bucket="curl", Key="shared.bin", Body=b"presigned bytes")
        url = run("aws", "--endpoint-url", endpoint, "s3", "presign", "s3://curl/shared.bin",
                  "--expires-in", "300").stdout.strip() if shutil.which("aws") else \
            s3.generate_presigned_url("get_object", Params={"Bucket": "curl", "Key": "shared.bin"})
        self.assertEqual(run("curl", "-fsS", url).stdout, "presigned bytes")
        v4 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1", verify=ca if TLS else None,
                          config=Config(signature_version="s3v4"))
        put_url = v4.generate_presigned_url("put_object", Params={"Bucket": "curl", "Key": "up.bin"}, ExpiresIn=300)
        (work / "up.bin").write_bytes(b"uploaded with curl")
        run("curl", "-fsS", "-T", work / "up.bin", put_url)
        self.assertEqual(s3.get_object(Bucket="curl", Key="up.bin")["Body"].read(), b"uploaded with curl")
        self.assertNotEqual(run("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", f"{endpoint}/curl/shared.bin")
                            .stdout, "200")
        sigv4 = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{ACCESS_KEY}:{SECRET_KEY}"]
        self.assertEqual(run("curl", "-fsS", *sigv4, f"{endpoint}/curl/shared.bin").stdout, "presigned bytes")
        self.assertIn('"curl"', run("curl", "-fsS", *sigv4, f"{endpoint}/v1/buckets").stdout)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if result.testsRun and len(result.skipped) == result.testsRun:
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
