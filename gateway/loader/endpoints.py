"""Normalize endpoints of every generation (1.0 `protocoloptions`, 0.x `config{protocol, endpoints, options}`)."""

from __future__ import annotations

from typing import Any

from gateway.loader.context import Ctx, as_map, first
from gateway.loader.messages import GROUP_KEYS, MESSAGE_KEYS, WILL_KEYS, normalize_message, normalize_options
from gateway.loader.names import normalize_envelope, normalize_protocol
from gateway.loader.refs import parse_ref
from gateway.model import Entity, Origin, Ref


def normalize_endpoint(eid: str, raw: Any, origin: Origin, ctx: Ctx) -> Entity | None:
    if not isinstance(raw, dict):
        ctx.error(origin, f"endpoint must be an object, found {type(raw).__name__}", "shape")
        return None
    config: dict[str, Any] = raw["config"] if isinstance(raw.get("config"), dict) else {}
    protocol_raw = raw.get("protocol", config.get("protocol"))
    protocol = normalize_protocol(protocol_raw)
    if protocol_raw is not None and protocol is None:
        ctx.warn(origin.child("protocol"), f"unknown protocol {protocol_raw!r}", "protocol")
    options = raw.get("protocoloptions")
    options = dict(options) if isinstance(options, dict) else {}
    if isinstance(config.get("options"), dict):
        options = {**config["options"], **options}
    if isinstance(options.get("options"), dict):
        options = {**options.pop("options"), **options}
    where, uris = _address_list(raw, options, config, origin)
    usage = _usage(raw.get("usage", []), origin.child("usage"), ctx)
    envelope_options: dict[str, Any] = raw["envelopeoptions"] if isinstance(raw.get("envelopeoptions"), dict) else {}
    attrs: dict[str, Any] = {
        "protocol": protocol, "protocoloptions": normalize_options(options, protocol),
        "endpoints": read_addresses(uris, where, ctx) if where is not None else [],
        "usage": usage,
        "envelope": normalize_envelope(raw.get("envelope")),
        "envelopemode": str(envelope_options.get("mode")).lower() if envelope_options.get("mode") else None,
        "labels": raw.get("labels") if isinstance(raw.get("labels"), dict) else {},
        "description": raw.get("description"),
    }
    refs = []
    key, groups = first(raw, GROUP_KEYS)
    if key is not None:
        if not isinstance(groups, list):
            groups = list(groups) if isinstance(groups, dict) else [groups]
        for index, text in enumerate(groups):
            ref = parse_ref(text, ctx.file) if isinstance(text, str) else None
            if ref is None:
                ctx.error(origin.child(key, str(index)), f"message group reference {text!r} is not a reference",
                          "ref")
            else:
                refs.append((ref, origin.child(key, str(index))))
    attrs["messagegroups"] = refs
    will = _will_message(raw, origin, ctx)
    if will is not None:
        attrs["willmessage"] = will
    endpoint = Entity("endpoint", eid, attrs, origin)
    key, messages = first(raw, MESSAGE_KEYS)
    if key is not None:
        defaults = {"envelope": raw.get("envelope"), "protocol": protocol_raw}
        for mid, mraw in as_map(messages, origin.child(key), ctx, "messages").items():
            msg = normalize_message(eid, mid, mraw, origin.child(key, mid), ctx, group_attrs=defaults)
            if msg is not None:
                endpoint.children[mid] = msg
    return endpoint


def _usage(usage: Any, origin: Origin, ctx: Ctx) -> list[str]:
    """`usage` is a list of strings (one string is read as a list of one); anything else is an error."""
    listed = [usage] if isinstance(usage, str) else usage
    if not isinstance(listed, list) or not all(isinstance(u, str) for u in listed):
        ctx.error(origin, f"usage must be a list of strings such as [\"consumer\"], found {usage!r}", "shape")
        return []
    return [u.lower() for u in listed]


def _address_list(raw: dict[str, Any], options: dict[str, Any], config: dict[str, Any],
                  origin: Origin) -> tuple[Origin | None, Any]:
    """Where the endpoint's address list is written (1.0: `protocoloptions.endpoints`; 0.x: `endpoints` or
    `config.endpoints`), and the list; the key is taken out of the options (it is no protocol option)."""
    in_options = options.pop("endpoints", None)
    if "endpoints" in raw:
        return origin.child("endpoints"), raw["endpoints"]
    if in_options is not None:
        return origin.child("protocoloptions", "endpoints"), in_options
    if "endpoints" in config:
        return origin.child("config", "endpoints"), config["endpoints"]
    return None, None


