"""HttpSink: delivers each message as one request to the sink's own uri over one pooled ClientSession.

The body is sent as is with the envelope's headers (order and repeats kept; hop-by-hop fields, Content-Length,
Host and the gateway's own credentials dropped), then the endpoint's static `headers`. A 2xx answer is the
confirmation. Redirects are not followed (CloudEvents webhook 2.2). Concurrent sends share the connection pool
(`connections`); HTTP/1.1 has no batching, keep-alive is what makes it cheap.
"""

from __future__ import annotations

from types import TracebackType

import aiohttp

from gateway.envelope import Envelope
from gateway.errors import TransientAdapterError
from protocol_adapters.base import EndpointConfig
from protocol_adapters.http.errors import client_error, status_error
from protocol_adapters.http.mapping import outgoing_headers
from protocol_adapters.http.options import HttpSinkOptions, sink_options

# enough of an error answer to explain it; the rest is drained by the pool or dropped with the connection
DETAIL_BYTES = 2048


class HttpSink:
    def __init__(self, options: HttpSinkOptions) -> None:
        self.options = options
        self._session: aiohttp.ClientSession | None = None
        query = list(options.query)
        if options.api_key is not None and options.api_key.where == "query":
            query.append((options.api_key.name, options.api_key.value))
        self._query = query
        extra = list(options.headers)
        if options.api_key is not None and options.api_key.where == "header":
            extra.append((options.api_key.name, options.api_key.value))
        self._extra_headers = extra
        self._auth = aiohttp.BasicAuth(*options.basic_auth) if options.basic_auth else None

    async def __aenter__(self) -> HttpSink:
        options = self.options
        connector = aiohttp.TCPConnector(limit=options.connections, ssl=options.ssl or True)
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=options.timeout),
            # the envelope's headers say what the body is; no cookies are carried between messages
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def send(self, envelope: Envelope) -> None:
        session = self._session
        options = self.options
        if session is None:
            raise TransientAdapterError(f"HTTP sink {options.endpoint_id!r} is not open")
        headers = outgoing_headers(envelope)
        if self._extra_headers:
            wanted = {name.lower() for name, _ in self._extra_headers}
            headers = [(n, v) for n, v in headers if n.lower() not in wanted] + self._extra_headers
        try:
            async with session.request(options.method, options.url, data=envelope.body, headers=headers,
                                       params=self._query or None, auth=self._auth,
                                       allow_redirects=False) as response:
                if 200 <= response.status < 300:
                    await response.read()  # small, and it returns the connection to the pool
                    return
                detail = await response.content.read(DETAIL_BYTES)
                raise status_error(options.endpoint_id, options.url, response.status, response.reason, detail)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise client_error(options.endpoint_id, options.url, exc) from exc


def create_sink(config: EndpointConfig) -> HttpSink:
    return HttpSink(sink_options(config))
