"""The client against a real TLS cluster: 1 proxy + 3 targets started with
deploy/local/cluster.sh up --tls (HTTPS only, https:// node URLs, the CA in
DIR/tls/ca.pem). Skipped, with the reason, when no silod binary is built.
SILO_KEEP=1 keeps the clusters' directories (logs, certificates) for a post-mortem."""

import collections
import os
import pickle
import random
import shutil
import subprocess
import time

import pytest

from cluster import ACCESS_KEY, SECRET_KEY, Cluster, find_bin_dir
from conftest import check_member_reads, write_shards

import silo
from silo.client import object_target


BIN_DIR, WHY_NOT = find_bin_dir()
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(BIN_DIR is None, reason=WHY_NOT or ""),
              pytest.mark.skipif(shutil.which("openssl") is None,
                                 reason="no openssl CLI (cluster.sh up --tls makes its CA with it)")]

# A TLS failure must surface at once (no retry, no waiting for a node): far under the
# client's 60 s read timeout, with room for a busy machine.
TLS_FAILS_WITHIN_S = 5.0
# Settings that would make the default trust store trust the cluster's CA after all.
TRUST_ENV = ("SILO_CA_BUNDLE", "SILO_CLIENT_CERT", "SILO_CLIENT_KEY", "SSL_CERT_FILE",
             "SSL_CERT_DIR", "AWS_CA_BUNDLE")


def client_for(cluster, **kw):
    kw.setdefault("ca_bundle", cluster.ca)
    return silo.Client(cluster.endpoint, ACCESS_KEY, SECRET_KEY, config=None, **kw)


@pytest.fixture(scope="module")
def cluster():
    c = Cluster(BIN_DIR, tls=True)
    yield c
    c.down()


@pytest.fixture
def no_trust_env(monkeypatch):
    for k in TRUST_ENV:
        monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="module")
def dataset(cluster, tmp_path_factory):
    """Bucket "tls-train" (copies=2): 8 shards of 10 samples."""
    d = str(tmp_path_factory.mktemp("tls-shards"))
    expected, names = write_shards(d, 8, 10, seed=11, size=(100, 3000))
    c = client_for(cluster)
    c.create_bucket("tls-train", {"copies": 2})
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            c.put("tls-train", n, f.read())
    return expected, names


def keys(samples):
    return [s["__key__"] for s in samples]


def check_samples(samples, expected):
    assert collections.Counter(keys(samples)) == collections.Counter(k for _, k in expected)
    for s in samples:
        shard = s["__url__"].rsplit("/", 1)[1]
        assert (s["bin"], s["cls"]) == expected[(shard, s["__key__"])], s["__key__"]


def forwards(cluster):
    return sum(cluster.metric(t["url"], "silo_target_forwards_total") for t in cluster.targets())


# -- the cluster and its map ---------------------------------------------------------

def test_the_cluster_is_https_and_its_map_names_https_nodes(cluster):
    assert cluster.endpoint.startswith("https://")
    assert os.path.isfile(cluster.ca)
    assert all(n["url"].startswith("https://") for n in cluster.status["nodes"])
    assert cluster.status.get("ca_bundle") == cluster.ca
    c = client_for(cluster)
    assert c.health() is True
    m = c.node_map()
    assert sorted(n["id"] for n in m["nodes"] if n["role"] == "target") == ["t1", "t2", "t3"]
    for n in m["nodes"]:
        assert n["url"].startswith("https://"), n
    owners = c.owner_map()
    assert sorted(owners.hrw.ids) == ["t1", "t2", "t3"]
    assert all(u.startswith("https://") for u in owners.urls)
    # /metrics of every target over https, trusting the cluster's CA (Cluster.metric)
    assert forwards(cluster) >= 0


# -- objects ---------------------------------------------------------------------------

SIZES = {"one": 1, "k300": 300_000, "m5": 5 * 1024 * 1024}


@pytest.fixture(scope="module")
def objects(cluster):
    """Bucket "tls-objs" (copies=2) holding one object of each of SIZES."""
    c = client_for(cluster)
    c.create_bucket("tls-objs", {"copies": 2})
    rng = random.Random(5)
    data = {"obj/" + k: rng.randbytes(n) for k, n in SIZES.items()}
    for name, body in data.items():
        assert c.put("tls-objs", name, body)["etag"]
    return data


