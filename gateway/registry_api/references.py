"""How a reference is written in an exported document so that it means what it meant where it was declared.

`#/pointer` and `file.json#/pointer` references resolve inside the document they name (docs/validation.md
section 2), xids in the merged registry. In one merged document a pointer into a registry document becomes
the xid of what it found. One that found nothing in the file it names is written as a `file://` URI of that
file, so that it stays dangling (an xid could find an entity of the same id another file declares). A schema
*file* (`reading.avsc`) is inlined where the loader read it (document.py).

Not exact: a pointer that found, in its own file, another declaration than the merged registry kept (two
files declaring one id differently, or a message group whose members are split over several files: the
pointer sees only its own file's members, the xid all of them).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from gateway.loader.decode import decode_bytes, decode_file
from gateway.loader.generations import normalize_document
from gateway.loader.refs import EntityPath, entity_path, is_url
from gateway.loader.snapshot import Snapshot
from gateway.loader.versions import default_version
from gateway.model import Doc, Entity, Ref


def xid_of(path: EntityPath) -> str:
    """The 1.0 xid of a pointer or xid into the registry, in any generation's spelling."""
    member = {"schemagroups": "schemas"}.get(path.collection, "messages")
    text = f"/{path.collection}/{path.group}"
    if path.member is not None:
        text += f"/{member}/{path.member}"
        if path.version is not None:
            text += f"/versions/{path.version}"
    return text + path.rest


def ref_text(ref: Ref, loaded: Collection[str] = ()) -> str:
    """Into the registry as an xid, a URL absolute (a reference inside a fetched document may have been
    relative to it), anything else as it was written (what the API shows). A pointer into a document the
    loader was given by URL (`loaded`: gateway.yaml sources) is a pointer into the registry like a file's."""
    selector = f":{ref.selector}" if ref.selector else ""
    if ref.kind in ("local", "xid") or (ref.kind == "remote" and ref.file in loaded):
        path = entity_path(ref.pointer)
        if path is not None:
            return xid_of(path) + selector
    if ref.kind == "remote":
        return ref.file + (f"#{ref.pointer}" if ref.pointer else "") + selector
    return ref.text


def is_file(ref: Ref) -> bool:
    """A local reference to a schema file (not a pointer into a registry document)."""
    return ref.kind == "local" and entity_path(ref.pointer) is None


def _find(collections: dict[str, dict[str, Entity]], path: EntityPath) -> Entity | None:
    """The entity a path lands on (a schema without a version: its default version)."""
    group = collections.get(path.collection, {}).get(path.group)
    if group is None or path.member is None:
        return group
    member = group.children.get(path.member)
    if member is None or member.kind != "schema":
        return member
    return member.children.get(path.version) if path.version else default_version(member)


class Declared:
    """Reference texts for the declared form: each document normalized again from the bytes it was loaded
    from, to see what a pointer found in the file that wrote it."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.loaded = loaded_urls(snapshot)
        self._docs: dict[str, Doc | None] = {}

    def doc(self, file: str) -> Doc | None:
        if file not in self._docs:
            data = self.snapshot.contents.get(file)
            raw, problem = (None, True) if data is None else \
                decode_bytes(data, file, yaml_syntax=False) if file in self.loaded else decode_file(Path(file), data)
            self._docs[file] = normalize_document(raw, file)[0] if problem is None else None
        return self._docs[file]

    def endpoints(self) -> dict[str, Entity]:
        """The endpoints as declared (inline messages unresolved), the first file's where several declare one."""
        found: dict[str, Entity] = {}
        for summary in self.snapshot.files:
            doc = self.doc(summary.file) if summary.endpoints else None
            for eid, entity in (doc.endpoints.items() if doc is not None else ()):
                found.setdefault(eid, entity)
        return found

    def text(self, ref: Ref) -> str:
        path = entity_path(ref.pointer)
        fetched = ref.kind == "remote" and ref.file in self.loaded
        if not (ref.kind == "local" or fetched) or path is None or path.collection == "endpoints":
            return ref_text(ref, self.loaded)
        doc = self.doc(ref.file)
        found = _find({"messagegroups": doc.messagegroups, "schemagroups": doc.schemagroups}, path) \
            if doc is not None else None
        if found is None:
            # dangling where it was written: keep it dangling (it named a document, not the merged registry)
            if fetched:
                return ref_text(ref)
            return Path(ref.file).as_uri() + "#" + ref.pointer + (f":{ref.selector}" if ref.selector else "")
        return ref_text(ref, self.loaded)


def loaded_urls(snapshot: Snapshot) -> frozenset[str]:
    """The documents the loader was given by URL (gateway.yaml sources), as opposed to files."""
    return frozenset(name for name in snapshot.contents if is_url(name))
