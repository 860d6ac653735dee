"""The pool's Redis over TLS: ``REDIS_URL=rediss://...?ssl_ca_certs=<CA file>&ssl_cert_reqs=required``,
as docs/operations.md (TLS) tells operators to set it.

A real ``redis-server`` (Debian's is built with TLS) serves only a TLS port, with a certificate
from a throwaway CA made here; the pool's own client and a real worker with a plain Celery
producer reach it through that URL, and a client that trusts another CA is refused.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from aipool.lanes import ROUTINE_LANES
from aipool.redis.url import connect
from aipool.simulator import Simulator
from tests.conftest import worker_env
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.services import free_port

HOST = "127.0.0.1"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None = None,
) -> x509.Certificate:
    """A certificate for ``subject``: a CA's own when ``issuer`` is None, else a server's for
    127.0.0.1 signed by ``issuer``."""
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, signer = issuer or (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if issuer is not None:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(HOST))]),
            critical=False,
        )
    return builder.sign(signer, hashes.SHA256())


def _write(path: Path, item: x509.Certificate | ec.EllipticCurvePrivateKey) -> Path:
    if isinstance(item, x509.Certificate):
        path.write_bytes(item.public_bytes(serialization.Encoding.PEM))
    else:
        path.write_bytes(
            item.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return path


@dataclass
class TlsRedis:
    """A Redis serving TLS only, the CA that signed its certificate, and another CA."""

    port: int
    ca_file: Path
    other_ca_file: Path

    def url(self, ca_file: Path | None = None, db: int = 0) -> str:
        """The pool's ``REDIS_URL`` for it, trusting ``ca_file`` (default: its own CA)."""
        ca = ca_file or self.ca_file
        return f"rediss://{HOST}:{self.port}/{db}?ssl_ca_certs={ca}&ssl_cert_reqs=required"


@pytest.fixture(scope="module")
def tls_redis() -> Iterator[TlsRedis]:
    directory = Path(tempfile.mkdtemp(prefix="aipool-tls-"))
    ca_key, other_key, server_key = _key(), _key(), _key()
    ca = _certificate("aipool test CA", ca_key)
    server = _certificate(HOST, server_key, issuer=("aipool test CA", ca_key))
    files = {
        "ca": _write(directory / "ca.crt", ca),
        "other": _write(directory / "other-ca.crt", _certificate("another CA", other_key)),
        "cert": _write(directory / "redis.crt", server),
        "key": _write(directory / "redis.key", server_key),
    }
    port = free_port()
    # Only the TLS port listens (--port 0): nothing reaches this Redis in clear text.
    options = {
        "--bind": HOST,
        "--port": "0",
        "--tls-port": str(port),
        "--tls-cert-file": str(files["cert"]),
        "--tls-key-file": str(files["key"]),
        "--tls-ca-cert-file": str(files["ca"]),
        "--tls-auth-clients": "no",
        "--save": "",
        "--appendonly": "no",
        "--dir": str(directory),
    }
    process = subprocess.Popen(
        [shutil.which("redis-server") or "redis-server", *(x for o in options.items() for x in o)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    found = TlsRedis(port, files["ca"], files["other"])
    try:
        client = redis.Redis.from_url(found.url())
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        client.close()
        yield found
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


def test_given_rediss_with_the_servers_ca_when_the_pool_connects_then_it_uses_that_redis(
    tls_redis: TlsRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given REDIS_URL naming the TLS port and the CA that signed the server's certificate
    monkeypatch.setenv("REDIS_URL", tls_redis.url())
    # When the pool's own client connects (breakers, quotas, the ledger spool use it)
    client = connect()
    try:
        # Then it reads and writes there, over a verified TLS connection
        client.set("aipool-tls-check", "seen")
        assert client.get("aipool-tls-check") == b"seen"
        assert client.eval("return redis.call('incr', KEYS[1])", 1, "aipool-tls-count") >= 1
        assert client.connection_pool.connection_class is redis.SSLConnection
    finally:
        client.close()


def test_given_a_ca_that_did_not_sign_the_servers_certificate_when_connecting_then_it_is_refused(
    tls_redis: TlsRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given REDIS_URL trusting another CA (a server that is not the one the operator named)
    monkeypatch.setenv("REDIS_URL", tls_redis.url(ca_file=tls_redis.other_ca_file))
    client = connect()
    try:
        # When the pool connects, then verification fails and nothing is sent
        with pytest.raises(redis.ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
            client.ping()
    finally:
        client.close()


@pytest.mark.integration
def test_given_rediss_when_a_worker_serves_a_producers_request_then_the_answer_comes_back(
    tls_redis: TlsRedis, simulator: Simulator, ledger_url: str
) -> None:
    # Given a real worker whose broker, results, breakers and quotas are the TLS Redis
    simulator.reset()
    url = tls_redis.url(db=1)
    worker = Worker(
        worker_env(
            REDIS_URL=url, CELERY_BROKER_URL=url, CELERY_RESULT_BACKEND=url, DATABASE_URL=ledger_url
        ),
        queues=ROUTINE_LANES,
    )
    # and a plain Celery producer on the same URL
    producer = Producer(url)
    try:
        worker.wait_ready(producer.app, timeout=60)
        # When it sends a request
        answer = producer.send({"prompt": "What does TLS protect against?", "user_id": "tls"}).get(
            timeout=60
        )
        # Then the answer comes back through the TLS Redis, served by the first provider
        assert answer["status"] == "ok", answer
        assert answer["provider"] == "ollama"
    finally:
        worker.stop()
        producer.close()
