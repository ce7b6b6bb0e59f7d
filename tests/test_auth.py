"""Tests for mypgdriver.protocol.auth: md5, SASLprep, SCRAM-SHA-256(-PLUS), and the channel
binding data of mypgdriver.connecting.tls_certificates.

The unit tests use published vectors and certificates made with the openssl
command.  The tests at the end log in to a throwaway PostgreSQL 15 server
with a minimal hand-written startup exchange, so the server itself checks
our md5 hashes, SASLprep, SCRAM proofs and tls-server-end-point hashes.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

from mypgdriver.connecting import tls_certificates
from mypgdriver.connecting.tls_certificates import tls_server_end_point
from mypgdriver.exceptions import InterfaceError, ProtocolError
from mypgdriver.protocol.auth import (
    ScramSha256,
    check_authentication_ok,
    check_password_auth_allowed,
    choose_sasl_mechanism,
    md5_password,
    saslprep,
    start_scram_exchange,
)
from tools.pgcluster import PgCluster, ServerLacksSsl

OPENSSL = shutil.which("openssl")


# --- md5 ----------------------------------------------------------------------

def test_md5_password_matches_postgresql_sql_computation():
    # Both values computed by PostgreSQL 15:
    #   SELECT 'md5' || md5(md5('pw' || 'user') || 'abcd');
    #   SELECT 'md5' || md5(convert_to(md5('s3cr3t' || 'alice'), 'UTF8') || '\x01020304'::bytea);
    assert md5_password("user", "pw", b"abcd") == b"md5d79d8448c33606d692ded4b89951495f"
    assert (md5_password("alice", "s3cr3t", b"\x01\x02\x03\x04")
            == b"md5868625a3c67a9f3f2e37df159be104ee")


def test_md5_password_follows_the_documented_formula():
    inner = hashlib.md5("pässwörd".encode() + "bob".encode()).hexdigest().encode()
    expected = b"md5" + hashlib.md5(inner + b"\xff\x00\x10\x7f").hexdigest().encode()
    assert md5_password("bob", "pässwörd", b"\xff\x00\x10\x7f") == expected


def test_md5_password_rejects_a_salt_that_is_not_four_bytes():
    with pytest.raises(ProtocolError, match="4 bytes, got 3"):
        md5_password("user", "pw", b"abc")


# --- SASLprep -------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "prepared"), [
    # RFC 4013 section 3, examples 1-5
    ("I\u00adX", "IX"),                 # soft hyphen mapped to nothing
    ("user", "user"),
    ("USER", "USER"),                   # no case folding
    ("\u00aa", "a"),                    # NFKC
    ("\u2168", "IX"),                   # ROMAN NUMERAL NINE, NFKC
    # non-ASCII spaces (table C.1.2) become U+0020
    ("a\u00a0b\u3000c\u2003d", "a b c d"),
    # U+200B is in C.1.2 and B.1; PostgreSQL maps it to a space
    ("x\u200by", "x y"),
    # other B.1 characters disappear
    ("pa\u200dss\ufe0f\ufeffword\u034f", "password"),
    ("\u2168\u00ad\u2178", "IXix"),              # small roman numeral nine
    ("ﬁ", "fi"),
    ("café", "café"),                        # precomposed stays
    ("cafe\u0301", "café"),                  # combining sequence composed
    # right-to-left only: passes the bidi rules
    ("\u0627\u0628", "\u0627\u0628"),
    ("\ufb50", "\u0671"),                    # presentation form, NFKC
    ("", ""),
])
def test_saslprep_maps_and_normalizes(raw, prepared):
    assert saslprep(raw) == prepared


@pytest.mark.parametrize("raw", [
    "\u0007",              # RFC 4013 example 6: prohibited (ASCII: returned as is)
    "\u0627\u0031",        # RFC 4013 example 7: bidi violation
    "a\u0627",             # RandALCat mixed with LCat
    "\u0627a\u0628",
    "\u0627\u0628\u0031",  # RandALCat string not ending in RandALCat
    "pass\ue000word",      # private use (C.3)
    "pass\u0080word",      # non-ASCII control (C.2.2)
    "pass\u2028word",      # line separator (C.2.2)
    "pass\U000e0041",      # tagging character (C.9)
    "pass\u0221",          # unassigned in Unicode 3.2 (A.1)
    "\u00ad",              # maps to the empty string
    "\u00ad\u200d",
    "\u1d2c",              # unassigned in 3.2, NFKC gives "A": PostgreSQL
    "x\u0340",             # checks before NFKC, so both stay raw
    "abc\udcff",           # not valid UTF-8 (bytes via surrogateescape)
])
def test_saslprep_returns_the_raw_password_where_postgresql_does(raw):
    assert saslprep(raw) == raw


# --- SCRAM: RFC 7677 section 3 test vector ---------------------------------------------

RFC7677_SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
RFC7677_CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC7677_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def rfc7677_exchange(password: str = "pencil") -> ScramSha256:
    scram = ScramSha256(password, username="user", nonce="rOprNGfwEbeRWgbNEkqO")
    scram.client_first_message()
    return scram


def test_scram_rfc7677_vector():
    scram = ScramSha256("pencil", username="user", nonce="rOprNGfwEbeRWgbNEkqO")
    assert scram.mechanism == "SCRAM-SHA-256"
    assert scram.client_first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert scram.client_final_message(RFC7677_SERVER_FIRST) == RFC7677_CLIENT_FINAL
    assert not scram.finished
    scram.verify_server_final(RFC7677_SERVER_FINAL)
    assert scram.finished
    assert not scram.channel_bound


def test_scram_applies_saslprep_to_the_password():
    # U+2003 EM SPACE prepares to a plain space, so the keys are the same
    # as for the ASCII password.
    space = rfc7677_exchange("pen cil").client_final_message(RFC7677_SERVER_FIRST)
    em_space = rfc7677_exchange("pen\u2003cil").client_final_message(RFC7677_SERVER_FIRST)
    assert em_space == space
    # ...and a soft hyphen vanishes
    assert rfc7677_exchange("pen\u00adcil").client_final_message(
        RFC7677_SERVER_FIRST) == RFC7677_CLIENT_FINAL


def test_scram_default_user_name_is_empty_and_nonce_is_random():
    first = ScramSha256("pw").client_first_message()
    other = ScramSha256("pw").client_first_message()
    assert first.startswith(b"n,,n=,r=")
    nonce = first[len(b"n,,n=,r="):]
    assert len(base64.b64decode(nonce, validate=True)) == 18
    assert first != other


def test_scram_escapes_comma_and_equals_in_user_name():
    scram = ScramSha256("pw", username="a,b=c", nonce="abc")
    assert scram.client_first_message() == b"n,,n=a=2Cb=3Dc,r=abc"


def test_scram_rejects_an_unprintable_client_nonce():
    with pytest.raises(InterfaceError, match="nonce"):
        ScramSha256("pw", nonce="a,b")


def test_scram_gs2_header_y_when_client_supports_binding_but_server_did_not_offer_it():
    scram = ScramSha256("pencil", client_supports_binding=True, username="user",
                        nonce="rOprNGfwEbeRWgbNEkqO")
    assert scram.mechanism == "SCRAM-SHA-256"
    assert scram.client_first_message() == b"y,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = scram.client_final_message(RFC7677_SERVER_FIRST)
    # base64("y,,") == "eSws"
    assert final.startswith(b"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=")
    assert final != RFC7677_CLIENT_FINAL


def test_scram_plus_sends_gs2_header_and_binding_data():
    binding = bytes(range(32))
    scram = ScramSha256("pencil", channel_binding_data=binding,
                        client_supports_binding=True, nonce="rOprNGfwEbeRWgbNEkqO")
    assert scram.mechanism == "SCRAM-SHA-256-PLUS"
    assert scram.client_first_message() == b"p=tls-server-end-point,,n=,r=rOprNGfwEbeRWgbNEkqO"
    final = scram.client_final_message(RFC7677_SERVER_FIRST)
    c_attr = final.split(b",")[0]
    assert c_attr == b"c=" + base64.b64encode(b"p=tls-server-end-point,," + binding)


def test_scram_plus_proof_is_computed_over_the_binding_data():
    # RFC 5802 section 3 applied by hand, to check the -PLUS proof is more
    # than the same code path with another c= attribute.
    binding = b"\x01" * 48
    scram = ScramSha256("pencil", channel_binding_data=binding, nonce="rOprNGfwEbeRWgbNEkqO")
    scram.client_first_message()
    final = scram.client_final_message(RFC7677_SERVER_FIRST)
    without_proof, proof = final.rsplit(b",p=", 1)
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil",
                                 base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    auth_message = b"n=,r=rOprNGfwEbeRWgbNEkqO," + RFC7677_SERVER_FIRST + b"," + without_proof
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message,
                                "sha256").digest()
    expected = bytes(a ^ b for a, b in zip(client_key, signature))
    assert base64.b64decode(proof) == expected
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    server_signature = hmac.new(server_key, auth_message, "sha256").digest()
    scram.verify_server_final(b"v=" + base64.b64encode(server_signature))
    assert scram.channel_bound


def test_scram_server_signature_mismatch_raises():
    scram = rfc7677_exchange()
    scram.client_final_message(RFC7677_SERVER_FIRST)
    wrong = b"v=" + base64.b64encode(b"\x00" * 32)
    with pytest.raises(InterfaceError, match="server signature mismatch") as info:
        scram.verify_server_final(wrong)
    assert type(info.value) is InterfaceError
    assert not scram.finished


def test_scram_signature_for_another_password_is_rejected():
    scram = rfc7677_exchange("not pencil")
    scram.client_final_message(RFC7677_SERVER_FIRST)
    with pytest.raises(InterfaceError, match="server signature mismatch"):
        scram.verify_server_final(RFC7677_SERVER_FINAL)


def test_scram_server_error_attribute_raises_with_its_value():
    scram = rfc7677_exchange()
    scram.client_final_message(RFC7677_SERVER_FIRST)
    with pytest.raises(InterfaceError, match="server error 'invalid-proof'") as info:
        scram.verify_server_final(b"e=invalid-proof")
    assert type(info.value) is InterfaceError
    assert not scram.finished


@pytest.mark.parametrize("server_first", [
    # does not start with the client nonce
    b"r=XOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    # client nonce only: the server added nothing of its own
    b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    # a prefix of the client nonce
    b"r=rOprNGfwEbeRW,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    # a non-printable server part
    b"r=rOprNGfwEbeRWgbNEkqO\x01,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
])
def test_scram_bad_server_nonce_raises(server_first):
    scram = rfc7677_exchange()
    with pytest.raises(InterfaceError, match="server nonce") as info:
        scram.client_final_message(server_first)
    assert type(info.value) is InterfaceError


@pytest.mark.parametrize(("iterations", "message"), [
    (b"0", "too low"),
    (b"-1", "not a number"),
    (b"4096x", "not a number"),
    (b"", "not a number"),
    (b"\xd9\xa4", "not a number"),          # ARABIC-INDIC DIGIT FOUR
    (b"2147483648", "above the maximum"),
    # Valid for PostgreSQL (scram_iterations goes up to INT_MAX), but the
    # derivation would block the event loop: refused above the client's bound.
    (b"2147483647", "above the maximum 1,000,000"),
    (b"1000001", "above the maximum"),
    (b"9" * 5000, "above the maximum"),     # more digits than int() accepts
])
def test_scram_invalid_iteration_count_raises(iterations, message):
    scram = rfc7677_exchange()
    server_first = b"r=rOprNGfwEbeRWgbNEkqOabc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=" + iterations
    with pytest.raises(InterfaceError, match=message) as info:
        scram.client_final_message(server_first)
    assert type(info.value) is InterfaceError


def test_scram_accepts_the_maximum_iteration_count():
    from mypgdriver.protocol.auth import MAX_SCRAM_ITERATIONS
    scram = rfc7677_exchange()
    final = scram.client_final_message(
        b"r=rOprNGfwEbeRWgbNEkqOabc,s=c2FsdA==,i=%d" % MAX_SCRAM_ITERATIONS)
    assert final.startswith(b"c=biws,r=rOprNGfwEbeRWgbNEkqOabc,p=")


def test_scram_accepts_one_iteration_as_postgresql_allows():
    scram = rfc7677_exchange()
    final = scram.client_final_message(b"r=rOprNGfwEbeRWgbNEkqOabc,s=c2FsdA==,i=1")
    assert final.startswith(b"c=biws,r=rOprNGfwEbeRWgbNEkqOabc,p=")


def test_scram_ignores_optional_extensions():
    scram = rfc7677_exchange()
    final = scram.client_final_message(RFC7677_SERVER_FIRST + b",x=ext")
    assert final.startswith(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=")
    # the extension is part of the AuthMessage, so the proof changes
    assert final != RFC7677_CLIENT_FINAL


@pytest.mark.parametrize(("server_first", "message"), [
    (b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "attribute 'r' expected"),
    (b"r=rOprNGfwEbeRWgbNEkqOabc,i=4096", "attribute 's' expected"),
    (b"r=rOprNGfwEbeRWgbNEkqOabc,s=W22ZaJ0SNY7soEsUEjb6gQ==", "attribute 'i' expected"),
    (b"r=rOprNGfwEbeRWgbNEkqOabc,s=W22ZaJ0SNY7soEsUEjb6gQ=,i=4096", "salt"),
    (b"r=rOprNGfwEbeRWgbNEkqOabc,s=W22Z*J0SNY7soEsUEjb6gQ==,i=4096", "salt"),
    (b"r=rOprNGfwEbeRWgbNEkqOabc,s=,i=4096", "empty salt"),
    (b"m=ext,r=rOprNGfwEbeRWgbNEkqOabc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
     "mandatory extension"),
    (b"", "attribute=value"),
    (b"r=\xff\xfe", "UTF-8"),
])
def test_scram_malformed_server_first_message_raises_protocol_error(server_first, message):
    scram = rfc7677_exchange()
    with pytest.raises(ProtocolError, match=message):
        scram.client_final_message(server_first)


@pytest.mark.parametrize(("server_final", "message"), [
    (b"x=abc", "attribute 'v' expected"),
    (b"v=not base64!", "base64"),
    (b"", "attribute=value"),
])
def test_scram_malformed_server_final_message_raises_protocol_error(server_final, message):
    scram = rfc7677_exchange()
    scram.client_final_message(RFC7677_SERVER_FIRST)
    with pytest.raises(ProtocolError, match=message):
        scram.verify_server_final(server_final)


def test_scram_messages_out_of_order_raise_protocol_error():
    unsent = ScramSha256("pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(ProtocolError, match="server-first-message"):
        unsent.client_final_message(RFC7677_SERVER_FIRST)

    scram = rfc7677_exchange()
    with pytest.raises(ProtocolError, match="server-final-message"):
        scram.verify_server_final(RFC7677_SERVER_FINAL)
    scram.client_final_message(RFC7677_SERVER_FIRST)
    with pytest.raises(ProtocolError, match="server-first-message"):
        scram.client_final_message(RFC7677_SERVER_FIRST)
    scram.verify_server_final(RFC7677_SERVER_FINAL)
    with pytest.raises(ProtocolError, match="server-final-message"):
        scram.verify_server_final(RFC7677_SERVER_FINAL)


def test_errors_and_repr_never_contain_the_password():
    secret = "hunter2-\u2168-s3cret"
    failures = []
    for server_first in (b"r=bad,s=c2FsdA==,i=1", b"r=nonceX,s=c2FsdA==,i=0",
                         b"r=nonceX,s=???,i=1"):
        scram = ScramSha256(secret, nonce="nonce")
        scram.client_first_message()
        with pytest.raises((InterfaceError, ProtocolError)) as info:
            scram.client_final_message(server_first)
        failures.append(info.value)
    scram = ScramSha256(secret, nonce="nonce")
    scram.client_first_message()
    scram.client_final_message(b"r=nonceX,s=c2FsdA==,i=1")
    with pytest.raises(InterfaceError) as info:
        scram.verify_server_final(b"v=" + base64.b64encode(b"\x00" * 32))
    failures.append(info.value)
    for exc in failures:
        assert secret not in str(exc) and "hunter2" not in repr(exc.args)
    assert "hunter2" not in repr(scram)


def test_password_with_unencodable_surrogates_raises_without_chaining_it():
    scram = ScramSha256("pw\ud800", nonce="nonce")
    scram.client_first_message()
    with pytest.raises(InterfaceError, match="lone surrogate") as info:
        scram.client_final_message(b"r=nonceX,s=c2FsdA==,i=1")
    assert info.value.__context__ is None and info.value.__cause__ is None


def test_non_utf8_password_bytes_are_hashed_as_is():
    raw = b"caf\xe9"                   # Latin-1, not valid UTF-8
    via_surrogates = ScramSha256(raw.decode("utf-8", "surrogateescape"), nonce="n")
    via_surrogates.client_first_message()
    proof = via_surrogates.client_final_message(b"r=nX,s=c2FsdA==,i=2").rsplit(b",p=", 1)[1]
    salted = hashlib.pbkdf2_hmac("sha256", raw, b"salt", 2)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    auth_message = b"n=,r=n,r=nX,s=c2FsdA==,i=2,c=biws,r=nX"
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message,
                                "sha256").digest()
    assert base64.b64decode(proof) == bytes(a ^ b for a, b in zip(client_key, signature))


# --- choosing the mechanism ---------------------------------------------------------

BOTH = ["SCRAM-SHA-256-PLUS", "SCRAM-SHA-256"]
CERT = b"0\x00"   # stands for "TLS is in use"; not parsed by choose_sasl_mechanism


@pytest.mark.parametrize(("offered", "mode", "cert", "expected"), [
    (BOTH, "prefer", CERT, "SCRAM-SHA-256-PLUS"),
    (BOTH, "require", CERT, "SCRAM-SHA-256-PLUS"),
    (BOTH, "disable", CERT, "SCRAM-SHA-256"),
    (["SCRAM-SHA-256"], "prefer", CERT, "SCRAM-SHA-256"),
    (["SCRAM-SHA-256"], "prefer", None, "SCRAM-SHA-256"),
    (["SCRAM-SHA-256"], "disable", None, "SCRAM-SHA-256"),
    (["X-FUTURE", "SCRAM-SHA-256"], "prefer", None, "SCRAM-SHA-256"),
])
def test_choose_sasl_mechanism(offered, mode, cert, expected):
    assert choose_sasl_mechanism(offered, channel_binding=mode, tls_cert_der=cert) == expected


@pytest.mark.parametrize(("offered", "mode", "cert", "message"), [
    (["SCRAM-SHA-256"], "require", CERT, "did not offer SCRAM-SHA-256-PLUS"),
    (["SCRAM-SHA-256"], "require", None, "does not use TLS"),
    (BOTH, "prefer", None, "non-TLS connection"),
    (BOTH, "disable", None, "non-TLS connection"),
    (["SCRAM-SHA-1", "GS2-KRB5"], "prefer", None,
     "mechanisms are supported: SCRAM-SHA-1, GS2-KRB5"),
    ([], "prefer", CERT, "mechanisms are supported: \\(empty list\\)"),
    (BOTH, "maybe", CERT, "invalid channel_binding 'maybe'"),
])
def test_choose_sasl_mechanism_errors(offered, mode, cert, message):
    with pytest.raises(InterfaceError, match=message) as info:
        choose_sasl_mechanism(offered, channel_binding=mode, tls_cert_der=cert)
    assert type(info.value) is InterfaceError


def test_start_scram_exchange_sets_the_gs2_header_like_libpq(certificates):
    der = certificates["rsa-sha256"]
    plus = start_scram_exchange(BOTH, "pw", channel_binding="prefer", tls_cert_der=der)
    assert plus.mechanism == "SCRAM-SHA-256-PLUS"
    assert plus.client_first_message().startswith(b"p=tls-server-end-point,,n=,r=")
    assert plus._cbind_input == b"p=tls-server-end-point,," + hashlib.sha256(der).digest()

    no_plus = start_scram_exchange(["SCRAM-SHA-256"], "pw", channel_binding="prefer",
                                   tls_cert_der=der)
    assert no_plus.client_first_message().startswith(b"y,,n=,r=")
    disabled = start_scram_exchange(BOTH, "pw", channel_binding="disable", tls_cert_der=der)
    assert disabled.client_first_message().startswith(b"n,,n=,r=")
    plain = start_scram_exchange(["SCRAM-SHA-256"], "pw", channel_binding="prefer",
                                 tls_cert_der=None)
    assert plain.client_first_message().startswith(b"n,,n=,r=")


def test_check_authentication_ok():
    check_authentication_ok(None, channel_binding="prefer")
    scram = rfc7677_exchange()
    with pytest.raises(InterfaceError, match="before the SCRAM exchange completed"):
        check_authentication_ok(scram, channel_binding="prefer")
    scram.client_final_message(RFC7677_SERVER_FIRST)
    scram.verify_server_final(RFC7677_SERVER_FINAL)
    check_authentication_ok(scram, channel_binding="prefer")
    with pytest.raises(InterfaceError, match="without channel binding"):
        check_authentication_ok(scram, channel_binding="require")
    with pytest.raises(InterfaceError, match="without channel binding"):
        check_authentication_ok(None, channel_binding="require")


def test_check_password_auth_allowed():
    check_password_auth_allowed("md5", channel_binding="prefer")
    check_password_auth_allowed("password", channel_binding="disable")
    with pytest.raises(InterfaceError, match="server requested md5 authentication"):
        check_password_auth_allowed("md5", channel_binding="require")


# --- tls-server-end-point ---------------------------------------------------------

def _openssl(*args: str) -> str:
    done = subprocess.run([OPENSSL, *args], check=True, capture_output=True, text=True)
    return done.stdout


# name -> (key, req options, text openssl prints for the signature, expected hash)
CERT_SPECS = {
    "rsa-sha256": ("rsa", ["-sha256"], ["sha256WithRSAEncryption"], "sha256"),
    "rsa-sha384": ("rsa", ["-sha384"], ["sha384WithRSAEncryption"], "sha384"),
    "rsa-sha512": ("rsa", ["-sha512"], ["sha512WithRSAEncryption"], "sha512"),
    "rsa-sha224": ("rsa", ["-sha224"], ["sha224WithRSAEncryption"], "sha224"),
    "rsa-sha1": ("rsa", ["-sha1"], ["sha1WithRSAEncryption"], "sha256"),
    "rsa-md5": ("rsa", ["-md5"], ["md5WithRSAEncryption"], "sha256"),
    "rsa-sha3-384": ("rsa", ["-sha3-384"], ["RSA-SHA3-384"], "sha3_384"),
    "ecdsa-p256-sha256": ("ec256", ["-sha256"], ["ecdsa-with-SHA256"], "sha256"),
    "ecdsa-p384-sha384": ("ec384", ["-sha384"], ["ecdsa-with-SHA384"], "sha384"),
    "ecdsa-p256-sha512": ("ec256", ["-sha512"], ["ecdsa-with-SHA512"], "sha512"),
    "ecdsa-p256-sha1": ("ec256", ["-sha1"], ["ecdsa-with-SHA1"], "sha256"),
    "rsapss-sha256": ("rsa", ["-sha256", "-sigopt", "rsa_padding_mode:pss"],
                      ["rsassaPss", "Hash Algorithm: sha256"], "sha256"),
    "rsapss-sha384": ("rsa", ["-sha384", "-sigopt", "rsa_padding_mode:pss"],
                      ["rsassaPss", "Hash Algorithm: sha384"], "sha384"),
    "rsapss-sha512": ("rsa", ["-sha512", "-sigopt", "rsa_padding_mode:pss",
                              "-sigopt", "rsa_pss_saltlen:32"],
                      ["rsassaPss", "Hash Algorithm: sha512"], "sha512"),
    # PSS with SHA-1 omits hashAlgorithm (DEFAULT sha1): upgraded to SHA-256
    "rsapss-sha1": ("rsa", ["-sha1", "-sigopt", "rsa_padding_mode:pss"],
                    ["rsassaPss", "Hash Algorithm: sha1 (default)"], "sha256"),
    "ed25519": ("ed25519", [], ["ED25519"], None),
    "ed448": ("ed448", [], ["ED448"], None),
}

KEY_SPECS = {
    "rsa": ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
    "ec256": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
    "ec384": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"],
    "ed25519": ["-algorithm", "ED25519"],
    "ed448": ["-algorithm", "ED448"],
}


@pytest.fixture(scope="module")
def cert_dir():
    if OPENSSL is None:
        pytest.skip("openssl command not found")
    # Not under pytest's tmp_path: that is private to root, and the server
    # (user postgres) reads the certificates from here too.
    path = Path(tempfile.mkdtemp(prefix="mypgdriver-auth-"))
    os.chmod(path, 0o755)
    for key, options in KEY_SPECS.items():
        _openssl("genpkey", *options, "-out", str(path / f"{key}.key"))
    for name, (key, options, printed, _) in CERT_SPECS.items():
        pem = path / f"{name}.crt"
        _openssl("req", "-x509", "-new", "-key", str(path / f"{key}.key"),
                 "-subj", "/CN=localhost", "-days", "2", *options, "-out", str(pem))
        _openssl("x509", "-in", str(pem), "-outform", "DER", "-out", str(path / f"{name}.der"))
        # The test is only meaningful if openssl signed the way we think.
        text = _openssl("x509", "-in", str(pem), "-noout", "-text")
        for expected in printed:
            assert expected in text, (name, expected)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def certificates(cert_dir):
    return {name: (cert_dir / f"{name}.der").read_bytes() for name in CERT_SPECS}


@pytest.mark.parametrize("name", [name for name, spec in CERT_SPECS.items() if spec[3]])
def test_tls_server_end_point_hashes_with_the_signature_hash(certificates, name):
    der = certificates[name]
    expected = hashlib.new(CERT_SPECS[name][3], der).digest()
    assert tls_server_end_point(der) == expected


@pytest.mark.parametrize("name", ["ed25519", "ed448"])
def test_tls_server_end_point_refuses_hashless_signatures(certificates, name):
    with pytest.raises(InterfaceError, match="no separate hash function") as info:
        tls_server_end_point(certificates[name])
    assert type(info.value) is InterfaceError


def test_tls_server_end_point_rejects_garbage(certificates):
    der = certificates["rsa-sha256"]
    for broken in (b"", b"\x30", b"\x30\x80" + der[2:], der[:100], b"\x02\x01\x00"):
        with pytest.raises(InterfaceError, match="could not parse the server certificate"):
            tls_server_end_point(broken)


def test_tls_server_end_point_names_an_unknown_algorithm(certificates):
    der = certificates["rsa-sha256"]
    sha256_with_rsa = bytes.fromhex("06092a864886f70d01010b")
    unknown = bytes.fromhex("06092a864886f70d010102")      # md2WithRSAEncryption
    patched = der.replace(sha256_with_rsa, unknown)
    with pytest.raises(InterfaceError, match="1.2.840.113549.1.1.2"):
        tls_server_end_point(patched)


def test_oid_table_encoding_round_trips():
    oid, oid_to_str = tls_certificates._oid, tls_certificates._oid_to_str
    assert oid("1.2.840.113549.1.1.11") == bytes.fromhex("2a864886f70d01010b")
    assert oid_to_str(bytes.fromhex("2a864886f70d01010b")) == "1.2.840.113549.1.1.11"
    assert oid_to_str(oid("2.16.840.1.101.3.4.2.10")) == "2.16.840.1.101.3.4.2.10"


# --- against a real PostgreSQL server ---------------------------------------------------

# Passwords for SCRAM roles, set through SQL so the *server* runs its own
# SASLprep when it stores the verifier.
SCRAM_PASSWORDS = {
    "ascii": "correct horse",
    "mapped_spaces": "a\u00a0b\u3000c",
    "soft_hyphen": "I\u00adX",
    "nfkc": "\u2168\u00aa\ufb01",
    "zero_width_space": "x\u200by",
    "bidi_ok": "\u0627\u0628\u062c",
    "bidi_violation": "\u0627\u0031",
    "prohibited": "pass\ue000word",
    "ascii_control": "bell\u0007",
    "unassigned_in_3_2": "\u1d2c\u1d2e",
    "prohibited_before_nfkc": "x\u0340",
    "only_mapped_to_nothing": "\u00ad",
}


@pytest.fixture(scope="module")
def server(cert_dir):
    """A server of our own: TLS on, and the roles above (the certificate changes per test)."""
    if os.environ.get("MYPGDRIVER_TEST_DSN"):
        pytest.skip("needs a server started by the test itself (TLS certificates change)")
    if os.geteuid() == 0:
        # The server runs as postgres and insists on owning its private key.
        for path in cert_dir.iterdir():
            shutil.chown(path, "postgres")
    for key in cert_dir.glob("*.key"):
        key.chmod(0o600)
    cluster = PgCluster(settings={
        "ssl": True,
        "ssl_cert_file": str(cert_dir / "rsa-sha256.crt"),
        "ssl_key_file": str(cert_dir / "rsa.key"),
    })
    try:
        cluster.init()
        try:
            cluster.start()
        except ServerLacksSsl as e:
            pytest.skip(f"TLS tests need a server built with SSL: {e}")
        cluster.create_role("md5_user", "md5 secret", method="md5")
        cluster.create_role("scram_user", "scram secret", method="scram-sha-256")
        for name, password in SCRAM_PASSWORDS.items():
            cluster.create_role(f"sp_{name}", password, method="scram-sha-256")
        yield cluster
    finally:
        cluster.destroy()


class ServerError(Exception):
    def __init__(self, fields: dict[str, str]) -> None:
        super().__init__(f"{fields.get('C')}: {fields.get('M')}")
        self.sqlstate = fields.get("C")
        self.message = fields.get("M", "")


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("server closed the connection")
        data += chunk
    return data


def _read_message(sock: socket.socket) -> tuple[bytes, bytes]:
    kind, length = struct.unpack("!cI", _recv_exact(sock, 5))
    return kind, _recv_exact(sock, length - 4)


def _send(sock: socket.socket, kind: bytes, body: bytes) -> None:
    sock.sendall(kind + struct.pack("!I", len(body) + 4) + body)


def pg_login(server: PgCluster, user: str, password: str, *, tls: bool,
             channel_binding: str = "prefer", gs2_override: bool | None = None,
             ) -> ScramSha256 | None:
    """Run the startup and authentication exchange; return the SCRAM state used.

    This is just enough of the protocol (PostgreSQL docs, "Message Flow:
    Start-up") to let the server judge our answers.
    """
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        cert = None
        if tls:
            sock.sendall(struct.pack("!II", 8, 80877103))     # SSLRequest
            assert _recv_exact(sock, 1) == b"S"
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            sock = context.wrap_socket(sock)
            cert = sock.getpeercert(binary_form=True)
        params = b"user\0" + user.encode() + b"\0database\0postgres\0\0"
        sock.sendall(struct.pack("!II", len(params) + 8, 196608) + params)
        scram = None
        while True:
            kind, body = _read_message(sock)
            if kind == b"E":
                fields = {part[:1].decode(): part[1:].decode()
                          for part in body.split(b"\0") if part}
                raise ServerError(fields)
            assert kind == b"R", kind
            (code,) = struct.unpack("!I", body[:4])
            if code == 0:
                check_authentication_ok(scram, channel_binding=channel_binding)
                _send(sock, b"X", b"")
                return scram
            if code == 5:
                check_password_auth_allowed("md5", channel_binding=channel_binding)
                _send(sock, b"p", md5_password(user, password, body[4:8]) + b"\0")
            elif code == 10:
                offered = [m.decode() for m in body[4:].split(b"\0") if m]
                if gs2_override is None:
                    scram = start_scram_exchange(offered, password,
                                                 channel_binding=channel_binding,
                                                 tls_cert_der=cert)
                else:
                    scram = ScramSha256(password, client_supports_binding=gs2_override)
                first = scram.client_first_message()
                _send(sock, b"p", scram.mechanism.encode() + b"\0"
                      + struct.pack("!I", len(first)) + first)
            elif code == 11:
                _send(sock, b"p", scram.client_final_message(body[4:]))
            elif code == 12:
                scram.verify_server_final(body[4:])
            else:
                raise AssertionError(f"unexpected authentication request {code}")
    finally:
        sock.close()


def use_certificate(server: PgCluster, cert_dir: Path, name: str) -> bytes:
    """Make the server present certificate `name` (reloading only if needed); return its DER."""
    cert_file = str(cert_dir / f"{name}.crt")
    if server.settings.get("ssl_cert_file") != cert_file:
        key = CERT_SPECS[name][0]
        server.set_settings({"ssl_cert_file": cert_file,
                             "ssl_key_file": str(cert_dir / f"{key}.key")})
    der = (cert_dir / f"{name}.der").read_bytes()
    assert _served_certificate(server) == der
    return der


@pytest.mark.parametrize("tls", [False, True])
def test_server_accepts_md5_login(server, cert_dir, tls):
    use_certificate(server, cert_dir, "rsa-sha256")
    assert pg_login(server, "md5_user", "md5 secret", tls=tls) is None
    with pytest.raises(ServerError) as info:
        pg_login(server, "md5_user", "md5 wrong", tls=tls)
    assert info.value.sqlstate == "28P01"


def test_server_accepts_scram_without_tls(server):
    scram = pg_login(server, "scram_user", "scram secret", tls=False)
    assert scram.mechanism == "SCRAM-SHA-256" and scram.finished and not scram.channel_bound
    with pytest.raises(ServerError) as info:
        pg_login(server, "scram_user", "scram wrong", tls=False)
    assert info.value.sqlstate == "28P01"


@pytest.mark.parametrize(("mode", "mechanism"), [
    ("prefer", "SCRAM-SHA-256-PLUS"),
    ("require", "SCRAM-SHA-256-PLUS"),
    ("disable", "SCRAM-SHA-256"),
])
def test_server_accepts_scram_over_tls(server, cert_dir, mode, mechanism):
    use_certificate(server, cert_dir, "rsa-sha256")
    scram = pg_login(server, "scram_user", "scram secret", tls=True, channel_binding=mode)
    assert scram.mechanism == mechanism and scram.finished
    assert scram.channel_bound == (mechanism == "SCRAM-SHA-256-PLUS")


def test_server_detects_downgrade_when_client_says_y_over_tls(server, cert_dir):
    use_certificate(server, cert_dir, "rsa-sha256")
    # "y" claims the server did not offer -PLUS; over TLS it did, so the
    # server must treat this as a downgrade attack.
    with pytest.raises(ServerError) as info:
        pg_login(server, "scram_user", "scram secret", tls=True, gs2_override=True)
    assert info.value.sqlstate == "28000"
    assert info.value.message == "SCRAM channel binding negotiation error"


@pytest.mark.parametrize("name", list(SCRAM_PASSWORDS))
def test_server_and_client_saslprep_agree(server, name):
    scram = pg_login(server, f"sp_{name}", SCRAM_PASSWORDS[name], tls=False)
    assert scram.finished


def test_saslprep_password_variants_log_in_as_the_prepared_form(server):
    # The server stored SASLprep("a\u00a0b\u3000c") == "a b c".
    assert pg_login(server, "sp_mapped_spaces", "a b c", tls=False).finished
    assert pg_login(server, "sp_nfkc", "IXafi", tls=False).finished


@pytest.mark.parametrize("name", ["rsa-sha384", "rsa-sha512", "ecdsa-p384-sha384",
                                  "ecdsa-p256-sha512", "rsapss-sha256", "rsapss-sha512",
                                  "rsa-sha1", "rsa-sha256"])
def test_server_agrees_on_tls_server_end_point(server, cert_dir, name):
    use_certificate(server, cert_dir, name)
    scram = pg_login(server, "scram_user", "scram secret", tls=True, channel_binding="require")
    assert scram.channel_bound


def _served_certificate(server: PgCluster) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(struct.pack("!II", 8, 80877103))
        assert _recv_exact(sock, 1) == b"S"
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with context.wrap_socket(sock) as tls_sock:
            return tls_sock.getpeercert(binary_form=True)


@pytest.mark.parametrize("name", ["ed25519", "ed448"])
def test_hashless_server_certificate_fails_plus_but_works_without_binding(
        server, cert_dir, name):
    use_certificate(server, cert_dir, name)
    with pytest.raises(InterfaceError, match="no separate hash function"):
        pg_login(server, "scram_user", "scram secret", tls=True, channel_binding="prefer")
    scram = pg_login(server, "scram_user", "scram secret", tls=True, channel_binding="disable")
    assert scram.finished and not scram.channel_bound
