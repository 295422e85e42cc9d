"""JSON Schema changes and whom they break, each from the keyword's meaning in the JSON Schema validation
vocabulary (draft 2020-12 "A Vocabulary for Structural Validation"; the same words in drafts 4-7): a change
that makes the schema refuse an instance it accepted breaks producers, one that makes it accept an instance
it refused breaks consumers. Each case is checked against jsonschema-rs too: an instance the finding says is
newly refused (or admitted) is."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from gateway.compat.change import Breaks
from gateway.compat.jsonschema import changes

OBJECT = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}, "c": {"enum": ["EUR", "USD"]}},
          "required": ["n"]}


def _with(**edits: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {**OBJECT, "properties": {k: dict(v) for k, v in OBJECT["properties"].items()}}
    for path, value in edits.items():
        *parents, last = path.split("__")
        node = schema
        for part in parents:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return schema


@pytest.mark.parametrize(("new", "pointer", "kind", "breaks", "old_only", "new_only"), [
    # 6.5.3 required: a name added refuses the instances without it
    (_with(required=["n", "c"]), "/c", "required", Breaks.PRODUCERS, {"n": 1}, None),
    (_with(required=None), "/n", "required", Breaks.CONSUMERS, None, {}),
    # 6.1.2 enum: a value removed refuses it, one added admits it; both at once break both
    (_with(properties__c__enum=["EUR"]), "/c", "enum", Breaks.PRODUCERS, {"n": 1, "c": "USD"}, None),
    (_with(properties__c__enum=["EUR", "USD", "GBP"]), "/c", "enum", Breaks.CONSUMERS, None, {"n": 1, "c": "GBP"}),
    (_with(properties__c__enum=["EUR", "CHF"]), "/c", "enum", Breaks.BOTH, {"n": 1, "c": "USD"}, {"n": 1, "c": "CHF"}),
    # 6.1.1 type: integer lies within number
    (_with(properties__n__type="number"), "/n", "type", Breaks.CONSUMERS, None, {"n": 1.5}),
    (_with(properties__n__type="string", properties__n__minimum=None), "/n", "type", Breaks.BOTH, {"n": 2},
     {"n": "2"}),
    # 6.2.4 minimum: raised refuses, lowered admits
    (_with(properties__n__minimum=5), "/n", "minimum", Breaks.PRODUCERS, {"n": 2}, None),
    (_with(properties__n__minimum=0), "/n", "minimum", Breaks.CONSUMERS, None, {"n": 0}),
    # 10.3.2.3 additionalProperties: false refuses every member not listed
    (_with(additionalProperties=False), "/*", "schema", Breaks.PRODUCERS, {"n": 1, "x": 1}, None),
    # 10.3.2.1 properties: a member added to an open object constrains values that were free
    (_with(properties__x={"type": "string"}), "/x", "schema", Breaks.PRODUCERS, {"n": 1, "x": 1}, None),
    # 6.3.3 pattern: added refuses what does not match
    (_with(properties__c__pattern="^E"), "/c", "pattern", Breaks.PRODUCERS, {"n": 1, "c": "USD"}, None),
])
def test_a_change_breaks_whom_its_keyword_says(new: dict[str, Any], pointer: str, kind: str, breaks: Breaks,
                                               old_only: Any, new_only: Any) -> None:
    found = [(f.pointer, f.kind, f.breaks) for f in changes(OBJECT, new)]
    assert (pointer, kind, breaks) in found, found
    before, after = jsonschema_rs.Draft202012Validator(OBJECT), jsonschema_rs.Draft202012Validator(new)
    if old_only is not None:  # evidence for the producers' side: accepted before, refused now
        assert before.is_valid(old_only) and not after.is_valid(old_only)
    if new_only is not None:  # and for the consumers' side
        assert after.is_valid(new_only) and not before.is_valid(new_only)


def test_annotations_break_nobody() -> None:
    """`format` is an annotation in xgate (docs/decisions.md); titles and descriptions never decide."""
    new = _with(title="Order", properties__c__format="iso-4217", properties__c__description="currency")
    assert changes(OBJECT, new) == []


def test_recursive_schemas_are_followed_through_refs_and_end() -> None:
    old = {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                              "next": {"$ref": "#/$defs/node"}}}},
           "$ref": "#/$defs/node"}
    new = {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "string"},
                                                              "next": {"$ref": "#/$defs/node"}}}},
           "$ref": "#/$defs/node"}
    assert [(f.pointer, f.kind, f.breaks) for f in changes(old, new)] == [("/v", "type", Breaks.BOTH)]


def test_the_same_schema_has_no_change() -> None:
    assert changes(OBJECT, _with()) == []


def test_values_past_64_bits_compare_too() -> None:
    """Documents may carry integers JSON allows and orjson does not write (past 64 bits)."""
    found = changes({"const": 2**70}, {"const": 2**71})
    assert [(f.kind, f.breaks) for f in found] == [("const", Breaks.BOTH)]
    assert changes({"const": 2**70}, {"const": 2**70}) == []
