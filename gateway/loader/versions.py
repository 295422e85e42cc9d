"""Which schema version a reference without a version selects (validation rule 8)."""

from __future__ import annotations

from gateway.model import Entity


def order_version_ids(ids: list[str]) -> list[str]:
    """Ascending: as integers when all are integers, else lexically after left-padding to equal length."""
    if ids and all(i.strip().lstrip("+-").isdigit() for i in ids):
        return sorted(ids, key=lambda i: int(i))
    width = max((len(i) for i in ids), default=0)
    return sorted(ids, key=lambda i: i.rjust(width))


def default_version(schema: Entity) -> Entity | None:
    if not schema.children:
        return None
    wanted = schema.attrs.get("metadefaultversionid")
    if wanted is not None and str(wanted) in schema.children:
        return schema.children[str(wanted)]
    flagged = [v for v in schema.children.values() if v.attrs.get("isdefault")]
    if flagged:
        return flagged[0]
    wanted = schema.attrs.get("defaultversionid")
    if wanted is not None and str(wanted) in schema.children:
        return schema.children[str(wanted)]
    return schema.children[order_version_ids(list(schema.children))[-1]]
