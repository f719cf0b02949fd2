"""The layer table of docs/architecture.md, enforced by parsing every module's imports.

Each installed module belongs to the layer with the longest matching prefix in ``LAYERS``; a
layer may import only the project layers listed for it. The cores are also sans-IO: they import
no IO or clock modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Where each installed package's files live in the repository (corral/master etc. are links).
PACKAGE_DIRS = {
    "corral": ROOT / "corral",
    "corral.master": ROOT / "master",
    "corral.agent": ROOT / "agent",
    "corral.frameworks": ROOT / "frameworks",
}
# What the master, the agent and the SDK share, kept in the kernel (base install: stdlib, grpc,
# structlog; kazoo lazily) and re-exported under the SDK's old names: the leader record and the
# detectors, the ZooKeeper election and its fence, client TLS (TLS home, credential loading,
# peer roles), one JSON reader with one set of bounds for every HTTP API.
SDK_KERNEL = (
    "corral.leader_record",
    "corral.broadcast",
    "corral.wakeup",
    "corral.detector",
    "corral.zk_detector",
    "corral.zk_election",
    "corral.tls",
    "corral.shared_channels",
    "corral.json_input",
    "corral.logging",
)
KERNEL = (
    "corral.resources",
    "corral.placement",
    "corral.tasks",
    "corral.pbmaps",
    "corral.gc_tuning",
    "corral.extras",
    "corral.limits",
    "corral.pairs",
    "corral.supervise",
    "corral.stop_signals",
    "corral.roles",
    "corral.priority",
    "corral.qos",
    "corral.events",
    "corral.pki",
    "corral.acl",
    "corral.acl_rules",
    "corral.acl_files",
    "corral.work_dirs",
    "corral.containers",
    *SDK_KERNEL,
)
WIRE = ("corral.v1",)
# layer prefix -> project prefixes it may import (its own prefix is always allowed).
LAYERS: dict[str, tuple[str, ...]] = {
    "corral.v1": (),
    **{k: KERNEL for k in KERNEL},
    "corral.master.allocator": KERNEL,
    "corral.master.core": (*KERNEL, "corral.master.allocator"),
    # The master and the agent import nothing from corral.frameworks: what they share with the
    # SDK (leader record, election, TLS, JSON input) is the kernel's.
    "corral.master": (*KERNEL, *WIRE),
    "corral.agent.core": KERNEL,
    "corral.agent": (*KERNEL, *WIRE),
    # Kernel modules of the base install: resources' fit test and tolerance, so a task the SDK
    # packs into an offer is one the master accepts (numpy-free), and what it shares with the
    # master and the agent (SDK_KERNEL).
    "corral.frameworks.sdk": (*WIRE, "corral.resources", *SDK_KERNEL),
    # The services scaffold (serving, jobs): what services share, none of their own policy.
    "corral.frameworks.service": ("corral.frameworks.sdk",),
    # Frameworks and services fit requests to room with the kernel's one fit test too.
    "corral.frameworks": ("corral.frameworks.sdk", "corral.resources"),
    "corral.loadtest": (*KERNEL, *WIRE, "corral.frameworks"),
    "corral.scenarios": (*WIRE, "corral.frameworks"),
    # The autoscaler: a client of the master's operator API (wire) on the services scaffold;
    # its templates are parsed by the kernel's parsers, the ones `corral agent` flags use.
    "corral.autoscaler": (*WIRE, "corral.frameworks", "corral.resources", "corral.placement"),
    # The composition root: the one layer that may wire master and agent together.
    "corral.cli": ("corral",),
}
FORBIDDEN_IN_CORES = {
    "asyncio",
    "grpc",
    "aiohttp",
    "time",
    "random",
    "socket",
    "subprocess",
    "threading",
}
SANS_IO = ["corral.master.core", "corral.master.allocator", "corral.agent.core"]
OLD_ROOTS = {"master", "agent", "frameworks"}


def _modules() -> dict[str, Path]:
    """Every project module by its installed name."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if package == "corral" and parts and parts[0] in {"master", "agent", "frameworks"}:
                continue  # reached through a link; counted under its own package
            found[".".join([package, *parts])] = path
    # The namespace's own __init__ is empty: it belongs to no layer and imports nothing.
    top = found.pop("corral")
    assert not _imports(top, "corral"), "corral/__init__.py should stay empty"
    return found


