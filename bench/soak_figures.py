"""The soak's ledger and figures (bench/soak.py drives the run): what each sequence number is, what happened to
it, and what the run comes to: accounting, recovery and latency per fault, the plot and the printed summary."""

from __future__ import annotations

import os
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from gateway.envelope import Envelope

SAMPLE_SECONDS = 5.0
OUTAGE_SECONDS = 30.0
CALM_FLOOR = 0.1  # s: a sample window with p99 below this (or 3x the p99 before the first fault) is back to normal
LATE_SECONDS = 5.0  # a message of a fault's backlog arriving later than this after the fault's end is late
# traffic.KINDS, index by index: kind_index picks among them
KINDS = ("ok-binary", "ok-structured", "bad-binary", "bad-structured", "unknown-binary", "unknown-structured",
         "malformed")
FAULTS = ("destination broker restart", "source broker restart", "gateway SIGKILL + restart",
          f"destination down {OUTAGE_SECONDS:.0f} s", "gateway SIGTERM + restart")
SHORT = ("dest restart", "source restart", "SIGKILL", f"dest down {OUTAGE_SECONDS:.0f}s", "SIGTERM")


def kind_index(seq: Any) -> Any:
    """Index into KINDS for a sequence number (or an array of them): 8 in 10 conformant, binary and structured
    in turn; the other 2 in 10 cycle through the five nonconformant, unknown and malformed kinds."""
    slot = seq % 10
    return np.where(slot < 8, slot % 2, 2 + ((seq // 10) * 2 + slot - 8) % 5)


class Ledger:
    """Per sequence number: when it was sent, when and where its first copy arrived, how often the gateway
    delivered it. Arrays rather than dicts: half an hour at a few thousand a second is millions of messages.

    A message counts as delivered when the destination stream stored it (the JetStream timestamp of the
    message; the broker runs on this machine, so its clock is ours): that is when the gateway's sink had its
    PubAck, and it keeps this process's reader, which shares two cores with everything else, out of the
    latencies. How far the reader trails is sampled apart (`reader_lag_p99_ms`)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = 0
        self.sent_at = np.empty(0)
        self.arrived_at = np.empty(0)
        self.latency = np.empty(0)
        self.copies = np.empty(0, np.int32)
        self.where = np.empty(0, np.int8)  # destination of the first copy
        self.position = np.empty(0, np.int64)  # its stream sequence there
        self.uncertain = np.empty(0, bool)  # retried after a failure that may have stored it
        self.grow(capacity)
        self.later: dict[int, dict[tuple[int, int], float]] = {}  # further copies: (destination, stream seq) -> stored
        self.arrivals = array("d")  # store time of every delivery (duplicates included, reader redeliveries not)
        self.window: list[float] = []  # reader lag (read - stored) of first copies since the last sample
        self.window_sent = 0
        self.redelivered = 0  # the reader was handed a stream message again (its ack was lost)
        self.foreign = 0  # arrivals without our headers (none expected)
        self.refused = 0  # publishes the source refused for good
        self.reader_errors: list[str] = []

    def grow(self, capacity: int) -> None:
        """Room for sequence numbers below `capacity`; runs between awaits, so the reader never sees it half done."""
        def extend(old: np.ndarray, fill: Any) -> np.ndarray:
            new = np.full(capacity, fill, old.dtype)
            new[:len(old)] = old
            return new
        self.sent_at, self.arrived_at = extend(self.sent_at, np.nan), extend(self.arrived_at, np.nan)
        self.latency, self.copies = extend(self.latency, np.nan), extend(self.copies, 0)
        self.where, self.position = extend(self.where, -1), extend(self.position, 0)
        self.uncertain = extend(self.uncertain, False)
        self.capacity = capacity

    def arrive(self, where: int, message: Envelope, stored: float, now: float) -> None:
        seq = sent = None
        for name, value in message.fields.get("headers") or ():
            if name == "bench-seq":
                seq = int(value)
            elif name == "bench-sent":
                sent = float(value)
        if seq is None or sent is None or not 0 <= seq < self.capacity:
            self.foreign += 1
            return
        position = int(message.position.get("stream_seq", 0))
        if self.copies[seq] == 0:
            self.copies[seq] = 1
            self.where[seq], self.position[seq] = where, position
            self.arrived_at[seq], self.latency[seq] = stored, stored - sent
            self.window.append(now - stored)
        else:
            key, seen = (where, position), self.later.setdefault(seq, {})
            if key == (self.where[seq], self.position[seq]) or key in seen:
                self.redelivered += 1
                return
            seen[key] = stored
            self.copies[seq] += 1
        self.arrivals.append(stored)

    def missing(self, first: int, end: int) -> int:
        """Sent in [first, end) and not arrived yet."""
        return int(np.count_nonzero(~np.isnan(self.sent_at[first:end]) & (self.copies[first:end] == 0)))


# -- figures --------------------------------------------------------------------------------------------------


def percentiles(latency: np.ndarray) -> dict[str, Any]:
    if not len(latency):
        return {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}
    p50, p99 = np.percentile(latency, [50, 99]) * 1000
    return {"count": len(latency), "p50_ms": round(float(p50), 2), "p99_ms": round(float(p99), 2),
            "max_ms": round(float(latency.max()) * 1000, 1)}


def account(ledger: Ledger, expected: np.ndarray) -> dict[str, Any]:
    """Every message of the run, preload included."""
    sent = ~np.isnan(ledger.sent_at)
    arrived = ledger.copies > 0
    extra = np.clip(ledger.copies - 1, 0, None)
    seqs = np.arange(ledger.capacity)
    lost = sent & ~arrived
    return {
        "sent": int(sent.sum()), "delivered": int(arrived.sum()), "duplicated": int(extra.sum()),
        "lost": int(lost.sum()), "misrouted": int((arrived & (ledger.where != expected[kind_index(seqs)])).sum()),
        "refused_by_source": ledger.refused, "uncertain_publishes": int(ledger.uncertain.sum()),
        "duplicated_after_uncertain_publish": int(extra[ledger.uncertain].sum()),
        "reader_redeliveries": ledger.redelivered, "foreign": ledger.foreign, "lost_seqs": seqs[lost][:50].tolist(),
    }


def fill_windows(samples: list[dict[str, Any]], at: np.ndarray, latency: np.ndarray) -> None:
    """Delivered rate and latency percentiles per sample window, from the store times of first copies."""
    order = np.argsort(at)  # NaN (never arrived) sorts last and is never inside a window
    at, latency = at[order], latency[order]
    for row in samples:
        low, high = np.searchsorted(at, [row["t"] - SAMPLE_SECONDS, row["t"]])
        row["delivered_per_s"] = (high - low) / SAMPLE_SECONDS
        chosen = percentiles(latency[low:high])
        row["p50_ms"], row["p99_ms"] = chosen["p50_ms"], chosen["p99_ms"]


def duplicates(ledger: Ledger, started: float) -> np.ndarray:
    """One row per extra copy: sequence number, its destination, first copy stored, this copy stored (soak time)."""
    rows = [(seq, where, ledger.arrived_at[seq] - started, stored - started)
            for seq, copies in ledger.later.items() for (where, _), stored in copies.items()]
    return np.array(rows, dtype=float).reshape(-1, 4)


def analyse(ledger: Ledger, samples: list[dict[str, Any]], done: list[dict[str, Any]],
            run: dict[str, Any]) -> dict[str, Any]:
    started, first = run["soak_start"], run["preload"]
    # the soak's own messages (not the preload), in seconds since the soak started; `due` is each one's place
    # in the schedule, so a message the producer could only send late (source broker away) still counts as
    # part of the backlog of the fault that held it up
    at, latency = ledger.arrived_at[first:] - started, ledger.latency[first:]
    due = np.arange(len(at)) / run["rate"]
    arrivals = np.sort(np.frombuffer(ledger.arrivals, dtype=np.float64)) - started
    extra = duplicates(ledger, started)
    fill_windows(samples, at, latency)

    def between(low: float, high: float) -> np.ndarray:
        chosen: np.ndarray = latency[(at >= low) & (at < high)]
        return chosen

    # latency is back to normal in the first sample window after the backlog whose p99 is under `calm`: 3x the
    # usual window p99 before the first fault (the median, so one window slowed by a neighbour does not count)
    first_fault = done[0]["start"] - started if done else float("inf")
    baseline = [row["p99_ms"] / 1000 for row in samples if row["t"] <= first_fault and row["p99_ms"] is not None]
    calm = max(CALM_FLOOR, 3 * float(np.median(baseline))) if baseline else CALM_FLOOR
    rows, fault_free, calm_from = [], [], 0.0
    for number, fault in enumerate(done, 1):
        start, end = fault["start"] - started, fault["end"] - started
        backlog = at[due <= end]
        drained = max(end, float(np.nanmax(backlog)) if np.any(~np.isnan(backlog)) else end)
        settled = next((row["t"] - SAMPLE_SECONDS for row in samples if row["t"] - SAMPLE_SECONDS >= drained
                        and row["p99_ms"] is not None and row["p99_ms"] <= calm * 1000), drained)
        after = int(np.searchsorted(arrivals, end))
        fault_free.append(between(calm_from, start))
        rows.append({"fault": number, "name": fault["name"], "start_s": round(start, 1), "took_s": round(end - start, 1),
                     "recovery_s": round(float(arrivals[after] - end), 2) if after < len(arrivals) else None,
                     "drained_s": round(drained - end, 1), "settled_s": round(settled - end, 1),
                     "late": int(np.count_nonzero((due <= end) & (at > end + LATE_SECONDS))),
                     "duplicated": int(np.count_nonzero((extra[:, 3] >= start) & (extra[:, 3] < settled))),
                     "before": percentiles(fault_free[-1]), "after": percentiles(between(start, settled)),
                     **{k: v for k, v in fault.items() if k not in ("kind", "name", "start", "end")}})
        calm_from = max(calm_from, settled)
    fault_free.append(between(calm_from, float("inf")))
    rss = [s["rss_mib"] for s in samples if s["rss_mib"] is not None]
    sending = [s for s in samples if s["t"] <= run["sending_done_s"]]
    cpu = {name: round(float(np.mean([s[f"{name}_cpu_pct"] or 0.0 for s in sending])), 1) if sending else None
           for name in ("gateway", "bench", "nats", "machine")}
    return {
        "run": {**{k: v for k, v in run.items() if k not in ("soak_start", "expected")}, "calm_p99_ms": calm * 1000},
        "messages": account(ledger, run["expected"]),
        "rss_mib": {"start": rss[0] if rss else None, "end": rss[-1] if rss else None, "max": max(rss, default=None)},
        "cpu_pct_mean": cpu,
        "latency": {"overall": percentiles(latency[~np.isnan(latency)]),
                    "fault_free": percentiles(np.concatenate(fault_free)),
                    "after_last_fault": percentiles(fault_free[-1])},
        "faults": rows,
        "samples": samples,
        # [seq, destination index, first copy stored s, this copy stored s]: where and when the duplicates came
        "duplicates": np.round(extra[:5000], 3).tolist(),
    }


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    samples = result["samples"]
    t = np.array([s["t"] for s in samples]) / 60

    def series(name: str) -> np.ndarray:
        return np.array([s[name] for s in samples], dtype=float)  # None -> nan: a gap in the line

    figure, (rss, latency, rate) = plt.subplots(3, 1, sharex=True, figsize=(12, 9), constrained_layout=True)
    run = result["run"]
    figure.suptitle(f"xgate soak: {run['minutes']:g} min at {run['rate']:.0f} msg/s (half of {run['max_rate']:.0f}),"
                    f" a fault every {run['fault_every_s']:g} s; NATS JetStream in and out")
    rss.plot(t, series("rss_mib"), color="tab:blue")
    rss.set_ylabel("gateway RSS (MiB)")
    latency.plot(t, series("p50_ms"), label="p50", color="tab:green")
    latency.plot(t, series("p99_ms"), label="p99", color="tab:orange")
    latency.set_yscale("log")
    latency.set_ylabel(f"end-to-end latency (ms)\nper {SAMPLE_SECONDS:g} s window")
    latency.legend(loc="upper left")
    rate.plot(t, series("delivered_per_s"), label="delivered", color="tab:purple")
    rate.plot(t, series("sent_per_s"), label="sent", color="tab:gray", linestyle="--", linewidth=0.8)
    rate.set_ylabel("messages / s")
    rate.set_xlabel("minutes since the soak started")
    rate.legend(loc="upper left")
    for fault in result["faults"]:
        start, end = fault["start_s"] / 60, (fault["start_s"] + fault["took_s"]) / 60
        for axis in (rss, latency, rate):
            axis.axvspan(start, max(end, start + 0.002), color="tab:red", alpha=0.15)
            axis.axvline(start, color="tab:red", linewidth=0.8)
        rss.annotate(f"{fault['fault']}: {SHORT[FAULTS.index(fault['name'])]}", xy=(start, 1.0),
                     xycoords=("data", "axes fraction"), xytext=(3, -3), textcoords="offset points",
                     va="top", fontsize=8, color="tab:red", rotation=90)
    for axis in (rss, latency, rate):
        axis.grid(True, alpha=0.3)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def render(result: dict[str, Any]) -> str:
    run, m, rss, lat, cpu = result["run"], result["messages"], result["rss_mib"], result["latency"], result["cpu_pct_mean"]

    def ms(block: dict[str, Any]) -> str:
        return "-" if block["p50_ms"] is None else f"{block['p50_ms']:.1f} / {block['p99_ms']:.1f}"

    lines = [
        (f"soak: {run['minutes']:g} min at {run['rate']:.0f} msg/s (max rate {run['max_rate']:.0f} msg/s on "
         f"{run['preload']} preloaded), a fault every {run['fault_every_s']:g} s; {run['gateways_started']} gateways"),
        (f"messages  sent {m['sent']}  delivered {m['delivered']}  duplicated {m['duplicated']}  lost {m['lost']}  "
         f"misrouted {m['misrouted']}"),
        (f"          uncertain publishes {m['uncertain_publishes']} (duplicated "
         f"{m['duplicated_after_uncertain_publish']})  reader redeliveries {m['reader_redeliveries']}  "
         f"refused by source {m['refused_by_source']}"),
        f"RSS MiB   start {rss['start']}  end {rss['end']}  max {rss['max']}",
        (f"CPU %     mean while sending, of one core: gateway {cpu['gateway']}, this process {cpu['bench']}, "
         f"both nats-servers {cpu['nats']}; whole machine {cpu['machine']} of {100 * (os.cpu_count() or 1)}"),
        (f"latency   p50 / p99 ms: overall {ms(lat['overall'])}, fault-free {ms(lat['fault_free'])}, "
         f"after the last fault settled {ms(lat['after_last_fault'])}"),
        ("per fault, seconds from its end: recovery = first delivery; drained = its backlog is through; settled = "
         f"p99 back under {run['calm_p99_ms']:.0f} ms;"),
        (f"late = backlog messages later than {LATE_SECONDS:g} s; dups = copies delivered until settled; latency "
         "before = the fault-free stretch before it, after = from its start until settled"),
        (f"{'fault':<30} {'at s':>6} {'took s':>6} {'recovery':>8} {'drained':>7} {'settled':>7} {'late':>6} "
         f"{'dups':>5} {'before p50/p99 ms':>18} {'after p50/p99 ms':>18}"),
    ]
    for row in result["faults"]:
        recovery = "-" if row["recovery_s"] is None else f"{row['recovery_s']:.2f}"
        lines.append(f"{row['fault']}: {row['name']:<27} {row['start_s']:>6.0f} {row['took_s']:>6.1f} {recovery:>8} "
                     f"{row['drained_s']:>7.1f} {row['settled_s']:>7.1f} {row['late']:>6} {row['duplicated']:>5} "
                     f"{ms(row['before']):>18} {ms(row['after']):>18}")
        if "exit_code" in row:
            lines.append(f"   SIGTERM: exit code {row['exit_code']} after {row['drain_s']:.1f} s")
    lines.append(f"lost: {m['lost']}" + ("" if not m["lost"] else f" (first: {m['lost_seqs'][:10]})"))
    return "\n".join(lines)
