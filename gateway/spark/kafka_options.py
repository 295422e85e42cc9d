"""Data source options for one Kafka endpoint: for Spark's JVM connector and for the project's Python one.

Both connectors take the client's settings as `kafka.`-prefixed options. The JVM
connector wants Java client names (`sasl.jaas.config`, PEM truststores); the Python
connector (confluent-kafka, librdkafka) wants librdkafka names. The endpoint is read
with the same `protocol_adapters.kafka.options` as `xgate run`, so a registry
endpoint means the same cluster, topics and credentials on either runner.
"""

from __future__ import annotations

from pathlib import Path

from protocol_adapters.kafka.options import Connection

JVM_FORMAT = "kafka"
PYTHON_FORMAT = "xgate_kafka"
_JAAS_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                 "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                 "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


def python_options(connection: Connection) -> dict[str, str]:
    """`kafka.*` options for the confluent-kafka source and sink (librdkafka configuration names)."""
    options = {"kafka.bootstrap.servers": ",".join(connection.bootstrap_servers),
               "kafka.client.id": connection.client_id,
               "kafka.security.protocol": connection.security_protocol,
               "kafka.socket.timeout.ms": str(connection.request_timeout_ms),
               "kafka.socket.connection.setup.timeout.ms": str(int(connection.connect_timeout * 1000))}
    if connection.security_protocol.startswith("SASL"):
        options["kafka.sasl.mechanism"] = connection.sasl_mechanism or "PLAIN"
        options["kafka.sasl.username"] = connection.username or ""
        options["kafka.sasl.password"] = connection.password or ""
    tls = connection.tls
    if connection.security_protocol.endswith("SSL") and tls is not None:
        if tls.ca_file:
            options["kafka.ssl.ca.location"] = tls.ca_file
        if tls.cert_file:
            options["kafka.ssl.certificate.location"] = tls.cert_file
        if tls.key_file:
            options["kafka.ssl.key.location"] = tls.key_file
        if not tls.verify:
            options["kafka.enable.ssl.certificate.verification"] = "false"
            options["kafka.ssl.endpoint.identification.algorithm"] = "none"
    return options


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


def client_config(options: dict[str, str]) -> dict[str, str]:
    """The librdkafka configuration held in a data source's `kafka.*` options."""
    return {name[len("kafka."):]: value for name, value in options.items() if name.startswith("kafka.")}
