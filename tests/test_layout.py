"""The package layout of issue 17: core / papers / runner, small modules, no import cycles."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vqalib"
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def test_no_module_over_500_lines():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_the_three_layers_exist_and_every_module_says_what_it_serves():
    modules = _modules()
    for layer in ("vqalib.core", "vqalib.papers", "vqalib.runner", "vqalib.papers.vizwiz_lf",
                  "vqalib.papers.commvqa", "vqalib.papers.afgv"):
        assert layer in modules
    missing = [name for name, path in modules.items() if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))]
    assert not missing, f"modules without a docstring: {missing}"


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """vqalib modules ``name`` imports at module level (what runs when it is imported)."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def test_no_import_cycles():
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, path, known) for name, path in modules.items()}
    for name in graph:  # importing a package's module imports its parent packages first
        graph[name] |= {p for p in (name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)) if p in known}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, stack: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle.extend(stack[stack.index(nxt):] + [node, nxt] if nxt in stack else [node, nxt])
                return True
            if nxt not in state and visit(nxt, stack + [node]):
                return True
        state[node] = 2
        return False

    assert not any(visit(n, []) for n in sorted(graph) if n not in state), f"import cycle: {' -> '.join(cycle)}"
