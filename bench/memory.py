"""Memory: RSS per 1,000 compiled definitions, and RSS while judging millions of messages (it must stay flat).

    python -m bench.memory [--definitions 1000] [--messages 10000000]

Each figure comes from a fresh Python process, so the modules it imports are not counted against
the definitions. The definitions are the reference workload's 50, copied (groups, schemas and types
renamed, so nothing is shared) up to --definitions. The long run judges the workload's 100k messages
over and over with Ruleset.classify and samples RSS every million messages.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.results import save

ROOT = Path(__file__).resolve().parents[1]
PAGE = 4096


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * PAGE


def scaled_document(definitions: int) -> dict[str, Any]:
    """The workload document with its message and schema groups copied until it holds `definitions`."""
    from bench import workload

    document = workload.registry_document()
    groups, schemas = document["messagegroups"], document.get("schemagroups", {})
    per_copy = sum(len(g["messages"]) for g in groups.values())
    text_groups, text_schemas = json.dumps(groups), json.dumps(schemas)
    copies_groups: dict[str, Any] = {}
    copies_schemas: dict[str, Any] = {}
    for copy in range(-(-definitions // per_copy)):
        suffix = "" if copy == 0 else f".copy{copy}"
        # every group id, schema group id and event type gets the suffix: nothing is shared between copies
        renamed_groups, renamed_schemas = text_groups, text_schemas
        for name in groups:
            renamed_groups = renamed_groups.replace(f'"{name}', f'"{name}{suffix}').replace(
                f"/{name}", f"/{name}{suffix}")
            renamed_schemas = renamed_schemas.replace(f'"{name}', f'"{name}{suffix}')
        copies_groups.update(json.loads(renamed_groups))
        copies_schemas.update(json.loads(renamed_schemas))
    document["messagegroups"] = copies_groups
    document["schemagroups"] = copies_schemas
    document["endpoints"]["workload.in"]["messagegroups"] = [f"#/messagegroups/{g}" for g in copies_groups]
    return document


def _compile_child(definitions: int, folder: str) -> dict[str, Any]:
    from gateway.compiler import compile_registry
    from gateway.loader import load_snapshot

    path = Path(folder) / "scaled.xreg.json"
    path.write_text(json.dumps(scaled_document(definitions)), "utf-8")
    before = rss_bytes()
    snapshot = load_snapshot([path])
    loaded = rss_bytes()
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    compiled = rss_bytes()
    assert not [d for d in ruleset.diagnostics if d.severity.value == "error"], ruleset.diagnostics[:3]
    return {"definitions": ruleset.definition_count, "load_mib": (loaded - before) / 2**20,
            "compile_mib": (compiled - loaded) / 2**20, "total_mib": (compiled - before) / 2**20}


def _long_run_child(messages: int, folder: str) -> dict[str, Any]:
    from bench import workload
    from gateway.compiler import compile_registry
    from gateway.loader import load_snapshot
    from gateway.recorded import envelope_from_record

    path = Path(folder) / "workload.xreg.json"
    path.write_text(json.dumps(workload.registry_document()), "utf-8")
    snapshot = load_snapshot([path])
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    envelopes = [envelope_from_record(r) for r in workload.messages(100_000)]
    classify = ruleset.classify
    samples = []
    done = 0
    while done < messages:
        for envelope in envelopes:
            classify(envelope)
        done += len(envelopes)
        if done % 1_000_000 == 0 or done >= messages:
            samples.append((done, rss_bytes() / 2**20))
    first = next(rss for count, rss in samples if count >= 1_000_000) if done >= 1_000_000 else samples[0][1]
    return {"messages": done, "rss_mib": samples, "growth_after_first_million_mib": samples[-1][1] - first}


def _child(kind: str, amount: int) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter and return its JSON result."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="xgate-bench-mem-") as folder:
        code = (f"import json, sys; from bench.memory import _{kind}_child; "
                f"print(json.dumps(_{kind}_child({amount}, {folder!r})))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(definitions: int = 1000, messages: int = 10_000_000) -> dict[str, Any]:
    compiled = _child("compile", definitions)
    per_thousand = compiled["total_mib"] * 1000 / compiled["definitions"]
    rules_per_thousand = compiled["compile_mib"] * 1000 / compiled["definitions"]
    long_run = _child("long_run", messages)
    # the target read two ways: the compiled rules alone, and with the documents the gateway keeps for reloads
    return {"compiled": compiled, "mib_per_1000_definitions": per_thousand, "long_run": long_run,
            "targets": {"<= 20 MiB per 1000 compiled definitions (the ruleset)": rules_per_thousand <= 20,
                        "<= 20 MiB per 1000 definitions, loaded documents included": per_thousand <= 20,
                        "flat RSS (< 5 MiB growth after the first million)":
                            long_run["growth_after_first_million_mib"] < 5}}


def render(result: dict[str, Any]) -> str:
    compiled, long_run = result["compiled"], result["long_run"]
    sizes = (f"memory: {compiled['definitions']} definitions: loading {compiled['load_mib']:.1f} MiB + compiling "
             f"{compiled['compile_mib']:.1f} MiB = {result['mib_per_1000_definitions']:.1f} MiB per 1000 definitions")
    lines = [sizes,
             f"memory: {long_run['messages']:,} messages judged: RSS "
             + ", ".join(f"{count // 1_000_000}M {rss:.0f}" for count, rss in long_run["rss_mib"])
             + f" MiB (growth after the first million {long_run['growth_after_first_million_mib']:+.1f} MiB)"]
    lines += [f"target {name}: {'met' if met else 'NOT met'}" for name, met in result["targets"].items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--definitions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10_000_000)
    args = parser.parse_args()
    result = run(args.definitions, args.messages)
    save("memory", result)
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
