"""SigV4 against AWS's published test suite (aws-sig-v4-test-suite: service "service",
region us-east-1, 20150830T123600Z, AKIDEXAMPLE). The signed-body vector is the
aws-c-auth variant of post-x-www-form-urlencoded."""

import hashlib

import pytest

from silo import _sigv4

AKID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
DATE = "20150830T123600Z"
BASE = [("Host", "example.amazonaws.com"), ("X-Amz-Date", DATE)]


def auth(method, path, query="", headers=BASE, payload=_sigv4.EMPTY_SHA256):
    return _sigv4.sign(method, path, query, headers, payload, AKID, SECRET, "us-east-1", "service")


def prefix(signed="host;x-amz-date"):
    return ("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=%s, Signature=" % signed)


@pytest.mark.parametrize("name,method,path,query,signature", [
    ("get-vanilla", "GET", "/", "", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("get-vanilla-query-order-key-case", "GET", "/", "Param2=value2&Param1=value1",
     "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
    ("get-utf8", "GET", "/%E1%88%B4", "", "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
    ("post-vanilla", "POST", "/", "", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
    ("post-vanilla-query", "POST", "/", "Param1=value1",
     "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"),
])
def test_aws_suite(name, method, path, query, signature):
    assert auth(method, path, query) == prefix() + signature, name


def test_signed_body_vector():
    body_hash = hashlib.sha256(b"Param1=value1").hexdigest()
    assert body_hash == "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"
    headers = [("X-Amz-Date", DATE), ("Content-Type", "application/x-www-form-urlencoded"),
               ("Host", "example.amazonaws.com"), ("Content-Length", "13"),
               ("x-amz-content-sha256", body_hash)]
    assert auth("POST", "/", "", headers, body_hash) == prefix(
        "content-length;content-type;host;x-amz-content-sha256;x-amz-date") + \
        "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"


def test_canonical_forms():
    # S3 style: one encoding of the decoded path, slashes kept; '+' in a query is literal.
    assert _sigv4.canonical_uri("/b/a%20b/c~d") == "/b/a%20b/c~d"
    assert _sigv4.canonical_uri("/b/a b") == "/b/a%20b"
    assert _sigv4.canonical_uri("") == "/"
    assert _sigv4.canonical_query("b=2&a=1&A=0&archlist=true") == "A=0&a=1&archlist=true&b=2"
    assert _sigv4.canonical_query("archpath=x%2Fy.jpg") == "archpath=x%2Fy.jpg"
    assert _sigv4.percent_encode("a/b c", keep_slash=True) == "a/b%20c"
    assert _sigv4.percent_encode("a/b") == "a%2Fb"


def test_signer_replaces_its_own_headers():
    signer = _sigv4.Signer("ak", "sk")
    h = signer("GET", "/v1/health?x=1", {"Host": "127.0.0.1:8080", "Authorization": "old"})
    assert h["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
    assert h["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=ak/")
    assert "SignedHeaders=host;x-amz-content-sha256;x-amz-date," in h["Authorization"]
