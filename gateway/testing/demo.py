"""`make demo`: the real service (the Engine of `xgate run`) on local brokers, with sample traffic and a live summary.

    python -m gateway.testing.demo [--config config/demo] [--count 5000] [--seed 7]

Starts the routes of config/demo, publishes seeded sample traffic into every
source endpoint (Kafka, HTTP, AMQP 1.0, MQTT 5, NATS) each to the address it
was recorded on, prints the gateway's summary every second until every
message was judged and routed, then drains and stops like SIGTERM would.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import defaultdict

from gateway.compiler import compile_registry
from gateway.envelope import Envelope
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record
from gateway.runtime.engine import Engine
from gateway.runtime.replay import replay
from gateway.runtime.routes import endpoint_config, resolve_routes
from gateway.settings import load_settings
from gateway.testing.traffic import generate
from protocol_adapters import registry


async def run_demo(config_dir: str, count: int, seed: int, settle: float) -> int:
    snapshot = load_snapshot([config_dir])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    settings, problems = load_settings(config_dir)
    routes, route_problems = resolve_routes(snapshot.registry, settings)
    for problem in [*snapshot.errors, *ruleset.diagnostics, *problems, *route_problems]:
        print(problem, file=sys.stderr)
    if not routes:
        return 2
    engine = Engine(routes, ruleset, drain_timeout=settings.runtime.drain_timeout, summary_interval=1.0)
    service = asyncio.create_task(engine.run())
    print(f"gateway started: {len(routes)} routes; waiting {settle:.0f}s for subscriptions", file=sys.stderr)
    await asyncio.sleep(settle)
    by_endpoint: dict[str, list[Envelope]] = defaultdict(list)
    for record in generate(count, seed):
        by_endpoint[record["endpoint"]].append(envelope_from_record(record))
    started = time.monotonic()
    results = await asyncio.gather(*(replay(endpoint_config(snapshot.registry, endpoint, settings), envelopes,
                                            registry.create_sink) for endpoint, envelopes in by_endpoint.items()))
    sent = sum(r.sent for r in results)
    refused = sum(r.refused for r in results)
    print(f"published {sent} messages in {time.monotonic() - started:.1f}s"
          + (f"; {refused} refused by the gateway (policy reject: HTTP 422 with the violations)" if refused else ""),
          file=sys.stderr)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        judged = sum(s.received for s in engine.stats.routes.values())
        busy = sum(s.inflight for s in engine.stats.routes.values())
        if judged >= count and not busy:
            break
        await asyncio.sleep(0.5)
    engine.request_stop()
    await service
    judged = sum(s.received for s in engine.stats.routes.values())
    print(f"done: {judged} of {count} messages judged and routed; every route drained and stopped", file=sys.stderr)
    return 0 if judged >= count else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="config/demo")
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--settle", type=float, default=3.0, help="seconds to let subscriptions settle")
    args = parser.parse_args(argv)
    return asyncio.run(run_demo(args.config, args.count, args.seed, args.settle))


if __name__ == "__main__":
    sys.exit(main())
