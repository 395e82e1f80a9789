"""The optional GPU stack checked, not assumed (issue 40): a numba-cuda that
cannot compile with the installed numpy is one sentence naming both, the GPU
is then not used, and the CPU emulation runs as ever."""
from __future__ import annotations

import numpy as np
import pytest

from kernels import engine
from kernels.backends import device
from kernels.errors import BackendUnavailable
from tests.conftest import request


@pytest.fixture
def numpy_without_row_stack(monkeypatch):
    """numpy as 2.5 is (no np.row_stack, which numba-cuda 0.30 names), on a
    machine where numba sees a GPU."""
    from numba import cuda

    monkeypatch.delattr(np, "row_stack")
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(device, "might_have_gpu", lambda: True)
    device.gpu_present.cache_clear()
    device.gpu_stack_problem.cache_clear()
    yield
    device.gpu_present.cache_clear()
    device.gpu_stack_problem.cache_clear()


def test_an_incompatible_numpy_is_one_sentence_with_both_versions_and_the_fix(
        numpy_without_row_stack):
    from importlib import metadata

    problem = device.gpu_stack_problem()
    assert problem is not None and "\n" not in problem
    assert f"numba-cuda {metadata.version('numba-cuda')} " in problem
    assert f"numpy {np.__version__} " in problem
    assert 'pip install "numpy<2.5"' in problem
    assert "the CPU emulation runs meanwhile" in problem
    assert not device.gpu_available() and device.gpu_present()
    assert device.gpu_status() == f"a CUDA device is here, but unusable: {problem}"


def test_the_gpu_asked_for_is_refused_with_it_and_auto_runs_on_the_cpu(numpy_without_row_stack):
    problem = device.gpu_stack_problem()
    with pytest.raises(BackendUnavailable) as raised:
        engine.run(request(shape=(9, 5, 7), grid=(2,), block=(32,), backend="gpu"))
    assert str(raised.value) == f"the gpu backend was asked for, but {problem}"
    result = engine.run(request(shape=(9, 5, 7), grid=(2,), block=(32,), backend="auto"))
    assert result.request.backend == "cpu" and result.verdict.passed
    assert problem in result.backend_note


def test_numpy_as_installed_here_has_what_numba_cuda_needs():
    """The pin in pyproject.toml holds where the suite runs."""
    device.gpu_stack_problem.cache_clear()
    assert device.gpu_stack_problem() is None


def test_a_deprecation_from_numba_cuda_s_import_is_not_an_error_but_one_of_ours_is():
    """Under numpy 2.5, importing numba.cuda warns (np.timedelta64("nat")):
    the suite's filters let numba-cuda's own modules warn, and nothing else."""
    code = compile("import warnings\nwarnings.warn('deprecated', DeprecationWarning)\n",
                   "<a module>", "exec")
    exec(code, {"__name__": "numba.cuda.np.npdatetime_helpers"})  # (the suite's filters)
    with pytest.raises(DeprecationWarning):
        exec(code, {"__name__": "kernels.backends.device"})
