"""A throwaway certificate authority for TLS tests, made with the `openssl` command line.

`make_pki(directory)` writes a CA, a server certificate for 127.0.0.1 and localhost, a client certificate
(both signed by the CA), and a second, unrelated CA that nothing trusts: what a test needs to show that a
connection succeeds with the right material and fails with the wrong one. Keys are P-256 (fast to make)
and valid for one day. The `cryptography` package is not a dependency of xgate, hence the CLI.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

DAYS = "1"
EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class Pki:
    ca: Path            # the trusted CA's certificate
    server_cert: Path   # CN=127.0.0.1, SAN IP:127.0.0.1 and DNS:localhost, signed by `ca`
    server_key: Path
    client_cert: Path   # CN=xgate-test-client, signed by `ca`
    client_key: Path
    rogue_ca: Path      # a CA that signed nothing here: trusting only it must fail every handshake


def _openssl() -> str:
    path = shutil.which("openssl")
    if path is None:
        pytest.skip("the openssl command is not installed (needed to make test certificates)")
    return path


def _run(*args: str) -> None:
    completed = subprocess.run([_openssl(), *args], check=False, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])} failed: {completed.stderr.strip()}")


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    _run("req", "-x509", *EC, "-days", DAYS, "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(cert),
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return cert, key


def _leaf(directory: Path, name: str, subject: str, extensions: str, ca: tuple[Path, Path]) -> tuple[Path, Path]:
    cert, key, request = directory / f"{name}.pem", directory / f"{name}.key", directory / f"{name}.csr"
    config = directory / f"{name}.ext"
    config.write_text(extensions)
    _run("req", *EC, "-subj", subject, "-keyout", str(key), "-out", str(request))
    _run("x509", "-req", "-in", str(request), "-CA", str(ca[0]), "-CAkey", str(ca[1]), "-CAcreateserial",
         "-days", DAYS, "-extfile", str(config), "-out", str(cert))
    return cert, key


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory, "xgate-test-ca")
    server = _leaf(directory, "server", "/CN=127.0.0.1",
                   "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n", ca)
    client = _leaf(directory, "client", "/CN=xgate-test-client",
                   "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n", ca)
    rogue, _ = _ca(directory, "rogue-ca")
    # brokers that drop privileges (Mosquitto runs as its own user) must still read the material
    directory.chmod(0o755)
    for path in directory.iterdir():
        path.chmod(0o644)
    return Pki(ca[0], server[0], server[1], client[0], client[1], rogue)
