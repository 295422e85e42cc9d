"""How long a registry write takes beside a large registry (issue 35, item 10), through the HTTP API.

    python -m bench.registry_write [--definitions 5000] [--writes 4]

A config directory holding --definitions distinct definitions (bench/memory.py's scaled document, 11 MB for
5,000) behind the registry API with writes on, as `xgate run` serves it (gateway/registry_api/write.py:
the write is loaded and compiled with the whole directory before anything is written, then the reloader
swaps it in before the answer). Each write PUTs a new one-message group; the time is the client's, from
request to answer, the writer's lock held for nearly all of it. The first write also loads the directory's
errors for its "before" (later ones reuse the last write's).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry

from bench.memory import scaled_document
from bench.results import save
from gateway.compiler import compile_registry
from gateway.loader import load_snapshot
from gateway.metrics.server import MetricsServer
from gateway.registry_api import RegistryView
from gateway.registry_api.access import WriteAccess
from gateway.registry_api.write import RegistryWriter
from gateway.runtime.engine import Engine
from gateway.runtime.reload import Reloader
from gateway.sections.registry import WriteSettings
from gateway.settings import Settings
from gateway.testing import memory

KEY = "bench-key"


def _group(number: int) -> dict[str, Any]:
    schema = {"type": "object", "required": ["v"], "properties": {"v": {"type": "number"}}}
    return {"messages": {"m": {"envelope": "CloudEvents/1.0",
                               "envelopemetadata": {"type": {"value": f"com.example.bench.m{number}"}},
                               "dataschemaformat": "JsonSchema/draft-07", "dataschema": schema}}}


async def _writes(config: Path, count: int) -> list[float]:
    snapshot = load_snapshot([config])
    engine = Engine([], compile_registry(snapshot.registry, snapshot.digest), create_source=memory.create_source,
                    create_sink=memory.create_sink)
    view = RegistryView(snapshot)
    reloader = Reloader(config, engine, snapshot, Settings(), on_snapshot=view.update)
    writer = RegistryWriter(config, view, WriteAccess(WriteSettings(apikey=KEY)), reloader, engine.adapter_problems)
    times: list[float] = []
    async with MetricsServer(CollectorRegistry(), lambda: (True, {}), "127.0.0.1:0", None, view, None,
                             registry_writer=writer) as server, aiohttp.ClientSession() as session:
        for number in range(count):
            started = time.perf_counter()
            async with session.put(f"http://127.0.0.1:{server.port}/registry/messagegroups/bench{number}",
                                   json=_group(number), headers={"X-API-Key": KEY}) as answer:
                await answer.read()
                if answer.status != 201:
                    raise RuntimeError(f"write {number}: {answer.status}")
            times.append(time.perf_counter() - started)
    return times


def run(definitions: int = 5000, writes: int = 4) -> dict[str, Any]:
    document = scaled_document(definitions)
    document["endpoints"]["workload.in"].pop("labels", None)  # no route: the engine runs nothing here
    with tempfile.TemporaryDirectory(prefix="xgate-bench-write-") as name:
        config = Path(name) / "config"
        config.mkdir()
        (config / "workload.xreg.json").write_text(json.dumps(document), "utf-8")
        times = asyncio.run(_writes(config, writes))
    return {"definitions": definitions, "writes_s": times, "first_s": times[0],
            "later_median_s": statistics.median(times[1:]) if len(times) > 1 else times[0]}


def render(result: dict[str, Any]) -> str:
    return (f"registry writes beside {result['definitions']:,} definitions: first {result['first_s']:.2f} s, "
            f"later ones median {result['later_median_s']:.2f} s ({', '.join(f'{t:.2f}' for t in result['writes_s'])})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.registry_write", description=__doc__.splitlines()[0])
    parser.add_argument("--definitions", type=int, default=5000)
    parser.add_argument("--writes", type=int, default=4)
    args = parser.parse_args(argv)
    result = run(args.definitions, args.writes)
    print(render(result))
    save("registry_write", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
