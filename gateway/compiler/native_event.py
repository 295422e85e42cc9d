"""A CloudEvents definition as a closed msgspec Struct: a structured event decoded with it is read, typed and
mostly judged in one native pass (the accepting pass's fast path, gateway/compiler/accepting.py).

`event_struct(plan)` builds the Struct of one definition from the accepting pass's own reading of it (its
`_Plan`), or None when some rule of the definition has no sound native form. What msgspec enforces:

- the implicit rules' shapes: `specversion` is the literal "1.0", `id` and `source` non-empty strings,
  `type` the tag of a tagged union (one dict lookup in C picks the definition);
- each declared attribute: a required one has no default, an optional one defaults to UNSET; string-typed
  attributes are str, integer ones int within the CloudEvents range, booleans bool; every other type is a
  str whose check runs after the decode. Fixed values are compared after the decode too, not as Literals:
  definitions that share a `type` differ in them, and a value that fails a comparison proves that this
  candidate fails (the next one is tried), where a decode that fails proves nothing;
- the undeclared core attributes (`time`, `subject`, `dataschema`, `datacontenttype`) are optional members,
  checked as the implicit rules check them; any other member is unknown and refused (an extension attribute
  the definition does not declare goes to the full judge, whose attribute-name rule decides it);
- `data`: the schema's native type (payload/native.py), or Raw when the schema does not map (then parsed
  and validated by the caller) or when the definition has no schema (then only parsed: duplicates, nesting).

A null member, `data_base64`, `5.0` for an integer, and any value msgspec reads differently fail the decode:
sound, because a failed decode decides nothing (the explaining pass judges exactly). Every member is
declared, so no member escapes the duplicate-member guard of the caller (the colons of the text against
those of its re-encoding).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from gateway.compiler.payload.jsonschema import JsonSchemaValidator
from gateway.compiler.types import INT_MAX, INT_MIN
from gateway.errors import GatewayError

# attributes whose checks the implicit rules make; a definition that leaves them undeclared still admits them
CORE_REQUIRED = {"specversion": "string", "id": "string", "source": "urireference"}
CORE_OPTIONAL = {"time": "timestamp", "subject": "string", "dataschema": "uri", "datacontenttype": "string"}
_CE_INTEGER = Annotated[int, msgspec.Meta(ge=INT_MIN, le=INT_MAX)]
_NON_EMPTY = Annotated[str, msgspec.Meta(min_length=1)]
_NATIVE_TYPES = {"string": str, "integer": _CE_INTEGER, "boolean": bool}


class NotNative(GatewayError):
    """The definition has a rule without a sound native form: the dict-based pass judges it."""


def event_struct(name: str, kind: str, attributes: dict[str, tuple[bool, str, Any]], payload: Any,
                 number: int) -> tuple[type[msgspec.Struct], dict[str, str], bool]:
    """The closed Struct of one definition, the Struct member of each attribute, and whether `data` is Raw.

    `attributes`: name -> (required, type name, literal value or None) as the plan reads the definition.
    """
    fields: list[Any] = []
    rename: dict[str, str] = {}
    members: dict[str, str] = {}
    declared = dict(attributes)
    for core, type_name in CORE_REQUIRED.items():
        declared.setdefault(core, (True, type_name, None))
    for core, type_name in CORE_OPTIONAL.items():
        declared.setdefault(core, (False, type_name, None))
    for attribute, (required, type_name, literal) in declared.items():
        if attribute in ("type", "data", "data_base64"):
            continue
        member = f"a{len(members)}"
        members[attribute] = member
        rename[member] = attribute
        if attribute == "specversion":
            if literal not in (None, "1.0"):
                raise NotNative("a specversion other than 1.0 never passes")
            annotation: Any = Literal["1.0"]
            required = True
        elif attribute in ("id", "source"):
            annotation = _NON_EMPTY
            required = True
        else:
            annotation = _NATIVE_TYPES.get(type_name, str)
        if attribute in ("specversion", "id", "source"):
            required = True  # the implicit rules require them
        fields.append((member, annotation) if required else
                      (member, annotation | msgspec.UnsetType, msgspec.UNSET))
    raw = True
    if payload is None:
        data: Any = msgspec.Raw
    elif payload.__class__ is JsonSchemaValidator:
        raw = payload.native is None
        data = msgspec.Raw if raw else payload.native.type
    else:
        raise NotNative("a structured event's data judged by another format")
    fields.append(("data", data | msgspec.UnsetType, msgspec.UNSET))
    # required members first: msgspec wants the members without a default before those with one
    fields.sort(key=lambda f: len(f) == 3)
    struct = msgspec.defstruct(f"Event{number}", fields, rename=rename, forbid_unknown_fields=True,
                               tag_field="type", tag=kind)
    return struct, members, raw