def test_bucket_has_two_copies(cluster, objects):
    c = client_for(cluster)
    assert int(c.bucket_props("tls-objs")["props"]["copies"]) == 2


def test_put_get_byte_for_byte(cluster, objects):
    c = client_for(cluster)
    for name, body in objects.items():
        got = c.get("tls-objs", name)
        assert len(got) == len(body) and got == body, name
        assert c.head("tls-objs", name).size == len(body)
        with c.get_stream("tls-objs", name) as s:
            assert b"".join(iter(s)) == body, name


def test_range_reads(cluster, objects):
    c = client_for(cluster)
    one, k300, m5 = objects["obj/one"], objects["obj/k300"], objects["obj/m5"]
    assert c.get("tls-objs", "obj/one", range=(0, 0)) == one
    assert c.get("tls-objs", "obj/k300", range=(10, 19)) == k300[10:20]
    assert c.get("tls-objs", "obj/k300", range=(299_990, None)) == k300[299_990:]
    mib = 1 << 20
    assert c.get("tls-objs", "obj/m5", range=(mib - 100, mib + 99)) == m5[mib - 100:mib + 100]
    assert c.get("tls-objs", "obj/m5", range=(123_457, 4 * mib + 7)) == m5[123_457:4 * mib + 8]
    assert c.get("tls-objs", "obj/m5", range=(len(m5) - 5, None)) == m5[-5:]
    with c.get_stream("tls-objs", "obj/m5", range=(mib, 3 * mib - 1)) as s:
        assert s.read() == m5[mib:3 * mib]
    with pytest.raises(silo.RangeNotSatisfiable):
        c.get("tls-objs", "obj/one", range=(5, 9))


def test_list(cluster, objects):
    c = client_for(cluster)
    assert [o["name"] for o in c.list("tls-objs")] == sorted(objects)
    assert [o["name"] for o in c.list("tls-objs", "obj/", page_size=2)] == sorted(objects)
    sizes = {o["name"]: int(o["size"]) for o in c.list("tls-objs")}
    assert sizes == {n: len(b) for n, b in objects.items()}
    assert "tls-objs" in str(c.list_buckets())


def test_every_holder_serves_its_copy(cluster, objects):
    """copies=2: the owner sent the copy to the other holder over the copy wire (TLS
    between targets); each holder answers from its own copy, forwarding nothing."""
    c = client_for(cluster)
    for name in objects:  # a pass that lets the client catch up with the map
        c.head("tls-objs", name)
    before = forwards(cluster)
    for name, body in objects.items():
        holders = c.route("tls-objs", name)[:-1]
        assert len(holders) == 2 and all(u.startswith("https://") for u in holders), holders
        for url in holders:
            r = c.request("GET", object_target("tls-objs", name), base_url=url)
            assert r.status == 200, (url, r.status, r.body[:200])
            assert r.body == body, (name, url)
    assert forwards(cluster) == before, "a holder forwarded a read: its copy is missing"


def test_through_the_proxy(cluster):
    """direct=False: everything goes through the proxy, which relays to the targets over
    TLS (a relay into a TLS answer copies instead of splicing)."""
    c = client_for(cluster, direct=False)
    c.create_bucket("tls-proxy", {"copies": 2})
    rng = random.Random(9)
    data = {"p/" + k: rng.randbytes(n) for k, n in SIZES.items()}
    for name, body in data.items():
        c.put("tls-proxy", name, body)
    for name, body in data.items():
        assert c.get("tls-proxy", name) == body, name
    mib = 1 << 20
    assert c.get("tls-proxy", "p/m5", range=(mib - 3, 2 * mib)) == data["p/m5"][mib - 3:2 * mib + 1]
    assert [o["name"] for o in c.list("tls-proxy")] == sorted(data)
    assert set(c._transport.sent) == {cluster.endpoint}
    # and the direct client reads what went through the proxy
    assert client_for(cluster).get("tls-proxy", "p/m5") == data["p/m5"]


# -- the direct (smart) read path -----------------------------------------------------

