"""Two registries compared definition by definition, from the documents alone (no traffic).

Definitions pair by (group, message) id; one left over on each side pairs by CloudEvents `type` (a renamed id).
A definition only in the old registry breaks producers still sending it; one only in the new admits messages
that were unknown before (consumers). A pair is compared on what decides a verdict (docs/validation.md,
rule 5): its CloudEvents attributes and protocol options (required, type, value), its schema format, and its
payload schema by the format's own rules (jsonschema.py, avro.py, protobuf.py). XSD schemas are compared as
text until their own rules are built: any change to one counts as breaking both.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import orjson

from gateway.compat import avro, jsonschema, protobuf
from gateway.compat.change import Breaks, Change, canonical
from gateway.compiler.payload.protobuf import message_descriptor
from gateway.errors import SchemaCompileError
from gateway.loader.versions import order_version_ids
from gateway.model import Entity
from gateway.model.formats import AVRO, JSONSCHEMA, PROTOBUF, normalize_schema_format
from gateway.model.resolved import MessageDefinition, PayloadSchema, Registry
from gateway.pointers import unescape

# the types whose accepted values hold a type's (validation rule 5.3): widened to one loosens, narrowed tightens.
# Every text-valued type lies within `string`; `integer` within `number`; but a number is no `string` (a
# structured event carries 7, not "7"), so integer <-> string breaks both
WIDER = {"integer": {"number"}, "symbol": {"string"}, "uri": {"urireference", "string"}, "urireference": {"string"},
         "uritemplate": {"string"}, "timestamp": {"string"}, "duration": {"string"}}
ANY_TYPES = frozenset({"any", "var"})


def compare_registries(old: Registry, new: Registry, *, transitive: bool = False) -> list[Change]:
    """Every change from `old` to `new`; `transitive`: each new payload schema also against every earlier
    version of its schema that either registry holds (versions.py orders them)."""
    found: list[Change] = []
    pairs, gone, added = _pairs(old, new)
    for key in gone:
        found.append(Change(_name(key), "", "removed", Breaks.PRODUCERS,
                            "definition removed: messages producers still send as it are refused"))
    for key in added:
        found.append(Change(_name(key), "", "added", Breaks.CONSUMERS,
                            "definition added: messages that were refused are now accepted"))
    for before, after in pairs:
        found.extend(compare_definitions(before, after))
        if transitive:
            found.extend(_earlier_versions(old, new, before, after))
    return sorted(found, key=lambda c: (c.definition, c.path, c.kind))


VERSION_AT = re.compile(r"^/schemagroups/([^/]+)/schemas/([^/]+)/versions/([^/]+)/schema$")


def _earlier_versions(old: Registry, new: Registry, before: MessageDefinition,
                      after: MessageDefinition) -> list[Change]:
    """The new payload schema against each version of its schema older than the one it uses, other than the
    one the old definition used (compared already), from the new registry, else the old one."""
    if after.payload is None:
        return []
    where = _version_of(after.payload)
    if where is None:
        return []
    group, schema, current = where
    versions: dict[str, Entity] = {}
    for registry in (old, new):  # the new registry's copy of a version wins
        holder = registry.schemagroups.get(group)
        resource = holder.children.get(schema) if holder is not None else None
        versions.update(resource.children if resource is not None else {})
    used = _version_of(before.payload) if before.payload is not None else None
    skip = {current} | ({used[2]} if used is not None and used[:2] == (group, schema) else set())
    ordered = order_version_ids(list(versions))
    found = []
    for version in ordered[:ordered.index(current)] if current in ordered else []:
        if version in skip or "schema" not in versions[version].attrs:
            continue
        earlier = replace(after, payload=PayloadSchema(after.payload.format, _parsed(versions[version].attrs["schema"]),
                                                       after.payload.type_name, versions[version].origin))
        found += [replace(change, reason=f"against version {version}: {change.reason}")
                  for change in _payload(f"{after.groupid}/{after.messageid}", earlier, after)]
    return found


def _version_of(payload: PayloadSchema) -> tuple[str, str, str] | None:
    """(schema group, schema, version) a payload schema was read from, when it was a registry's version."""
    where = VERSION_AT.match(payload.origin.pointer)
    if where is None:
        return None
    group, schema, version = (unescape(part) for part in where.groups())
    return group, schema, version


