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
    uris = raw.get("endpoints", options.pop("endpoints", config.get("endpoints")))
    usage = _usage(raw.get("usage", []), origin.child("usage"), ctx)
    envelope_options: dict[str, Any] = raw["envelopeoptions"] if isinstance(raw.get("envelopeoptions"), dict) else {}
    attrs: dict[str, Any] = {
        "protocol": protocol, "protocoloptions": normalize_options(options, protocol),
        "endpoints": _addresses(uris),
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


def _addresses(uris: Any) -> list[Any]:
    """Entries of `endpoints`: `{"uri": ...}` or a plain string; Kafka's 1.0-rc4 form
    `{"bootstrap.servers": ["host:port", ...]}` (or one comma-separated string) gives one address per server."""
    out: list[Any] = []
    for entry in uris if isinstance(uris, list) else ():
        if not isinstance(entry, dict):
            out.append(entry)
            continue
        if "uri" in entry:
            out.append(entry.get("uri"))
        servers = entry.get("bootstrap.servers")
        if isinstance(servers, str):
            servers = [s.strip() for s in servers.split(",") if s.strip()]
        if isinstance(servers, list):
            out.extend(s for s in servers if isinstance(s, str))
        if "uri" not in entry and not isinstance(servers, list):
            out.append(None)  # kept in place: a later check names the entry that has no address
    return out


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
