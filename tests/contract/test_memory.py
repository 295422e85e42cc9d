"""The contract suite against the in-process MemoryBroker (the reference the real adapters are held to)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from gateway.envelope import Envelope
from gateway.testing import memory
from protocol_adapters.base import EndpointConfig
from tests.contract.suite import ContractSuite

_runs = itertools.count()


class MemoryHarness:
    protocol = "MEMORY"
    at_least_once = True

    def __init__(self) -> None:
        self.broker = f"contract-{next(_runs)}"

    def config(self, name: str) -> EndpointConfig:
        return EndpointConfig(name, "MEMORY", (f"memory://{self.broker}",), {"queue": name})

    def unreachable(self, name: str) -> EndpointConfig:
        memory.memory_broker("down").down = True
        return EndpointConfig(name, "MEMORY", ("memory://down",), {"queue": name})

    def sample(self, index: int) -> Envelope:
        return Envelope("KAFKA", {"topic": "t", "key": f"k{index}".encode(), "headers": [("h", b"v")]},
                        f"body-{index}".encode())

    def comparable(self, envelope: Envelope) -> Any:
        return envelope.body, envelope.fields

    create_source = staticmethod(memory.create_source)
    create_sink = staticmethod(memory.create_sink)


@pytest.fixture
def harness() -> MemoryHarness:
    return MemoryHarness()


class TestMemoryAdapter(ContractSuite):
    pass
