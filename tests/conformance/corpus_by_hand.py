"""Expectations for a sample of the shared xRegistry corpus, read from the documents by a person.

Not from the loader: each entry says what was read in the document (its groups, messages and references),
how many message definitions validation rule 1 then leaves standing (a message whose schema link is
broken is left out), and where each error is (JSON pointer, or line:column for a parse error, counted in the
file). tests/conformance/test_corpus_by_hand.py holds the loader and the pins to them, and pin_corpus.py
refuses to write pins that disagree.
"""

from __future__ import annotations

KAFKA_METRICS = "/messagegroups/Contoso.Sensors.Temperature/messages/Contoso.Sensors.Temperature.Metrics"

BY_HAND: dict[str, dict[str, object]] = {
    "codegen/samples/protocols/kafka-producer-endpoint.xreg.json": {
        "read": "one group with one message; its dataschemauri `#/schemagroupsContoso.Sensors.Temperature/...` "
                "lacks the `/` after `schemagroups`, so it names nothing: the message is left out",
        "definitions": 0,
        "errors": [f"dangling-ref@{KAFKA_METRICS}/dataschemauri", f"message-left-out@{KAFKA_METRICS}"]},
    "codegen/samples/protocols/kafka-consumer-endpoint.xreg.json": {
        "read": "as the producer file, and the endpoint lists `#/messagegroups/Contoso.MyGroup`, which the "
                "document does not have (its group is Contoso.Sensors.Temperature)",
        "definitions": 0,
        "errors": ["dangling-ref@/endpoints/Fabrikam.RedmondUsWa.Building42.Environment.Temperature/messagegroups/0",
                   f"dangling-ref@{KAFKA_METRICS}/dataschemauri", f"message-left-out@{KAFKA_METRICS}"]},
    "codegen/samples/protocols/mqtt-producer-endpoint.xreg.json": {
        "read": "one message, Contoso.MyGroup.MyEvent, whose schema Contoso.MyEvents/MyEventData exists (one "
                "version, 1.0); the endpoint lists `#/messagegroups/mygroup`, which does not exist",
        "definitions": 1,
        "errors": ["dangling-ref@/endpoints/Contoso.MqttProducer/messagegroups/0"]},
    "xregistry-cli/legacy-0.4-wip-definitiongroups/samples/protocols/nats-consumer-endpoint.cereg": {
        "read": "line 17 is `\"subject\": \"temperature\",` indented 20 spaces: the comma, column 45, is a "
                "trailing comma before `}` (not JSON)",
        "definitions": 0,
        "errors": ["parse@:17:45"]},
    "codegen/samples/message-definitions/contoso-erp.xreg.json": {
        "read": "seven groups of 3, 1, 3, 1, 3, 3 and 3 messages; every dataschemauri names one of the 16 "
                "schemas of Contoso.ERP.Events (PurchaseOrderDeleted has none); every endpoint lists existing groups",
        "definitions": 17,
        "errors": []},
    "xregistry-cli/legacy-0.4-wip-definitiongroups/samples/message-definitions/contoso-erp.cereg": {
        "read": "0.4 shape: one definitiongroup of 17 definitions; the QueueConsumer and QueueProducer endpoints "
                "list `#/definitiongroups/mygroup`, which does not exist",
        "definitions": 17,
        "errors": ["dangling-ref@/endpoints/Contoso.ERP.Eventing.QueueConsumer/definitiongroups/0",
                   "dangling-ref@/endpoints/Contoso.ERP.Eventing.QueueProducer/definitiongroups/0"]},
    "codegen/samples/message-definitions/contoso-crm.cereg.yaml": {
        "read": "YAML; one group with 10 definitions, each schemaurl names one of the group's 11 schemas",
        "definitions": 10,
        "errors": []},
    "codegen/samples/message-definitions/embedded-schema/cloudevent-avro-embedded.xreg.json": {
        "read": "one group, one message with an inline Avro record schema",
        "definitions": 1,
        "errors": []},
}


def by_hand_disagreements(path: str, pin: dict[str, object]) -> list[str]:
    """How a pinned (or freshly computed) outcome differs from what was read by hand; [] when it agrees."""
    expected = BY_HAND.get(path)
    if expected is None:
        return []
    problems = []
    if pin["definitions"] != expected["definitions"]:
        problems.append(f"definitions {pin['definitions']}, read by hand {expected['definitions']}")
    if sorted(pin["errors"]) != sorted(expected["errors"]):  # type: ignore[call-overload]
        problems.append(f"errors {pin['errors']}, read by hand {expected['errors']}")
    return problems
