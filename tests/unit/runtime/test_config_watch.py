"""The config directory's watch (gateway/runtime/config_watch.py), on real file-system events in a temporary
folder (issue 35, items 4 and 5): a document written in chunks is reloaded once it has been quiet for the
debounce, a reload that raises does not end the watch, a watch that fails is started again and says so
meanwhile, and a symbolic link loop in the folder is a diagnostic, not a traceback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.loader import load_snapshot
from gateway.loader.discover import find_documents
from gateway.runtime import config_watch

TIMEOUT = 15.0


async def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


class Watched:
    """`watch_quietly` running on `folder`; each reload records what the document held at that moment."""

    def __init__(self, folder: Path, debounce: float, reload: Callable[[], Awaitable[Any]] | None = None) -> None:
        self.folder = folder
        self.debounce = debounce
        self.seen: list[tuple[float, str]] = []
        self.states: list[bool] = []
        self.failed = 0
        self.stop = asyncio.Event()
        self._reload = reload
        self.task: asyncio.Task[None] | None = None

    async def _record(self) -> None:
        self.seen.append((time.monotonic(), (self.folder / "doc.yaml").read_text()))
        if self._reload is not None:
            await self._reload()

    def _failed(self) -> None:
        self.failed += 1

    async def __aenter__(self) -> Watched:
        self.task = asyncio.create_task(config_watch.watch_quietly(
            self.folder, self.debounce, self.stop, self._record, self.states.append, self._failed))
        await _until(lambda: bool(self.states))
        await asyncio.sleep(0.3)  # the notifier's watches are in place once its thread runs
        return self

    async def __aexit__(self, *_: Any) -> None:
        self.stop.set()
        assert self.task is not None
        await asyncio.wait_for(self.task, TIMEOUT)


def test_a_document_written_in_chunks_is_reloaded_once_whole(tmp_path: Path) -> None:
    document = tmp_path / "doc.yaml"
    document.write_text("start: 0\n")
    chunks = ["messages:\n", "  a: 1\n", "  b: 2\n"]

    async def main() -> None:
        async with Watched(tmp_path, debounce=0.6) as watched:
            with document.open("w") as out:
                for chunk in chunks:  # three writes 200 ms apart, as a slow copy makes them
                    out.write(chunk)
                    out.flush()
                    await asyncio.sleep(0.2)
            last_write = time.monotonic()
            await _until(lambda: bool(watched.seen))
            await asyncio.sleep(1.0)  # room for a second reload, were there one
        assert [text for _, text in watched.seen] == ["".join(chunks)]
        assert watched.seen[0][0] - last_write >= 0.6 - 0.25  # quiet for the debounce (less the last sleep)

    asyncio.run(main())


def test_a_reload_that_raises_leaves_the_watch_running(tmp_path: Path) -> None:
    (tmp_path / "doc.yaml").write_text("a: 1\n")
    calls: list[int] = []

    async def reload() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("Symlink loop from '/config/x.json'")  # what pathlib raised before the fix

    async def main() -> Watched:
        async with Watched(tmp_path, debounce=0.05, reload=reload) as watched:
            (tmp_path / "doc.yaml").write_text("a: 2\n")
            await _until(lambda: len(calls) == 1)
            await asyncio.sleep(0.2)
            (tmp_path / "doc.yaml").write_text("a: 3\n")
            await _until(lambda: len(calls) == 2)
        return watched

    watched = asyncio.run(main())
    assert watched.failed == 1
    assert watched.seen[-1][1] == "a: 3\n"


def test_a_failed_watch_is_started_again_and_says_so_meanwhile(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import watchfiles

    real = watchfiles.awatch
    starts: list[int] = []

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        starts.append(1)
        if len(starts) == 1:
            raise OSError(40, "Too many levels of symbolic links")
        return real(*args, **kwargs)

    monkeypatch.setattr(watchfiles, "awatch", failing_once)
    monkeypatch.setattr(config_watch, "RESTART_FIRST", 0.1)
    (tmp_path / "doc.yaml").write_text("a: 1\n")

    async def main() -> Watched:
        async with Watched(tmp_path, debounce=0.05) as watched:
            await _until(lambda: len(starts) == 2)
            await asyncio.sleep(0.3)
            (tmp_path / "doc.yaml").write_text("a: 2\n")
            await _until(lambda: bool(watched.seen))
        return watched

    watched = asyncio.run(main())
    assert watched.states[:3] == [True, False, True]
    assert watched.seen[-1][1] == "a: 2\n"


def test_a_symbolic_link_loop_is_a_diagnostic_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "x.xreg.json").symlink_to("y.xreg.json")
    (tmp_path / "y.xreg.json").symlink_to("x.xreg.json")
    (tmp_path / "self.yaml").symlink_to("self.yaml")
    (tmp_path / "here").symlink_to(".", target_is_directory=True)
    found = find_documents([tmp_path])
    assert sorted(link.name for link, _ in found.unresolved) == ["self.yaml", "x.xreg.json", "y.xreg.json"]
    snapshot = load_snapshot([tmp_path])
    assert sorted((Path(d.file).name, d.code) for d in snapshot.diagnostics) == \
        [("self.yaml", "link-loop"), ("x.xreg.json", "link-loop"), ("y.xreg.json", "link-loop")]
