"""Dependencies point down the layers: no module imports one of a higher layer (lazy imports included).

Each top-level module or package of gateway/ (and protocol_adapters/) sits on one layer; a module may import
its own layer and those below. A new top-level module must be given its layer here, which is where a reader
learns what it may use.
"""

from __future__ import annotations

from tests.unit.test_import_cycles import import_graph

LAYERS: tuple[tuple[str, ...], ...] = (
    # the floor: plain values and readers every layer shares (sections: gateway.yaml sections the services share)
    ("gateway", "errors", "exit_code", "config_values", "durable", "logs", "bindings", "envelope", "verdict",
     "limits", "jsontext", "model", "sections", "pointers", "backoff", "collector", "ports"),
    # reading: documents, settings, recorded messages, CloudEvents; the protocol adapters
    ("loader", "schemaregistry", "settings", "recorded", "cloudevents", "protocol_adapters"),
    # judging and resolving: the compiler, the offline judging loop, inference, the routes
    ("compiler", "check", "explanation", "infer", "routes", "compat"),
    # services a running gateway serves
    ("registry_api", "metrics"),
    # running: the gateway's runtime, its web console, the Kafka wire proxy, the Spark runner, the demo
    ("runtime", "console", "proxy", "spark", "testing"),
    # the command line
    ("commands", "cli"),
)
LAYER = {name: index for index, names in enumerate(LAYERS) for name in names}


def _top(module: str) -> str:
    """gateway.runtime.engine -> runtime; protocol_adapters.kafka.sink -> protocol_adapters; gateway -> gateway."""
    package, _, rest = module.partition(".")
    return rest.partition(".")[0] if package == "gateway" and rest else package


def upward_arrows() -> list[str]:
    arrows = []
    for module, targets in import_graph().items():
        for target in targets:
            if LAYER[_top(target)] > LAYER[_top(module)]:
                arrows.append(f"{module} -> {target}")
    return sorted(arrows)


def test_every_top_level_module_has_a_layer() -> None:
    assert {_top(module) for module in import_graph()} - set(LAYER) == set()


def test_no_import_runs_up_the_layers() -> None:
    assert upward_arrows() == []
