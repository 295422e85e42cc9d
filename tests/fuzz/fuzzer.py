"""The atheris child process: `python -m tests.fuzz.fuzzer TARGET CORPUS_DIR [libFuzzer flags]`.

Instruments the gateway and the protocol mappings (coverage feedback), builds the ruleset once, adds the seeds
to the corpus, and fuzzes one target (or `mixed`: all of them, the first byte choosing). libFuzzer exits the
process when done; an uncaught exception or an input over the stall limit is a crash.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris


def main() -> None:
    target_name, corpus = sys.argv[1], Path(sys.argv[2])
    with atheris.instrument_imports(include=["gateway", "protocol_adapters"]):
        from tests.fuzz import seeds, targets

        targets.ruleset()  # compiles every schema: the lazily imported validators get instrumented too
        targets.payload_validators()
        targets.endpoints_for("")
    seeds.write(target_name, corpus)  # named by content: writing them again changes nothing
    target = targets.every_target if target_name == "mixed" else targets.TARGETS[target_name]
    stall = max(1, int(targets.STALL_SECONDS + 0.999))
    atheris.Setup([sys.argv[0], str(corpus), f"-timeout={stall * 5}", *sys.argv[3:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
