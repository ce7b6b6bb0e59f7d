"""The server certificate, read for SCRAM-SHA-256-PLUS channel binding.

tls-server-end-point binding data (RFC 5929 section 4.1) is the server's
certificate hashed with the hash of its signature algorithm.  Only that
algorithm is needed, so this is a minimal DER reader: it walks the
Certificate's outer SEQUENCE to the signatureAlgorithm (and, for RSASSA-PSS,
into its parameters) and never decodes anything else.  Kept apart from the
SASL exchange in protocol/auth.py, which only takes the resulting bytes,
and beside tls.py, which opens the TLS connection the certificate comes from.
"""
from __future__ import annotations

import hashlib

from mypgdriver.exceptions import InterfaceError

__all__ = ["tls_server_end_point"]


def _oid(dotted: str) -> bytes:
    """DER content octets of an OBJECT IDENTIFIER, for table keys."""
    arcs = [int(arc) for arc in dotted.split(".")]
    out = bytearray()
    for value in [arcs[0] * 40 + arcs[1], *arcs[2:]]:
        chunk = [value & 0x7F]
        value >>= 7
        while value:
            chunk.append(0x80 | (value & 0x7F))
            value >>= 7
        out.extend(reversed(chunk))
    return bytes(out)


def _oid_to_str(content: bytes) -> str:
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs:
        return "(empty)"
    first = arcs[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(arc) for arc in head + arcs[1:])


# RFC 5929 section 4.1: the certificate is hashed with its signature's hash,
# except that MD5 and SHA-1 are replaced by SHA-256.
_DIGEST_OIDS = {
    _oid("1.2.840.113549.2.5"): "sha256",         # md5
    _oid("1.3.14.3.2.26"): "sha256",              # sha1
    _oid("2.16.840.1.101.3.4.2.4"): "sha224",
    _oid("2.16.840.1.101.3.4.2.1"): "sha256",
    _oid("2.16.840.1.101.3.4.2.2"): "sha384",
    _oid("2.16.840.1.101.3.4.2.3"): "sha512",
    _oid("2.16.840.1.101.3.4.2.5"): "sha512_224",
    _oid("2.16.840.1.101.3.4.2.6"): "sha512_256",
    _oid("2.16.840.1.101.3.4.2.7"): "sha3_224",
    _oid("2.16.840.1.101.3.4.2.8"): "sha3_256",
    _oid("2.16.840.1.101.3.4.2.9"): "sha3_384",
    _oid("2.16.840.1.101.3.4.2.10"): "sha3_512",
}

_SIGNATURE_OIDS = {
    # RSA PKCS#1 v1.5 (RFC 8017 appendix A.2.4, RFC 5754)
    _oid("1.2.840.113549.1.1.4"): "sha256",       # md5WithRSAEncryption
    _oid("1.2.840.113549.1.1.5"): "sha256",       # sha1WithRSAEncryption
    _oid("1.3.14.3.2.29"): "sha256",              # sha1WithRSA (OIW)
    _oid("1.2.840.113549.1.1.14"): "sha224",
    _oid("1.2.840.113549.1.1.11"): "sha256",
    _oid("1.2.840.113549.1.1.12"): "sha384",
    _oid("1.2.840.113549.1.1.13"): "sha512",
    _oid("1.2.840.113549.1.1.15"): "sha512_224",
    _oid("1.2.840.113549.1.1.16"): "sha512_256",
    _oid("2.16.840.1.101.3.4.3.13"): "sha3_224",
    _oid("2.16.840.1.101.3.4.3.14"): "sha3_256",
    _oid("2.16.840.1.101.3.4.3.15"): "sha3_384",
    _oid("2.16.840.1.101.3.4.3.16"): "sha3_512",
    # ECDSA (RFC 5758)
    _oid("1.2.840.10045.4.1"): "sha256",          # ecdsa-with-SHA1
    _oid("1.2.840.10045.4.3.1"): "sha224",
    _oid("1.2.840.10045.4.3.2"): "sha256",
    _oid("1.2.840.10045.4.3.3"): "sha384",
    _oid("1.2.840.10045.4.3.4"): "sha512",
    _oid("2.16.840.1.101.3.4.3.9"): "sha3_224",
    _oid("2.16.840.1.101.3.4.3.10"): "sha3_256",
    _oid("2.16.840.1.101.3.4.3.11"): "sha3_384",
    _oid("2.16.840.1.101.3.4.3.12"): "sha3_512",
    # DSA
    _oid("1.2.840.10040.4.3"): "sha256",          # dsa-with-sha1
    _oid("2.16.840.1.101.3.4.3.1"): "sha224",
    _oid("2.16.840.1.101.3.4.3.2"): "sha256",
    _oid("2.16.840.1.101.3.4.3.3"): "sha384",
    _oid("2.16.840.1.101.3.4.3.4"): "sha512",
}

_RSASSA_PSS = _oid("1.2.840.113549.1.1.10")

