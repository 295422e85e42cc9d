"""`xgate check`'s loop (gateway/check.py check_stream): bulk reads, orjson verdict lines equal to as_dict."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from gateway.check import Summary, check_stream, judge_lines
from tests.unit.builders import ce_message, kafka_ce, load_doc, registry


def test_every_line_gets_the_verdict_judge_lines_gives_in_order(tmp_path: Path) -> None:
    loaded = load_doc(tmp_path, registry("KAFKA", {"m": ce_message("t", {"n": {"type": "integer"}})}))
    records: list[Any] = [kafka_ce("t"), kafka_ce("x"), kafka_ce("t", extra_headers={"ce_n": "1" + "0" * 30})]
    lines = [json.dumps(r) + "\n" for r in records] * 3 + ["\n", "not json\n", "[1]\n"]
    lines *= 400  # past one chunk of reading: CHUNK_BYTES
    out = io.BytesIO()
    summary = Summary()
    check_stream(loaded.ruleset, io.StringIO("".join(lines)), out, summary)
    written = [json.loads(line) for line in out.getvalue().splitlines()]
    expected = [v.as_dict() for v in judge_lines(loaded.ruleset, lines)]
    assert json.loads(json.dumps(expected, default=str)) == written
    assert summary.total == len(written) == 11 * 400
    assert summary.by_verdict["conformant"] == 3 * 400
