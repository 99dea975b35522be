"""A certificate authority made in the test, and server certificates it signs (cryptography)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_VALIDITY = timedelta(days=2)


@dataclass(frozen=True)
class ServerCertificate:
    """A server's certificate and key, as PEM files."""

    cert_file: Path
    key_file: Path


@dataclass(frozen=True)
class TestAuthority:
    """A CA whose certificate is ``ca_file``; nothing trusts it unless told to."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    ca_file: Path
    _key: ec.EllipticCurvePrivateKey
    _certificate: x509.Certificate

    @classmethod
    def create(cls, folder: Path, name: str = "exports test CA") -> TestAuthority:
        """A new self-signed CA, its certificate written to ``folder``."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.now(UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        folder.mkdir(parents=True, exist_ok=True)
        ca_file = folder / f"{name.replace(' ', '-')}.pem"
        ca_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return cls(ca_file, key, certificate)

    def issue(self, folder: Path, host: str = "127.0.0.1") -> ServerCertificate:
        """A server certificate for ``host`` (an IP address or a DNS name), signed by this CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        try:
            alternative: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alternative = x509.DNSName(host)
        now = datetime.now(UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
            .issuer_name(self._certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.SubjectAlternativeName([alternative]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        folder.mkdir(parents=True, exist_ok=True)
        cert_file, key_file = folder / f"{host}.crt", folder / f"{host}.key"
        cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return ServerCertificate(cert_file, key_file)