def _parsed(schema: Any) -> Any:
    """A version's schema as the loader keeps a payload schema: JSON text read, anything else as it is."""
    if isinstance(schema, str) and schema.lstrip()[:1] in ("{", "["):
        try:
            return orjson.loads(schema)
        except orjson.JSONDecodeError:
            return schema
    return schema


def _name(key: tuple[str, str]) -> str:
    return f"{key[0]}/{key[1]}"


def _ce_type(definition: MessageDefinition) -> str | None:
    value = ((definition.attrs.get("envelopemetadata") or {}).get("type") or {}).get("value")
    return value if isinstance(value, str) else None


def _pairs(old: Registry, new: Registry) -> tuple[list[tuple[MessageDefinition, MessageDefinition]],
                                                  list[tuple[str, str]], list[tuple[str, str]]]:
    pairs = [(old.messages[key], new.messages[key]) for key in sorted(old.messages.keys() & new.messages.keys())]
    gone = sorted(old.messages.keys() - new.messages.keys())
    added = sorted(new.messages.keys() - old.messages.keys())
    by_type = {_ce_type(new.messages[key]): key for key in added}
    for key in list(gone):
        match = by_type.get(_ce_type(old.messages[key]))
        if _ce_type(old.messages[key]) is not None and match is not None and match in added:
            pairs.append((old.messages[key], new.messages[match]))
            gone.remove(key)
            added.remove(match)
    return pairs, gone, added


def compare_definitions(old: MessageDefinition, new: MessageDefinition) -> list[Change]:
    name = f"{new.groupid}/{new.messageid}"
    found: list[Change] = []
    if (old.groupid, old.messageid) != (new.groupid, new.messageid):
        found.append(Change(name, "", "renamed", Breaks.NOBODY,
                            f"was {old.groupid}/{old.messageid} (paired by its CloudEvents type)"))
    found += _properties(name, "envelopemetadata", old.attrs.get("envelopemetadata") or {},
                         new.attrs.get("envelopemetadata") or {})
    found += _options(name, old.attrs.get("protocoloptions") or {}, new.attrs.get("protocoloptions") or {})
    found += _payload(name, old, new)
    return found


