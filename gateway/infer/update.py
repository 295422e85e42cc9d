"""`xgate infer --update EXISTING`: a reviewed contract widened to accept new traffic, the reviewer's edits kept.

The new messages are judged with the reviewed document as it is (the gateway's compiler). What it accepts
changes nothing. What it refuses is widened where the refusal says, and nowhere else, one loosening per
(definition, place), each reported for the reviewer to look at:

- a payload that fails its JSON Schema at a place: the subschema there (found by following `properties` and
  `items` from the root along the failing pointer, as deep as the schema spells it out) becomes `anyOf` the
  reviewed subschema and one inferred from the refused values (schema.py), so every reviewed keyword still
  holds for what it held before;
- a CloudEvents attribute or protocol header: `required` dropped when missing, a fixed `value` or template
  dropped when the new values differ, a declared `type` dropped when they do not fit it;
- a loosening is kept only when the refused messages no longer fail at that place (a `time` that is no
  timestamp fails CloudEvents' own rule whatever is declared: nothing reviewed is dropped for it);
- messages of a type no reviewed definition names: drafted as `xgate infer` drafts them and added beside the
  reviewed ones (an existing endpoint gains the new group; nothing reviewed is replaced).

What cannot be widened this way (a content type, CloudEvents' own rules, an undecodable body) is left out
and listed. The document must be xRegistry 1.0-shaped (`messagegroups` -> `messages`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.infer.draft import Sample, infer, read_sample, refusal_reason, refused
from gateway.infer.schema import infer_schema
from gateway.pointers import follow, unescape
from gateway.verdict import Verdict

# a message can fail in several places: each round widens what the last one left refused, until none is
MAX_ROUNDS = 6


@dataclass
class Update:
    document: dict[str, Any]
    widened: list[str] = field(default_factory=list)  # "group/message place: what was loosened"
    added: list[str] = field(default_factory=list)  # "group/message" drafted from unnamed traffic
    left_out: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)


def update(existing: dict[str, Any], records: Sequence[tuple[int, Any]]) -> Update:
    result = Update(copy.deepcopy(existing))
    samples: list[Sample] = []
    for number, record in records:
        sample = read_sample(number, record)
        if isinstance(sample, str):
            result.left_out.append((number, sample.split(":")[0]))
        else:
            samples.append(sample)
    drafted = False
    for _ in range(MAX_ROUNDS):
        refusals = refused(result.document, samples)
        if not refusals:
            break
        unnamed = [s for s, verdict in refusals if verdict.messageid is None]
        progress = _widen_all(result, [(s, v) for s, v in refusals if v.messageid is not None])
        if unnamed and not drafted:
            drafted = progress = True
            _add_drafts(result, unnamed)
        if not progress:
            break
    for sample, verdict in refused(result.document, samples):
        result.left_out.append((sample.number, refusal_reason(verdict)))
    result.left_out.sort()
    return result


def _widen_all(result: Update, refusals: list[tuple[Sample, Verdict]]) -> bool:
    """One loosening per (definition, place) for every refusal that names a definition, kept only when the
    refused messages no longer fail there (a `time` that is no timestamp fails CloudEvents' own rule whatever
    the definition declares: dropping the declared type would loosen the contract for nothing); whether any
    was kept."""
    places: dict[tuple[str, str, str, str], list[Sample]] = {}
    for sample, verdict in refusals:
        for violation in verdict.violations:
            key = (str(verdict.messagegroupid), str(verdict.messageid), violation.path, violation.rule.value)
            places.setdefault(key, []).append(sample)
    progress = False
    for (group, message, path, rule), samples in places.items():
        before = copy.deepcopy(result.document)
        definition = _definition(result.document, group, message)
        done = _widen(result.document, definition, path, rule, [_value_at(s, path) for s in samples]) \
            if definition is not None else None
        if done is None:
            continue
        if any(v.path == path for _, verdict in refused(result.document, samples) for v in verdict.violations):
            result.document = before  # it did not help: the reviewed contract stays as it was there
            continue
        result.widened.append(f"{group}/{message} {path}: {done}")
        progress = True
    return progress


def _value_at(sample: Sample, path: str) -> Any:
    """The refused payload value at a `dataschema:` place (the attributes' places need no value)."""
    if path.startswith("dataschema:"):
        found, value = follow(sample.data, path.removeprefix("dataschema:"))
        return value if found else None
    return None


def _definition(document: dict[str, Any], group: str, message: str) -> dict[str, Any] | None:
    holder = (document.get("messagegroups") or {}).get(group) or {}
    found = (holder.get("messages") or {}).get(message)
    if found is None:  # a message declared inline in an endpoint names the endpoint as its group
        found = ((document.get("endpoints") or {}).get(group) or {}).get("messages", {}).get(message)
    return found if isinstance(found, dict) else None


def _widen(document: dict[str, Any], definition: dict[str, Any], path: str, rule: str,
           values: list[Any]) -> str | None:
    """Loosen `definition` at `path` for `values`; what was done, or None when this place cannot be widened."""
    if path.startswith("dataschema:") and rule == "schema":
        return _widen_schema(document, definition, path.removeprefix("dataschema:"), values)
    section, _, name = path.partition(".")
    if section == "protocoloptions" and name.startswith("headers."):
        declared = (definition.get("protocoloptions") or {}).get("headers") or {}
        name = name.removeprefix("headers.")
    elif section == "envelopemetadata":
        metadata = definition.get("envelopemetadata") or {}
        declared = metadata.get("attributes", metadata) if isinstance(metadata.get("attributes"), dict) else metadata
    else:
        return None
    propdef = declared.get(name)
    if not isinstance(propdef, dict):
        return None
    if rule == "required" and propdef.get("required"):
        propdef["required"] = False
        return "no longer required"
    if rule in ("value", "template") and "value" in propdef:
        return f"fixed value {propdef.pop('value')!r} dropped"
    if rule == "type" and "type" in propdef:
        return f"type {propdef.pop('type')!r} dropped"
    return None


def _widen_schema(document: dict[str, Any], definition: dict[str, Any], pointer: str,
                  values: list[Any]) -> str | None:
    holder, key = _schema_place(document, definition)
    if holder is None:
        return None
    schema = holder[key]
    parent: Any = holder
    slot: Any = key
    where = ""
    for token in pointer.split("/")[1:] if pointer else ():
        token = unescape(token)
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict) and token in schema["properties"]:
            parent, slot, schema = schema["properties"], token, schema["properties"][token]
            where += f"/properties/{token}"
        elif isinstance(schema, dict) and isinstance(schema.get("items"), dict) and token.isdigit():
            parent, slot, schema = schema, "items", schema["items"]
            where += "/items"
        else:
            break
    inferred = {k: v for k, v in infer_schema(values).items() if k != "$schema"}
    if isinstance(schema, dict) and "$schema" in schema:  # the root keeps its dialect outside the alternatives
        dialect = schema["$schema"]
        rest = {k: v for k, v in schema.items() if k != "$schema"}
        parent[slot] = {"$schema": dialect, "anyOf": [rest, inferred]}
    else:
        parent[slot] = {"anyOf": [schema, inferred]}
    return f"schema at {where or '/'} widened: anyOf the reviewed subschema and {inferred}"


