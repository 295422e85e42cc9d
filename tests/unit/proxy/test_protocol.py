"""What the proxy changes in the frames it passes (gateway/proxy/protocol.py).

Request headers must be measured exactly (the produce body starts where the header ends); ApiVersions must
promise clients only the versions the proxy reads; every broker address a client learns must be the proxy's,
or the client goes around it; and a produce request the proxy splits must come back to the client as one
answer, in the order it asked, with Kafka's own error on what was refused.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from gateway.proxy import protocol, schemas
from gateway.proxy.protocol import Refusal, RequestHeader
from gateway.proxy.wire import TAGS, WireError

CORRELATION = 0x01020304


def request_frame(api_key: int, version: int, client_id: bytes | None, tags: bytes = b"\x00") -> bytes:
    """A request header as a client writes it: v2 (with tagged fields) where the API is flexible."""
    head = struct.pack(">hhi", api_key, version, CORRELATION)
    head += b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id)) + client_id
    return head + tags if protocol.flexible(api_key, version) else head


def response_frame(api_key: int, version: int, value: dict[str, Any], header_tags: bytes = b"\x00") -> bytes:
    """A broker's response: v1 header (with tagged fields) where flexible, except ApiVersions' (always v0)."""
    head = struct.pack(">i", CORRELATION)
    if api_key != schemas.API_VERSIONS and protocol.flexible(api_key, version):
        head += header_tags
    return head + schemas.RESPONSES[api_key].encode(value, version)


def body_of(api_key: int, version: int, frame: bytes) -> dict[str, Any]:
    start = protocol.response_header_size(api_key, version, frame)
    value, end = schemas.RESPONSES[api_key].decode(frame, version, start)
    assert end == len(frame)
    return value


class Addresses:
    """The proxy's address function, keeping what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, str, int]] = []

    def __call__(self, node: int, host: str, port: int) -> tuple[str, int]:
        self.asked.append((node, host, port))
        return "proxy.local", 29000 + node


def tagged(flexible: bool, tags: dict[int, bytes] | None = None) -> dict[str, Any]:
    """The tagged-fields entry a struct carries at a flexible version."""
    return {TAGS: tags or {}} if flexible else {}


# ---- request headers -------------------------------------------------------------------------------------

def test_a_v1_header_ends_after_the_client_id() -> None:
    frame = request_frame(schemas.PRODUCE, 8, b"client-1") + b"body"
    header = RequestHeader.read(frame)
    assert header == RequestHeader(schemas.PRODUCE, 8, CORRELATION, "client-1", len(frame) - 4)


def test_a_v2_header_ends_after_its_tagged_fields() -> None:
    frame = request_frame(schemas.PRODUCE, 9, b"client-1", tags=b"\x01\x00\x02ab") + b"body"
    header = RequestHeader.read(frame)
    assert (header.client_id, header.size) == ("client-1", len(frame) - 4)


def test_a_null_client_id_reads() -> None:
    assert RequestHeader.read(request_frame(schemas.METADATA, 1, None)).client_id is None


def test_the_client_id_stays_a_short_string_in_a_v2_header() -> None:
    """Kafka kept ClientId non-compact in header v2: a 2-byte length, never a varint."""
    frame = request_frame(schemas.METADATA, 12, "né".encode()) + b"\x00\x00"
    assert RequestHeader.read(frame).size == 8 + 2 + 3 + 1


@pytest.mark.parametrize(("api_key", "first"), sorted(schemas.FLEXIBLE.items()))
def test_the_header_turns_v2_at_the_apis_first_flexible_version(api_key: int, first: int) -> None:
    flexible = request_frame(api_key, first, b"c", tags=b"\x01\x03\x01z")
    assert RequestHeader.read(flexible).size == len(flexible)
    if first > 0:
        older = request_frame(api_key, first - 1, b"c") + b"\x01\x03\x01z"
        assert RequestHeader.read(older).size == len(older) - 4


