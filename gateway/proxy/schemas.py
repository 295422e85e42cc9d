"""The messages the proxy reads and rewrites, field by field as Apache Kafka's protocol defines them.

Only what the proxy must read is here: the request header, Produce (judged), and the responses that carry
broker addresses (Metadata, FindCoordinator, DescribeCluster) or versions (ApiVersions). Tagged fields are
not listed: the codec keeps them raw. `READABLE` caps each of these APIs at the versions written here; the
ApiVersions rewrite (protocol.py) tells clients those caps, so no client sends a version the proxy cannot
read. tests/unit/proxy/test_schemas.py checks these tables against the schemas in Kafka's own client jar.
"""

from __future__ import annotations

from gateway.proxy.wire import Message, field

PRODUCE, FETCH, METADATA, FIND_COORDINATOR, API_VERSIONS, DESCRIBE_CLUSTER = 0, 1, 3, 10, 18, 60
SHARE_FETCH, SHARE_ACKNOWLEDGE = 78, 79

# (lowest, highest) version the proxy reads. Produce stops at 9 and Fetch at 15 because later versions carry
# broker addresses in tagged fields (KIP-951 NodeEndpoints) that would send a client around the proxy.
READABLE: dict[int, tuple[int, int]] = {
    PRODUCE: (3, 9), FETCH: (0, 15), METADATA: (0, 13), FIND_COORDINATOR: (0, 6), DESCRIBE_CLUSTER: (0, 2),
    API_VERSIONS: (0, 4),
}
# APIs left out of ApiVersions: their responses carry broker addresses the proxy does not rewrite
HIDDEN = frozenset({SHARE_FETCH, SHARE_ACKNOWLEDGE})
# the first flexible version of each API whose messages the proxy parses (their header version follows it)
FLEXIBLE = {PRODUCE: 9, METADATA: 9, FIND_COORDINATOR: 3, DESCRIBE_CLUSTER: 0, API_VERSIONS: 3}

PRODUCE_REQUEST = Message("ProduceRequest", 9, (
    field("TransactionalId", "string", "3+", nullable="3+"),
    field("Acks", "int16"),
    field("TimeoutMs", "int32"),
    field("TopicData", (
        field("Name", "string", "0-12"),
        field("TopicId", "uuid", "13+"),
        field("PartitionData", (
            field("Index", "int32"),
            field("Records", "records", nullable="0+"),
        )),
    )),
))

PRODUCE_RESPONSE = Message("ProduceResponse", 9, (
    field("Responses", (
        field("Name", "string", "0-12"),
        field("TopicId", "uuid", "13+"),
        field("PartitionResponses", (
            field("Index", "int32"),
            field("ErrorCode", "int16"),
            field("BaseOffset", "int64"),
            field("LogAppendTimeMs", "int64", "2+"),
            field("LogStartOffset", "int64", "5+"),
            field("RecordErrors", (
                field("BatchIndex", "int32", "8+"),
                field("BatchIndexErrorMessage", "string", "8+", nullable="8+"),
            ), "8+"),
            field("ErrorMessage", "string", "8+", nullable="8+"),
        )),
    )),
    field("ThrottleTimeMs", "int32", "1+"),
))

METADATA_RESPONSE = Message("MetadataResponse", 9, (
    field("ThrottleTimeMs", "int32", "3+"),
    field("Brokers", (
        field("NodeId", "int32"),
        field("Host", "string"),
        field("Port", "int32"),
        field("Rack", "string", "1+", nullable="1+"),
    )),
    field("ClusterId", "string", "2+", nullable="2+"),
    field("ControllerId", "int32", "1+"),
    field("Topics", (
        field("ErrorCode", "int16"),
        field("Name", "string", nullable="12+"),
        field("TopicId", "uuid", "10+"),
        field("IsInternal", "bool", "1+"),
        field("Partitions", (
            field("ErrorCode", "int16"),
            field("PartitionIndex", "int32"),
            field("LeaderId", "int32"),
            field("LeaderEpoch", "int32", "7+"),
            field("ReplicaNodes", "[]int32"),
            field("IsrNodes", "[]int32"),
            field("OfflineReplicas", "[]int32", "5+"),
        )),
        field("TopicAuthorizedOperations", "int32", "8+"),
    )),
    field("ClusterAuthorizedOperations", "int32", "8-10"),
    field("ErrorCode", "int16", "13+"),
))

FIND_COORDINATOR_RESPONSE = Message("FindCoordinatorResponse", 3, (
    field("ThrottleTimeMs", "int32", "1+"),
    field("ErrorCode", "int16", "0-3"),
    field("ErrorMessage", "string", "1-3", nullable="1-3"),
    field("NodeId", "int32", "0-3"),
    field("Host", "string", "0-3"),
    field("Port", "int32", "0-3"),
    field("Coordinators", (
        field("Key", "string", "4+"),
        field("NodeId", "int32", "4+"),
        field("Host", "string", "4+"),
        field("Port", "int32", "4+"),
        field("ErrorCode", "int16", "4+"),
        field("ErrorMessage", "string", "4+", nullable="4+"),
    ), "4+"),
))

DESCRIBE_CLUSTER_RESPONSE = Message("DescribeClusterResponse", 0, (
    field("ThrottleTimeMs", "int32"),
    field("ErrorCode", "int16"),
    field("ErrorMessage", "string", nullable="0+"),
    field("EndpointType", "int8", "1+"),
    field("ClusterId", "string"),
    field("ControllerId", "int32"),
    field("Brokers", (
        field("BrokerId", "int32"),
        field("Host", "string"),
        field("Port", "int32"),
        field("Rack", "string", nullable="0+"),
        field("IsFenced", "bool", "2+"),
    )),
    field("ClusterAuthorizedOperations", "int32"),
))

API_VERSIONS_RESPONSE = Message("ApiVersionsResponse", 3, (
    field("ErrorCode", "int16"),
    field("ApiKeys", (
        field("ApiKey", "int16"),
        field("MinVersion", "int16"),
        field("MaxVersion", "int16"),
    )),
    field("ThrottleTimeMs", "int32", "1+"),
))

RESPONSES = {METADATA: METADATA_RESPONSE, FIND_COORDINATOR: FIND_COORDINATOR_RESPONSE,
             DESCRIBE_CLUSTER: DESCRIBE_CLUSTER_RESPONSE, API_VERSIONS: API_VERSIONS_RESPONSE,
             PRODUCE: PRODUCE_RESPONSE}
