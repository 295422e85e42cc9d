"""A qpid-proton Container on its own thread, bridged to asyncio, keeping one link connected.

proton's reactor is not thread-safe and blocks in select(), so it runs on a
dedicated thread. Work goes in through `call` (a lock-guarded queue plus one
`EventInjector` wake-up, coalesced so a burst of sends costs one pipe write)
and results come out through `notify` (the same pattern over
`loop.call_soon_threadsafe`). Nothing here ever blocks the event loop.

The bridge owns the connection lifecycle: connect, open one session and the
link the `LinkDriver` asks for, and when any of them is lost, tell the driver
and reconnect after an exponential backoff with jitter. proton's own
reconnect is off: it would re-attach links whose unsettled deliveries are
stale, whereas a fresh connection per attempt makes "everything from the
previous generation is void" easy to reason about.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from proton import Connection, Event, Handler, Link, SSLDomain, Terminus, symbol
from proton.reactor import ApplicationEvent, Container, EventInjector

from gateway.errors import AdapterError, TransientAdapterError
from protocol_adapters.amqp.errors import condition_error, queue_mismatch
from protocol_adapters.amqp.options import AmqpOptions

_WAKE = "xgate_wake"
ApplicationEvent(_WAKE)  # registers the event type once, at import, rather than racing on two threads
SHUTDOWN_GRACE = 2.0  # seconds the close handshake may take before the reactor is stopped anyway


class LinkDriver(Protocol):
    """The link-specific half, called on the proton thread only."""

    def open_link(self, connection: Connection, name: str) -> Link: ...

    def connecting(self) -> None: ...

    def ready(self, link: Link, generation: int) -> None: ...

    def lost(self, error: AdapterError, generation: int) -> None: ...

    def gave_up(self, error: AdapterError) -> None: ...

    def delivery(self, event: Event) -> None: ...

    def flow(self, event: Event) -> None: ...

    def closing(self) -> None: ...


def configure_terminus(terminus: Terminus, address: str, options: AmqpOptions) -> None:
    terminus.address = address
    if options.terminus_durable:
        terminus.durability = Terminus.CONFIGURATION


def link_properties(options: AmqpOptions) -> dict[Any, Any] | None:
    return {symbol(k): v for k, v in options.link_properties} or None


class _Timer(Handler):
    def __init__(self, action: Callable[[], None]) -> None:
        self._action = action

    def on_timer_task(self, event: Event) -> None:
        self._action()


class ProtonBridge(Handler):
    def __init__(self, options: AmqpOptions, driver: LinkDriver, loop: asyncio.AbstractEventLoop, role: str) -> None:
        self.options = options
        self.driver = driver
        self.role = role
        self._loop = loop
        container_args = {"container_id": options.container_id} if options.container_id else {}
        self.container = Container(self, **container_args)
        self._injector = EventInjector()
        self.container.selectable(self._injector)
        self._calls: deque[Callable[[], None]] = deque()
        self._calls_lock = threading.Lock()
        self._wake_pending = False
        self._finished = False
        self._results: deque[tuple[Callable[..., None], tuple[Any, ...]]] = deque()
        self._results_lock = threading.Lock()
        self._results_pending = False
        self.done: asyncio.Future[None] = loop.create_future()
        self._thread = threading.Thread(target=self._run, name=f"xgate-amqp-{role}-{options.endpoint_id}",
                                        daemon=True)
        # proton-thread state
        self.generation = 0
        self._connection: Connection | None = None
        self._link: Link | None = None
        self._attempt = 0
        self._url_index = 0
        self._connect_timer: Any = None
        self._reconnect_timer: Any = None
        self._closing = False
        self._gave_up = False
        self._ready = False  # the current link is attached: later conditions are not configuration errors

    # -- any thread ---------------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self._finished

    def start(self) -> None:
        self._thread.start()

    def call(self, action: Callable[[], None]) -> bool:
        """Run `action` on the proton thread, in submission order. False when the bridge has ended."""
        with self._calls_lock:
            if self._finished:
                return False
            self._calls.append(action)
            if not self._wake_pending:
                # under the lock: the pipe is closed under it too. One byte per drain cycle, so never full
                self._wake_pending = True
                self._injector.trigger(ApplicationEvent(_WAKE))
        return True

    def notify(self, action: Callable[..., None], *args: Any) -> None:
        """Run `action(*args)` on the event loop, in submission order (from the proton thread)."""
        with self._results_lock:
            self._results.append((action, args))
            if self._results_pending:
                return
            self._results_pending = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._deliver_results)

    async def close(self) -> None:
        """Close the link and connection (the driver settles what it must first) and end the thread."""
        if self._thread.ident is not None and self.call(self._shutdown):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.done), SHUTDOWN_GRACE + 3.0)

    # -- event loop ---------------------------------------------------------------------------------------

    def _deliver_results(self) -> None:
        with self._results_lock:
            results, self._results = self._results, deque()
            self._results_pending = False
        for action, args in results:
            try:
                action(*args)
            except Exception as exc:  # one faulty callback must not drop the others
                self._loop.call_exception_handler({"message": "xgate AMQP callback failed", "exception": exc})

    # -- proton thread ------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self.container.run()
        except BaseException as exc:  # a handler bug must not leave callers waiting forever
            with contextlib.suppress(Exception):
                self.driver.gave_up(TransientAdapterError(f"AMQP {self.role} thread failed: {exc!r}"))
        finally:
            with self._calls_lock:
                self._finished = True
                self._calls.clear()
            for fd in self._injector.pipe:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.notify(self._ended)

    def _ended(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def _guarded(self, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # start over on a fresh connection, not a half-done reactor
            error = TransientAdapterError(f"AMQP {self.role}: internal error {exc!r}")
            if self._connection is not None:
                self._lose(error)
            elif self._reconnect_timer is None and not (self._closing or self._gave_up):
                self._attempt_failed(error)

    def on_reactor_init(self, event: Event) -> None:
        self._guarded(self._connect)

    def on_xgate_wake(self, event: Event) -> None:
        with self._calls_lock:
            calls, self._calls = self._calls, deque()
            self._wake_pending = False
        for action in calls:
            self._guarded(action)

    def _ssl_domain(self) -> SSLDomain | None:
        tls = self.options.tls
        if tls is None:
            return None
        domain = SSLDomain(SSLDomain.MODE_CLIENT)
        if tls.ca_file:
            domain.set_trusted_ca_db(tls.ca_file)
        if tls.cert_file:
            domain.set_credentials(tls.cert_file, tls.key_file or tls.cert_file, None)
        domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME if tls.verify else SSLDomain.ANONYMOUS_PEER)
        return domain

    def _connect(self) -> None:
        self._reconnect_timer = None
        if self._closing or self._gave_up:
            return
        options = self.options
        url = options.urls[self._url_index % len(options.urls)]
        self._url_index += 1
        self.generation += 1
        self._ready = False
        self.driver.connecting()
        parts = urlsplit(url)
        try:  # proton resolves inside a handler where a failure would end the reactor: check first
            socket.getaddrinfo(parts.hostname, parts.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            self._attempt_failed(TransientAdapterError(f"AMQP {self.role}: cannot resolve {parts.hostname}: {exc}"))
            return
        try:
            ssl_domain = self._ssl_domain()
        except Exception as exc:  # unreadable or invalid certificate files: same on every attempt
            self._attempt_failed(AdapterError(f"AMQP {self.role}: TLS settings: {exc}"))
            return
        kwargs: dict[str, Any] = {"reconnect": False, "ssl_domain": ssl_domain}
        if options.heartbeat:
            kwargs["heartbeat"] = options.heartbeat
        if options.username:
            kwargs["user"] = options.username
            kwargs["password"] = options.password or ""
        if options.sasl_mechanisms:
            kwargs["allowed_mechs"] = options.sasl_mechanisms
        elif options.username:
            # credentials given: PLAIN only, so a refused password is refused (proton would otherwise go on to
            # ANONYMOUS, which RabbitMQ's AMQP 1.0 plugin admits as its default user)
            kwargs["allowed_mechs"] = "PLAIN"
        if options.virtual_host:
            kwargs["virtual_host"] = options.virtual_host
        if options.connection_properties:
            kwargs["properties"] = {symbol(k): v for k, v in options.connection_properties}
        connection = self.container.connect(url, **kwargs)
        self._connection = connection
        name = f"xgate-{self.role}-{options.endpoint_id}-{os.getpid()}-{id(self):x}-{self.generation}"
        self._link = self.driver.open_link(connection, name)
        generation = self.generation
        self._connect_timer = self.container.schedule(
            options.connect_timeout, _Timer(lambda: self._connect_timed_out(generation)))

    def _attempt_failed(self, error: AdapterError) -> None:
        """An attempt that ended before a connection existed."""
        with contextlib.suppress(Exception):
            self.driver.lost(error, self.generation)
        self._after_loss(error)

    def _connect_timed_out(self, generation: int) -> None:
        if generation == self.generation and self._connection is not None:
            self._lose(TransientAdapterError(f"AMQP {self.role}: no attach within {self.options.connect_timeout}s"))

    def _current(self, event: Event) -> bool:
        return self._connection is not None and event.connection == self._connection

    def on_link_remote_open(self, event: Event) -> None:
        link = event.link
        if link is None or not self._current(event) or link != self._link or self._closing:
            return
        terminus = link.remote_target if link.is_sender else link.remote_source
        if terminus is None or terminus.address is None:
            return  # a refused attach: the detach with its error follows
        if self._connect_timer is not None:
            self._connect_timer.cancel()
            self._connect_timer = None
        self._attempt = 0
        self._ready = True
        self._guarded(lambda: self.driver.ready(link, self.generation))

    def on_link_flow(self, event: Event) -> None:
        if self._current(event) and event.link == self._link:
            self._guarded(lambda: self.driver.flow(event))

    def on_delivery(self, event: Event) -> None:
        if self._current(event) and event.link == self._link:
            self._guarded(lambda: self.driver.delivery(event))

    def on_link_remote_close(self, event: Event) -> None:
        if self._current(event) and event.link == self._link:
            self._remote_closed("link", event.link)

    def on_session_remote_close(self, event: Event) -> None:
        if self._current(event):
            self._remote_closed("session", event.session)

    def on_connection_remote_close(self, event: Event) -> None:
        if self._current(event):
            self._remote_closed("connection", event.connection)

    def _remote_closed(self, what: str, endpoint: Any) -> None:
        condition = endpoint.remote_condition
        description = condition.description if condition else None
        mismatch = queue_mismatch(self.options.endpoint_id, self.options.node, description)
        self._lose(mismatch or condition_error(f"{self.role} {what} closed by the broker",
                                               condition.name if condition else None, description))

    def on_transport_closed(self, event: Event) -> None:
        if not self._current(event):
            return
        condition = event.transport.condition if event.transport is not None else None
        self._lose(condition_error(f"{self.role} connection to {self.options.urls[0]} lost",
                                   condition.name if condition else None,
                                   condition.description if condition else None))

    def _lose(self, error: AdapterError) -> None:
        """The current connection is gone or unusable: void its generation, then reconnect or give up.

        A non-retriable condition gives up only while attaching (credentials, address, queue arguments).
        Once the link was attached, the broker ending the session is about a message (RabbitMQ ends it on a
        user-id that is not the authenticated user, for one): the driver hears the condition, and the
        bridge reconnects.
        """
        connection = self._connection
        if connection is None:
            return
        self._connection = None
        self._link = None
        if self._connect_timer is not None:
            self._connect_timer.cancel()
            self._connect_timer = None
        with contextlib.suppress(Exception):
            connection.close()
        with contextlib.suppress(Exception):
            self.driver.lost(error, self.generation)
        if self._ready and not error.retriable:
            error = TransientAdapterError(str(error))
        self._after_loss(error)

    def _after_loss(self, error: AdapterError) -> None:
        if self._closing:
            self.container.stop()
            return
        if not error.retriable:
            self._gave_up = True
            with contextlib.suppress(Exception):
                self.driver.gave_up(error)
            return
        base = min(self.options.reconnect_max_delay, self.options.reconnect_delay * (2 ** min(self._attempt, 30)))
        self._attempt += 1
        self._reconnect_timer = self.container.schedule(base * random.uniform(0.5, 1.0), _Timer(self._connect))

    def _shutdown(self) -> None:
        self._closing = True
        for timer in (self._connect_timer, self._reconnect_timer):
            if timer is not None:
                timer.cancel()
        with contextlib.suppress(Exception):
            self.driver.closing()
        if self._connection is None:
            self.container.stop()
            return
        if self._link is not None:
            self._link.close()
        self._connection.close()
        self.container.schedule(SHUTDOWN_GRACE, _Timer(self.container.stop))