@pytest.mark.parametrize("frame", [
    b"\x00\x00\x00\x09\x00\x00\x00\x01\x00",         # nine bytes: the client id's length cut
    request_frame(schemas.PRODUCE, 8, b"client")[:-1],  # the client id cut
    request_frame(schemas.PRODUCE, 9, b"client", tags=b""),  # v2 without its tagged fields
], ids=["short", "client-id-cut", "tags-missing"])
def test_a_header_that_does_not_fit_its_frame_is_a_wire_error(frame: bytes) -> None:
    with pytest.raises(WireError):
        RequestHeader.read(frame)


@pytest.mark.parametrize(("api_key", "version", "readable"), [
    (schemas.PRODUCE, 2, False), (schemas.PRODUCE, 3, True), (schemas.PRODUCE, 9, True),
    (schemas.PRODUCE, 10, False), (schemas.METADATA, 14, False), (19, 99, True),
])
def test_readable_follows_the_caps_and_passes_unknown_apis(api_key: int, version: int, readable: bool) -> None:
    assert RequestHeader(api_key, version, 0, None, 10).readable() is readable


def test_a_flexible_response_header_carries_empty_tagged_fields() -> None:
    assert protocol.response_header(schemas.PRODUCE, 9, CORRELATION) == b"\x01\x02\x03\x04\x00"
    assert protocol.response_header(schemas.PRODUCE, 8, CORRELATION) == b"\x01\x02\x03\x04"


def test_the_api_versions_response_header_is_always_v0() -> None:
    assert protocol.response_header(schemas.API_VERSIONS, 4, CORRELATION) == b"\x01\x02\x03\x04"


# ---- ApiVersions -----------------------------------------------------------------------------------------

CREATE_TOPICS = 19


def api_versions(version: int, keys: list[tuple[int, int, int]], tags: dict[int, bytes] | None = None) -> bytes:
    flexible = version >= schemas.API_VERSIONS_RESPONSE.flexible
    value: dict[str, Any] = {
        "ErrorCode": 0, "ThrottleTimeMs": 0, **tagged(flexible, {3: b"\x01"}),
        "ApiKeys": [{"ApiKey": key, "MinVersion": low, "MaxVersion": high, **tagged(flexible, tags)}
                    for key, low, high in keys],
    }
    return response_frame(schemas.API_VERSIONS, version, value)


def rewritten_keys(version: int, keys: list[tuple[int, int, int]]) -> dict[int, tuple[int, int]]:
    frame = protocol.rewrite_response(schemas.API_VERSIONS, version, api_versions(version, keys), Addresses())
    return {api["ApiKey"]: (api["MinVersion"], api["MaxVersion"])
            for api in body_of(schemas.API_VERSIONS, version, frame)["ApiKeys"]}


@pytest.mark.parametrize("version", range(5))
def test_api_versions_caps_each_read_api_to_what_the_proxy_reads(version: int) -> None:
    keys = rewritten_keys(version, [(schemas.PRODUCE, 0, 13), (schemas.FETCH, 4, 17), (schemas.METADATA, 0, 13),
                                    (schemas.DESCRIBE_CLUSTER, 0, 2), (schemas.FIND_COORDINATOR, 0, 6)])
    assert keys == {schemas.PRODUCE: (3, 9), schemas.FETCH: (4, 15), schemas.METADATA: (0, 13),
                    schemas.DESCRIBE_CLUSTER: (0, 2), schemas.FIND_COORDINATOR: (0, 6)}


def test_api_versions_drops_an_api_whose_versions_the_proxy_reads_none_of() -> None:
    assert rewritten_keys(3, [(schemas.PRODUCE, 0, 2), (schemas.METADATA, 0, 12)]) == {schemas.METADATA: (0, 12)}


@pytest.mark.parametrize("hidden", sorted(schemas.HIDDEN))
def test_api_versions_hides_apis_whose_addresses_the_proxy_does_not_rewrite(hidden: int) -> None:
    assert rewritten_keys(3, [(hidden, 0, 1), (CREATE_TOPICS, 0, 7)]) == {CREATE_TOPICS: (0, 7)}


def test_api_versions_passes_other_apis_and_every_tagged_field_untouched() -> None:
    frame = api_versions(4, [(CREATE_TOPICS, 2, 7), (44, 0, 1)], tags={9: b"kept"})
    assert protocol.rewrite_response(schemas.API_VERSIONS, 4, frame, Addresses()) == frame


