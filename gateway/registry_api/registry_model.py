"""The full model this registry serves (`GET /registry/model`, `?inline=model`; core model.md "Retrieving the
Registry Model"): the registry's own attributes, each Group type's and Resource type's attributes, the
spec-defined ones included (`<SINGULAR>id`, `self`, `xid`, `epoch`, `createdat`, `<COLLECTION>url`/`count`,
Resource-level and `meta` attributes), and the domain attributes of the endpoint, message and schema specs
(1.0-rc4 model.json files).

The endpoint spec's model imports `messages` from `messagegroups` (`ximportresources`); the full model shows
the result, `resources.messages` under `endpoints`, since `ximportresources` belongs to modelsource only
(which this server does not offer: `not_available`). Protocol- and envelope-specific shapes (`ifvalues` in
the spec's model.json) are summarized as objects: xgate reads them with its own normalizer (every document
generation), not with this model.
"""

from __future__ import annotations

import copy
from typing import Any

from gateway.registry_api.tree import GROUP_TYPES, GroupType, ResourceType

SPECVERSION = "1.0-rc4"
ANY_OBJECT: dict[str, Any] = {"type": "object", "attributes": {"*": {"name": "*", "type": "any"}}}
EXTENSIONS: dict[str, Any] = {"*": {"name": "*", "type": "any"}}
READONLY: dict[str, Any] = {"readonly": True, "immutable": True, "required": True}
COMPATIBILITY = ["backward", "backward_transitive", "forward", "forward_transitive", "full", "full_transitive"]


def _attrs(**types: str | dict[str, Any]) -> dict[str, Any]:
    """Attribute definitions by name: a type name, or the definition's aspects."""
    return {name: {"name": name, **({"type": kind} if isinstance(kind, str) else kind)}
            for name, kind in types.items()}


def _strings(kind: str = "string") -> dict[str, Any]:
    return {"type": "map", "item": {"type": kind}}


DEPRECATED = {"type": "object", "attributes": _attrs(
    alternative="url", documentation="url", effective="timestamp", removal="timestamp", **{"*": "any"})}


def _identity(singular: str) -> dict[str, Any]:
    return _attrs(**{f"{singular}id": {"type": "string", "immutable": True, "required": True}},
                  self={"type": "url", **READONLY}, xid={"type": "xid", **READONLY})


def _common() -> dict[str, Any]:
    return _attrs(epoch={"type": "uinteger", "readonly": True, "required": True}, name="string",
                  description="string", documentation="url", icon="url", labels=_strings(),
                  createdat={"type": "timestamp", "required": True}, modifiedat={"type": "timestamp", "required": True})


def _collection(plural: str) -> dict[str, Any]:
    return _attrs(**{f"{plural}url": {"type": "url", **READONLY},
                     f"{plural}count": {"type": "uinteger", "readonly": True, "required": True},
                     plural: {"type": "map", "item": copy.deepcopy(ANY_OBJECT)}})


# -- domain attributes (endpoint, message and schema specs) -------------------------------------------------------

MESSAGE_ATTRIBUTES = _attrs(
    basemessageuri="uri", envelope="string", envelopemetadata=copy.deepcopy(ANY_OBJECT),
    envelopeoptions=copy.deepcopy(ANY_OBJECT), protocol="string", protocoloptions=copy.deepcopy(ANY_OBJECT),
    dataschemaformat="string", dataschema="any", dataschemauri="uri", dataschemaxid="xid",
    datacontenttype="string")
DOMAIN: dict[str, dict[str, Any]] = {
    "endpoints": _attrs(usage={"type": "array", "item": {"type": "string"}}, channel="string",
                        deprecated=copy.deepcopy(DEPRECATED), envelope="string",
                        envelopeoptions=copy.deepcopy(ANY_OBJECT), protocol="string",
                        protocoloptions=copy.deepcopy(ANY_OBJECT),
                        messagegroups={"type": "array", "item": {"type": "xid", "target": "/messagegroups"}}),
    "messagegroups": _attrs(envelope="string", protocol="string"),
    "schemagroups": _attrs(format="string"),
    "messages": MESSAGE_ATTRIBUTES,
    "schemas": _attrs(format={"type": "string", "required": True}),
}
COMPATIBLE = {"endpoints": "endpoint", "messagegroups": "message", "schemagroups": "schema"}
# which Group type defines each Resource type; others import it (the endpoint spec: endpoints <- messagegroups)
DEFINED_BY = {"messages": "messagegroups", "schemas": "schemagroups"}


