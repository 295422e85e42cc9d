"""Run the coverage-guided fuzzer (atheris, libFuzzer) over tests/fuzz/targets.py.

    python -m tests.fuzz --seconds 600                 # every target, 600 s each, one after the other
    python -m tests.fuzz --seconds 60 --target payload # one target
    python -m tests.fuzz --seconds 15 --target mixed   # all targets in one run (what `make test` does)

The corpus grows under build/fuzz/corpus/<target> (seeded from tests/fuzz/seeds.py); an input that raises or
takes longer than STALL_SECONDS is written to build/fuzz/crashes/<target>/ and the run exits 1. Each run
ends with one line: the target, inputs tried, seconds, and the outcome. Without atheris installed (it is in
the `dev` extra), the hypothesis tests in this folder still run the same targets.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "fuzz"
_DONE = re.compile(r"Done (\d+) runs in (\d+) second")


def run_target(target: str, seconds: int, *, quiet: bool = True) -> tuple[bool, int, str]:
    """(passed, inputs tried, libFuzzer's output) of one fuzzing run in a child process (atheris exits)."""
    corpus = BUILD / "corpus" / target
    crashes = BUILD / "crashes" / target
    corpus.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "tests.fuzz.fuzzer", target, str(corpus), f"-max_total_time={seconds}",
               f"-artifact_prefix={crashes}/", "-max_len=8192", "-rss_limit_mb=3072", "-print_final_stats=1"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, errors="replace",
                          timeout=seconds + 300, check=False)
    output = done.stdout + done.stderr
    if not quiet:
        print(output, file=sys.stderr)
    runs = sum(int(m.group(1)) for m in _DONE.finditer(output))
    return done.returncode == 0, runs, output


def main(argv: list[str] | None = None) -> int:
    from tests.fuzz.targets import TARGETS

    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="fuzzing time per target")
    parser.add_argument("--target", default="all", choices=["all", "mixed", *TARGETS])
    parser.add_argument("--verbose", action="store_true", help="print libFuzzer's output")
    args = parser.parse_args(argv)
    targets = list(TARGETS) if args.target == "all" else [args.target]
    failed = False
    for target in targets:
        passed, runs, output = run_target(target, args.seconds, quiet=not args.verbose)
        print(f"{target}: {runs} inputs in {args.seconds} s, {'no crash' if passed else 'CRASH'}")
        if not passed:
            failed = True
            print(output[-4000:], file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
