"""Protobuf payloads: `.proto` source compiled at load time by grpcio-tools' protoc.

The source is written to a private temporary directory (never into the
project), compiled in-process to a FileDescriptorSet with its imports (the
well-known types come from grpc_tools' bundled `_proto` include directory),
and turned into message classes in a private DescriptorPool, so two schemas
declaring the same package never collide.

protoc is called through `grpc_tools._protoc_compiler.run_main`, which is what
`grpc_tools.protoc.main` calls: importing `grpc_tools.protoc` installs import
hooks on `sys.meta_path` and appends to `sys.path`, which a library should
not do to its host process. protoc prints its diagnostics on file descriptor
2; they are captured around the call (under a lock, at load time only) so the
SchemaCompileError carries protoc's own text. Results are cached by the
sha256 of the source, so many messages sharing one file run protoc once.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from gateway.errors import SchemaCompileError
from gateway.model.formats import PROTOBUF
from gateway.verdict import Violation

from .base import (
    MAX_VIOLATIONS,
    Violations,
    check_json_body,
    decode_violation,
    is_json_media_type,
    one_line,
    schema_violation,
)

_FILE = "schema.proto"


@dataclass(frozen=True, slots=True)
class _Compiled:
    pool: descriptor_pool.DescriptorPool
    main: descriptor_pb2.FileDescriptorProto


# sha256(source) -> compiled pool, or protoc's error text (a bad file stays bad).
_CACHE: dict[str, _Compiled | str] = {}
_CACHE_LIMIT = 256
_LOCK = threading.Lock()
# Confluent message indexes (a path of positions) -> the validator of the message type there
MessageIndex = dict[tuple[int, ...], "ProtobufValidator"]


def compile_protobuf(schema: object, type_name: str | None) -> ProtobufValidator:
    """Compile `.proto` text and select a message: `type_name` (full or short) or the first one."""
    compiled = _compiled(schema)
    descriptor = _select(compiled, type_name)
    return ProtobufValidator(message_factory.GetMessageClass(descriptor), compiled.pool)


def compile_protobuf_indexed(schema: object, type_name: str | None) -> tuple[MessageIndex, tuple[int, ...] | None]:
    """Every message type of the file by its Confluent message indexes (its position among the top-level
    messages, then among each parent's nested types, synthesized map entries counted as Confluent's
    serializer counts them), and the indexes of `type_name` when one is selected."""
    compiled = _compiled(schema)
    pool = compiled.pool
    by_index: MessageIndex = {}
    names: dict[str, tuple[int, ...]] = {}

    def walk(messages: Any, scope: str, prefix: tuple[int, ...]) -> None:
        for position, message in enumerate(messages):
            full = scope + message.name
            path = prefix + (position,)
            names[full] = path
            descriptor = pool.FindMessageTypeByName(full)
            by_index[path] = ProtobufValidator(message_factory.GetMessageClass(descriptor), pool)
            walk(message.nested_type, full + ".", path)

    main = compiled.main
    walk(main.message_type, main.package + "." if main.package else "", ())
    if not by_index:
        raise SchemaCompileError("the .proto declares no message type")
    if not type_name:
        return by_index, None
    selected = _select(compiled, type_name).full_name
    if selected not in names:
        raise SchemaCompileError(f"Protobuf type {type_name!r} is not declared in the schema itself; the Confluent "
                                 "wire format names only the schema's own messages")
    return by_index, names[selected]


def message_descriptor(schema: object, type_name: str | None) -> Descriptor:
    """The descriptor of the message type a definition selects (`xgate diff` compares two of them)."""
    return _select(_compiled(schema), type_name)


def _compiled(schema: object) -> _Compiled:
    text = _source(schema)
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()
    compiled = _CACHE.get(key)
    if compiled is None:
        with _LOCK:
            compiled = _CACHE.get(key)
            if compiled is None:
                try:
                    compiled = _compile(text)
                except OSError as exc:  # the temp dir, not the schema: not cached
                    raise SchemaCompileError(f"could not run protoc: {exc}") from exc
                while len(_CACHE) >= _CACHE_LIMIT:
                    del _CACHE[next(iter(_CACHE))]  # oldest first; reloads keep adding sources
                _CACHE[key] = compiled
    if isinstance(compiled, str):
        raise SchemaCompileError(compiled)
    return compiled


def _source(schema: object) -> str:
    if isinstance(schema, bytes):
        try:
            return schema.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaCompileError(f".proto source is not UTF-8: {exc}") from exc
    if isinstance(schema, str):
        return schema
    raise SchemaCompileError(f"a Protobuf schema is .proto source text, not {type(schema).__name__}")


def _compile(text: str) -> _Compiled | str:
    """Run protoc; the compiled pool, or the error text to raise (and cache)."""
    try:  # heavy, and an extra (`xgate[protobuf]`): loaded on the first .proto
        from grpc_tools import _protoc_compiler  # type: ignore[import-untyped]
    except ImportError:
        return ("a .proto schema is compiled with grpcio-tools' protoc, which is not installed: "
                "pip install 'xgate[protobuf]'")

    include = str(resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory(prefix="xgate-proto-") as tmp:
        with open(os.path.join(tmp, _FILE), "w", encoding="utf-8") as handle:
            handle.write(text)
        out = os.path.join(tmp, "descriptor_set.pb")
        args = ["protoc", f"-I{tmp}", f"-I{include}", f"--descriptor_set_out={out}", "--include_imports", _FILE]
        code, errors = _run_captured(_protoc_compiler.run_main, [a.encode() for a in args])
        if code != 0 or not os.path.exists(out):
            detail = errors.replace(tmp + os.sep, "").strip() or f"protoc exited with status {code}"
            return f"invalid .proto: {one_line(detail, 1000)}"
        with open(out, "rb") as handle:
            data = handle.read()
    files = descriptor_pb2.FileDescriptorSet.FromString(data)
    pool = descriptor_pool.DescriptorPool()
    main: descriptor_pb2.FileDescriptorProto | None = None
    try:
        for proto in files.file:  # protoc writes dependencies before dependants
            pool.Add(proto)
            if proto.name == _FILE:
                main = proto
    except Exception as exc:
        return f"invalid .proto: {one_line(exc)}"
    if main is None:
        return "invalid .proto: protoc produced no descriptor for the file"
    return _Compiled(pool, main)


def _run_captured(run: Any, argv: list[bytes]) -> tuple[int, str]:
    """Call protoc with fd 2 redirected to a file; returns (exit code, diagnostics)."""
    with tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            code = int(run(argv))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        return code, sink.read().decode("utf-8", "replace")


def _select(compiled: _Compiled, type_name: str | None) -> Descriptor:
    declared = _declared(compiled.main)
    if not declared:
        raise SchemaCompileError("the .proto declares no message type")
    pool = compiled.pool
    if not type_name:
        found: Descriptor = pool.FindMessageTypeByName(declared[0])  # the first top-level message
        return found
    wanted = type_name.lstrip(".")
    matches = [n for n in declared if n == wanted] or [n for n in declared if n.endswith("." + wanted)]
    if len(matches) == 1:
        found = pool.FindMessageTypeByName(matches[0])
        return found
    if not matches:
        try:
            found = pool.FindMessageTypeByName(wanted)  # an imported type named in full
            return found
        except KeyError:
            pass
    problem = "is ambiguous" if matches else "is not a message of the .proto"
    raise SchemaCompileError(f"Protobuf type {type_name!r} {problem} (messages: {', '.join(declared)})")


def _declared(main: descriptor_pb2.FileDescriptorProto) -> list[str]:
    """Full names of the file's messages in declaration order, nested ones after their parent."""
    names: list[str] = []

    def walk(messages: Any, scope: str) -> None:
        for message in messages:
            if message.options.map_entry:
                continue  # synthesized for map<,> fields, not a declared type
            full = scope + message.name
            names.append(full)
            walk(message.nested_type, full + ".")

    walk(main.message_type, main.package + "." if main.package else "")
    return names


