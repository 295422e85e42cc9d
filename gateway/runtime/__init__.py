"""The running gateway: routes from gateway.yaml, one pipeline per route (receive, judge, route, deliver, then
acknowledge), the engine that runs them in one TaskGroup, reload, replay and the `--workers` supervisor."""