def test_an_api_versions_error_passes_unchanged() -> None:
    """A broker answers an ApiVersions version it does not know with version 0's body, whatever was asked."""
    frame = struct.pack(">ihi", CORRELATION, protocol.UNSUPPORTED_VERSION, 1) + struct.pack(">hhh", 18, 0, 3)
    assert protocol.rewrite_response(schemas.API_VERSIONS, 4, frame, Addresses()) == frame


def test_the_proxys_api_versions_error_is_kafkas_version_0_answer() -> None:
    header = RequestHeader(schemas.API_VERSIONS, 9, CORRELATION, "c", 12)
    frame = protocol.error_response(header, protocol.UNSUPPORTED_VERSION)
    assert frame is not None
    assert frame[:4] == struct.pack(">i", CORRELATION)
    assert schemas.API_VERSIONS_RESPONSE.decode(frame, 0, 4) == (
        {"ErrorCode": 35, "ApiKeys": [{"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4}]}, len(frame))


def test_only_api_versions_gets_an_error_answer_from_the_proxy() -> None:
    """A produce request at a version the proxy cannot read names no partitions it could answer for."""
    assert protocol.error_response(RequestHeader(schemas.PRODUCE, 10, CORRELATION, "c", 12), 35) is None


# ---- broker addresses ------------------------------------------------------------------------------------

def metadata(version: int) -> dict[str, Any]:
    """Two brokers and a topic (the writer skips the fields a version lacks)."""
    flexible = version >= schemas.METADATA_RESPONSE.flexible
    partition = {"ErrorCode": 0, "PartitionIndex": 0, "LeaderId": 2, "LeaderEpoch": 4, "ReplicaNodes": [2, 1],
                 "IsrNodes": [2], "OfflineReplicas": [1], **tagged(flexible)}
    return {"ThrottleTimeMs": 0, "ClusterId": "c", "ControllerId": 1, "ErrorCode": 0,
            "ClusterAuthorizedOperations": 0, **tagged(flexible, {0: b"x"}),
            "Brokers": [{"NodeId": 1, "Host": "b1", "Port": 9092, "Rack": None, **tagged(flexible)},
                        {"NodeId": 2, "Host": "b2", "Port": 9094, "Rack": "r", **tagged(flexible)}],
            "Topics": [{"ErrorCode": 0, "Name": "t", "TopicId": uuid.UUID(int=7), "IsInternal": False,
                        "Partitions": [partition], "TopicAuthorizedOperations": 0, **tagged(flexible)}]}


@pytest.mark.parametrize("version", [0, 1, 8, 9, 12, 13])
def test_metadata_names_the_proxy_for_every_broker(version: int) -> None:
    addresses = Addresses()
    frame = response_frame(schemas.METADATA, version, metadata(version), header_tags=b"\x01\x00\x01q")
    value = body_of(schemas.METADATA, version,
                    protocol.rewrite_response(schemas.METADATA, version, frame, addresses))
    assert addresses.asked == [(1, "b1", 9092), (2, "b2", 9094)]
    assert [(b["NodeId"], b["Host"], b["Port"]) for b in value["Brokers"]] == [
        (1, "proxy.local", 29001), (2, "proxy.local", 29002)]


@pytest.mark.parametrize("version", [0, 9, 13])
def test_metadata_changes_nothing_but_addresses(version: int) -> None:
    frame = response_frame(schemas.METADATA, version, metadata(version), header_tags=b"\x01\x00\x01q")
    rewritten = protocol.rewrite_response(schemas.METADATA, version, frame, lambda node, host, port: (host, port))
    assert rewritten == frame


def test_a_response_with_bytes_after_its_message_is_a_wire_error() -> None:
    frame = response_frame(schemas.METADATA, 5, metadata(5)) + b"\x00"
    with pytest.raises(WireError):
        protocol.rewrite_response(schemas.METADATA, 5, frame, Addresses())


def find_coordinator_single(version: int, node: int) -> bytes:
    value = {"ThrottleTimeMs": 0, "ErrorCode": 0 if node >= 0 else 15, "ErrorMessage": None, "NodeId": node,
             "Host": "b3" if node >= 0 else "", "Port": 9096 if node >= 0 else -1,
             **tagged(version >= schemas.FIND_COORDINATOR_RESPONSE.flexible)}
    return response_frame(schemas.FIND_COORDINATOR, version, value)


@pytest.mark.parametrize("version", range(4))
def test_find_coordinator_names_the_proxy_for_its_one_coordinator(version: int) -> None:
    addresses = Addresses()
    frame = protocol.rewrite_response(schemas.FIND_COORDINATOR, version, find_coordinator_single(version, 3),
                                      addresses)
    value = body_of(schemas.FIND_COORDINATOR, version, frame)
    assert addresses.asked == [(3, "b3", 9096)]
    assert (value["NodeId"], value["Host"], value["Port"]) == (3, "proxy.local", 29003)


@pytest.mark.parametrize("version", range(4))
def test_find_coordinator_leaves_a_missing_coordinator_alone(version: int) -> None:
    """NodeId -1 (COORDINATOR_NOT_AVAILABLE) names no broker: there is nothing to put the proxy in front of."""
    addresses = Addresses()
    frame = find_coordinator_single(version, -1)
    assert protocol.rewrite_response(schemas.FIND_COORDINATOR, version, frame, addresses) == frame
    assert addresses.asked == []


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_names_the_proxy_for_each_found_coordinator(version: int) -> None:
    addresses = Addresses()
    coordinators: list[dict[str, Any]] = [{"Key": key, "NodeId": node, "Host": host, "Port": port, "ErrorCode": error,
                     "ErrorMessage": None, TAGS: {}}
                    for key, node, host, port, error in [("g1", 4, "b4", 9098, 0), ("g2", -1, "", -1, 15),
                                                         ("g3", 5, "b5", 9100, 0)]]
    frame = response_frame(schemas.FIND_COORDINATOR, version,
                           {"ThrottleTimeMs": 0, "Coordinators": coordinators, TAGS: {}})
    value = body_of(schemas.FIND_COORDINATOR, version,
                    protocol.rewrite_response(schemas.FIND_COORDINATOR, version, frame, addresses))
    assert addresses.asked == [(4, "b4", 9098), (5, "b5", 9100)]
    assert [(c["Key"], c["NodeId"], c["Host"], c["Port"]) for c in value["Coordinators"]] == [
        ("g1", 4, "proxy.local", 29004), ("g2", -1, "", -1), ("g3", 5, "proxy.local", 29005)]


def describe_cluster(version: int, endpoint_type: int) -> bytes:
    value: dict[str, Any] = {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "EndpointType": endpoint_type,
             "ClusterId": "c", "ControllerId": 6, "ClusterAuthorizedOperations": 0, TAGS: {},
             "Brokers": [{"BrokerId": 6, "Host": "b6", "Port": 9102, "Rack": None, TAGS: {}}]}
    return response_frame(schemas.DESCRIBE_CLUSTER, version, value)


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster_names_the_proxy_for_brokers(version: int) -> None:
    addresses = Addresses()
    frame = protocol.rewrite_response(schemas.DESCRIBE_CLUSTER, version, describe_cluster(version, 1), addresses)
    broker = body_of(schemas.DESCRIBE_CLUSTER, version, frame)["Brokers"][0]
    assert addresses.asked == [(6, "b6", 9102)]
    assert (broker["Host"], broker["Port"]) == ("proxy.local", 29006)


def test_describe_cluster_leaves_controllers_alone() -> None:
    """EndpointType 2 lists controllers, which clients reach directly (the proxy stands before brokers only)."""
    addresses = Addresses()
    frame = describe_cluster(1, 2)
    assert protocol.rewrite_response(schemas.DESCRIBE_CLUSTER, 1, frame, addresses) == frame
    assert addresses.asked == []


def test_responses_of_other_apis_pass_as_they_came() -> None:
    frame = b"\x00\x00\x00\x01 anything at all"
    assert protocol.rewrite_response(schemas.FETCH, 12, frame, Addresses()) is frame


# ---- Produce ---------------------------------------------------------------------------------------------

def produce_request(version: int) -> dict[str, Any]:
    flexible = version >= schemas.PRODUCE_REQUEST.flexible
    return {"TransactionalId": "tx", "Acks": -1, "TimeoutMs": 30000, **tagged(flexible, {2: b"t"}),
            "TopicData": [
                {"Name": "a", **tagged(flexible), "PartitionData": [
                    {"Index": 0, "Records": b"a0", **tagged(flexible)},
                    {"Index": 1, "Records": b"a1", **tagged(flexible)}]},
                {"Name": "b", **tagged(flexible), "PartitionData": [
                    {"Index": 0, "Records": b"b0", **tagged(flexible)}]}]}


def refusal(records: list[tuple[int, str]] | None = None) -> Refusal:
    return Refusal(protocol.INVALID_RECORD, "xgate refused the batch", records or [])


def test_without_drops_the_refused_partitions_and_keeps_the_rest() -> None:
    request = produce_request(9)
    kept = protocol.without(request, {("a", 1): refusal()})
    assert kept is not None
    assert [(t["Name"], [p["Index"] for p in t["PartitionData"]]) for t in kept["TopicData"]] == [
        ("a", [0]), ("b", [0])]
    assert (kept["TransactionalId"], kept["Acks"], kept[TAGS]) == ("tx", -1, {2: b"t"})


def test_without_drops_a_topic_left_with_no_partitions() -> None:
    kept = protocol.without(produce_request(9), {("b", 0): refusal()})
    assert kept is not None
    assert [t["Name"] for t in kept["TopicData"]] == ["a"]


def test_without_leaves_the_request_itself_unchanged() -> None:
    request = produce_request(9)
    protocol.without(request, {("a", 1): refusal()})
    assert request == produce_request(9)


def test_without_is_none_when_everything_is_refused() -> None:
    refused = {("a", 0): refusal(), ("a", 1): refusal(), ("b", 0): refusal()}
    assert protocol.without(produce_request(9), refused) is None


def test_a_partition_of_the_same_number_in_another_topic_is_not_refused() -> None:
    kept = protocol.without(produce_request(9), {("a", 0): refusal()})
    assert kept is not None
    assert [(t["Name"], [p["Index"] for p in t["PartitionData"]]) for t in kept["TopicData"]] == [
        ("a", [1]), ("b", [0])]


@pytest.mark.parametrize("version", [8, 9])
def test_produce_frame_keeps_the_header_bytes_and_carries_the_new_body(version: int) -> None:
    request = produce_request(version)
    head = request_frame(schemas.PRODUCE, version, b"client-1", tags=b"\x01\x04\x02hi")
    frame = head + schemas.PRODUCE_REQUEST.encode(request, version)
    header = RequestHeader.read(frame)
    kept = protocol.without(protocol.read_produce(frame, header), {("a", 0): refusal()})
    assert kept is not None
    out = protocol.produce_frame(frame, header, kept)
    assert out.startswith(head)
    assert protocol.read_produce(out, RequestHeader.read(out)) == kept


def test_read_produce_refuses_bytes_after_the_message() -> None:
    frame = request_frame(schemas.PRODUCE, 9, b"c") + schemas.PRODUCE_REQUEST.encode(produce_request(9), 9) + b"!"
    with pytest.raises(WireError):
        protocol.read_produce(frame, RequestHeader.read(frame))


def upstream_answer(version: int) -> bytes:
    """The broker's answer to what was forwarded (a/0 and b/0), topics in another order than asked."""
    flexible = version >= schemas.PRODUCE_RESPONSE.flexible

    def answered(index: int, offset: int) -> dict[str, Any]:
        return {"Index": index, "ErrorCode": 0, "BaseOffset": offset, "LogAppendTimeMs": 1700,
                "LogStartOffset": 3, "RecordErrors": [], "ErrorMessage": None, **tagged(flexible, {1: b"p"})}

    value = {"ThrottleTimeMs": 250, **tagged(flexible, {0: b"top"}), "Responses": [
        {"Name": "b", "PartitionResponses": [answered(0, 900)], **tagged(flexible)},
        {"Name": "a", "PartitionResponses": [answered(0, 100)], **tagged(flexible)}]}
    return struct.pack(">i", CORRELATION) + (b"\x00" if flexible else b"") + \
        schemas.PRODUCE_RESPONSE.encode(value, version)


def merged(version: int, upstream: bytes | None, refused: dict[tuple[str, int], Refusal]) -> dict[str, Any]:
    header = RequestHeader(schemas.PRODUCE, version, CORRELATION, "c", 0)
    frame = protocol.produce_response(header, produce_request(version), refused, upstream)
    assert frame[:4] == struct.pack(">i", CORRELATION)
    start = protocol.response_header_size(schemas.PRODUCE, version, frame)
    value, end = schemas.PRODUCE_RESPONSE.decode(frame, version, start)
    assert end == len(frame)
    return value


PRODUCE_VERSIONS = range(schemas.READABLE[schemas.PRODUCE][0], schemas.READABLE[schemas.PRODUCE][1] + 1)


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_produce_response_answers_every_partition_in_the_requests_order(version: int) -> None:
    value = merged(version, upstream_answer(version), {("a", 1): refusal()})
    assert [(t["Name"], [(p["Index"], p["ErrorCode"]) for p in t["PartitionResponses"]])
            for t in value["Responses"]] == [("a", [(0, 0), (1, protocol.INVALID_RECORD)]), ("b", [(0, 0)])]


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_produce_response_keeps_the_brokers_answers_as_they_were(version: int) -> None:
    value = merged(version, upstream_answer(version), {("a", 1): refusal()})
    broker = schemas.PRODUCE_RESPONSE.decode(upstream_answer(version), version,
                                              protocol.response_header_size(schemas.PRODUCE, version,
                                                                            upstream_answer(version)))[0]
    assert value["Responses"][0]["PartitionResponses"][0] == broker["Responses"][1]["PartitionResponses"][0]
    assert value["Responses"][1]["PartitionResponses"] == broker["Responses"][0]["PartitionResponses"]
    assert value["ThrottleTimeMs"] == 250
    assert value.get(TAGS) == broker.get(TAGS)


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_a_refused_partition_carries_invalid_record_and_no_offsets(version: int) -> None:
    refused = merged(version, upstream_answer(version), {("a", 1): refusal([(0, "x")])})
    partition = refused["Responses"][0]["PartitionResponses"][1]
    assert (partition["Index"], partition["ErrorCode"], partition["BaseOffset"]) == (1, 87, -1)


@pytest.mark.parametrize("version", [v for v in PRODUCE_VERSIONS if v >= 8])
def test_a_refused_partition_names_each_broken_record_from_v8(version: int) -> None:
    value = merged(version, upstream_answer(version), {("a", 1): refusal([(0, "no id"), (2, "bad ✓ date")])})
    partition = value["Responses"][0]["PartitionResponses"][1]
    assert [(e["BatchIndex"], e["BatchIndexErrorMessage"]) for e in partition["RecordErrors"]] == [
        (0, "no id"), (2, "bad ✓ date")]
    assert partition["ErrorMessage"] == "xgate refused the batch"


@pytest.mark.parametrize("version", [v for v in PRODUCE_VERSIONS if v < 8])
def test_before_v8_a_refusal_has_no_record_errors_to_carry(version: int) -> None:
    value = merged(version, upstream_answer(version), {("a", 1): refusal([(0, "no id")])})
    assert "RecordErrors" not in value["Responses"][0]["PartitionResponses"][1]


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_produce_response_answers_alone_when_nothing_was_forwarded(version: int) -> None:
    everything = {("a", 0): refusal(), ("a", 1): refusal(), ("b", 0): refusal()}
    value = merged(version, None, everything)
    assert [(t["Name"], [(p["Index"], p["ErrorCode"]) for p in t["PartitionResponses"]])
            for t in value["Responses"]] == [("a", [(0, 87), (1, 87)]), ("b", [(0, 87)])]
