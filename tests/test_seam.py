"""The app reaches the engine through its public face only (issue 10, point 1)."""
import ast
from pathlib import Path

import kernels

APP = Path(__file__).resolve().parents[1] / "app"


def engine_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "kernels":
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names
                      if a.name.split(".")[0] == "kernels"]
    return found


def test_the_app_imports_nothing_of_kernels_but_its_public_face():
    reached = {f"{path.name}:{line} imports {module}"
               for path in sorted(APP.glob("*.py")) for line, module in engine_imports(path)
               if module != "kernels"}
    assert not reached, sorted(reached)
    # and it does use the face (the scan above is not looking at nothing)
    assert any(engine_imports(path) for path in APP.glob("*.py"))


def test_the_public_face_holds_every_name_it_lists():
    missing = [name for name in kernels.__all__ if not hasattr(kernels, name)]
    assert not missing
    for name in ("run", "run_sweep", "CATALOGUE", "default_launch", "parse_dims",
                 "parse_scalars", "with_occupancy"):
        assert name in kernels.__all__


def test_a_result_carries_its_occupancy_on_every_gpu_model():
    from kernels.analyses.occupancy import GPU_MODELS, launch_occupancy
    from kernels.sources.loader import load_plan

    request = kernels.RunRequest(kernel="naive-2d", m=40, k=8, n=33, backend="cpu")
    result = kernels.with_occupancy(kernels.run(request), assumed_registers=40)
    assert set(result.occupancy) == set(GPU_MODELS) == set(kernels.GPU_MODEL_NAMES)
    plan = load_plan(result.request)
    for name, occ in result.occupancy.items():
        direct = launch_occupancy(result.request, plan, name, 40)
        assert (occ.blocks_per_sm, occ.registers_per_thread, occ.waves, occ.limited_by) == (
            direct.blocks_per_sm, direct.registers_per_thread, direct.waves, direct.limited_by)
    # Another assumption is arithmetic on what the result carries: the kernel
    # is not read again.
    again = kernels.reassume_registers(result, 200)
    for name, occ in again.occupancy.items():
        measured = not result.kernel_resources[name].source.startswith("assumed")
        expected = result.occupancy[name].registers_per_thread if measured else 200
        assert occ.registers_per_thread == expected


def test_the_occupancy_table_never_reads_the_kernel_again(qtbot, monkeypatch):
    import kernels.sources.loader
    from app.views.analysis import AnalysisPanel

    request = kernels.RunRequest(kernel="grid-stride", m=32, k=8, n=32, backend="cpu",
                                 grid=(2,), block=(64,))
    result = kernels.with_occupancy(kernels.run(request))
    panel = AnalysisPanel()
    qtbot.addWidget(panel)

    def refuse(*_):
        raise AssertionError("a view read the kernel again")

    monkeypatch.setattr(kernels.sources.loader, "load_plan", refuse)
    panel.show_result(result)
    panel.registers_spin.setValue(96)  # another assumption: worked out from the result
    assert panel.occupancy_table.rowCount() == len(kernels.GPU_MODEL_NAMES)


def test_backends_are_looked_up_in_a_registry():
    from kernels.backends import REGISTRY

    assert set(REGISTRY) | {"auto"} == set(kernels.BACKENDS)
    for name, backend in REGISTRY.items():
        assert backend.name == name and isinstance(backend.available(), bool)
    assert REGISTRY["cpu"].available() and REGISTRY["sim"].needs_own_process
    assert not REGISTRY["cpu"].needs_own_process


def test_a_result_keeps_its_kernel_as_it_ran(tmp_path):
    path = tmp_path / "kernel.py"
    text = ("from numba import cuda\n\n\n@cuda.jit\ndef mm(A, B, C):\n"
            "    i, j = cuda.grid(2)\n    if i < C.shape[0] and j < C.shape[1]:\n"
            "        C[i, j] = A[i, 0] * B[0, j]\n")
    path.write_text(text)
    result = kernels.run(kernels.RunRequest(kernel_file=str(path), kernel="mm", m=8, k=1, n=8,
                                            backend="cpu"))
    path.write_text(text.replace("A[i, 0] * B[0, j]", "0.0"))  # edited after the run
    snapshot = result.kernel
    assert snapshot.source == text and snapshot.name == "mm" and snapshot.first_line == 5
    assert snapshot.lines[7].strip() == "C[i, j] = A[i, 0] * B[0, j]"
    assert snapshot.launch_dims == 2 and snapshot.path == str(path)


def _import_graph() -> dict[str, set[str]]:
    """Every import of app/ and kernels/, those inside functions included (they
    run when called), as module -> modules of the two packages it imports."""
    root = APP.parent
    modules = {}
    for package in ("kernels", "app"):
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    graph = {}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (here[:len(here) - node.level + 1] if node.level else []) + (
                    node.module.split(".") if node.module else [])
                prefix = ".".join(base)
                targets = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
            else:
                continue
            found |= {t for t in targets if t in modules and t != name}
        graph[name] = found
    return graph


def test_imports_go_one_way_with_no_cycle_and_the_engine_never_imports_the_app():
    graph = _import_graph()
    assert len(graph) > 80 and graph["app.main_window"]  # (the scan sees the code)
    assert not [(a, b) for a, found in graph.items() for b in found
                if a.startswith("kernels") and b.startswith("app")]
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join(
                    path[path.index(target):] + [target]))
            if target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_python_api_reaches_the_app_through_its_entry_point():
    from importlib.metadata import entry_points

    from kernels import viewers
    point, = [p for p in entry_points(group=viewers.GROUP) if p.name == "qt"]
    assert point.value == "app.viewer"
    loaded = point.load()
    assert callable(loaded.show_result) and callable(loaded.png_bytes)
