"""xgate's native judging core (native/src): `Core` judges a batch of Kafka records against a lowered plan
(gateway/compiler/lower.py writes it; gateway/compiler/core.py is the Python face that uses it); `Checker`
judges `xgate check`'s recorded lines over a Core (gateway/check.py); `murmur2` is the Kafka partitioner's
hash (protocol_adapters/kafka/partitioning.py); `BatchWriter` and `partition_records` write the Kafka sink's
producer batches (protocol_adapters/kafka/sink.py); `split_batches` and `Fetched` are a Kafka source's
fetched batches read in place (protocol_adapters/kafka/in_place.py, gateway/runtime/record_lane.py), whose
dead letters' `xgate-*` headers a `ReasonWriter` writes as they are judged (gateway/runtime/remap.py's)."""

from xgate_core._core import (
    PLAN_VERSION,
    BatchWriter,
    Checker,
    Core,
    Fetched,
    ReasonWriter,
    murmur2,
    partition_records,
    split_batches,
)

__all__ = ["PLAN_VERSION", "BatchWriter", "Checker", "Core", "Fetched", "ReasonWriter", "murmur2",
           "partition_records", "split_batches"]
