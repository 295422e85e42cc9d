"""deploy/spark/submit.sh really submits: spark-submit (from the pyspark wheel) runs xgate_spark.py in local mode.

The JVM Kafka connector cannot be downloaded here, so the test submits with no --packages and
judges data at rest (--batch); the output must equal `xgate check --format table`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from gateway.testing.traffic import generate

REPO = Path(__file__).resolve().parents[2]
SUBMIT = REPO / "deploy" / "spark" / "submit.sh"


def test_submit_script_runs_the_runner_and_matches_check(tmp_path: Path) -> None:
    import json

    messages = tmp_path / "messages.jsonl"
    messages.write_text("".join(json.dumps(r) + "\n" for r in generate(400, seed=4)), "utf-8")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "XGATE_SPARK_PACKAGES": "", "PYTHON": sys.executable, "PYSPARK_PYTHON": sys.executable,
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(["bash", str(SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false", "--",
                           "--batch", "--config", str(REPO / "config" / "demo"), "--format", "table", str(messages)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    check = subprocess.run([sys.executable, "-m", "gateway.cli", "check", "--registry", str(REPO / "config" / "demo"),
                            "--format", "table", str(messages)], capture_output=True, text=True, cwd=REPO,
                           timeout=120, check=False)
    assert done.returncode == check.returncode == 1, done.stderr[-3000:]
    assert done.stdout == check.stdout
    assert (REPO / "build" / "xgate-spark.zip").is_file()
