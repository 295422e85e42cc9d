"""What the proxy changes in the messages it passes: request headers read, versions capped, addresses rewritten,
produce requests split and their responses made whole again.

A frame here is one request or response without its 4-byte size. Everything not named here travels as the
bytes it came in.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from gateway.proxy import produce_reader, schemas
from gateway.proxy.schemas import (
    API_VERSIONS,
    DESCRIBE_CLUSTER,
    FIND_COORDINATOR,
    FLEXIBLE,
    HIDDEN,
    METADATA,
    PRODUCE,
    READABLE,
)
from gateway.proxy.wire import TAGS, Reader, WireError, Writer

# Kafka's error codes the proxy answers with
UNSUPPORTED_VERSION = 35
INVALID_RECORD = 87
CORRUPT_MESSAGE = 2

_HEAD = struct.Struct(">hhi")
# where the proxy's listener for a broker is: (node id, the broker's host, its port) -> (host, port)
AddressOf = Callable[[int, str, int], tuple[str, int]]


def flexible(api_key: int, version: int) -> bool:
    return api_key in FLEXIBLE and version >= FLEXIBLE[api_key]


class RequestHeader(NamedTuple):  # a tuple: made for every request, in a fifth of a frozen dataclass's time
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    # the header's length in the frame, where the body starts: exact for the APIs in schemas.FLEXIBLE (those whose
    # bodies the proxy reads); another API's flexible header has tagged fields this does not count
    size: int

    @classmethod
    def read(cls, frame: bytes | memoryview) -> RequestHeader:
        if len(frame) < 10:
            raise WireError(f"a request of {len(frame)} bytes is shorter than its header")
        api_key, version, correlation_id = _HEAD.unpack_from(frame, 0)
        reader = Reader(frame, 8)
        client_id = reader.string(compact=False)  # never compact, even in header version 2
        if flexible(api_key, version):
            reader.tagged()
        return cls(api_key, version, correlation_id, client_id, reader.offset)

    def readable(self) -> bool:
        """Whether the proxy reads this API at this version (always true for what it passes as bytes)."""
        bounds = READABLE.get(self.api_key)
        return bounds is None or bounds[0] <= self.version <= bounds[1]


def response_header(api_key: int, version: int, correlation_id: int) -> bytes:
    """A response header; ApiVersions' is always version 0, so that any client can read it."""
    head = struct.pack(">i", correlation_id)
    return head + b"\x00" if api_key != API_VERSIONS and flexible(api_key, version) else head


def response_header_size(api_key: int, version: int, frame: bytes | memoryview) -> int:
    if api_key == API_VERSIONS or not flexible(api_key, version):
        return 4
    reader = Reader(frame, 4)
    reader.tagged()
    return reader.offset


def rewrite_response(api_key: int, version: int, frame: bytes, address_of: AddressOf) -> bytes:
    """The response as the client should see it: versions capped, broker addresses the proxy's own."""
    rewrite = _REWRITES.get(api_key)
    if rewrite is None:
        return frame
    start = response_header_size(api_key, version, frame)
    body = memoryview(frame)[start:]
    if len(body) >= 2 and api_key == API_VERSIONS and struct.unpack_from(">h", body)[0] != 0:
        return frame  # an error (an unsupported version): version 0's body, passed as it is
    message = schemas.RESPONSES[api_key]
    value, end = message.decode(body, version)
    if end != len(body):
        raise WireError(f"{message.name} v{version}: {len(body) - end} bytes after the message")
    rewrite(value, version, address_of)
    return bytes(frame[:start]) + message.encode(value, version)


def _api_versions(value: dict[str, Any], version: int, address_of: AddressOf) -> None:
    kept = []
    for api in value["ApiKeys"]:
        key = api["ApiKey"]
        if key in HIDDEN:
            continue
        bounds = READABLE.get(key)
        if bounds is not None:
            low, high = max(api["MinVersion"], bounds[0]), min(api["MaxVersion"], bounds[1])
            if low > high:
                continue
            api = {**api, "MinVersion": low, "MaxVersion": high}
        kept.append(api)
    value["ApiKeys"] = kept


def _brokers(brokers: list[dict[str, Any]] | None, id_field: str, address_of: AddressOf) -> None:
    for broker in brokers or ():
        broker["Host"], broker["Port"] = address_of(broker[id_field], broker["Host"], broker["Port"])


def _metadata(value: dict[str, Any], version: int, address_of: AddressOf) -> None:
    _brokers(value["Brokers"], "NodeId", address_of)


def _find_coordinator(value: dict[str, Any], version: int, address_of: AddressOf) -> None:
    found = value["Coordinators"] if version >= 4 else [value]
    _brokers([c for c in found or () if c["NodeId"] >= 0], "NodeId", address_of)