def test_direct_reads_go_to_the_https_targets(cluster):
    """Every direct call lands on the object's owner over https: no target forwards any,
    nothing goes through the proxy."""
    c = client_for(cluster)
    c.create_bucket("tls-route")
    names = ["obj-%d/\u00e9-%d" % (i, i * 7) for i in range(40)]
    for n in names:
        c.put("tls-route", n, n.encode() * 50)
    for n in names:
        c.head("tls-route", n)
    target_urls = {t["url"] for t in cluster.targets()}
    before = forwards(cluster)
    c._transport.sent.clear()
    for n in names:
        assert c.get("tls-route", n) == n.encode() * 50
        c.head("tls-route", n)
    assert forwards(cluster) == before, "direct requests were forwarded"
    assert c._transport.sent.get(cluster.endpoint, 0) == 0
    assert set(c._transport.sent) <= target_urls and len(c._transport.sent) >= 2
    assert sum(c._transport.sent.values()) == 2 * len(names)
    # one SSLContext, shared by every pool (the proxy's and the targets')
    pools = c._transport._pools
    assert cluster.endpoint in pools and len(pools) >= 3
    assert all(p.tls_context is c.ssl_context for p in pools.values())


# -- shards, get_batch, the loaders -------------------------------------------------

def test_shard_reads_and_get_batch(cluster, dataset):
    expected, names = dataset
    c = client_for(cluster)
    check_member_reads(c, "tls-train", expected, names)
    entries = [("tls-train", names[1], "sample000012.cls"), ("tls-train", names[0], "missing.bin"),
               {"bucket": "tls-train", "name": names[2], "archpath": "sample000024.bin"},
               ("tls-train", names[7])]
    whole = c.get("tls-train", names[7])
    for direct in (True, False):
        cl = client_for(cluster, direct=direct)
        for _ in range(3):  # a direct client takes turns among the targets
            got = list(cl.get_batch(entries, continue_on_error=True))
            assert got == [
                ("tls-train/%s/sample000012.cls" % names[1], b"12"),
                ("__404__/tls-train/%s/missing.bin" % names[0], b""),
                ("tls-train/%s/sample000024.bin" % names[2], expected[(names[2], "sample000024")][0]),
                ("tls-train/%s" % names[7], whole)], direct
        with pytest.raises(silo.NotFound):
            list(cl.get_batch([("tls-train", names[0], "missing.bin")]))
        if direct:  # the batches went to the targets (taking turns), not the proxy
            targets = {t["url"] for t in cluster.targets()}
            assert sum(n for u, n in cl._transport.sent.items() if u in targets) >= 4


def test_shard_dataset_in_process(cluster, dataset):
    pytest.importorskip("torch")
    import silo.torch as st
    expected, _ = dataset
    c = client_for(cluster)
    ds = st.ShardDataset(c, "tls-train", prefix="train-", seed=3, shuffle_buffer=7,
                         chunk_size=4 << 10)
    ds.set_epoch(1)
    check_samples(list(ds), expected)


def test_dataloader_two_workers(cluster, dataset):
    """Forked workers: each starts with no connections and makes its own TLS ones."""
    torch = pytest.importorskip("torch")
    import silo.torch as st
    expected, _ = dataset
    c = client_for(cluster)
    c.get("tls-train", dataset[1][0], range=(0, 9))  # the parent holds pooled TLS connections
    ds = st.ShardDataset(c, "tls-train", prefix="train-", seed=0, shuffle_buffer=10)
    for epoch in range(2):
        ds.set_epoch(epoch)
        got = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2))
        check_samples(got, expected)
    # the parent's pooled connections still work after the forks
    assert c.get("tls-train", dataset[1][0], range=(0, 9)) == c.get("tls-train", dataset[1][0])[:10]


def test_dataloader_two_spawned_workers_unpickle_the_client(cluster, dataset):
    """Spawned workers get the dataset, and so the client, pickled: the CA's path travels
    and each worker makes its SSLContext again."""
    torch = pytest.importorskip("torch")
    import silo.torch as st
    expected, names = dataset
    c = client_for(cluster)
    copy = pickle.loads(pickle.dumps(c))
    assert copy.ca_bundle == cluster.ca and copy.ssl_context is not c.ssl_context
    assert copy.get("tls-train", names[0]) == c.get("tls-train", names[0])
    ds = st.ShardDataset(c, "tls-train", template="train-{0000..0007}.tar", seed=4,
                         shuffle_buffer=5)
    ds.set_epoch(0)
    got = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                           multiprocessing_context="spawn", timeout=300))
    check_samples(got, expected)


