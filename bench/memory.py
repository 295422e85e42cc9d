"""Memory: RSS per 1,000 compiled definitions, and RSS while judging millions of messages (it must stay flat).

    python -m bench.memory [--definitions 1000] [--messages 2000000] [--rounds 5]

Each figure comes from a fresh Python process that has first loaded and compiled a one-definition registry,
so the modules loading and compiling import on first use are not counted against the definitions. RSS is
read after each step has settled the heap as `xgate run` does once started (gateway/runtime/heap.py:
garbage collected, the C heap's free pages handed back): what the process holds, not pages the compile
freed and the allocator kept. The definitions are the reference workload's 50, copied up to --definitions with every
group, message and type id renamed. The main row makes every copy's schemas distinct too (property names,
bounds, patterns and enums changed), as a registry of that size would be; the second row keeps each copy's
schemas identical to the first 50, which the compile cache compiles once: the difference is what it saves.
Each row parts the growth of RSS: loading the documents, compiling the Python ruleset, building the native
core from it (what `xgate run` and `check` hold beside the ruleset), and the sum.
Both rows are measured --rounds times, interleaved; medians and ranges are printed.

The long run judges the workload's 100k messages over and over with Ruleset.classify, sampling RSS after
every pass. 2M messages (20 passes) by default, not 10M: every pass after the first repeats the same work on
the same objects, so a leak shows as a slope over the passes; the slope is fitted over passes 2..20 and
extrapolated to 10M messages, against the same 5 MiB bound (it took 10 of make bench's 14 minutes at 10M).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.results import save
from bench.rounds import rotated, summary

ROOT = Path(__file__).resolve().parents[1]
PAGE = 4096
# RSS grown by: loading the documents, compiling the Python ruleset, building the native core from it, the
# last two together (the compiled definitions), and all of it
PARTS = ("load", "compile", "core", "compiled", "total")


def rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * PAGE


def settled_rss() -> int:
    """RSS once the heap is settled as `xgate run` settles it after start-up (and after every reload)."""
    from gateway.runtime import heap

    heap.resettle()
    return rss_bytes()


def _distinct(schema: Any, copy: int) -> Any:
    """The schema made different for copy `copy`: property names, bounds, patterns and enums all change."""
    if isinstance(schema, list):
        return [_distinct(item, copy) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {f"{name}_{copy}": _distinct(sub, copy) for name, sub in value.items()}
        elif key == "required":
            out[key] = [f"{name}_{copy}" for name in value]
        elif key in ("minimum", "maximum", "maxItems", "maxLength") and isinstance(value, (int, float)):
            out[key] = value + copy
        elif key == "pattern":
            out[key] = f"^(?:c{copy}-)?" + value.removeprefix("^")
        elif key == "enum":
            out[key] = [*value, f"variant-{copy}"]
        else:
            out[key] = _distinct(value, copy)
    return out


def _distinct_schemas(groups: dict[str, Any], schemas: dict[str, Any], copy: int) -> None:
    for group in groups.values():
        for message in group["messages"].values():
            if isinstance(message.get("dataschema"), dict):
                message["dataschema"] = _distinct(message["dataschema"], copy)
    for group in schemas.values():
        for resource in group["schemas"].values():
            for version in resource["versions"].values():
                version["schema"] = _distinct(version["schema"], copy)


def scaled_document(definitions: int, distinct: bool = True) -> dict[str, Any]:
    """The workload document with its message and schema groups copied until it holds `definitions`.

    distinct: every copy's schemas differ (what a registry of that size holds); otherwise each copy reuses the
    same 50 schemas under new ids, which the compile cache compiles once (the figure shows what it saves)."""
    from bench import workload

    document = workload.registry_document()
    groups, schemas = document["messagegroups"], document.get("schemagroups", {})
    per_copy = sum(len(g["messages"]) for g in groups.values())
    text_groups, text_schemas = json.dumps(groups), json.dumps(schemas)
    copies_groups: dict[str, Any] = {}
    copies_schemas: dict[str, Any] = {}
    for copy in range(-(-definitions // per_copy)):
        suffix = "" if copy == 0 else f".copy{copy}"
        # every group id, schema group id and event type gets the suffix: no id is shared between copies
        renamed_groups, renamed_schemas = text_groups, text_schemas
        for name in groups:
            renamed_groups = renamed_groups.replace(f'"{name}', f'"{name}{suffix}').replace(
                f"/{name}", f"/{name}{suffix}")
            renamed_schemas = renamed_schemas.replace(f'"{name}', f'"{name}{suffix}')
        copy_groups, copy_schemas = json.loads(renamed_groups), json.loads(renamed_schemas)
        if distinct and copy:
            _distinct_schemas(copy_groups, copy_schemas, copy)
        copies_groups.update(copy_groups)
        copies_schemas.update(copy_schemas)
    document["messagegroups"] = copies_groups
    document["schemagroups"] = copies_schemas
    document["endpoints"]["workload.in"]["messagegroups"] = [f"#/messagegroups/{g}" for g in copies_groups]
    return document


def distinct_schema_count(document: dict[str, Any]) -> int:
    """How many different schema texts the document holds (what a compile cache would have to compile)."""
    texts = {json.dumps(m["dataschema"], sort_keys=True) for g in document["messagegroups"].values()
             for m in g["messages"].values() if isinstance(m.get("dataschema"), dict)}
    texts |= {json.dumps(v["schema"], sort_keys=True) for g in document.get("schemagroups", {}).values()
              for r in g["schemas"].values() for v in r["versions"].values()}
    return len(texts)


def _warm_document() -> dict[str, Any]:
    """One Kafka endpoint with one CloudEvents definition whose JSON Schema no scaled document holds."""
    return {"endpoints": {"warm.up": {
        "usage": ["consumer"], "protocol": "KAFKA", "envelope": "CloudEvents/1.0",
        "protocoloptions": {"endpoints": [{"uri": "tcp://127.0.0.1:9"}], "topic": "warm-up"},
        "messages": {"warm": {"envelope": "CloudEvents/1.0",
                              "envelopemetadata": {"type": {"value": "dev.xgate.bench.warm-up", "required": True}},
                              "dataschemaformat": "JsonSchema/draft-07",
                              "dataschema": {"type": "object", "properties": {"warm": {"type": "boolean"}}}}}}}}


def _compile_child(definitions: int, folder: str, distinct: bool = True) -> dict[str, Any]:
    from gateway.compiler import compile_registry
    from gateway.compiler.core import NativeJudge
    from gateway.loader import load_snapshot

    # the document was written by the parent (`_child`): making it here would leave its garbage in this
    # heap, and the compile would reuse that free space, hiding part of its own growth
    path = Path(folder) / "scaled.xreg.json"
    # the modules loading and compiling import on first use (jsonschema_rs, msgspec, orjson, the schema
    # registry client, ...) are imported here first, by a one-definition registry of a schema the measured
    # document does not hold: a one-time cost of the process, not of the definitions
    warm = Path(folder) / "warm"
    warm.mkdir()
    (warm / "warm.xreg.json").write_text(json.dumps(_warm_document()), "utf-8")
    warmed = load_snapshot([warm])
    NativeJudge(compile_registry(warmed.registry, warmed.digest))
    del warmed
    before = settled_rss()
    snapshot = load_snapshot([path])
    loaded = settled_rss()
    ruleset = compile_registry(snapshot.registry, snapshot.digest)
    compiled = settled_rss()
    judge = NativeJudge(ruleset)  # what `xgate run` and `check` build beside the ruleset (issue 31)
    cored = settled_rss()
    assert judge.available, "the native core is not built (make install)"
    assert not [d for d in ruleset.diagnostics if d.severity.value == "error"], ruleset.diagnostics[:3]
    return {"definitions": ruleset.definition_count,
            "load_mib": (loaded - before) / 2**20, "compile_mib": (compiled - loaded) / 2**20,
            "core_mib": (cored - compiled) / 2**20, "compiled_mib": (cored - loaded) / 2**20,
            "total_mib": (cored - before) / 2**20}


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
        samples.append((done, rss_bytes() / 2**20))
    # after the first pass every pass repeats the same work: a leak shows as a slope over the later passes
    later = samples[1:]
    mean_x = sum(x for x, _ in later) / len(later)
    mean_y = sum(y for _, y in later) / len(later)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in later) / (sum((x - mean_x) ** 2 for x, _ in later) or 1)
    return {"messages": done, "pass": len(envelopes), "rss_mib": samples,
            "growth_after_first_pass_mib": samples[-1][1] - samples[0][1],
            "slope_mib_per_10m": slope * 10_000_000}


def _child(kind: str, amount: int, *extra: Any) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter and return its JSON result."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="xgate-bench-mem-") as folder:
        if kind == "compile":
            document = scaled_document(amount, *extra)
            (Path(folder) / "scaled.xreg.json").write_text(json.dumps(document), "utf-8")
            schemas = distinct_schema_count(document)
        code = (f"import json, sys; from bench.memory import _{kind}_child; "
                f"print(json.dumps(_{kind}_child({amount}, {folder!r}{''.join(f', {e!r}' for e in extra)})))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if kind == "compile":
        result["schemas"] = schemas
    return result


def run(definitions: int = 1000, messages: int = 2_000_000, rounds: int = 5) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {"distinct": [], "shared": []}
    for index in range(rounds):  # each round measures both documents, each in a fresh process, order rotated
        for name in rotated(list(rows), index):
            rows[name].append(_child("compile", definitions, name == "distinct"))
    figures = {}
    for name, results in rows.items():
        scale = 1000 / results[0]["definitions"]
        figures[name] = {"definitions": results[0]["definitions"], "schemas": results[0]["schemas"],
                         **{f"{part}_per_1000": summary([r[f"{part}_mib"] * scale for r in results])
                            for part in PARTS}}
    long_run = _child("long_run", messages)
    main = figures["distinct"]
    # the target read two ways: the compiled rules alone, and with the documents the gateway keeps for reloads
    return {"rounds": rounds, "figures": figures, "long_run": long_run,
            "targets": {"<= 10 MiB per 1000 compiled definitions, distinct schemas (ruleset and native core, "
                        "issue 31)": main["compiled_per_1000"]["median"] <= 10,
                        "<= 20 MiB per 1000 compiled definitions, distinct schemas (the ruleset)":
                            main["compile_per_1000"]["median"] <= 20,
                        "<= 20 MiB per 1000 definitions, distinct schemas, loaded documents included":
                            main["total_per_1000"]["median"] <= 20,
                        "flat RSS (< 5 MiB per 10M messages, the slope after the first pass)":
                            long_run["slope_mib_per_10m"] < 5}}


def render(result: dict[str, Any]) -> str:
    lines = [(f"memory: RSS per 1000 definitions, {result['rounds']} interleaved rounds of fresh processes, "
              "MiB median [min-max]")]
    for name, label in (("distinct", "every copy's schemas distinct"), ("shared", "copies share 50 schemas")):
        f = result["figures"][name]
        lines.append(f"  {label} ({f['definitions']} definitions, {f['schemas']} distinct schemas): "
                     + ", ".join(f"{part} {f[f'{part}_per_1000']['median']:.1f} "
                                 f"[{f[f'{part}_per_1000']['min']:.1f}-{f[f'{part}_per_1000']['max']:.1f}]"
                                 for part in PARTS))
    long_run = result["long_run"]
    samples = long_run["rss_mib"]
    shown = samples[:: max(1, len(samples) // 10)]
    lines.append(f"memory: {long_run['messages']:,} messages judged ({long_run['pass']:,} a pass): RSS "
                 + ", ".join(f"{count / 1e6:g}M {rss:.0f}" for count, rss in shown)
                 + f" MiB; growth after the first pass {long_run['growth_after_first_pass_mib']:+.1f} MiB, "
                 f"slope {long_run['slope_mib_per_10m']:+.2f} MiB per 10M messages")
    lines += [f"target {name}: {'met' if met else 'NOT met'}" for name, met in result["targets"].items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--definitions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    result = run(args.definitions, args.messages, args.rounds)
    save("memory", result)
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
