"""`?dryrun=true` on a registry write (issues 33 and 34): the write checked as a real one is, nothing written,
reloaded or announced; the answer lists each contract change with whom it breaks and the modes that refuse it,
and judges the messages each endpoint received lately under the rules in force and under the candidate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gateway.envelope import Envelope
from tests.unit.registry_api.support import run
from tests.unit.registry_api.writing import Gateway, gateway, message, operator_files


def _event(value: Any) -> Envelope:
    event = {"specversion": "1.0", "id": "1", "source": "/x", "type": "com.example.m", "data": {"v": value}}
    return Envelope("HTTP", {"method": "POST", "path": "/", "headers": [
        ("Content-Type", "application/cloudevents+json")]}, json.dumps(event).encode())


def test_a_dry_run_answers_what_the_write_would_break_and_changes_nothing(tmp_path: Path) -> None:
    config = operator_files(tmp_path / "config")

    async def main() -> None:
        async with gateway(config) as gw:
            await _steps(gw)
    run(main)


async def _steps(gw: Gateway) -> None:
    status, _, _ = await gw.call("PUT", "/messagegroups/g/messages/m", message("com.example.m"))
    assert status == 201
    digest, files = gw.reloader.snapshot.digest, sorted((gw.config / "registry-api").rglob("*.json"))
    # the recent traffic of an endpoint, as the routes keep it: 6 numbers, 4 strings
    gw.engine.ref.recent.add_envelopes("in", [_event(n) for n in range(6)] + [_event(str(n)) for n in range(4)])
    tightened = message("com.example.m", required="w")  # `v` no longer required, `w` is: every message fails
    status, headers, body = await gw.call("PUT", "/messagegroups/g/messages/m?dryrun=true", tightened)
    assert status == 200, body
    assert body["dryrun"] is True and headers["xRegistry-xregcorrelationid"]
    assert body["traffic"]["in"]["messages"] == 10 and body["traffic"]["in"]["would_refuse"] == 6
    assert len(body["traffic"]["in"]["examples"]) == 3
    kinds = {(c["path"], c["kind"], c["breaks"]) for c in body["changes"]}
    assert ("dataschema:/w", "required", "producers") in kinds
    required_w = next(c for c in body["changes"] if c["path"] == "dataschema:/w" and c["kind"] == "required")
    assert required_w["refused_by"] == ["backward", "full"]
    assert required_w["recent_traffic"]["messages"] == 6
    assert "would refuse 6 and admit 0 of the last 10" in body["summary"]
    # nothing happened: the same files, the same registry in force
    assert gw.reloader.snapshot.digest == digest
    assert sorted((gw.config / "registry-api").rglob("*.json")) == files
    # a dry run of a write that would not load is refused as the write would be
    status, _, refused = await gw.call("PUT", "/messagegroups/g/messages/m?dryrun",
                                       {**tightened, "dataschema": {"type": 5}})
    assert status == 400 and refused["type"].endswith("bad_request")
