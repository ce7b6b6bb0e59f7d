"""Throwaway X.509 material for TLS tests, made with the `cryptography` package.

ECDSA P-256 keys keep generation fast (a few milliseconds each); the
signatures use SHA-256, which is what tls-server-end-point channel binding
hashes with.
"""
from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import os
import pathlib
from typing import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_ONE_DAY = datetime.timedelta(days=1)


@dataclasses.dataclass
class Issued:
    """A certificate and its private key, as objects and as PEM files."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    cert_path: pathlib.Path
    key_path: pathlib.Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_pair(directory: pathlib.Path, stem: str, cert: x509.Certificate,
                key: ec.EllipticCurvePrivateKey, key_password: bytes | None) -> Issued:
    cert_path = directory / f"{stem}.crt"
    key_path = directory / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(key_password) if key_password
        else serialization.NoEncryption())
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
    os.chmod(key_path, 0o600)
    return Issued(cert, key, cert_path, key_path)


def make_ca(directory: pathlib.Path, stem: str, common_name: str) -> Issued:
    """A self-signed certificate authority."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _ONE_DAY)
        .not_valid_after(now + 30 * _ONE_DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    return _write_pair(directory, stem, cert, key, None)


def issue(ca: Issued, directory: pathlib.Path, stem: str, common_name: str, *,
          dns_names: Iterable[str] = (), ip_addresses: Iterable[str] = (),
          client: bool = False, key_password: bytes | None = None) -> Issued:
    """A leaf certificate signed by `ca` (server auth, or client auth if `client`)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _ONE_DAY)
        .not_valid_after(now + 30 * _ONE_DAY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]),
            critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            ca.key.public_key()), critical=False)
    )
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    return _write_pair(directory, stem, cert, key, key_password)


def write_crl(ca: Issued, path: pathlib.Path, revoked: Iterable[x509.Certificate]) -> pathlib.Path:
    """A CRL from `ca` listing `revoked` (may be empty), as PEM."""
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca.cert.subject)
        .last_update(now - _ONE_DAY)
        .next_update(now + 30 * _ONE_DAY)
    )
    for cert in revoked:
        builder = builder.add_revoked_certificate(
            x509.RevokedCertificateBuilder()
            .serial_number(cert.serial_number)
            .revocation_date(now - _ONE_DAY)
            .build())
    crl = builder.sign(ca.key, hashes.SHA256())
    path.write_bytes(crl.public_bytes(serialization.Encoding.PEM))
    return path
