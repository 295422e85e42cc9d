"""xRegistry errors (core spec "Error Processing"), served as problem details JSON (HTTP binding)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from gateway.errors import GatewayError

SPEC = "https://github.com/xregistry/spec/blob/main/core/"
JSON_TYPE = "application/json"


class ApiError(GatewayError):
    """One error of the spec's list (`code`, its anchor), with its title, subject and args; `detail` and
    `errors` (xgate's extension: each load or compile problem by file, pointer and reason) when given."""

    def __init__(self, status: int, code: str, title: str, subject: str | None = None,
                 args: dict[str, str] | None = None, *, spec: str = "spec.md",
                 headers: dict[str, str] | None = None, detail: str | None = None,
                 errors: list[dict[str, str]] | None = None) -> None:
        super().__init__(title)
        self.status, self.headers, self.code = status, headers or {}, code
        # spec "": a problem the xRegistry spec names no type for (a 401): RFC 9457's `about:blank`, whose
        # meaning is the status code's
        self.body: dict[str, Any] = {"type": f"{SPEC}{spec}#{code}" if spec else "about:blank", "title": title}
        if subject is not None:
            self.body["subject"] = subject
        if args:
            self.body["args"] = args
        if detail:
            self.body["detail"] = detail
        if errors:
            self.body["errors"] = errors

    def response(self) -> web.Response:
        return json_response(self.body, self.status, self.headers)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    text = json.dumps(body, ensure_ascii=False, default=str, indent=2) + "\n"
    return web.Response(text=text, status=status, content_type=JSON_TYPE, charset="utf-8", headers=headers)


def not_found(xid: str) -> ApiError:
    return ApiError(404, "not_found", f"The targeted entity ({xid}) cannot be found.", xid)


def api_not_found(path: str) -> ApiError:
    return ApiError(404, "api_not_found", f"The specified API is not supported: {path}.", path, spec="http.md")
