"""Every `xgate` command, one module each; gateway/cli.py assembles them into one parser.

run, capture, replay: the service and its incident tools (the service itself: gateway/runtime/service.py);
check, explain, diff, lint, infer, export: the offline tools; scaffold: `xgate init`; spark: the Spark runner.
startup.py is the one start-up they share, exit_code.py the one table of exit codes.
"""
