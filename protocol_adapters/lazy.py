"""Lazy re-exports for the adapter packages (PEP 562).

An adapter's `__init__` names what it offers and where it lives; nothing is imported until a name is used,
so that `protocol_adapters.kafka.options` (read by the Spark runner and `xgate lint`) loads without the
client library, and only building a source or sink needs the protocol's extra (registry.py turns a missing
one into the install hint).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `homes` maps each exported name to its submodule."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    return __getattr__