def _imports(path: Path, module: str) -> set[str]:
    """Absolute names of everything ``path`` imports, relative imports resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                names.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                names.add(node.module)
    return names


MODULES = _modules()


def _layer(module: str) -> str:
    matches = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    assert matches, f"{module} belongs to no layer in LAYERS; add it to the table and the docs"
    return max(matches, key=len)


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_every_module_is_found_and_placed_in_a_layer() -> None:
    assert "corral.master.core.master" in MODULES
    assert "corral.frameworks.sdk.driver" in MODULES
    for module in MODULES:
        _layer(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_only_the_layers_below_it(module: str) -> None:
    layer = _layer(module)
    allowed = (layer, *LAYERS[layer])
    project = {n for n in _imports(MODULES[module], module) if n.split(".")[0] == "corral"}
    bad = sorted(n for n in project if n != "corral" and not _within(n, allowed))
    assert bad == [], f"{module} (layer {layer}) may import only {allowed}, imports {bad}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_the_old_top_level_names(module: str) -> None:
    roots = {n.split(".")[0] for n in _imports(MODULES[module], module)}
    assert not roots & OLD_ROOTS, f"{module} imports {roots & OLD_ROOTS}; use corral.<name>"


@pytest.mark.parametrize("core", SANS_IO)
def test_core_imports_no_io(core: str) -> None:
    modules = [m for m in MODULES if _within(m, (core,)) and not m.endswith(".bench")]
    assert modules, f"{core} has no modules"
    offenders = {
        m: sorted(bad)
        for m in modules
        if (bad := {n.split(".")[0] for n in _imports(MODULES[m], m)} & FORBIDDEN_IN_CORES)
    }
    assert offenders == {}, f"IO imported in a sans-IO core: {offenders}"


def test_only_the_cli_may_import_both_master_and_agent() -> None:
    def reaches(layer: str, target: str) -> bool:
        allowed = (layer, *LAYERS[layer])
        return any(_within(target, (p,)) or _within(p, (target,)) for p in allowed)

    both = [
        layer
        for layer in LAYERS
        if reaches(layer, "corral.master.runtime") and reaches(layer, "corral.agent.runtime")
    ]
    assert both == ["corral.cli"], both


@pytest.mark.parametrize("shell", ["corral.master", "corral.agent"])
def test_the_master_and_the_agent_import_nothing_from_the_frameworks(shell: str) -> None:
    offenders = {
        m: sorted(n for n in _imports(MODULES[m], m) if _within(n, ("corral.frameworks",)))
        for m in MODULES
        if _within(m, (shell,))
    }
    assert {m: names for m, names in offenders.items() if names} == {}


def test_the_kernel_imports_no_layer_above_it() -> None:
    for module in KERNEL:
        project = {n for n in _imports(MODULES[module], module) if n.startswith("corral.")}
        assert all(_within(n, KERNEL) for n in project), (module, project)


def _tolerances(tree: ast.AST) -> list[str]:
    """Names assigned the float 1e-9 (a scalar tolerance) at a module's top level or in its
    classes, and names ending in EPSILON assigned anything."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                literal = isinstance(value, ast.Constant) and value.value == 1e-9
                if literal or target.id.endswith("EPSILON"):
                    out.append(target.id)
    return out


def test_one_tolerance_one_fit_test_and_one_dominant_share() -> None:
    """Issue #42: the scalar tolerance and the resource fit test are written once, in the
    kernel (corral/resources.py), and the dominant share once, in the allocator's drf.py;
    everyone else imports them. The SDK's ``fits`` takes wire messages and asks the kernel's."""
    tolerances = {}
    fit_tests = {}
    shares = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        if found := _tolerances(tree):
            tolerances[module] = found
        defs = [
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.name in {"fits", "fits_of_one"}
        ]
        if defs:
            fit_tests[module] = defs
        share_defs = [
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.name in {"_share", "share", "dominant_share"}
        ]
        if share_defs:
            shares[module] = share_defs
    assert tolerances == {"corral.resources": ["EPSILON"]}
    assert shares == {"corral.master.allocator.drf": ["dominant_share"]}
    assert fit_tests == {"corral.resources": ["fits"], "corral.frameworks.sdk.offers": ["fits"]}


# --- import cycles ---------------------------------------------------------------------------
# Issue #42: no module imports itself back at run time, through any chain (an import under
# ``if TYPE_CHECKING:`` runs only for the type checker and is counted apart). The same graph as
# the team's tools/import_cycles.py: ``from P import m`` is an edge to the module ``P.m`` when
# there is one, else to ``P``; an import inside a function counts as one at the top.


def _edges(module: str) -> tuple[set[str], set[str]]:
    """The project modules ``module`` imports: (at run time, only under TYPE_CHECKING)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            guarded |= {id(n) for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)}
    run: set[str] = set()
    checking: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                if path.name != "__init__.py":
                    package = package[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, base] if base else package)
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                (checking if id(node) in guarded else run).add(name)
    return run, checking


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module, largest first
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found, key=len, reverse=True)


EDGES = {module: _edges(module) for module in MODULES}


def test_no_import_cycle_at_run_time() -> None:
    cycles = _strongly_connected({m: run for m, (run, _) in EDGES.items()})
    assert cycles == [], f"modules that import each other back at run time: {cycles}"


# Issue #42: imports for types only may still close a circle, but a small one: a protocol both
# sides import (master/core/state.py, master/allocator/arrays.py), or a component and the state
# that holds it.
LARGEST_TYPE_CHECKING_CYCLE = 6


def test_no_import_cycle_wider_than_six_modules_counting_type_only_imports() -> None:
    cycles = _strongly_connected({m: run | checking for m, (run, checking) in EDGES.items()})
    wide = [c for c in cycles if len(c) > LARGEST_TYPE_CHECKING_CYCLE]
    assert wide == [], f"import circles (TYPE_CHECKING included) wider than six modules: {wide}"


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _strongly_connected(graph) == [["a", "b", "c"]]