# Signature schemes with no separate hash: RFC 5929 defines no binding for
# them, and PostgreSQL's server fails the exchange ("could not find digest
# for NID UNDEF"), so failing early gives the clearer message.
_HASHLESS_SIGNATURES = {
    _oid("1.3.101.112"): "Ed25519",
    _oid("1.3.101.113"): "Ed448",
}

_SEQUENCE = 0x30
_OID_TAG = 0x06
_CONTEXT_0 = 0xA0


class _CertificateFormatError(Exception):
    pass


def _read_tlv(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """Read one DER element at `pos`: (tag, content start, content end)."""
    if pos + 2 > end:
        raise _CertificateFormatError("truncated element")
    tag = data[pos]
    if tag & 0x1F == 0x1F:
        raise _CertificateFormatError("multi-byte tag")
    first = data[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        # 0x80 is BER's indefinite length, which DER forbids.
        if count == 0 or count > 4 or pos + count > end:
            raise _CertificateFormatError("bad length")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    if pos + length > end:
        raise _CertificateFormatError("element runs past its container")
    return tag, pos, pos + length


def _expect(data: bytes, pos: int, end: int, tag: int) -> tuple[int, int]:
    found, start, stop = _read_tlv(data, pos, end)
    if found != tag:
        raise _CertificateFormatError(f"expected tag 0x{tag:02x}, got 0x{found:02x}")
    return start, stop


def _algorithm_identifier(data: bytes, start: int, end: int) -> tuple[bytes, int, int]:
    """Split the contents of an AlgorithmIdentifier: (OID, params start, end)."""
    oid_start, oid_end = _expect(data, start, end, _OID_TAG)
    return data[oid_start:oid_end], oid_end, end


def _pss_hash(data: bytes, start: int, end: int) -> str:
    # RFC 4055 section 3.1: RSASSA-PSS-params ::= SEQUENCE {
    #   hashAlgorithm [0] HashAlgorithm DEFAULT sha1, ... }.  Parameters are
    # required in a certificate signature; OpenSSL (and so the server) will
    # not pick a hash without them.
    if start == end:
        raise _CertificateFormatError("RSASSA-PSS signature without parameters")
    params_start, params_end = _expect(data, start, end, _SEQUENCE)
    if params_start == params_end:
        return "sha256"                       # the sha1 default, upgraded
    tag, inner_start, inner_end = _read_tlv(data, params_start, params_end)
    if tag != _CONTEXT_0:
        return "sha256"                       # hashAlgorithm omitted: sha1
    alg_start, alg_end = _expect(data, inner_start, inner_end, _SEQUENCE)
    oid, _, _ = _algorithm_identifier(data, alg_start, alg_end)
    try:
        return _DIGEST_OIDS[oid]
    except KeyError:
        raise InterfaceError(
            "cannot compute tls-server-end-point channel binding: the server "
            f"certificate's RSASSA-PSS hash algorithm {_oid_to_str(oid)} is "
            "not supported") from None


def tls_server_end_point(cert_der: bytes) -> bytes:
    """Channel binding data of type tls-server-end-point (RFC 5929 4.1).

    `cert_der` is the server's certificate in DER form (what
    ``ssl.SSLObject.getpeercert(binary_form=True)`` returns).  The result is
    the certificate hashed with the hash of its signature algorithm, SHA-256
    when that is MD5 or SHA-1; for RSASSA-PSS the hash comes from the
    signature parameters.  Raises `InterfaceError` for Ed25519/Ed448 and
    unknown algorithms, for which no binding can be computed.
    """
    data = bytes(cert_der)
    try:
        # Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, ... }
        cert_start, cert_end = _expect(data, 0, len(data), _SEQUENCE)
        _, _, tbs_end = _read_tlv(data, cert_start, cert_end)
        alg_start, alg_end = _expect(data, tbs_end, cert_end, _SEQUENCE)
        oid, params_start, params_end = _algorithm_identifier(data, alg_start, alg_end)
        if oid == _RSASSA_PSS:
            hash_name = _pss_hash(data, params_start, params_end)
        elif oid in _SIGNATURE_OIDS:
            hash_name = _SIGNATURE_OIDS[oid]
        elif oid in _HASHLESS_SIGNATURES:
            raise InterfaceError(
                "cannot compute tls-server-end-point channel binding: the "
                f"server certificate is signed with {_HASHLESS_SIGNATURES[oid]}, "
                "which has no separate hash function (RFC 5929 defines no "
                "binding and PostgreSQL's server cannot compute one either); "
                "use channel_binding='disable' or a certificate signed with "
                "RSA or ECDSA")
        else:
            raise InterfaceError(
                "cannot compute tls-server-end-point channel binding: unsupported "
                f"server certificate signature algorithm {_oid_to_str(oid)}")
    except _CertificateFormatError as exc:
        raise InterfaceError(
            f"could not parse the server certificate to compute channel binding: {exc}"
        ) from None
    try:
        return hashlib.new(hash_name, data).digest()
    except ValueError:
        raise InterfaceError(
            "cannot compute tls-server-end-point channel binding: hash "
            f"{hash_name} is not available in this Python") from None
