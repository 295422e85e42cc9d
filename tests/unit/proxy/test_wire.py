"""The Kafka wire codec (gateway/proxy/wire.py) on the messages the proxy reads.

The proxy decodes a client's or broker's frame, changes a few fields and encodes it again, so what it does not
change must come out byte for byte as it came in, at every version it reads. Its bytes are also checked
against aiokafka's protocol classes, an implementation written apart from ours, where both know the version;
flexible versions (which aiokafka's classes lack) against frames written out by hand below. And whatever a
peer sends, a frame that does not read is a WireError, never another exception or a large allocation.
"""

from __future__ import annotations

import random
import tracemalloc
import uuid
from typing import Any

import pytest
from aiokafka.protocol import admin, coordination, metadata, produce  # type: ignore[import-untyped]

from gateway.proxy import schemas
from gateway.proxy.wire import TAGS, Field, Message, WireError

READ: list[tuple[int, Message]] = [(schemas.PRODUCE, schemas.PRODUCE_REQUEST), *schemas.RESPONSES.items()]
VERSIONS = [pytest.param(message, version, id=f"{message.name}-v{version}") for api, message in READ
            for version in range(schemas.READABLE[api][0], schemas.READABLE[api][1] + 1)]

FULL = {"int8": -128, "int16": -32768, "int32": 2**31 - 1, "int64": -2**63, "uint16": 65535, "float64": -0.5,
        "bool": True, "string": "ünïcode ✓ 主题 🙂", "bytes": b"\x00\xff", "records": b"\x00\x01batch\xff",
        "uuid": uuid.UUID("3f1c0d2e-8a4b-4c5d-9e6f-0123456789ab")}
EMPTY = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "float64": 0.0, "bool": False, "string": "",
         "bytes": b"", "records": b"", "uuid": uuid.UUID(int=0)}


def sample(fields: tuple[Field, ...], version: int, flexible: bool, shape: str) -> dict[str, Any]:
    """A value for every field valid at `version`. full: two of each struct, unusual numbers, unicode, unknown
    tagged fields; nulls: every nullable field null, one of each struct; empty: empty arrays, strings, bytes."""
    value: dict[str, Any] = {}
    for spec in fields:
        if version not in spec.versions:
            continue
        if shape == "nulls" and version in spec.nullable:
            value[spec.name] = None
        elif isinstance(spec.type, tuple):
            count = {"full": 2, "nulls": 1, "empty": 0}[shape]
            value[spec.name] = [sample(spec.type, version, flexible, shape) for _ in range(count)]
        elif spec.type.startswith("[]"):
            value[spec.name] = [] if shape == "empty" else [0, -1, 2**31 - 1]
        else:
            value[spec.name] = (EMPTY if shape == "empty" else FULL)[spec.type]
    if flexible:
        value[TAGS] = {0: b"", 7: b"raw \x00 tag", 300: b"\x01"} if shape == "full" else {}
    return value


def sample_of(message: Message, version: int, shape: str) -> dict[str, Any]:
    return sample(message.fields, version, version >= message.flexible, shape)


@pytest.mark.parametrize("shape", ["full", "nulls", "empty"])
@pytest.mark.parametrize(("message", "version"), VERSIONS)
def test_a_decoded_value_is_the_value_encoded(message: Message, version: int, shape: str) -> None:
    value = sample_of(message, version, shape)
    data = message.encode(value, version)
    assert message.decode(data, version) == (value, len(data))


@pytest.mark.parametrize(("message", "version"), VERSIONS)
def test_decoding_starts_at_the_offset_and_reports_where_it_ended(message: Message, version: int) -> None:
    """The proxy decodes a request's body after its header, in the same buffer."""
    data = message.encode(sample_of(message, version, "full"), version)
    value, end = message.decode(b"head" + data + b"tail", version, offset=4)
    assert (value, end) == (sample_of(message, version, "full"), 4 + len(data))


# ---- against aiokafka ------------------------------------------------------------------------------------

