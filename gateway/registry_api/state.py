"""Epochs and `createdat` kept across restarts (core spec: `epoch` MUST increase and never go back; `createdat`
is when the entity was created, not when xgate last started).

One small JSON file, `registry-state.json`, in a state directory: gateway.yaml `registry.state_dir`, else one
beside the config directory (`<parent>/.<config name>.xgate-state/`) when that parent is writable. Where no
directory can be written (a read-only ConfigMap mount without `state_dir`), the stamps live in memory only:
a restart starts every epoch at 1 again and restamps `createdat`; a warning says so once, at startup.

With them, the registry document served when they were saved: a restart compares the registry it loads with
it, so a change made while xgate was down, or written just before a kill and never announced, still gets its
change events (runtime/change_events.py) with the epochs it is served with.

The file is replaced atomically (written aside, then renamed), so a crash leaves the old or the new one. A file
that cannot be read is set aside as `.broken` and the stamps start over, with a warning; it never stops xgate.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from gateway import durable
from gateway.registry_api.tree import Stamp

log = logging.getLogger(__name__)
STATE_FILE = "registry-state.json"
# 2: with the served registry's document, so that a restart tells what changed since (change events); 1: stamps
FORMAT = 2


def default_state_dir(config_dir: str | Path) -> Path | None:
    """`<parent>/.<name>.xgate-state` beside the config directory, if it exists or can be made; else None."""
    config = Path(config_dir).resolve()
    config = config if config.is_dir() else config.parent
    directory = config.parent / f".{config.name}.xgate-state"
    try:
        directory.mkdir(exist_ok=True)
    except OSError:
        return None
    return directory if os.access(directory, os.W_OK) else None


class StateFile:
    """Load and save the stamps of every xid ever seen, and which xids the last snapshot held."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / STATE_FILE
        self._warned = False

    def load(self) -> tuple[dict[str, Stamp], set[str], dict[str, Any] | None]:
        """(stamps, xids present, the registry document served then, or None from a format-1 file)."""
        durable.remove_leftovers(self.path)
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}, set(), None
        except OSError as exc:
            log.warning("registry API: cannot read %s (%s); epochs start over", self.path, exc.strerror or exc)
            return {}, set(), None
        try:
            raw = json.loads(text)
            known = {xid: Stamp(str(s["digest"]), int(s["epoch"]), str(s["createdat"]), str(s["modifiedat"]))
                     for xid, s in raw["stamps"].items()}
            present = {str(x) for x in raw["present"]}
            document = raw.get("document")
            document = document if isinstance(document, dict) else None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            broken = self.path.with_suffix(".broken")
            log.warning("registry API: %s is not a state file xgate wrote (%s); set aside as %s, epochs start over",
                        self.path, exc, broken.name)
            try:
                self.path.replace(broken)
            except OSError:
                pass
            return {}, set(), None
        return known, present, document

    def save(self, known: dict[str, Stamp], present: set[str], document: dict[str, Any] | None = None) -> None:
        body: dict[str, Any] = {
            "format": FORMAT, "present": sorted(present), "document": document,
            "stamps": {xid: {"digest": s.digest, "epoch": s.epoch, "createdat": s.createdat,
                             "modifiedat": s.modifiedat} for xid, s in sorted(known.items())}}
        try:  # synced before and after the rename: epochs must not go back after a power cut
            durable.write_atomically(self.path, json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
        except OSError as exc:
            if not self._warned:  # once: the API keeps serving, with stamps in memory
                log.warning("registry API: cannot write %s (%s); epochs and createdat will not survive a restart",
                            self.path, exc.strerror or exc)
                self._warned = True


def state_file(config_dir: str | Path, state_dir: str | None) -> StateFile | None:
    """The state file gateway.yaml names (`registry.state_dir`), else the default one; None (with a warning)
    where no directory can be written."""
    directory = Path(state_dir) if state_dir else default_state_dir(config_dir)
    if directory is None:
        log.warning("registry API: no writable state directory beside %s; epochs and createdat restart with the "
                    "process (set registry.state_dir in gateway.yaml to a writable directory)", config_dir)
        return None
    return StateFile(directory)