def _schema_place(document: dict[str, Any], definition: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The object holding the definition's JSON Schema and its key: inline `dataschema`, or the default version
    of the schema `dataschemauri` points at in this document."""
    if isinstance(definition.get("dataschema"), (dict, bool)):
        return definition, "dataschema"
    reference = definition.get("dataschemauri") or definition.get("dataschemaxid")
    if not isinstance(reference, str):
        return None, ""
    found, schema = follow(document, reference.removeprefix("#") if reference.startswith("#") else reference)
    if not found or not isinstance(schema, dict):
        return None, ""
    versions = schema.get("versions")
    if not isinstance(versions, dict) or not versions:
        return (schema, "schema") if "schema" in schema else (None, "")
    chosen = str(schema.get("metadefaultversionid") or schema.get("defaultversionid") or "")
    flagged = [vid for vid, v in versions.items() if isinstance(v, dict) and v.get("isdefault")]
    version = versions.get(chosen) or (versions[flagged[0]] if flagged else versions[max(versions, key=_version_key)])
    return (version, "schema") if isinstance(version, dict) and "schema" in version else (None, "")


def _version_key(version: str) -> tuple[int, str]:
    return (int(version), "") if version.isdigit() else (-1, version)


def _add_drafts(result: Update, samples: list[Sample]) -> None:
    """Definitions drafted from messages no reviewed definition names, added beside the reviewed ones."""
    draft = infer([(s.number, s.record) for s in samples])
    document = result.document
    for collection in ("messagegroups", "schemagroups"):
        target = document.setdefault(collection, {})
        for gid, group in draft.document.get(collection, {}).items():
            children = "messages" if collection == "messagegroups" else "schemas"
            existing = target.setdefault(gid, {children: {}}).setdefault(children, {})
            for cid, child in group.get(children, {}).items():
                if cid not in existing:
                    existing[cid] = child
                    if collection == "messagegroups":
                        result.added.append(f"{gid}/{cid}")
    endpoints = document.setdefault("endpoints", {})
    for eid, endpoint in draft.document.get("endpoints", {}).items():
        if eid in endpoints:  # the reviewed endpoint keeps its address and options, and gains the new group
            listed = endpoints[eid].setdefault("messagegroups", [])
            listed += [ref for ref in endpoint.get("messagegroups", []) if ref not in listed]
        else:
            endpoints[eid] = endpoint
