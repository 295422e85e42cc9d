"""Sample traffic for the compose stack: the seeded messages of `make demo`, published without end.

    python /opt/traffic/traffic.py --config /etc/xgate [--rate 50] [--seed 7] [--defect-rate 0.15]

Runs in the xgate image (compose service `traffic`). Every message of gateway.testing.traffic (telemetry on
Kafka, orders through the gateway's HTTP webhook and over AMQP 1.0, boiler status on MQTT 5, door events on
NATS; most conform, the rest carry one realistic defect each) goes to the source endpoint it was recorded
for, as `xgate replay` would send it, using the endpoint documents and gateway.yaml of --config: the same
directory the gateway reads, so both agree on addresses and credentials. A line every 10 s says what was
sent and refused (the HTTP route rejects nonconformant orders with 422). A broker or the gateway that is not
reachable yet is waited for; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import signal
import sys
import time
from collections import defaultdict
from typing import Any

from gateway.envelope import Envelope
from gateway.exit_code import ExitCode
from gateway.loader import load_snapshot
from gateway.recorded import envelope_from_record
from gateway.routes.resolve import endpoint_config
from gateway.runtime.replay import Replayer
from gateway.settings import load_settings
from gateway.testing.traffic import records
from protocol_adapters import registry as adapters

TICK = 0.25  # seconds between batches
REPORT_EVERY = 10.0
RETRY_AFTER = 5.0


def log(message: str) -> None:
    print(f"traffic: {message}", file=sys.stderr, flush=True)


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await stop.wait()


async def _publish(args: argparse.Namespace, snapshot: Any, settings: Any, stop: asyncio.Event,
                   totals: dict[str, int]) -> None:
    """Batch after batch at --rate until stopped; replayers (one sink per endpoint and address) stay open."""
    source = records(args.seed, args.defect_rate)
    per_tick = max(1, round(args.rate * TICK))
    reported = time.monotonic()
    async with contextlib.AsyncExitStack() as stack:
        replayers: dict[str, Replayer] = {}
        while not stop.is_set():
            started = time.monotonic()
            batches: dict[str, list[Envelope]] = defaultdict(list)
            for record in itertools.islice(source, per_tick):
                batches[record["endpoint"]].append(envelope_from_record(record))
            for endpoint in batches:
                if endpoint not in replayers:
                    config = endpoint_config(snapshot.registry, endpoint, settings)
                    replayers[endpoint] = await stack.enter_async_context(Replayer(config, adapters.create_sink))
            await asyncio.gather(*(replayers[e].send_all(batch) for e, batch in batches.items()))
            if time.monotonic() - reported >= REPORT_EVERY:
                reported = time.monotonic()
                sent = {e: r.result.sent for e, r in replayers.items()}
                refused = sum(r.result.refused for r in replayers.values())
                log(f"sent {totals['sent'] + sum(sent.values()):,} "
                    f"({', '.join(f'{e} {n:,}' for e, n in sorted(sent.items()))}), refused {refused:,}")
            await _pause(stop, max(0.0, TICK - (time.monotonic() - started)))
        totals["sent"] += sum(r.result.sent for r in replayers.values())


async def run(args: argparse.Namespace) -> int:
    settings, problems = load_settings(args.config)
    snapshot = load_snapshot([args.config])
    for problem in [*problems, *snapshot.errors]:
        log(str(problem))
    if problems or snapshot.errors:
        return ExitCode.USAGE
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    totals = {"sent": 0}
    log(f"publishing about {args.rate:g} messages a second into the source endpoints of {args.config}")
    while not stop.is_set():
        try:
            await _publish(args, snapshot, settings, stop, totals)
        except Exception as exc:  # noqa: BLE001 - a broker or the gateway not up (yet, or any more): start over
            log(f"{type(exc).__name__}: {exc}; trying again in {RETRY_AFTER:g} s")
            await _pause(stop, RETRY_AFTER)
    log(f"stopped after {totals['sent']:,} messages")
    return ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="/etc/xgate", help="the gateway's config directory")
    parser.add_argument("--rate", type=float, default=50.0, help="messages a second, over every source endpoint")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--defect-rate", type=float, default=0.15, help="share of messages with a defect")
    return asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