def read_addresses(entries: Any, where: Origin, ctx: Ctx) -> list[str]:
    """Every address of an endpoint, in the order of preference: each entry's `uri` (HTTP, AMQP, MQTT, NATS,
    and KAFKA's older form), each of an entry's `bootstrap.servers` (KAFKA, 1.0-rc4), or a plain string (0.x).

    An entry that gives no address is an error at its pointer; validation rule 8."""
    if not isinstance(entries, list):
        ctx.error(where, f"expected a list of address entries ({_ENTRY_SHAPES}), found {_kind(entries)}", "address")
        return []
    addresses: list[str] = []
    for index, entry in enumerate(entries):
        found = _entry_addresses(entry)
        if not found:
            ctx.error(where.child(str(index)), f"an address entry needs {_ENTRY_SHAPES}, found {_shown(entry)}",
                      "address")
        addresses.extend(found)
    return addresses


def written_addresses(raw: Any) -> list[str]:
    """Every address an endpoint document's body names, wherever its version writes the list (as
    `_address_list` finds it), entries of other shapes left out: what a registry write is checked for
    (gateway/registry_api/endpoint_policy.py)."""
    if not isinstance(raw, dict):
        return []
    options, config = raw.get("protocoloptions"), raw.get("config")
    lists = [raw.get("endpoints"), options.get("endpoints") if isinstance(options, dict) else None,
             config.get("endpoints") if isinstance(config, dict) else None]
    return [address for entries in lists if isinstance(entries, list) for entry in entries
            for address in _entry_addresses(entry)]


_ENTRY_SHAPES = '{"uri": "<URI>"} or, for KAFKA, {"bootstrap.servers": ["host:port", ...]}'


def _entry_addresses(entry: Any) -> list[str]:
    if isinstance(entry, str):
        return [entry.strip()] if entry.strip() else []
    if not isinstance(entry, dict):
        return []
    servers = entry.get("bootstrap.servers")
    if isinstance(servers, str):  # a Kafka client's own spelling: comma-separated
        servers = servers.split(",")
    if isinstance(servers, list) and servers and all(isinstance(s, str) and s.strip() for s in servers):
        return [s.strip() for s in servers]
    uri = entry.get("uri")
    return [uri.strip()] if isinstance(uri, str) and uri.strip() else []


def _kind(value: Any) -> str:
    return "text" if isinstance(value, str) else type(value).__name__


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _will_message(raw: dict[str, Any], origin: Origin, ctx: Ctx) -> tuple[Ref, Origin] | None:
    """MQTT `willmessage` (endpoint spec: the xid of a message definition), wherever the generation put it.

    Looked up in the order the options merge: `protocoloptions`, its `options`, legacy `config.options`.
    """
    for place in (("protocoloptions",), ("protocoloptions", "options"), ("config", "options")):
        holder: Any = raw
        for step in place:
            holder = holder.get(step) if isinstance(holder, dict) else None
        key, text = first(holder, WILL_KEYS) if isinstance(holder, dict) else (None, None)
        if key is None:
            continue
        where = origin.child(*place, key)
        ref = parse_ref(text, ctx.file) if isinstance(text, str) else None
        if ref is None:
            ctx.error(where, f"{key} {text!r} is not a reference to a message definition", "ref")
            return None
        return ref, where
    return None


def address_entries(protocol: str | None, addresses: list[str]) -> list[dict[str, Any]]:
    """The addresses as the 1.0-rc4 `protocoloptions.endpoints` entries: KAFKA's `host:port` servers in one
    `bootstrap.servers` entry; a Kafka address with a scheme (`SASL_SSL://...`, the older `uri` form, which
    says the security protocol) and every other protocol's address as a `uri` entry."""
    servers = [a for a in addresses if protocol == "KAFKA" and "://" not in a]
    entries: list[dict[str, Any]] = [{"bootstrap.servers": servers}] if servers else []
    return entries + [{"uri": a} for a in addresses if a not in servers]