def _properties(name: str, where: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    found = []
    for key in sorted(set(old) | set(new)):
        path = f"{where}.{key}"
        before, after = old.get(key), new.get(key)
        if not isinstance(before, dict) or not isinstance(after, dict):
            if before is not None and after is not None:
                found += _plain(name, path, before, after)
            elif after is not None:
                found.append(Change(name, path, "added", Breaks.PRODUCERS if _constrains(after) else Breaks.NOBODY,
                                    f"`{key}` declared" + (" and constrained" if _constrains(after) else "")))
            else:
                found.append(Change(name, path, "removed", Breaks.CONSUMERS if _constrains(before) else Breaks.NOBODY,
                                    f"`{key}` no longer declared"))
            continue
        if bool(before.get("required")) != bool(after.get("required")):
            required = bool(after.get("required"))
            found.append(Change(name, path, "required", Breaks.of(required, not required),
                                f"`{key}` is {'now' if required else 'no longer'} required"))
        found += _type(name, path, before.get("type"), after.get("type"))
        if _text(before.get("value")) != _text(after.get("value")):
            was, now = before.get("value"), after.get("value")
            breaks = _template_change(was, now) if isinstance(was, str) and isinstance(now, str) else \
                Breaks.of("value" in after, "value" in before)
            found.append(Change(name, path, "template" if "{" in f"{was}{now}" else "value", breaks,
                                f"value {_text(was)} -> {_text(now)}"))
    return found


def _template_change(old: str, new: str) -> Breaks:
    """A fixed value or template replaced by another: tightens when every text the new one accepts the old one
    accepted too (`/sites/{site}` -> `/sites/berlin`), loosens the other way round, else both."""
    narrower = _covers(old, new)
    wider = _covers(new, old)
    return Breaks.of(not wider, not narrower) if narrower or wider else Breaks.BOTH


PLACEHOLDER = re.compile(r"\{[^{}]+\}")
STANDS_FOR = "\ue000"  # a placeholder of the covered template, as one character a placeholder may be


def _covers(wide: str, narrow: str) -> bool:
    """Whether every text `narrow` accepts is one `wide` accepts: `narrow` with each placeholder written as one
    character no literal holds, matched against `wide` (a placeholder is one or more characters other than
    `/`, `?` and `#`, validation rule 5.4). A name `wide` uses twice (the texts must agree) is not worked out."""
    names = PLACEHOLDER.findall(wide)
    if len(names) != len(set(names)):
        return False
    pattern = "".join(re.escape(part) if index % 2 == 0 else "[^/?#]+"
                      for index, part in enumerate(re.split(r"(\{[^{}]+\})", wide)))
    return re.fullmatch(pattern, PLACEHOLDER.sub(STANDS_FOR, narrow)) is not None


def _constrains(propdef: Any) -> bool:
    return not isinstance(propdef, dict) or bool(propdef.get("required") or "value" in propdef
                                                 or propdef.get("type") not in (None, *ANY_TYPES))


def _type(name: str, path: str, old: Any, new: Any) -> list[Change]:
    if old == new:
        return []
    before, after = old or "string", new or "string"
    if before == after:
        return []
    if after in ANY_TYPES or after in WIDER.get(before, ()):
        breaks = Breaks.CONSUMERS
    elif before in ANY_TYPES or before in WIDER.get(after, ()):
        breaks = Breaks.PRODUCERS
    else:  # neither set of values holds the other (integer and string, say: 7 and "7" read differently)
        breaks = Breaks.BOTH
    return [Change(name, path, "type", breaks, f"type {before} -> {after}")]


def _plain(name: str, path: str, old: Any, new: Any) -> list[Change]:
    if _text(old) == _text(new):
        return []
    return [Change(name, path, "value", Breaks.BOTH, f"{_text(old)} -> {_text(new)}")]


def _options(name: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Protocol options: a map of declared properties (headers, properties, ...) compared as attributes are,
    a plain 1.0 value (`"topic": "t"`: required and fixed) as a value."""
    found = []
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        path = f"protocoloptions.{key}"
        maps = [v for v in (before, after) if isinstance(v, dict)]
        if maps and all(isinstance(v, dict) or v is None for v in (before, after)) and \
                all(isinstance(p, dict) for m in maps for p in m.values()):
            found += _properties(name, path, before or {}, after or {})
        elif before is None:
            found.append(Change(name, path, "added", Breaks.PRODUCERS, f"`{key}` now fixed to {_text(after)}"))
        elif after is None:
            found.append(Change(name, path, "removed", Breaks.CONSUMERS, f"`{key}` no longer fixed"))
        else:
            found += _plain(name, path, before, after)
    return found


def _payload(name: str, old: MessageDefinition, new: MessageDefinition) -> list[Change]:
    before, after = old.payload, new.payload
    if before is None and after is None:
        return []
    if before is None or after is None:
        return [Change(name, "dataschema:", "schema", Breaks.of(after is not None, before is not None),
                       "a payload schema " + ("now applies" if after is not None else "no longer applies"))]
    kinds = [normalize_schema_format(p.format or "") for p in (before, after)]
    kind_old, kind_new = (k.kind if k is not None else None for k in kinds)
    if kind_old != kind_new:
        return [Change(name, "dataschema:", "format", Breaks.BOTH, f"schema format {before.format} -> {after.format}")]
    if kind_old == JSONSCHEMA:
        found = jsonschema.changes(before.schema, after.schema)
    elif kind_old == AVRO:
        found = avro.changes(before.schema, after.schema, before.type_name, after.type_name)
    elif kind_old == PROTOBUF and (descriptors := _protobuf(before, after)) is not None:
        found = protobuf.changes(*descriptors)
    elif _text(before.schema) != _text(after.schema) or before.type_name != after.type_name:
        return [Change(name, "dataschema:", "schema", Breaks.BOTH,
                       f"{before.format} schema changed (compared as text: its own rules are not built here)")]
    else:
        found = []
    return [Change(name, f"dataschema:{f.pointer}", f.kind, f.breaks, f.reason) for f in found]


def _protobuf(before: PayloadSchema, after: PayloadSchema) -> tuple[Any, Any] | None:
    """Both message descriptors, or None when either side does not compile here (then compared as text)."""
    try:
        return (message_descriptor(before.schema, before.type_name),
                message_descriptor(after.schema, after.type_name))
    except SchemaCompileError:
        return None


def _text(value: Any) -> str:
    return canonical(value) if value is not None else "(none)"
