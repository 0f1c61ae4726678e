"""The shape of the code base, checked: imports that go one way (no cycle, function-level imports
included), modules and functions of a readable size, every module's doctests run, and every benchmark
script's --help working."""

import ast
import doctest
import importlib
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nwalign"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _imports(name: str, path: pathlib.Path, modules) -> set[str]:
    """nwalign's modules that ``name`` imports anywhere in its source (module level or in functions).
    ``from package import name`` counts as importing the submodule where ``name`` is one, else the
    package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    found.add(f"{source}.{alias.name}")
                elif source in modules:
                    found.add(source)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
    found.discard(name)
    return found


def test_imports_form_no_cycle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(name, path):
        state[name] = 1
        for other in sorted(graph[name]):
            if state.get(other) == 1:
                cycle = path[path.index(other):] + [other]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if other not in state:
                walk(other, path + [other])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])


def test_modules_and_functions_are_of_readable_size():
    long_modules, long_functions = [], []
    for path in sorted(list(PACKAGE.rglob("*.py")) + list((ROOT / "benchmarks").glob("*.py")) +
                       list((ROOT / "scripts").glob("*.py"))):
        text = path.read_text()
        if path.is_relative_to(PACKAGE) and text.count("\n") > MAX_MODULE_LINES:
            long_modules.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines")
    assert long_modules == [] and long_functions == []


@pytest.mark.parametrize("module", sorted(name for name in _modules() if "cuda" not in name.split(".")[1:2]))
def test_doctests(module):
    """Every module's docstring examples run and pass (the CUDA modules' too where they have any: they
    import without a GPU)."""
    failures, _ = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert failures == 0


@pytest.mark.parametrize("module", sorted(name for name in _modules() if name.startswith("nwalign.backends.cuda")))
def test_cuda_module_doctests(module):
    failures, _ = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_public_classes_have_examples():
    import nwalign

    for name in ("Database", "Scoring", "Aligner", "Pairs", "AllPairs", "Search", "align", "search", "allpairs"):
        assert ">>>" in getattr(nwalign, name).__doc__, name


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "benchmarks").iterdir()
                                          if p.suffix in (".py", ".sh")))
def test_benchmark_scripts_answer_help(script):
    """Every benchmark script runs far enough to print its usage (none breaks silently on an API change)."""
    path = ROOT / "benchmarks" / script
    command = [sys.executable, str(path), "--help"] if path.suffix == ".py" else ["bash", str(path), "--help"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in (done.stdout + done.stderr).lower()


def test_the_repository_speaks_of_the_product():
    """No development-log words in tracked files or their paths: a measurement is named by its date, GPU,
    commit and command. (The words are built here so that this file does not hold them.)"""
    import re

    listed = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    words = re.compile("|".join(["ses" + "sion", r"\ble" + r"nt\b", "device " + "tool", r"iss" + r"ues?\s*#?\d+"]),
                       re.IGNORECASE)
    allowed = 'scope="' + "ses" + 'sion"'  # pytest's fixture scope
    found = []
    for name in listed.stdout.splitlines():
        if words.search(name):
            found.append(name)
            continue
        path = ROOT / name
        if not path.is_file() or path.suffix in (".cubin", ".gz", ".png", ".npy"):
            continue
        text = path.read_text(errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if words.search(line.replace(allowed, "")):
                found.append(f"{name}:{number}")
        joined = re.sub(r"\s*\n\s*(#+|//|\*|>)?\s*", " ", text)  # words split across comment lines
        if not any(f.startswith(name + ":") for f in found) and words.search(joined.replace(allowed, "")):
            found.append(f"{name}: (across lines)")
    assert found == []


# The layers of docs/architecture.md, checked against the imports.

def _layer_table() -> list[tuple[str, list[str]]]:
    """(layer, module prefixes) from the table under "## The layers" of docs/architecture.md, bottom up."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("layer", "") or set(cells[0]) <= {"-"}:
            continue
        names = re.findall(r"`([a-z_]+)/?`", re.sub(r"\([^)]*\)", "", cells[1]))  # (notes) left out
        layers.append((cells[0], ["nwalign" if n == "nwalign" else f"nwalign.{n}" for n in names]))
    return layers


def _layer_of(module: str, layers) -> int | None:
    """The index of ``module``'s layer (its longest matching prefix), or None."""
    best = None
    for k, (_, prefixes) in enumerate(layers):
        for p in prefixes:
            inside = module == p or (p != "nwalign" and module.startswith(p + "."))  # the package: itself only
            if inside and (best is None or len(p) > best[1]):
                best = (k, len(p))
    return None if best is None else best[0]


def test_every_module_is_in_one_documented_layer():
    layers = _layer_table()
    assert [name for name, _ in layers][:2] == ["base", "scoring"] and len(layers) >= 10
    assert [m for m in _modules() if _layer_of(m, layers) is None] == []


def test_imports_go_down_the_documented_layers():
    """No import (function-level ones included) reaches a layer above its module's."""
    layers, modules = _layer_table(), _modules()
    upward = []
    for name, path in modules.items():
        for other in _imports(name, path, modules):
            here, there = _layer_of(name, layers), _layer_of(other, layers)
            if there > here:
                upward.append(f"{name} ({layers[here][0]}) -> {other} ({layers[there][0]})")
    assert upward == []


def test_only_the_backends_import_the_engines():
    """No module outside nwalign.backends imports the CPU engine's or the CUDA kernels' modules: jobs,
    tasks, the command line and the benchmark reach them through the seam (nwalign.backends)."""
    modules = _modules()
    engines = ("nwalign.backends.cpu", "nwalign.backends.cuda")
    found = [f"{name} -> {other}" for name, path in modules.items() if not name.startswith("nwalign.backends")
             for other in _imports(name, path, modules) if other.startswith(engines)]
    assert found == []


def test_no_engine_name_is_compared_outside_the_backends():
    """Outside nwalign.backends, no code compares a value with "cpu" or "cuda" (jobs ask engine.on_gpu, or
    nwalign.backends about a --backend request). ``nwalign bench`` is left out: its kernels are named cpu
    and cpu-serial beside the GPU kernels' names."""
    found = []
    for name, path in _modules().items():
        if name.startswith(("nwalign.backends", "nwalign.bench")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            sides += [e for s in node.comparators if isinstance(s, (ast.Tuple, ast.List, ast.Set)) for e in s.elts]
            if any(isinstance(s, ast.Constant) and s.value in ("cpu", "cuda") for s in sides):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_every_engine_plays_every_role():
    from nwalign.backends import named
    from nwalign.backends.roles import roles_of

    assert roles_of(named("cpu")) == [] and roles_of(named("cuda")) == []
    assert named("cpu").on_gpu is False and named("cuda").on_gpu is True


def test_few_modules_directly_in_the_package():
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= 12, top


MAX_PARAMETERS = 12


def test_no_long_parameter_lists():
    """No public function or constructor outside the command line takes more than MAX_PARAMETERS
    parameters (options travel as objects: nwalign.plan.options). Left out: Click's command functions
    (cli/) and the bench functions they call with the command's options one by one (bench/), and the
    Numba kernels (their arrays one by one)."""
    long = []
    for name, path in _modules().items():
        if name.startswith(("nwalign.cli", "nwalign.bench")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.name.startswith("_") and node.name != "__init__":
                continue
            if any("jit" in ast.unparse(d) for d in node.decorator_list):
                continue
            a = node.args
            count = len([x for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")])
            if count > MAX_PARAMETERS:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {count}")
    assert long == []