AIOKAFKA = [
    *[(schemas.PRODUCE_REQUEST, v, getattr(produce, f"ProduceRequest_v{v}")) for v in range(3, 9)],
    *[(schemas.PRODUCE_RESPONSE, v, getattr(produce, f"ProduceResponse_v{v}")) for v in range(3, 9)],
    *[(schemas.METADATA_RESPONSE, v, getattr(metadata, f"MetadataResponse_v{v}")) for v in range(6)],
    *[(schemas.API_VERSIONS_RESPONSE, v, getattr(admin, f"ApiVersionResponse_v{v}")) for v in range(3)],
    *[(schemas.FIND_COORDINATOR_RESPONSE, v, getattr(coordination, f"FindCoordinatorResponse_v{v}"))
      for v in range(2)],
]
AIOKAFKA_CASES = [pytest.param(message, version, aio, shape, id=f"{message.name}-v{version}-{shape}")
                  for message, version, aio in AIOKAFKA for shape in ("full", "nulls", "empty")]


def positional(fields: tuple[Field, ...], value: dict[str, Any], version: int) -> tuple[Any, ...]:
    """Our value in aiokafka's form: each struct a tuple of its fields in schema order."""
    return tuple([positional(spec.type, item, version) for item in value[spec.name]]
                 if isinstance(spec.type, tuple) and value[spec.name] is not None else value[spec.name]
                 for spec in fields if version in spec.versions)


def aiokafka_bytes(message: Message, version: int, aio: Any, value: dict[str, Any]) -> bytes:
    assert version < message.flexible, "aiokafka's classes here are all non-flexible"
    data: bytes = aio(*positional(message.fields, value, version)).encode()
    return data


@pytest.mark.parametrize(("message", "version", "aio", "shape"), AIOKAFKA_CASES)
def test_our_bytes_are_aiokafkas(message: Message, version: int, aio: Any, shape: str) -> None:
    value = sample_of(message, version, shape)
    assert message.encode(value, version) == aiokafka_bytes(message, version, aio, value)


@pytest.mark.parametrize(("message", "version", "aio", "shape"), AIOKAFKA_CASES)
def test_aiokafkas_bytes_decode_to_its_values(message: Message, version: int, aio: Any, shape: str) -> None:
    value = sample_of(message, version, shape)
    data = aiokafka_bytes(message, version, aio, value)
    assert message.decode(data, version) == (value, len(data))


@pytest.mark.parametrize(("message", "version", "aio", "shape"), AIOKAFKA_CASES)
def test_aiokafkas_bytes_encode_back_unchanged(message: Message, version: int, aio: Any, shape: str) -> None:
    data = aiokafka_bytes(message, version, aio, sample_of(message, version, shape))
    assert message.encode(message.decode(data, version)[0], version) == data


# ---- flexible frames written out by hand -----------------------------------------------------------------

API_VERSIONS_V3 = bytes.fromhex(
    "0000"                  # ErrorCode 0
    "03"                    # ApiKeys: 2 (compact: count + 1)
    "0000 0003 0009 00"     #   Produce 3-9, no tagged fields
    "0012 0000 0004 00"     #   ApiVersions 0-4
    "00000000"              # ThrottleTimeMs 0
    "02"                    # 2 tagged fields
    "01 08 0000000000000005"  # tag 1 (FinalizedFeaturesEpoch), 8 bytes
    "03 01 01"              # tag 3 (ZkMigrationReady), 1 byte: true
)
API_VERSIONS_V3_VALUE: dict[str, Any] = {
    "ErrorCode": 0, "ThrottleTimeMs": 0, TAGS: {1: bytes.fromhex("0000000000000005"), 3: b"\x01"},
    "ApiKeys": [{"ApiKey": 0, "MinVersion": 3, "MaxVersion": 9, TAGS: {}},
                {"ApiKey": 18, "MinVersion": 0, "MaxVersion": 4, TAGS: {}}],
}

