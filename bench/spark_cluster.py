"""The streaming runner on a two-worker standalone Spark cluster (deploy/spark/cluster.sh), for bench/spark.py.

A SparkSession's master is fixed for its process, and bench/spark.py's session is `local[2]`, so the cluster's
driver is a child process that bench/spark.py keeps for the whole run and asks for one round at a time over
its stdin: the cluster's rounds interleave with the other candidates' like theirs do. Its executors run the
venv's Python, which has the native core installed (the wheel installed on the workers, deploy/spark/README.md);
build_session sets XGATE_REQUIRE_CORE on them, so an executor that cannot import xgate_core fails the round
instead of judging in Python, and the child reports every executor's Python and core file before the first round.

    python -m bench.spark_cluster --master spark://127.0.0.1:7077 --config DIR [--executors 2] [--max-offsets N]

The child answers on stdout with lines `@xgate-bench {json}`: first {"executors": [...]}, then per `run` line
{"seconds", "records", "verdicts", "phases", "batches"}, timed as kafka-runner is (writer, query, to its end).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "deploy" / "spark" / "cluster.sh"
MARK = "@xgate-bench "
MASTER = f"spark://127.0.0.1:{os.environ.get('XGATE_SPARK_PORT', '7077')}"


class ClusterRunner:
    """The parent's side: the cluster (started now, in the background), the child driver, one round per call."""

    def __init__(self, work: Path) -> None:
        self.work = work
        # a cluster that already runs (someone's) is used and left running; one this run starts is stopped
        self.ours = subprocess.run(["bash", str(SCRIPT), "status"], capture_output=True, check=False).returncode != 0
        self.starting: subprocess.Popen[bytes] | None = subprocess.Popen(["bash", str(SCRIPT), "start"], cwd=ROOT)
        self.child: subprocess.Popen[str] | None = None
        self.log = work / "cluster-driver.log"
        self.executors: list[dict[str, Any]] = []
        self.verdicts: dict[str, int] = {}
        self.phases: dict[str, float] = {}

    def connect(self, config: Path, count: int, max_offsets: int, executors: int = 2) -> ClusterRunner:
        """Wait for the cluster, start the child driver and wait for its executors' report."""
        assert self.starting is not None
        if self.starting.wait() != 0:
            raise RuntimeError(f"deploy/spark/cluster.sh start failed (exit {self.starting.returncode}); see above")
        self.starting = None
        self.count = count
        with open(self.log, "w") as log:
            self.child = subprocess.Popen(
                [sys.executable, "-m", "bench.spark_cluster", "--master", MASTER, "--config", str(config),
                 "--executors", str(executors), "--max-offsets", str(max_offsets), "--work", str(self.work)],
                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
        report = self._answer()
        self.executors = report["executors"]
        if len(self.executors) < executors:
            raise RuntimeError(f"tasks reached {len(self.executors)} of {executors} executors: {self.executors}")
        missing = [e for e in self.executors if not e["core"]]
        if missing:
            raise RuntimeError(f"executors without the native core: {missing}")
        return self

    def __call__(self) -> float:
        assert self.child is not None and self.child.stdin is not None
        self.child.stdin.write("run\n")
        answer = self._answer()
        if answer["records"] != self.count:
            raise RuntimeError(f"the cluster's runner judged {answer['records']} of {self.count}")
        self.verdicts = answer["verdicts"]
        self.phases = dict(answer["phases"], **{"micro-batches": answer["batches"]})
        return float(answer["seconds"])

    def _answer(self) -> dict[str, Any]:
        assert self.child is not None and self.child.stdout is not None
        for line in self.child.stdout:
            if line.startswith(MARK):
                answer: dict[str, Any] = json.loads(line[len(MARK):])
                if "error" in answer:
                    raise RuntimeError(f"the cluster's driver failed: {answer['error']} (its log: {self.log})")
                return answer
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"the cluster's driver exited ({self.child.wait()}); {self.log}:\n{tail}")

    def close(self) -> None:
        if self.child is not None:
            if self.child.stdin is not None:
                self.child.stdin.close()  # end of input: the child stops its session and exits
            try:
                self.child.wait(60)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
        if self.starting is not None:
            self.starting.wait()
        if self.ours:
            subprocess.run(["bash", str(SCRIPT), "stop"], cwd=ROOT, check=False)


def emit(out: IO[str], answer: dict[str, Any]) -> None:
    out.write(MARK + json.dumps(answer, default=str) + "\n")
    out.flush()


def executor_reports(spark: Any, executors: int, timeout: float = 120) -> list[dict[str, Any]]:
    """Each executor's Python, core file and working directory (its worker's work-dir/app/executor), once
    `executors` have registered: one small task per slot, over and over, until every executor answered."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout
    while len(tracker.getExecutorInfos()) < executors + 1:  # the driver is listed too
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(tracker.getExecutorInfos()) - 1} of {executors} executors registered "
                               f"within {timeout:.0f} s")
        time.sleep(0.2)
    seen: dict[str, dict[str, Any]] = {}
    while len(seen) < executors and time.monotonic() < deadline:
        slots = spark.sparkContext.defaultParallelism * 2
        for report in spark.sparkContext.parallelize(range(slots), slots).map(lambda _: _located()).collect():
            seen[report["cwd"]] = report  # an executor's own directory: WORK_DIR/APP_ID/EXECUTOR_ID
    return sorted(seen.values(), key=lambda r: r["cwd"])


def _located() -> dict[str, Any]:
    from gateway.spark.shipping import core_report

    return dict(core_report(), cwd=os.getcwd())


def serve(args: argparse.Namespace) -> int:
    """The child: one session on the cluster, the runner's plan, then a round per `run` line until stdin ends."""
    from gateway.settings import load_settings
    from gateway.spark import bundle_from_paths
    from gateway.spark.batch import build_session
    from gateway.spark.streaming import BatchWriter, plan_stream, start_query

    out = sys.stdout
    sys.stdout = sys.stderr  # anything else printed goes to the log, not into the answers
    snapshot, bundle = bundle_from_paths([args.config])
    settings, _ = load_settings(args.config)
    plan = plan_stream(snapshot, settings, bundle)
    spark = build_session(args.master, "xgate-bench-cluster", kafka=True)
    try:
        emit(out, {"executors": executor_reports(spark, args.executors)})
        for index, line in enumerate(sys.stdin):
            if line.strip() != "run":
                break
            with open(os.devnull, "w") as quiet:
                started = time.perf_counter()
                writer = BatchWriter(plan, None, out=quiet)  # as kafka-runner: one pass, no audit
                query = start_query(spark, plan, writer, checkpoint=str(args.work / f"cluster-runner-{index}"),
                                    starting="earliest", max_offsets=args.max_offsets, trigger_seconds=0,
                                    available_now=True)
                writer.follow(query)
                seconds = time.perf_counter() - started
            if query.exception() is not None:
                emit(out, {"error": str(query.exception())})
                return 1
            totals = writer.totals
            emit(out, {"seconds": seconds, "records": totals.records, "verdicts": dict(totals.verdicts),
                       "phases": dict(totals.phases), "batches": totals.batches})
    except Exception as exc:  # noqa: BLE001 - whatever it is, the parent raises it with the log's name
        emit(out, {"error": f"{type(exc).__name__}: {exc}"})
        return 1
    finally:
        spark.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--master", default=MASTER)
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--executors", type=int, default=2)
    parser.add_argument("--max-offsets", type=int, default=20000)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()))
    return serve(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
