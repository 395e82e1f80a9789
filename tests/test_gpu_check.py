"""benchmarks/gpu_check.py, the hardware check of the whole product (issue 40),
run as CI runs it: ``--dry-run``, the same cases on the CPU emulation, on a
machine as a GPU machine may be (no PySide6, pyqtgraph or pytest to import)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Started in the check's processes (as sitecustomize): what a GPU machine
#: without the test extras cannot import.
WITHOUT_EXTRAS = '''
import sys

class _NotInstalled:
    MISSING = ("PySide6", "shiboken6", "pyqtgraph", "pytest", "hypothesis")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.MISSING:
            raise ImportError(f"{name} is not installed here")
        return None

sys.meta_path.insert(0, _NotInstalled())
'''

SECTIONS = ("builtin", "warp", "files", "course", "api", "check", "hunt", "sandbox", "commands",
            "goals", "plain")


@pytest.mark.slow
def test_the_gpu_check_dry_run_covers_the_product_with_the_engine_alone(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(WITHOUT_EXTRAS)
    figures_file = tmp_path / "gpu.json"
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    done = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--dry-run", "--json",
                           str(figures_file)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(figures_file.read_text())
    assert figures["target"] == "cpu" and figures["errors"] == {}
    sections = figures["sections"]
    assert tuple(sections) == SECTIONS
    compared = [row for rows in sections.values() for row in rows if "maps_equal" in row]
    assert compared and all(row["maps_equal"] for row in compared)
    # Each section ran its cases, with the verdicts worked out for them:
    builtin = {row["kernel"]: row["verdict"].split()[0] for row in sections["builtin"]}
    assert builtin["grid-stride"] == "PASS" and builtin["tid-rows"] == "FAIL"
    assert {row["file"]: row["verdict"] for row in sections["course"]} == {
        f"examples/{name}.py": "PASS" for name in (
            "vector_add", "saxpy", "transpose_tiled", "reduce_sequential", "reduce_shuffle",
            "histogram", "scan_blelloch", "softmax_rows")}
    files = {Path(row["file"]).name: row["verdict"] for row in sections["files"]}
    assert files["accumulate_in_c.py"] == "PASS" and files["thread_index_only.py"] == "FAIL"
    hunt, = sections["hunt"]
    assert hunt["failing_shape"] == [1, 1, 1]  # (the seed's kernel fails at its smallest case)
    api, = sections["api"]
    assert api["verdict"] == "PASS" and api["backend"] == "cpu"
    sandbox, = sections["sandbox"]
    assert sandbox["cuda_context"] is None  # (a CPU child makes none)
    assert set(sandbox["limits"]) >= {"file size", "processes", "core files"}
    assert [len(row["seconds"]) for row in sections["commands"]] == [3] * 5
    new_file, again, follow = sections["goals"]
    assert new_file["backend"] == "cpu" and new_file["verdict"] == "PASS"
    assert new_file["follows"] is None  # (no GPU: nothing follows)
    assert again["status"] == 0 and follow["seconds"] is None and follow["met"] is None
    assert sections["plain"] == []  # (CUDA events: a GPU's only)