FIND_COORDINATOR_V4 = bytes.fromhex(
    "00000064"              # ThrottleTimeMs 100
    "02"                    # Coordinators: 1
    "06 67726f7570"         #   Key "group" (compact: length + 1)
    "00000001"              #   NodeId 1
    "07 62726f6b6572"       #   Host "broker"
    "00002384"              #   Port 9092
    "0000"                  #   ErrorCode 0
    "00"                    #   ErrorMessage null
    "01 05 02 abcd"         #   1 tagged field: tag 5, 2 bytes
    "00"                    # no tagged fields
)
FIND_COORDINATOR_V4_VALUE: dict[str, Any] = {
    "ThrottleTimeMs": 100, TAGS: {},
    "Coordinators": [{"Key": "group", "NodeId": 1, "Host": "broker", "Port": 9092, "ErrorCode": 0,
                      "ErrorMessage": None, TAGS: {5: b"\xab\xcd"}}],
}

METADATA_V12 = bytes.fromhex(
    "00000000"              # ThrottleTimeMs 0
    "02"                    # Brokers: 1
    "00000002"              #   NodeId 2
    "0a c3a9746f696c652d32"  #   Host "étoile-2" (9 bytes of UTF-8)
    "00002384"              #   Port 9092
    "00"                    #   Rack null
    "00"                    #   no tagged fields
    "00"                    # ClusterId null
    "00000002"              # ControllerId 2
    "02"                    # Topics: 1
    "0003"                  #   ErrorCode 3 (UNKNOWN_TOPIC_OR_PARTITION)
    "00"                    #   Name null (v12+: topics asked for by id)
    "000102030405060708090a0b0c0d0e0f"  # TopicId
    "00"                    #   IsInternal false
    "01"                    #   Partitions: none
    "80000000"              #   TopicAuthorizedOperations -2^31
    "00"                    #   no tagged fields
    "00"                    # no tagged fields
)
METADATA_V12_VALUE: dict[str, Any] = {
    "ThrottleTimeMs": 0, "ClusterId": None, "ControllerId": 2, TAGS: {},
    "Brokers": [{"NodeId": 2, "Host": "étoile-2", "Port": 9092, "Rack": None, TAGS: {}}],
    "Topics": [{"ErrorCode": 3, "Name": None, "TopicId": uuid.UUID(bytes=bytes(range(16))), "IsInternal": False,
                "Partitions": [], "TopicAuthorizedOperations": -2**31, TAGS: {}}],
}

PRODUCE_RESPONSE_V9 = bytes.fromhex(
    "02"                    # Responses: 1
    "07 6f7264657273"       #   Name "orders"
    "02"                    #   PartitionResponses: 1
    "00000000"              #     Index 0
    "0057"                  #     ErrorCode 87 (INVALID_RECORD)
    "ffffffffffffffff"      #     BaseOffset -1
    "ffffffffffffffff"      #     LogAppendTimeMs -1
    "0000000000000000"      #     LogStartOffset 0
    "02"                    #     RecordErrors: 1
    "00000003"              #       BatchIndex 3
    "04 626164"             #       BatchIndexErrorMessage "bad"
    "00"                    #       no tagged fields
    "00"                    #     ErrorMessage null
    "00"                    #     no tagged fields
    "00"                    #   no tagged fields
    "00000000"              # ThrottleTimeMs 0
    "01 9603 01 ff"         # 1 tagged field: tag 406 (a two-byte varint), 1 byte
)
PRODUCE_RESPONSE_V9_VALUE: dict[str, Any] = {
    "ThrottleTimeMs": 0, TAGS: {406: b"\xff"},
    "Responses": [{"Name": "orders", TAGS: {}, "PartitionResponses": [{
        "Index": 0, "ErrorCode": 87, "BaseOffset": -1, "LogAppendTimeMs": -1, "LogStartOffset": 0,
        "RecordErrors": [{"BatchIndex": 3, "BatchIndexErrorMessage": "bad", TAGS: {}}], "ErrorMessage": None,
        TAGS: {}}]}],
}

