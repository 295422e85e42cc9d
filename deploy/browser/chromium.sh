#!/usr/bin/env bash
# Debian's Chromium and ChromeDriver for the console's browser tests (tests/integration/test_console_browser.py):
# installed from the distribution's packages when missing; no test downloads a browser of its own.
#   bash deploy/browser/chromium.sh install
# shellcheck source=../brokers/lib.sh
set -euo pipefail
source "$(dirname "$0")/../brokers/lib.sh"

case "${1:-install}" in
  install)
    if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
      exit 0
    fi
    apt_install chromium chromium-driver || {
      echo "could not install chromium and chromium-driver (apt-get install chromium chromium-driver)" >&2
      exit 1
    }
    ;;
  *)
    echo "usage: $0 install" >&2
    exit 2
    ;;
esac
