"""Placement identical to the C++ code: tests/data/hrw_vectors.json is written by
src/placement/hrw_vectors_test.cc (which checks it is current)."""

import json
import os

import pytest

from silo import _hrw, _xxh64

VECTORS = json.load(open(os.path.join(os.path.dirname(__file__), "data", "hrw_vectors.json"),
                         encoding="utf-8"))


@pytest.mark.parametrize("impl", [_xxh64.xxh64_pure, _xxh64.xxh64])
def test_xxh64_matches_libxxhash(impl):
    assert len(VECTORS["xxh64"]) > 400
    for v in VECTORS["xxh64"]:
        assert "%016x" % impl(v["data"].encode("utf-8"), v["seed"]) == v["hash"], v


def test_candidate_hashes():
    for node_id, h in VECTORS["candidate_hashes"].items():
        assert "%016x" % _hrw.candidate_hash(node_id) == h


def test_owners_and_rankings():
    sets = [_hrw.HrwCandidates(ids) for ids in VECTORS["node_sets"]]
    assert len(VECTORS["cases"]) > 1000
    for case in VECTORS["cases"]:
        c = sets[case["node_set"]]
        assert "%016x" % _hrw.object_hash(case["bucket_id"], case["name"]) == case["object_hash"]
        assert c.ids[c.owner(case["bucket_id"], case["name"])] == case["owner"], case
        assert [c.ids[i] for i in c.ranking(case["bucket_id"], case["name"])] == case["ranking"]


def test_owner_map_filters_like_the_cluster():
    node_map = {"version": 7, "nodes": [
        {"id": "p1", "role": "proxy", "url": "http://h:1", "state": "online", "mode": "normal"},
        {"id": "t1", "role": "target", "url": "http://h:2", "state": "online", "mode": "normal"},
        {"id": "t2", "role": "target", "url": "http://h:3", "state": "down", "mode": "normal"},
        {"id": "t3", "role": "target", "url": "http://h:4", "state": "online", "mode": "maintenance"},
        {"id": "a1", "role": "all", "url": "http://h:5/", "state": "online", "mode": "normal"},
    ]}
    owners = _hrw.OwnerMap(node_map)
    assert owners.hrw.ids == ["t1", "t2", "a1"]  # down counts, maintenance and proxies do not
    assert owners.urls == ["http://h:2", "http://h:3", "http://h:5"]
    with pytest.raises(ValueError):
        _hrw.OwnerMap({"version": 1, "nodes": node_map["nodes"][:1]})
