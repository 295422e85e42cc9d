"""FetchPacing (protocol_adapters/kafka/fetch_pacing.py): the fetch minimum follows the rate a source reads at.

The consumer and its fetcher are stand-ins holding only what the pacer reads and sets (aiokafka's fetcher keeps
the two settings as plain attributes and reads them for each fetch request;
tests/integration/test_kafka_fetch_pacing.py runs a paced source on Apache Kafka); the clock is the test's."""

from __future__ import annotations

from typing import Any

import pytest

from protocol_adapters.kafka.fetch_pacing import FetchPacing

KIB = 1024


class _Fetcher:
    def __init__(self, min_bytes: int = 1, max_wait_ms: int = 500) -> None:
        self._fetch_min_bytes, self._fetch_max_wait_ms = min_bytes, max_wait_ms


class _Cluster:
    def __init__(self, leaders: dict[Any, int]) -> None:
        self.leaders = leaders

    def leader_for_partition(self, tp: Any) -> int:
        return self.leaders[tp]


class _Client:
    def __init__(self, leaders: dict[Any, int]) -> None:
        self.cluster = _Cluster(leaders)


class _Consumer:
    def __init__(self, leaders: dict[Any, int], fetcher: _Fetcher) -> None:
        self._client, self._fetcher = _Client(leaders), fetcher

    def assignment(self) -> set[Any]:
        return set(self._client.cluster.leaders)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr("protocol_adapters.kafka.fetch_pacing.time.monotonic", clock)
    return clock


def _read(pacing: FetchPacing, clock: _Clock, bytes_per_second: float, seconds: float, step: float = 0.01) -> None:
    """Polls every `step` seconds handing out what arrived at that rate."""
    for _ in range(round(seconds / step)):
        clock.now += step
        pacing.fetched(round(bytes_per_second * step))


def _paced(window_ms: int = 10, leaders: dict[Any, int] | None = None, min_bytes: int = 1, max_wait_ms: int = 500,
           partition_bytes: int = 1024 * KIB) -> tuple[FetchPacing, _Fetcher]:
    fetcher = _Fetcher(min_bytes, max_wait_ms)
    pacing = FetchPacing.attach(_Consumer(leaders or {"p0": 1, "p1": 1}, fetcher), window_ms, partition_bytes)
    assert pacing is not None
    return pacing, fetcher


def test_a_high_rate_raises_the_minimum_to_the_windows_worth_and_bounds_the_wait(clock: _Clock) -> None:
    pacing, fetcher = _paced(window_ms=10)
    _read(pacing, clock, 36e6, 2.0)  # 36 MB/s: 360 KB in 10 ms
    assert fetcher._fetch_min_bytes == pacing.paced_min
    assert 0.95 * 360_000 <= fetcher._fetch_min_bytes <= 1.05 * 360_000
    assert fetcher._fetch_max_wait_ms == 30  # three windows, below the configured 500


def test_a_low_rate_leaves_the_configured_fetch_alone(clock: _Clock) -> None:
    pacing, fetcher = _paced(window_ms=10)
    _read(pacing, clock, 3e6, 2.0)  # 30 KB a window: below the 64 KiB floor
    assert (fetcher._fetch_min_bytes, fetcher._fetch_max_wait_ms, pacing.paced_min) == (1, 500, 0)


def test_the_minimum_follows_the_rate_down_when_the_stream_stops(clock: _Clock) -> None:
    pacing, fetcher = _paced(window_ms=10)
    _read(pacing, clock, 36e6, 1.0)
    assert fetcher._fetch_min_bytes > 64 * KIB
    _read(pacing, clock, 0, 0.5, step=0.03)  # empty polls, each held by the broker at most the bounded wait
    assert (fetcher._fetch_min_bytes, fetcher._fetch_max_wait_ms) == (1, 500)


def test_each_broker_is_asked_for_its_share(clock: _Clock) -> None:
    pacing, fetcher = _paced(window_ms=10, leaders={"p0": 1, "p1": 2, "p2": 1, "p3": 2})
    _read(pacing, clock, 36e6, 2.0)
    assert 0.95 * 180_000 <= fetcher._fetch_min_bytes <= 1.05 * 180_000


def test_the_minimum_stays_within_what_one_fetch_can_bring(clock: _Clock) -> None:
    pacing, fetcher = _paced(window_ms=100, leaders={"p0": 1}, partition_bytes=1024 * KIB)
    _read(pacing, clock, 36e6, 2.0)  # 3.6 MB a window, one partition of at most 1 MiB a fetch
    assert fetcher._fetch_min_bytes == 512 * KIB
    assert fetcher._fetch_max_wait_ms == 300


def test_a_configured_minimum_or_wait_is_never_undercut(clock: _Clock) -> None:
    pacing, fetcher = _paced(window_ms=10, min_bytes=1024 * KIB, max_wait_ms=20)
    _read(pacing, clock, 36e6, 2.0)
    assert (fetcher._fetch_min_bytes, fetcher._fetch_max_wait_ms) == (1024 * KIB, 20)


def test_nothing_is_paced_without_partitions_or_a_window(clock: _Clock) -> None:
    fetcher = _Fetcher()
    consumer = _Consumer({}, fetcher)
    pacing = FetchPacing.attach(consumer, 10, 1024 * KIB)
    assert pacing is not None
    _read(pacing, clock, 36e6, 1.0)
    assert fetcher._fetch_min_bytes == 1
    assert FetchPacing.attach(consumer, 0, 1024 * KIB) is None


def test_a_client_without_the_settings_is_left_unpaced() -> None:
    class _Bare:
        _fetcher = object()
    assert FetchPacing.attach(_Bare(), 10, 1024 * KIB) is None
