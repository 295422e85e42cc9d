"""What changed between two Protobuf message types, field by field number, and whom it breaks.

The rules are those of `buf breaking`'s WIRE and WIRE_JSON categories (buf.build/docs/breaking/rules), read
for a gateway that judges a payload by parsing it as the selected message (binary), or with protobuf's JSON
mapping for a JSON content type, where an unknown member is an error:

- a field deleted: binary parsing keeps it as an unknown field, the JSON mapping refuses a message naming it
  (producers); its number not reserved may later be reused with another meaning (FIELD_NO_DELETE_UNLESS_
  NUMBER_RESERVED / _NAME_RESERVED);
- a field added: messages carrying it are refused by the old contract's JSON mapping (consumers);
- a field's type changed: the varint family (int32, int64, uint32, uint64, bool), the zigzag pair, the fixed
  32- and 64-bit pairs and string/bytes read each other's bytes (FIELD_WIRE_COMPATIBLE_TYPE) but not the same
  values, and any other change reads bytes as something else: both; int32 -> int64 (and sint32 -> sint64,
  uint32 -> uint64) only widens (consumers);
- a field's name or JSON name changed: the bytes are the same, the JSON member is not (FIELD_SAME_JSON_NAME):
  both;
- cardinality (singular <-> repeated) or oneof membership changed: the bytes mean something else: both;
- `required` (proto2) added: producers; removed: consumers;
- an enum value removed, or its number given to another name: both (ENUM_VALUE_NO_DELETE, ENUM_VALUE_SAME_NAME);
  added: consumers;
- nested message fields are compared the same way, each message type once.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

from gateway.compat.change import Breaks
from gateway.compat.jsonschema import Found

_T = FieldDescriptor
# families whose members read each other's bytes (buf's FIELD_WIRE_COMPATIBLE_TYPE)
WIRE_FAMILIES = ({_T.TYPE_INT32, _T.TYPE_INT64, _T.TYPE_UINT32, _T.TYPE_UINT64, _T.TYPE_BOOL},
                 {_T.TYPE_SINT32, _T.TYPE_SINT64}, {_T.TYPE_FIXED32, _T.TYPE_SFIXED32},
                 {_T.TYPE_FIXED64, _T.TYPE_SFIXED64}, {_T.TYPE_STRING, _T.TYPE_BYTES})
WIDENING = {(_T.TYPE_INT32, _T.TYPE_INT64), (_T.TYPE_SINT32, _T.TYPE_SINT64), (_T.TYPE_UINT32, _T.TYPE_UINT64)}
TYPE_NAMES = {value: name.removeprefix("TYPE_").lower() for name, value in vars(_T).items()
              if name.startswith("TYPE_") and isinstance(value, int)}


def changes(old: Descriptor, new: Descriptor) -> list[Found]:
    walk = _Walk()
    walk.message(old, new, "")
    return walk.found


def _type_name(field: FieldDescriptor) -> str:
    if field.message_type is not None:
        return field.message_type.full_name
    if field.enum_type is not None:
        return field.enum_type.full_name
    return TYPE_NAMES.get(field.type, str(field.type))


def _reserved(message: Descriptor) -> tuple[list[range], set[str]]:
    proto = descriptor_pb2.DescriptorProto()
    message.CopyToProto(proto)
    return [range(r.start, r.end) for r in proto.reserved_range], set(proto.reserved_name)


class _Walk:
    def __init__(self) -> None:
        self.found: list[Found] = []
        self._seen: set[tuple[str, str]] = set()

    def add(self, at: str, kind: str, tightens: bool, loosens: bool, reason: str) -> None:
        self.found.append(Found(at or "/", kind, Breaks.of(tightens, loosens), reason))

    def message(self, old: Descriptor, new: Descriptor, at: str) -> None:
        if (old.full_name, new.full_name) in self._seen:
            return
        self._seen.add((old.full_name, new.full_name))
        if old.full_name != new.full_name and not at:
            self.add(at, "message", False, False, f"message {old.full_name} -> {new.full_name} (same field numbers "
                     "compared; the type name is not on the wire)")
        before = {f.number: f for f in old.fields}
        after = {f.number: f for f in new.fields}
        ranges, names = _reserved(new)
        for number in sorted(set(before) | set(after)):
            was, now = before.get(number), after.get(number)
            path = f"{at}/{(now or was).json_name}"  # type: ignore[union-attr]
            if now is None:
                assert was is not None
                reserved = any(number in r for r in ranges) and was.name in names
                self.add(path, "field-removed", True, False,
                         f"field {was.name} = {number} removed: the JSON mapping refuses a message naming it"
                         + ("" if reserved else "; reserve its number and name, or it may be reused with another "
                                                "meaning"))
            elif was is None:
                self.add(path, "field-added", False, True,
                         f"field {now.name} = {number} added: the old contract's JSON mapping refuses it")
            else:
                self.field(was, now, path)

    def field(self, was: FieldDescriptor, now: FieldDescriptor, path: str) -> None:
        number = now.number
        if (was.name, was.json_name) != (now.name, now.json_name):
            self.add(path, "field-name", True, True, f"field {number}: {was.name} -> {now.name}: the bytes are the "
                     "same, the JSON member is not")
        if was.is_repeated != now.is_repeated:
            self.add(path, "cardinality", True, True, f"field {now.name} = {number} "
                     f"{'is now' if now.is_repeated else 'is no longer'} repeated: the bytes mean something else")
        oneofs = [f.containing_oneof.name if f.containing_oneof else None for f in (was, now)]
        if oneofs[0] != oneofs[1]:
            self.add(path, "oneof", True, True, f"field {now.name} = {number}: oneof {oneofs[0]} -> {oneofs[1]}")
        if was.is_required != now.is_required:
            self.add(path, "required", now.is_required, was.is_required,
                     f"field {now.name} {'is now' if now.is_required else 'is no longer'} required")
        if was.type != now.type or _type_name(was) != _type_name(now):
            if was.message_type is not None and now.message_type is not None:
                self.message(was.message_type, now.message_type, path)
            elif was.enum_type is not None and now.enum_type is not None:
                self.enum(was.enum_type, now.enum_type, path)
            else:
                self.type(was, now, path)
        elif was.message_type is not None and now.message_type is not None:
            self.message(was.message_type, now.message_type, path)
        elif was.enum_type is not None and now.enum_type is not None:
            self.enum(was.enum_type, now.enum_type, path)

    def type(self, was: FieldDescriptor, now: FieldDescriptor, path: str) -> None:
        change = f"field {now.name} = {now.number}: {_type_name(was)} -> {_type_name(now)}"
        if (was.type, now.type) in WIDENING:
            self.add(path, "type", False, True, change + ": every old value still reads, larger ones are admitted")
        elif any(was.type in family and now.type in family for family in WIRE_FAMILIES):
            self.add(path, "type", True, True, change + ": the bytes still parse, as other values")
        else:
            self.add(path, "type", True, True, change + ": the bytes are read as something else")

    def enum(self, old: EnumDescriptor, new: EnumDescriptor, at: str) -> None:
        if ("enum " + old.full_name, new.full_name) in self._seen:
            return
        self._seen.add(("enum " + old.full_name, new.full_name))
        before = {v.number: v.name for v in old.values}
        after = {v.number: v.name for v in new.values}
        for number in sorted(set(before) | set(after)):
            was, now = before.get(number), after.get(number)
            if now is None:
                self.add(at, "enum-value", True, True, f"enum value {was} = {number} removed")
            elif was is None:
                self.add(at, "enum-value", False, True, f"enum value {now} = {number} added")
            elif was != now:
                self.add(at, "enum-value", True, True, f"enum value {number}: {was} -> {now}: the number means "
                         "another name")
