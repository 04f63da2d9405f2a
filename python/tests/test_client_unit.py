"""The client without a cluster: settings, errors, pickling."""

import pickle

import pytest

import silo
from silo.errors import error_of_answer


def test_settings_resolution(tmp_path, monkeypatch):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"endpoint": "127.0.0.1:9", "access_key": "fa", "secret_key": "fs"}')
    for k in ("SILO_ENDPOINT", "SILO_ACCESS_KEY", "SILO_SECRET_KEY"):
        monkeypatch.delenv(k, raising=False)
    assert silo.resolve_settings(config=str(cfg)) == ("http://127.0.0.1:9", "fa", "fs")
    monkeypatch.setenv("SILO_ACCESS_KEY", "ea")
    assert silo.resolve_settings(config=str(cfg))[1] == "ea"
    assert silo.resolve_settings(access_key="aa", config=str(cfg))[1] == "aa"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    assert silo.resolve_settings() == ("http://127.0.0.1:8080", "ea", "silo-secret-key")
    with pytest.raises(ValueError):
        silo.resolve_settings(config=str(tmp_path / "missing.json"))


def test_errors_name_object_and_code():
    e = error_of_answer(404, b'{"error": {"code": "NOT_FOUND", "reason": "NoSuchArchiveMember", '
                        b'"message": "no member x"}}', "GET /v1/objects/b/s.tar?archpath=x", "b", "s.tar")
    assert isinstance(e, silo.NotFound) and isinstance(e, silo.SiloError)
    assert (e.status, e.code, e.reason, e.bucket, e.object) == (404, "NOT_FOUND",
                                                                "NoSuchArchiveMember", "b", "s.tar")
    assert "s.tar" in str(e) and "NoSuchArchiveMember" in str(e) and "no member x" in str(e)
    e = error_of_answer(503, b"plain text", "GET /x")
    assert isinstance(e, silo.Unavailable) and e.code == "UNAVAILABLE" and "plain text" in str(e)
    assert isinstance(error_of_answer(403, b"", "GET /x"), silo.AccessDenied)
    assert isinstance(error_of_answer(400, b'{"error": {"code": "INVALID_ARGUMENT"}}', "x"),
                      silo.InvalidArgument)
    lost = error_of_answer(500, b'{"error": {"code": "DATA_LOSS", "message": "every copy of o is corrupt"}}', "x")
    assert isinstance(lost, silo.DataLoss) and not isinstance(lost, silo.Unavailable)


def test_client_pickles_without_connections():
    c = silo.Client("http://127.0.0.1:1", "a", "b", config=None, direct=False)
    d = pickle.loads(pickle.dumps(c))
    assert (d.endpoint, d.access_key, d.direct) == ("http://127.0.0.1:1", "a", False)
    assert not d.health()  # nothing listens there: False, not an exception
    with pytest.raises(silo.Unavailable) as e:
        d.get("b", "o")
    assert e.value.code == "UNAVAILABLE" and "127.0.0.1:1" in str(e.value)
