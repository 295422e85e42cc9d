"""Lower a compiled Ruleset to the plan the native core executes (native/src/plan.rs reads it).

The compiler stays the one reader of documents: everything a rule means (resolved types, templates,
coerced literals, violation paths, the `{path} must be {value!r}` messages) is decided here, from the same
compiled parts the Python judge runs, and handed over as plain data. What has no lowered form is marked
`native: false` and the Python judge keeps it: payload formats other than JSON Schema (Avro, Protobuf, XSD,
a Confluent registry's wire format), a protocol option of another protocol than Kafka, a header declared
twice, a templated `key_base64`. The core itself also refuses templates with two placeholders in one piece
between `/ ? #` (templates.py rules 2 and 3) and schemas its engine does not compile the same way.

The plan is JSON text, plus a list of constants: the document values that violations name as `expected`,
kept as the Python objects they were. A definition's rules and a payload schema are not in it: the core asks
for each (`LoweredPlan.text_of`) on the first message that needs it, and they are lowered again then, from
the compiled definition the ruleset holds anyway, with the same constant and schema numbers as the first
time. A definition nobody's traffic names costs its entry in the plan and nothing else (issue 31: the texts
held up front cost 3.5 MiB per 1,000 definitions).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gateway import collector
from gateway.compiler.constraints import resolve_type
from gateway.compiler.definition import CompiledDefinition
from gateway.compiler.fields import OptionConstraint
from gateway.compiler.payload.jsonschema import JsonSchemaValidator
from gateway.compiler.ruleset import Ruleset
from gateway.compiler.templates import has_placeholders
from gateway.compiler.types import ANY_TIMESTAMPS, KNOWN_TYPES, STRING_LIKE, checker, coerce
from gateway.errors import GatewayError

# native/src/plan.rs PLAN_VERSION
PLAN_VERSION = 2
_KAFKA_READS = frozenset({"topic", "partition", "timestamp", "key", "key_base64", "header"})
_DISCRIMINATOR_READS = {"envelopemetadata.type": "type", "protocoloptions.topic": "topic"}


class NotLowered(GatewayError):
    """A rule with no form in the plan: its definition stays with the Python judge."""


@dataclass
class _Lowering:
    constants: list[Any] = field(default_factory=list)
    schemas: list[JsonSchemaValidator] = field(default_factory=list)
    schema_index: dict[int, int] = field(default_factory=dict)
    # lowering a definition again (LoweredPlan.text_of): its constants take the numbers they had the first
    # time, counting from this one, and nothing is added
    replaying: int | None = None

    def constant(self, value: Any) -> int:
        if self.replaying is not None:
            self.replaying += 1
            return self.replaying - 1
        self.constants.append(value)
        return len(self.constants) - 1

    def schema(self, validator: JsonSchemaValidator) -> int:
        known = self.schema_index.get(id(validator))
        if known is None:
            if self.replaying is not None:
                raise NotLowered("a schema not met when the plan was made")  # cannot happen: same definition
            _check_json(validator.schema)
            known = self.schema_index[id(validator)] = len(self.schemas)
            self.schemas.append(validator)
        return known

    def value_check(self, path: str, propdef: dict[str, Any], default_type: str | None) -> dict[str, Any]:
        """constraints.py `compile_value`, as data."""
        type_name = resolve_type(propdef, default_type)
        if type_name not in KNOWN_TYPES:  # checked as a string, but its literal coerced by its own name
            raise NotLowered(f"type {type_name!r}")
        value = propdef.get("value")
        template = value if isinstance(value, str) and (type_name in STRING_LIKE or type_name == "any") and \
            has_placeholders(value) else None
        compared = value is not None and template is None and \
            not (type_name == "timestamp" and value in ANY_TIMESTAMPS)
        # absent members read as null / false (plan.rs): the plan text stays small, the core keeps it
        plan: dict[str, Any] = {"path": path, "type": type_name}
        if propdef.get("required") is True:
            plan["required"] = True
        if template is not None:
            plan["template"] = template
        if compared:
            _check_json(value)
            expected = coerce(value, type_name, isinstance(value, str))
            plan["expected"] = value
            plan["value_const"] = self.constant(value)
            plan["value_message"] = f"{path} must be {value!r}"
            if isinstance(expected, str) and type_name in STRING_LIKE and checker(type_name)(expected, True):
                plan["valid_literal"] = expected
        return plan

    def rule(self, definition: CompiledDefinition, part: tuple[Any, ...]) -> dict[str, Any]:
        kind = part[0]
        if kind == "cloudevents":
            return {"kind": "cloudevents"}
        if kind == "attribute":
            _, name, propdef, default_type = part
            return {"kind": "attribute", "name": name,
                    "check": self.value_check(f"envelopemetadata.{name}", propdef, default_type)}
        if kind == "raw":
            return {"kind": "raw", "binary": sorted(part[1])}
        if kind == "content-type":
            _, wanted, shown, path = part
            return {"kind": "content-type", "path": path, "wanted": list(wanted), "shown": shown,
                    "cloudevents": definition.cloudevents}
        if kind == "payload":
            validator = part[1]
            if validator.__class__ is not JsonSchemaValidator:
                raise NotLowered(f"payload format {validator.kind}")
            return {"kind": "payload", "schema": self.schema(validator), "cloudevents": definition.cloudevents}
        if kind == "option":
            return self.option(part[3])
        raise NotLowered(f"rule {kind}")

    def option(self, options: tuple[OptionConstraint, ...]) -> dict[str, Any]:
        if len(options) != 1:
            raise NotLowered("a header declared more than once")
        option = options[0]
        if option.reads not in _KAFKA_READS:
            raise NotLowered(f"{option.path} of another protocol than Kafka")
        check = self.value_check(option.path, option.propdef, option.default_type)
        if option.reads == "key_base64" and "template" in check:
            raise NotLowered("a templated key_base64")
        header = option.path.removeprefix("protocoloptions.headers.") if option.reads == "header" else ""
        return {"kind": "option", "field": option.reads, "header": header, "text": option.text, "check": check}

    def definition(self, definition: CompiledDefinition, rank: int) -> dict[str, Any]:
        discriminator = definition.discriminator
        plan: dict[str, Any] = {"native": True, "rank": rank, "discriminator": None, "rules": []}
        if discriminator is not None:
            reads = _DISCRIMINATOR_READS.get(discriminator.path)
            if reads is None:
                return {**plan, "native": False}
            plan["discriminator"] = {"read": reads, "value": discriminator.value,
                                     "template": discriminator.template is not None}
        try:
            plan["rules"] = [self.rule(definition, part) for part in definition.parts]
        except NotLowered:
            plan["native"] = False
            plan["rules"] = []
        return plan


def _check_json(value: Any) -> None:
    """A value the plan carries as JSON must read back the same: no NaN, no key that is not a string, no
    integer past 64 bits (the core reads numbers as serde_json does without arbitrary precision, as a double;
    Python keeps them exact)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise NotLowered(f"literal {value!r}") from exc
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
            raise NotLowered(f"integer {item} past 64 bits")


