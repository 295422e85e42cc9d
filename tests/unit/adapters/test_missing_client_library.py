"""Without a protocol's extra, only building that protocol's source or sink fails, with the install hint:
the Spark runner and the option readers load without the client library (protocol_adapters/lazy.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# run in a fresh interpreter, where `None` in sys.modules makes `import aiokafka` fail as if it were not installed
WITHOUT_AIOKAFKA = textwrap.dedent("""
    import sys
    sys.modules["aiokafka"] = None

    import gateway.spark.routing
    import gateway.spark.streaming
    from gateway.errors import GatewayError
    from protocol_adapters import registry
    from protocol_adapters.base import EndpointConfig

    config = EndpointConfig("telemetry.in", "KAFKA", ("127.0.0.1:9092",), {"topic": "t"})
    for build in (registry.create_source, registry.create_sink):
        try:
            build(config)
        except GatewayError as exc:
            print("refused:", exc)
    print("problem:", registry.option_problems(config, "source")[0].reason)
""")


def test_without_aiokafka_the_spark_runner_loads_and_a_kafka_adapter_names_its_extra() -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_AIOKAFKA], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr
    hint = "the KAFKA adapter needs an optional dependency (aiokafka): pip install 'xgate[kafka]'"
    assert done.stdout.splitlines() == [f"refused: {hint}", f"refused: {hint}", f"problem: {hint}"], done.stdout