def _describe_cluster(value: dict[str, Any], version: int, address_of: AddressOf) -> None:
    if value.get("EndpointType", 1) == 1:  # brokers; controllers (2) are not behind the proxy
        _brokers(value["Brokers"], "BrokerId", address_of)


_REWRITES: dict[int, Callable[[dict[str, Any], int, AddressOf], None]] = {
    API_VERSIONS: _api_versions, METADATA: _metadata, FIND_COORDINATOR: _find_coordinator,
    DESCRIBE_CLUSTER: _describe_cluster,
}


# ---- Produce ---------------------------------------------------------------------------------------------

@dataclass(slots=True)
class Refusal:
    """Why one partition's batch was refused: Kafka's error code, the message, and per record (its index in
    the batch) what it broke."""

    error_code: int
    message: str
    records: list[tuple[int, str]]


def read_produce(frame: bytes | memoryview, header: RequestHeader) -> dict[str, Any]:
    fast = produce_reader.read(frame if frame.__class__ is bytes else bytes(frame), header.size, header.version)
    if fast is not None:
        return fast
    value, end = schemas.PRODUCE_REQUEST.decode(frame, header.version, header.size)
    if end != len(frame):
        raise WireError(f"ProduceRequest v{header.version}: {len(frame) - end} bytes after the message")
    return value


def without(request: dict[str, Any], refused: dict[tuple[str, int], Refusal]) -> dict[str, Any] | None:
    """The produce request less the refused partitions; None when nothing is left to send."""
    topics = []
    for topic in request["TopicData"]:
        partitions = [p for p in topic["PartitionData"] if (topic["Name"], p["Index"]) not in refused]
        if partitions:
            topics.append({**topic, "PartitionData": partitions})
    return {**request, "TopicData": topics} if topics else None


def produce_frame(frame: bytes | memoryview, header: RequestHeader, request: dict[str, Any]) -> bytes:
    """A produce request frame with the same header and a new body."""
    return bytes(frame[:header.size]) + schemas.PRODUCE_REQUEST.encode(request, header.version)


def produce_response(header: RequestHeader, request: dict[str, Any], refused: dict[tuple[str, int], Refusal],
                     upstream: bytes | None) -> bytes:
    """The client's response: the upstream broker's answers for what was forwarded and an error for each refused
    partition, in the request's order."""
    version = header.version
    answered: dict[tuple[str, int], dict[str, Any]] = {}
    throttle = 0
    tags: dict[int, bytes] = {}
    if upstream is not None:
        start = response_header_size(PRODUCE, version, upstream)
        value, _ = schemas.PRODUCE_RESPONSE.decode(memoryview(upstream)[start:], version)
        throttle = value.get("ThrottleTimeMs", 0)
        tags = value.get(TAGS) or {}
        for topic in value["Responses"]:
            for partition in topic["PartitionResponses"]:
                answered[(topic["Name"], partition["Index"])] = partition
    responses = []
    for topic in request["TopicData"]:
        partitions = []
        for partition in topic["PartitionData"]:
            key = (topic["Name"], partition["Index"])
            refusal = refused.get(key)
            if refusal is not None:
                partitions.append(_refused_partition(partition["Index"], refusal))
            elif key in answered:
                partitions.append(answered[key])
        responses.append({"Name": topic["Name"], "PartitionResponses": partitions, TAGS: {}})
    body = {"Responses": responses, "ThrottleTimeMs": throttle, TAGS: tags}
    return response_header(PRODUCE, version, header.correlation_id) + schemas.PRODUCE_RESPONSE.encode(body, version)


def _refused_partition(index: int, refusal: Refusal) -> dict[str, Any]:
    return {"Index": index, "ErrorCode": refusal.error_code, "BaseOffset": -1, "LogAppendTimeMs": -1,
            "LogStartOffset": -1, "ErrorMessage": refusal.message,
            "RecordErrors": [{"BatchIndex": at, "BatchIndexErrorMessage": text, TAGS: {}}
                             for at, text in refusal.records],
            TAGS: {}}


def error_response(header: RequestHeader, error_code: int) -> bytes | None:
    """An answer to a request the proxy cannot read (an unsupported version): for ApiVersions, Kafka's own
    version 0 error naming the versions the proxy reads; None for the rest (the connection is closed: a body
    the proxy cannot read names no partitions to answer for)."""
    if header.api_key == API_VERSIONS:
        writer = Writer()
        writer.fixed("int16", error_code)
        low, high = READABLE[API_VERSIONS]
        writer.fixed("int32", 1)
        writer.parts.append(struct.pack(">hhh", API_VERSIONS, low, high))
        return struct.pack(">i", header.correlation_id) + writer.getvalue()
    return None
