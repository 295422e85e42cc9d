"""The file spark-submit runs: `xgate spark` with the arguments after it (see deploy/spark/README.md)."""

import sys

from gateway.cli import main

if __name__ == "__main__":
    sys.exit(main(["spark", *sys.argv[1:]]))
