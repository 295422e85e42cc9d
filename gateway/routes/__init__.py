"""Routes: which source endpoint's verdicts go where, resolved from the documents and gateway.yaml before
anything connects. resolve (gateway.yaml routes and `xgate.route.*` labels -> Route), exactly_once (the
endpoints of an exactly-once route joined in one transaction), credentials (what documents must not carry),
endpoint_checks (each routed endpoint through its adapter's options reader). Below the services: the
runtime runs these routes, the registry API's writes check a candidate's routes the same way.
"""
