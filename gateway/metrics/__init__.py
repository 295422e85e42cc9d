"""Prometheus metrics: the name table, the instruments, and the /metrics /healthz /readyz server."""