DESCRIBE_CLUSTER_V1 = bytes.fromhex(
    "00000000"              # ThrottleTimeMs 0
    "0000"                  # ErrorCode 0
    "00"                    # ErrorMessage null
    "02"                    # EndpointType 2 (controllers)
    "04 616263"             # ClusterId "abc"
    "00000007"              # ControllerId 7
    "02"                    # Brokers: 1
    "00000007"              #   BrokerId 7
    "0a 6c6f63616c686f7374"  #   Host "localhost"
    "00002385"              #   Port 9093
    "03 7231"               #   Rack "r1"
    "00"                    #   no tagged fields
    "fffffff8"              # ClusterAuthorizedOperations -8
    "00"                    # no tagged fields
)
DESCRIBE_CLUSTER_V1_VALUE: dict[str, Any] = {
    "ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "EndpointType": 2, "ClusterId": "abc",
    "ControllerId": 7, "ClusterAuthorizedOperations": -8, TAGS: {},
    "Brokers": [{"BrokerId": 7, "Host": "localhost", "Port": 9093, "Rack": "r1", TAGS: {}}],
}

FRAMES = [
    pytest.param(schemas.API_VERSIONS_RESPONSE, 3, API_VERSIONS_V3, API_VERSIONS_V3_VALUE, id="ApiVersions-v3"),
    pytest.param(schemas.FIND_COORDINATOR_RESPONSE, 4, FIND_COORDINATOR_V4, FIND_COORDINATOR_V4_VALUE,
                 id="FindCoordinator-v4"),
    pytest.param(schemas.METADATA_RESPONSE, 12, METADATA_V12, METADATA_V12_VALUE, id="Metadata-v12"),
    pytest.param(schemas.PRODUCE_RESPONSE, 9, PRODUCE_RESPONSE_V9, PRODUCE_RESPONSE_V9_VALUE, id="Produce-v9"),
    pytest.param(schemas.DESCRIBE_CLUSTER_RESPONSE, 1, DESCRIBE_CLUSTER_V1, DESCRIBE_CLUSTER_V1_VALUE,
                 id="DescribeCluster-v1"),
]


@pytest.mark.parametrize(("message", "version", "data", "value"), FRAMES)
def test_a_flexible_frame_decodes_to_what_it_spells(message: Message, version: int, data: bytes,
                                                    value: dict[str, Any]) -> None:
    assert message.decode(data, version) == (value, len(data))


@pytest.mark.parametrize(("message", "version", "data", "value"), FRAMES)
def test_a_flexible_frame_encodes_back_unchanged(message: Message, version: int, data: bytes,
                                                 value: dict[str, Any]) -> None:
    assert message.encode(message.decode(data, version)[0], version) == data


def test_a_later_version_reads_the_same_frame_differently() -> None:
    """The version decides the layout: Metadata v13 appends a top-level ErrorCode that v12 lacks."""
    data = METADATA_V12[:-1] + b"\x00\x05\x00"
    value, _ = schemas.METADATA_RESPONSE.decode(data, 13)
    assert value["ErrorCode"] == 5


# ---- frames that do not read -----------------------------------------------------------------------------

@pytest.mark.parametrize(("message", "version"), VERSIONS)
def test_every_truncation_is_a_wire_error(message: Message, version: int) -> None:
    data = message.encode(sample_of(message, version, "full"), version)
    for cut in range(len(data)):
        with pytest.raises(WireError):
            message.decode(data[:cut], version)


@pytest.mark.parametrize(("message", "version"), VERSIONS)
def test_corrupted_frames_decode_or_raise_only_wire_errors(message: Message, version: int) -> None:
    """Bytes flipped at random (a fixed seed, so a failure repeats): nothing but WireError escapes."""
    data = message.encode(sample_of(message, version, "full"), version)
    rng = random.Random(f"{message.name}-{version}")
    for _ in range(200):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(len(corrupt))] = rng.randrange(256)
        try:
            message.decode(bytes(corrupt), version)
        except WireError:
            pass


def test_a_string_longer_than_the_frame_is_a_wire_error() -> None:
    data = bytes.fromhex("0000 00000001 00ff 6869")  # FindCoordinator v0: Host claims 255 bytes, 2 are left
    with pytest.raises(WireError):
        schemas.FIND_COORDINATOR_RESPONSE.decode(data, 0)


