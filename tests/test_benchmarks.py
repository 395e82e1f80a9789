"""The benchmark scripts stay runnable: each section a command line names
exists (a refactor once dropped one, found only when the script was run)."""
import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("bench_*.py")))
def test_every_name_a_benchmark_uses_is_defined(script):
    tree = ast.parse((BENCHMARKS / script).read_text())
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Name)}
    defined |= {a.asname or a.name.split(".")[0] for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    defined |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments)
                for a in n.args + n.kwonlyargs + ([n.vararg] if n.vararg else [])
                + ([n.kwarg] if n.kwarg else [])}
    defined |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    defined |= {n.name for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.name}
    import builtins
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    missing = sorted(used - defined - set(dir(builtins)) - {"__file__", "__name__", "__doc__"})
    assert not missing, f"{script} uses names it never defines: {missing}"
