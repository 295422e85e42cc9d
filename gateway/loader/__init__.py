"""Loader: documents on disk -> one normalized, resolved registry snapshot."""

from gateway.loader.snapshot import Snapshot, load_snapshot

__all__ = ["Snapshot", "load_snapshot"]