# -- levels ----------------------------------------------------------------------------------------------------

def registry_attributes() -> dict[str, Any]:
    out = _attrs(specversion={"type": "string", "readonly": True, "required": True, "default": SPECVERSION},
                 registryid={"type": "string", **READONLY}, self={"type": "url", **READONLY},
                 xid={"type": "xid", **READONLY})
    out.update(_common())
    out.update(_attrs(capabilities=copy.deepcopy(ANY_OBJECT), model={**copy.deepcopy(ANY_OBJECT), "readonly": True},
                      modelsource=copy.deepcopy(ANY_OBJECT)))
    for gtype in GROUP_TYPES:
        out.update(_collection(gtype.plural))
    return out


def _version_attributes(rtype: ResourceType) -> dict[str, Any]:
    out = _identity(rtype.singular)
    out.update(_attrs(versionid={"type": "string", "immutable": True, "required": True}))
    out.update(_common())
    out.update(_attrs(isdefault={"type": "boolean", "readonly": True, "required": True, "default": False},
                      ancestorid={"type": "string", "required": True}, contenttype="string", format="string",
                      formatvalidated={"type": "boolean", "readonly": True},
                      formatvalidatedreason={"type": "string", "readonly": True},
                      compatibilityvalidated={"type": "boolean", "readonly": True},
                      compatibilityvalidatedreason={"type": "string", "readonly": True}))
    if rtype.hasdocument:
        out.update(_attrs(**{f"{rtype.singular}url": "url", rtype.singular: "any",
                             f"{rtype.singular}base64": "string"}))
    out.update(copy.deepcopy(DOMAIN[rtype.plural]))
    out.update(EXTENSIONS)
    return out


def _resource_attributes(rtype: ResourceType) -> dict[str, Any]:
    out = _identity(rtype.singular)
    out.update(_attrs(metaurl={"type": "url", **READONLY}, meta=copy.deepcopy(ANY_OBJECT)))
    out.update(_collection("versions"))
    return out


def _meta_attributes(rtype: ResourceType) -> dict[str, Any]:
    out = _identity(rtype.singular)
    out.update(_attrs(xref="url", epoch={"type": "uinteger", "readonly": True, "required": True},
                      labels=_strings(), createdat={"type": "timestamp", "required": True},
                      modifiedat={"type": "timestamp", "required": True},
                      readonly={"type": "boolean", "readonly": True, "required": True, "default": False},
                      compatibility={"type": "string", "enum": COMPATIBILITY, "strict": True},
                      deprecated=copy.deepcopy(DEPRECATED),
                      defaultversionid={"type": "string", "required": True},
                      defaultversionurl={"type": "url", "readonly": True, "required": True},
                      defaultversionsticky={"type": "boolean", "required": True, "default": False}))
    return out


def _resource(rtype: ResourceType) -> dict[str, Any]:
    domain = COMPATIBLE[DEFINED_BY[rtype.plural]]
    return {"plural": rtype.plural, "singular": rtype.singular, "modelversion": SPECVERSION,
            "modelcompatiblewith": f"https://xregistry.io/xreg/domains/{domain}/specs/model.json",
            "maxversions": rtype.maxversions, "setversionid": True, "hasdocument": rtype.hasdocument,
            "versionmode": "manual", "singleversionroot": False,  # validate*: false, their default (no checks)
            "attributes": _version_attributes(rtype), "resourceattributes": _resource_attributes(rtype),
            "metaattributes": _meta_attributes(rtype)}


def _group(gtype: GroupType) -> dict[str, Any]:
    attributes = _identity(gtype.singular)
    attributes.update(_common())
    attributes.update(_attrs(deprecated=copy.deepcopy(DEPRECATED)))
    attributes.update(copy.deepcopy(DOMAIN[gtype.plural]))
    for rtype in gtype.resources:
        attributes.update(_collection(rtype.plural))
    attributes.update(EXTENSIONS)
    return {"plural": gtype.plural, "singular": gtype.singular, "modelversion": SPECVERSION,
            "modelcompatiblewith": f"https://xregistry.io/xreg/domains/{COMPATIBLE[gtype.plural]}/specs/model.json",
            "attributes": attributes, "resources": {r.plural: _resource(r) for r in gtype.resources}}


def full_model() -> dict[str, Any]:
    return {"attributes": registry_attributes(), "groups": {g.plural: _group(g) for g in GROUP_TYPES}}


MODEL: dict[str, Any] = full_model()
