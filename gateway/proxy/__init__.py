"""`xgate proxy`: a Kafka wire-protocol proxy in front of a cluster that refuses nonconformant produced records in
the produce response, before they land (issue 32). wire.py and schemas.py read and write the protocol,
protocol.py says what changes in passing, judging.py what a topic is judged by, server.py the connections,
dead_letters.py the copies the `observe` policy keeps.
"""