@dataclass
class LoweredPlan:
    """The plan's text, its constants, the definitions by their index in it and whether each is judged by
    the core; `text_of` gives a definition's rules or a schema as JSON text when the core asks."""

    text: str
    constants: list[Any]
    definitions: list[CompiledDefinition]
    native: list[bool]
    lowering: _Lowering
    # per definition: its rank in the plan and the number of its first constant
    ranks: list[int]
    first_constants: list[int]

    def text_of(self, kind: str, index: int) -> str:
        """`kind` "rules": definition `index`'s rules, lowered again as they were for the plan; "schema":
        payload schema `index` and how deep a failing payload's errors are listed. Each lowering is its own object: threads of the core may ask at once."""
        if kind == "schema":
            validator = self.lowering.schemas[index]
            return _text({"schema": validator.schema, "explain_depth": validator.explain_depth})
        again = _Lowering(schema_index=self.lowering.schema_index, replaying=self.first_constants[index])
        return _text(again.definition(self.definitions[index], self.ranks[index])["rules"])


@collector.paused()
def lower_ruleset(ruleset: Ruleset) -> LoweredPlan:
    """The plan of every endpoint's Kafka index."""
    lowering = _Lowering()
    known: dict[int, int] = {}
    definitions: list[CompiledDefinition] = []
    for rules in ruleset.endpoints.values():
        for definition in rules.definitions:
            if id(definition) not in known:
                known[id(definition)] = len(definitions)
                definitions.append(definition)
    by_rank = sorted(range(len(definitions)), key=lambda i: definitions[i].rank)
    rank = {index: position for position, index in enumerate(by_rank)}
    planned: list[dict[str, Any]] = []
    first_constants: list[int] = []
    for i, definition in enumerate(definitions):
        first_constants.append(len(lowering.constants))
        plan = lowering.definition(definition, rank[i])
        del plan["rules"]  # lowered again when the core asks (text_of): only whether it could be is kept
        planned.append(plan)
    endpoints = []
    for endpoint_id, rules in ruleset.endpoints.items():
        index = rules.index_for("KAFKA")
        fixed = []
        for (path, value), found in index.fixed.items():
            reads = _DISCRIMINATOR_READS.get(path)
            if reads is None:  # read by no Kafka field: these definitions can never be candidates here
                continue
            fixed.append((reads, value, [known[id(d)] for d in found]))
        endpoints.append({"id": endpoint_id, "mode": rules.envelope_mode,
                          "kafka": {"fixed": fixed, "floating": [known[id(d)] for d in index.floating],
                                    "cloudevents": index.needs_cloudevents}})
    limits = ruleset.limits
    plan = {"version": PLAN_VERSION,
            "limits": {"max_body_bytes": limits.max_body_bytes, "max_headers": limits.max_headers,
                       "max_header_bytes": limits.max_header_bytes, "unique": limits.reject_duplicate_keys},
            "schemas": [{"draft": validator.draft} for validator in lowering.schemas], "definitions": planned,
            "endpoints": endpoints}
    return LoweredPlan(_text(plan), lowering.constants, definitions, [p["native"] for p in planned], lowering,
                       [rank[i] for i in range(len(definitions))], first_constants)


def _text(value: Any) -> str:
    return json.dumps(value, allow_nan=False, default=_not_json, separators=(",", ":"))


def _not_json(value: Any) -> Any:
    raise TypeError(f"{value!r} is not JSON")
