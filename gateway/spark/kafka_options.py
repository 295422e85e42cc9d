"""Spark Kafka connector options for one Kafka endpoint (`format("kafka")`, spark-sql-kafka-0-10).

The connector takes the Java client's settings as `kafka.`-prefixed options (`sasl.jaas.config`,
PEM truststores). The endpoint is read with the same `protocol_adapters.kafka.options` as
`xgate run`, so a registry endpoint means the same cluster, topics and credentials on either runner.
"""

from __future__ import annotations

from pathlib import Path

from protocol_adapters.kafka.options import Connection

JVM_FORMAT = "kafka"
_JAAS_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                 "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                 "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


def jvm_options(connection: Connection) -> dict[str, str]:
    """`kafka.*` options for Spark's own connector (Java client names; TLS material as PEM)."""
    options = {"kafka.bootstrap.servers": ",".join(connection.bootstrap_servers),
               "kafka.client.id": connection.client_id,
               "kafka.security.protocol": connection.security_protocol,
               "kafka.request.timeout.ms": str(connection.request_timeout_ms)}
    if connection.security_protocol.startswith("SASL"):
        mechanism = connection.sasl_mechanism or "PLAIN"
        options["kafka.sasl.mechanism"] = mechanism
        options["kafka.sasl.jaas.config"] = (f'{_JAAS_MODULES[mechanism]} required username="{connection.username or ""}"'
                                             f' password="{connection.password or ""}";')
    tls = connection.tls
    if connection.security_protocol.endswith("SSL") and tls is not None:
        if tls.ca_file:
            options["kafka.ssl.truststore.type"] = "PEM"
            options["kafka.ssl.truststore.location"] = tls.ca_file
        if tls.cert_file and tls.key_file:
            # the Java client takes a PEM key store inline, not as two paths
            options["kafka.ssl.keystore.type"] = "PEM"
            options["kafka.ssl.keystore.certificate.chain"] = Path(tls.cert_file).read_text("utf-8")
            options["kafka.ssl.keystore.key"] = Path(tls.key_file).read_text("utf-8")
        if not tls.verify:
            options["kafka.ssl.endpoint.identification.algorithm"] = ""
    return options