def test_sample_dataset_fetch(cluster, dataset):
    pytest.importorskip("torch")
    import silo.torch as st
    expected, _ = dataset
    c = client_for(cluster)
    sd = st.SampleDataset(c, "tls-train", prefix="train-", cache_dir=None)
    assert len(sd) == len(expected)
    picks = random.Random(3).sample(range(len(sd)), 25) + [0, 0]
    got = list(sd.fetch(picks))
    assert [s["__index__"] for s in got] == picks
    for s in got:
        shard = s["__url__"].rsplit("/", 1)[1]
        assert (s["bin"], s["cls"]) == expected[(shard, s["__key__"])]


# -- trust -------------------------------------------------------------------------------

def _fails_fast_with_tls_error(client, call, what):
    client._transport.sent.clear()
    t0 = time.monotonic()
    with pytest.raises(silo.TLSError) as e:
        call()
    took = time.monotonic() - t0
    assert took < TLS_FAILS_WITHIN_S, "%s: TLSError after %.1f s" % (what, took)
    assert sum(client._transport.sent.values()) == 1, \
        "%s: retried: %r" % (what, client._transport.sent)
    assert e.value.code == "UNAUTHENTICATED", what
    return e.value


def test_without_ca_bundle_every_call_is_a_quick_tls_error(cluster, objects, dataset,
                                                           no_trust_env):
    c = silo.Client(cluster.endpoint, ACCESS_KEY, SECRET_KEY, config=None)
    assert c.ca_bundle is None
    e = _fails_fast_with_tls_error(c, lambda: c.get("tls-objs", "obj/k300"), "get")
    text = str(e)
    assert "not trusted" in text and "SILO_CA_BUNDLE" in text, text
    assert cluster.endpoint in text, text
    calls = {
        "health": c.health,  # raises, not False
        "node_map": c.node_map,
        "head": lambda: c.head("tls-objs", "obj/one"),
        "put": lambda: c.put("tls-objs", "never", b"x"),
        "list": lambda: list(c.list("tls-objs")),
        "create_bucket": lambda: c.create_bucket("tls-never"),
        "get_batch": lambda: list(c.get_batch([("tls-objs", "obj/one")])),
        "get_stream": lambda: c.get_stream("tls-objs", "obj/m5").read(),
    }
    for what, call in calls.items():
        _fails_fast_with_tls_error(c, call, what)
    direct_off = silo.Client(cluster.endpoint, ACCESS_KEY, SECRET_KEY, config=None, direct=False)
    _fails_fast_with_tls_error(direct_off, lambda: direct_off.get("tls-objs", "obj/one"),
                               "get, direct=False")
    # nothing was written behind the error
    assert [o["name"] for o in client_for(cluster).list("tls-objs")] == sorted(objects)


def test_without_ca_bundle_the_loader_raises_even_with_on_error_warn(cluster, dataset,
                                                                     no_trust_env):
    pytest.importorskip("torch")
    import silo.torch as st
    _, names = dataset
    c = silo.Client(cluster.endpoint, ACCESS_KEY, SECRET_KEY, config=None)
    ds = st.ShardDataset(c, "tls-train", shards=names, on_error="warn", shuffle=False)
    t0 = time.monotonic()
    with pytest.raises(silo.TLSError):
        list(ds)
    assert time.monotonic() - t0 < TLS_FAILS_WITHIN_S


def test_ca_bundle_from_the_environment(cluster, objects, monkeypatch, no_trust_env):
    monkeypatch.setenv("SILO_CA_BUNDLE", cluster.ca)
    c = silo.Client(cluster.endpoint, ACCESS_KEY, SECRET_KEY, config=None)
    assert c.ca_bundle == cluster.ca
    assert c.get("tls-objs", "obj/k300") == objects["obj/k300"]


def test_another_cas_bundle_is_a_quick_tls_error(cluster, objects, tmp_path, no_trust_env):
    """A CA that did not sign the nodes' certificate (a second one, made the way
    cluster.sh makes the cluster's)."""
    other = str(tmp_path / "other-ca")
    out = subprocess.run([os.path.join(os.path.dirname(cluster.script), "tls-certs.sh"), other],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    c = client_for(cluster, ca_bundle=os.path.join(other, "ca.pem"))
    e = _fails_fast_with_tls_error(c, lambda: c.get("tls-objs", "obj/one"), "get, other CA")
    assert os.path.join(other, "ca.pem") in str(e), str(e)
    # the right CA still works, in the same process
    assert client_for(cluster).get("tls-objs", "obj/one") == objects["obj/one"]
