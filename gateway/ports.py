"""TCP ports on 127.0.0.1: one the kernel hands out (a worker's private metrics server takes it), and whether
a chosen one is free (the tests' and benches' brokers and gateways check theirs with it)."""

from __future__ import annotations

import socket


def ephemeral_port() -> int:
    """A port the kernel hands out right now (bound to port 0, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Nothing listens on (or is bound to) this TCP port of 127.0.0.1 right now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
