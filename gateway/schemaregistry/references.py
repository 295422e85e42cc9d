"""Which `dataschemauri` values name a schema registry, and what they name.

    confluent://<registry>/subjects/<subject>/versions/<version>[:Type]
    confluent://<registry>/schemas/ids/<id>[:Type]
    http(s)://<registry url>/subjects/<subject>/versions/<version>[:Type]
    http(s)://<registry url>/schemas/ids/<id>[:Type]

`<registry>` is a name from gateway.yaml `schemaregistries`; an http(s) URL belongs to the configured
registry whose `url` it starts with (its credentials are used), or else to an anonymous registry at the URL
before `/subjects` or `/schemas`. `<version>` is a number, or `latest` (also `-1`, Confluent's alias): every
version of the subject. `:Type` selects the Protobuf message (or Avro named type) the payload must be.
Subjects are percent-decoded (`orders%2Fv1` is the subject `orders/v1`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from gateway.schemaregistry.config import SchemaRegistrySettings, base_url

SCHEME = "confluent://"
_SELECTOR = r"(?::(?P<selector>[A-Za-z_][\w.]*))?"
_SUBJECT = re.compile(r"^(?P<base>.*?)/subjects/(?P<subject>[^/]+)/versions/(?P<version>[^/:]+)" + _SELECTOR + "$")
_ID = re.compile(r"^(?P<base>.*?)/schemas/ids/(?P<id>[^/:]+)" + _SELECTOR + "$")


@dataclass(frozen=True, slots=True)
class RegistryRef:
    """A parsed registry reference; `registry` is None when a `confluent://` name is not configured."""

    text: str
    name: str                                  # the registry's name (an anonymous one: its URL)
    registry: SchemaRegistrySettings | None
    subject: str | None = None
    version: int | None = None                 # None with a subject: `latest`, every version
    schema_id: int | None = None
    selector: str | None = None

    @property
    def latest(self) -> bool:
        return self.subject is not None and self.version is None

    def url(self, base: str) -> str:
        """The URL of what this names on the registry at `base`."""
        if self.subject is None:
            return f"{base}/schemas/ids/{self.schema_id}"
        version = "latest" if self.version is None else str(self.version)
        return f"{base}/subjects/{quote(self.subject, safe='')}/versions/{version}"


def is_registry_text(text: str) -> bool:
    return text[: len(SCHEME)].lower() == SCHEME


def parse_reference(text: str, registries: Mapping[str, SchemaRegistrySettings]) -> RegistryRef | str | None:
    """A registry reference, a problem (the text is a `confluent://` reference that cannot be read), or
    None (not a registry reference: an ordinary URL or file)."""
    if is_registry_text(text):
        return _confluent(text, registries)
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or parts.query or parts.fragment:
        return None
    path = parts.path
    match = _SUBJECT.match(path) or _ID.match(path)
    if match is None:
        return None
    base = base_url(f"{parts.scheme}://{parts.netloc}{match.group('base')}")
    registry = next((r for r in registries.values() if r.url == base), None)
    if registry is None:
        registry = SchemaRegistrySettings(base, base)
    parsed = _target(text, registry.name, registry, match)
    # a URL that only looks like a registry's (`/subjects/x/versions/notanumber`) is left to the loader
    return parsed if isinstance(parsed, RegistryRef) else None


def _confluent(text: str, registries: Mapping[str, SchemaRegistrySettings]) -> RegistryRef | str:
    rest = text[len(SCHEME):]
    name, slash, path = rest.partition("/")
    if not name or not slash:
        return (f"{text!r} names no registry: write confluent://<registry>/subjects/<subject>/versions/<version> "
                "or confluent://<registry>/schemas/ids/<id>")
    match = _SUBJECT.match("/" + path) or _ID.match("/" + path)
    if match is None or match.group("base"):
        return (f"{text!r} is not confluent://{name}/subjects/<subject>/versions/<version|latest> "
                f"or confluent://{name}/schemas/ids/<id>")
    registry = next((r for n, r in registries.items() if n.lower() == name.lower()), None)
    return _target(text, name, registry, match)


def _target(text: str, name: str, registry: SchemaRegistrySettings | None, match: re.Match[str]) -> RegistryRef | str:
    groups = match.groupdict()
    selector = groups.get("selector")
    if groups.get("subject") is not None:
        subject = unquote(groups["subject"])
        version_text = groups["version"].lower()
        if version_text in ("latest", "-1"):
            return RegistryRef(text, name, registry, subject, None, None, selector)
        if not version_text.isdigit() or int(version_text) < 1:
            return f"{text!r}: the version is {groups['version']!r}, expected a number from 1 or `latest`"
        return RegistryRef(text, name, registry, subject, int(version_text), None, selector)
    id_text = groups["id"]
    if not id_text.isdigit() or int(id_text) >= 2**32:
        return f"{text!r}: the schema id is {id_text!r}, expected an unsigned 32-bit number"
    return RegistryRef(text, name, registry, None, None, int(id_text), selector)
