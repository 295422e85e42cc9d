"""The model this registry serves (`GET /registry/model`, `?inline=model`): the Group and Resource types of the
endpoint, message and schema specs (1.0-rc4 model.json files) with their domain attributes.

Core attributes (`<SINGULAR>id`, `self`, `xid`, `epoch`, `createdat`, ...) are implied by the core spec and
not repeated. Protocol- and envelope-specific shapes (`ifvalues` in the spec's model.json) are summarized as
objects: xgate reads them with its own normalizer (every document generation), not with this model.
"""

from __future__ import annotations

from typing import Any


def _attrs(**types: str | dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, kind in types.items():
        out[name] = {"name": name, **({"type": kind} if isinstance(kind, str) else kind)}
    out["*"] = {"name": "*", "type": "any"}
    return out


MESSAGE_ATTRIBUTES = _attrs(
    basemessageuri="uri", envelope="string", envelopemetadata="object", envelopeoptions="object",
    protocol="string", protocoloptions="object", dataschemaformat="string", dataschema="any",
    dataschemauri="uri", dataschemaxid="xid", datacontenttype="string")

MODEL: dict[str, Any] = {
    "groups": {
        "endpoints": {
            "plural": "endpoints", "singular": "endpoint", "modelversion": "1.0-rc4",
            "modelcompatiblewith": "https://xregistry.io/xreg/domains/endpoint/specs/model.json",
            "attributes": _attrs(usage={"type": "array", "item": {"type": "string"}}, channel="string",
                                 deprecated="object", envelope="string", envelopeoptions="object",
                                 protocol="string", protocoloptions="object",
                                 messagegroups={"type": "array", "item": {"type": "uri"}}),
            "ximportresources": ["/messagegroups/messages"],
        },
        "messagegroups": {
            "plural": "messagegroups", "singular": "messagegroup", "modelversion": "1.0-rc4",
            "modelcompatiblewith": "https://xregistry.io/xreg/domains/message/specs/model.json",
            "attributes": _attrs(envelope="string", protocol="string"),
            "resources": {"messages": {"plural": "messages", "singular": "message", "maxversions": 1,
                                       "hasdocument": False, "attributes": MESSAGE_ATTRIBUTES}},
        },
        "schemagroups": {
            "plural": "schemagroups", "singular": "schemagroup", "modelversion": "1.0-rc4",
            "modelcompatiblewith": "https://xregistry.io/xreg/domains/schema/specs/model.json",
            "attributes": _attrs(format="string"),
            "resources": {"schemas": {"plural": "schemas", "singular": "schema", "maxversions": 0,
                                      "hasdocument": True,
                                      "attributes": _attrs(format={"type": "string", "required": True})}},
        },
    },
}