def test_a_compact_string_longer_than_the_frame_is_a_wire_error() -> None:
    data = bytes.fromhex("00000000 02 ff01 6869")  # FindCoordinator v4: Key claims 254 bytes, 2 are left
    with pytest.raises(WireError):
        schemas.FIND_COORDINATOR_RESPONSE.decode(data, 4)


def test_records_longer_than_the_frame_are_a_wire_error() -> None:
    data = bytes.fromhex("ffff 0001 00001388 00000001 0001 74 00000001 00000000 7fffffff 00")
    with pytest.raises(WireError):  # Produce v3: one topic "t", partition 0, Records claim 2^31 - 1 bytes
        schemas.PRODUCE_REQUEST.decode(data, 3)


@pytest.mark.parametrize(("version", "data"), [
    (0, bytes.fromhex("0000 7fffffff 00000000")),  # ApiVersions v0: 2^31 - 1 keys in a 10-byte frame
    (3, bytes.fromhex("0000 ffffffff07 000000")),  # v3: the same as a compact count
])
def test_an_array_count_beyond_the_frame_fails_before_allocating(version: int, data: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(WireError):
            schemas.API_VERSIONS_RESPONSE.decode(data, version)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000


def test_a_six_byte_varint_is_a_wire_error() -> None:
    data = bytes.fromhex("0000 808080808001 00000000 00")  # ApiVersions v3: a count in six bytes
    with pytest.raises(WireError):
        schemas.API_VERSIONS_RESPONSE.decode(data, 3)


def test_a_five_byte_varint_reads() -> None:
    """Five bytes is Kafka's longest unsigned varint; the six-byte refusal must not catch it."""
    data = bytes.fromhex("0000 8180808000 00000000 00")  # ApiVersions v3: no keys, the count spelt in 5 bytes
    assert schemas.API_VERSIONS_RESPONSE.decode(data, 3)[0]["ApiKeys"] == []


@pytest.mark.parametrize(("version", "data"), [
    (0, bytes.fromhex("0000 00000001 0002 fffe 00002384")),  # FindCoordinator v0: Host is not UTF-8
    (4, bytes.fromhex("00000000 02 03 c328 00000001 02 61 00002384 0000 00 00 00")),  # v4: Key, a broken é
])
def test_a_string_that_is_not_utf8_is_a_wire_error(version: int, data: bytes) -> None:
    with pytest.raises(WireError):
        schemas.FIND_COORDINATOR_RESPONSE.decode(data, version)


def test_a_null_array_where_kafka_allows_none_is_a_wire_error() -> None:
    """A produce request whose TopicData is null would otherwise reach code that iterates it."""
    data = bytes.fromhex("ffff 0001 00001388 ffffffff")  # Produce v3: TopicData count -1
    with pytest.raises(WireError):
        schemas.PRODUCE_REQUEST.decode(data, 3)


def test_a_null_string_where_kafka_allows_none_is_a_wire_error() -> None:
    data = bytes.fromhex("0000 00000001 ffff 00002384")  # FindCoordinator v0: Host null
    with pytest.raises(WireError):
        schemas.FIND_COORDINATOR_RESPONSE.decode(data, 0)


def test_a_null_where_a_later_version_allows_it_reads() -> None:
    data = bytes.fromhex("ffff 0001 00001388 00000000")  # Produce v3: TransactionalId null, no topics
    assert schemas.PRODUCE_REQUEST.decode(data, 3)[0]["TransactionalId"] is None


@pytest.mark.parametrize("tags", ["02 03 01 01 01 01 00", "02 01 01 00 01 01 00"], ids=["descending", "repeated"])
def test_tagged_fields_out_of_order_are_a_wire_error(tags: str) -> None:
    """Kafka writes tags ascending; a frame with them otherwise would not encode back to its own bytes."""
    data = bytes.fromhex("0000 01 00000000" + tags)  # ApiVersions v3, no keys
    with pytest.raises(WireError):
        schemas.API_VERSIONS_RESPONSE.decode(data, 3)
