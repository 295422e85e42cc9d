"""The JSON-Schema-Test-Suite as Kafka traffic: one consumer endpoint, one definition per suite group.

Each group's schema is the `dataschema` of a CloudEvents definition whose `type` names the
group; each test's data is the body of a binary-mode Kafka record of that type. Both Spark
paths (batch and streaming) must give these the verdicts `xgate check` gives.
"""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import conformance_dir

DRAFTS = {"draft7": "JSONSchema/draft-07", "draft2020-12": "JSONSchema/draft/2020-12"}
ENDPOINT = "suite"


def corpus(endpoint_options: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(registry document, recorded Kafka messages); remote-ref groups are left out (no fetching).

    Skips the calling test when ../shared/conformance is not beside the checkout.
    """
    suite = conformance_dir("jsonschema-suite", "tests")
    messages: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    for draft, format_name in DRAFTS.items():
        for path in sorted((suite / draft).glob("*.json")):
            for g, group in enumerate(json.loads(path.read_text("utf-8"))):
                if "localhost:1234" in json.dumps(group["schema"]):
                    continue
                kind = f"{draft}.{path.stem}.{g}"
                messages[kind] = {"envelope": "CloudEvents/1.0",
                                  "envelopemetadata": {"type": {"value": kind}, "specversion": {"value": "1.0"}},
                                  "dataschemaformat": format_name, "dataschema": group["schema"]}
                for t, test in enumerate(group["tests"]):
                    records.append({"endpoint": ENDPOINT, "protocol": "KAFKA", "key": f"{kind}/{t}",
                                    "headers": [["ce_specversion", "1.0"], ["ce_type", kind],
                                                ["ce_id", f"{kind}/{t}"], ["ce_source", "/suite"],
                                                ["content-type", "application/json"]],
                                    "body": json.dumps(test["data"])})
    endpoint = {"usage": ["consumer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
                "protocoloptions": endpoint_options, "messages": messages}
    return {"endpoints": {ENDPOINT: endpoint}}, records