class ProtobufValidator:
    """One selected message type; binary wire format, or the proto3 JSON mapping for JSON bodies."""

    kind: str = PROTOBUF
    __slots__ = ("_cls", "_pool")

    @property
    def type_name(self) -> str:
        """The full name of the message type."""
        name: str = self._cls.DESCRIPTOR.full_name
        return name

    def __init__(self, cls: type[Message], pool: descriptor_pool.DescriptorPool) -> None:
        self._cls = cls
        self._pool = pool

    def decode(self, body: bytes) -> object:
        """The message in `body` in the proto3 JSON mapping, for a person to read (the console)."""
        message = self._cls()
        message.ParseFromString(body)
        return json_format.MessageToDict(message, preserving_proto_field_name=True)

    def check_bytes(self, body: bytes, content_type: str | None) -> Violations | None:
        if content_type is not None and is_json_media_type(content_type):
            return check_json_body(body, self.check_value)
        message = self._cls()
        try:
            message.ParseFromString(body)
        except Exception as exc:
            name = self._cls.DESCRIPTOR.full_name
            return (decode_violation(f"Protobuf {name}", body, f"payload does not parse as {name}: {exc}"),)
        if message.IsInitialized():
            return None
        return _missing_required(message)

    def check_value(self, value: object) -> Violations | None:
        """A JSON value in the proto3 JSON mapping; unknown fields are rejected."""
        message = self._cls()
        try:
            json_format.ParseDict(cast(Any, value), message, descriptor_pool=self._pool)
        except Exception as exc:
            return (_json_violation(value, exc, self._cls.DESCRIPTOR.full_name),)
        if message.IsInitialized():
            return None
        return _missing_required(message)


def _missing_required(message: Message) -> Violations:
    """proto2 (or editions LEGACY_REQUIRED) fields absent from the payload, nested ones too."""
    missing: list[str] = list(cast(Any, message).FindInitializationErrors())[:MAX_VIOLATIONS]
    found: list[Violation] = [
        schema_violation(_field_pointer(name), "required field present", None, f"required field {name} is missing")
        for name in missing
    ]
    if not found:
        found.append(schema_violation("", "initialized message", None, "message is missing required fields"))
    return tuple(found)


# json_format ends its errors with `at Message.field.sub` or `at "Message"`.
_JSON_AT = re.compile(r'\bat "?([A-Za-z_][\w.\[\]]*?)"?\.?$')
_JSON_FIELD = re.compile(r"(?:^|: )Failed to parse (\w+) field(?=: )")


def _json_violation(value: object, exc: Exception, name: str) -> Violation:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    pointer = ""
    match = _JSON_AT.search(text)
    if match:
        # The first component is the message's own name.
        pointer = _field_pointer(match.group(1).partition(".")[2])
    elif isinstance(value, dict):
        # Nested failures read "Failed to parse inner field: Failed to parse v field: ...".
        pointer = "".join("/" + name for name in _JSON_FIELD.findall(text))
    return schema_violation(
        pointer, f"JSON mapping of {name}", value, f"payload does not map to {name}: {one_line(text)}"
    )


def _field_pointer(path: str) -> str:
    """`inner.items[2].v` -> `/inner/items/2/v`."""
    if not path:
        return ""
    parts = path.replace("[", ".").replace("]", "").split(".")
    return "".join("/" + p for p in parts if p)
