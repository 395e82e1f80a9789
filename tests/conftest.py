"""Shared test setup: Qt offscreen, the binding named, helpers for kernel runs."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
# The tests' own process runs numba natively; simulator runs go to a child.
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
# No compile in the background after an instant answer (the app's and the API's):
# it would compete with the timed tests; the tests of it turn it back on.
os.environ["THREADMAP_COMPILE_AHEAD"] = "0"

import pytest  # noqa: E402

from kernels.request import RunRequest  # noqa: E402


def gpu_available() -> bool:
    from kernels.api import gpu_available as available
    return available()


requires_gpu = pytest.mark.skipif(not gpu_available(),
                                  reason="needs a CUDA GPU (numba.cuda.is_available() is False)")


def request(kernel="grid-stride", shape=(37, 19, 53), grid=(1,), block=(1024,), **kw) -> RunRequest:
    m, k, n = shape
    return RunRequest(kernel=kernel, m=m, k=k, n=n, grid=tuple(grid), block=tuple(block), **kw)


def assert_same_results(first, second) -> None:
    """Two runs' results are the same element by element: every map, C, the
    verdict and its errors, the analysis (two tiers, two routes of a tier)."""
    import numpy as np

    ours, theirs = first.maps_arrays(), second.maps_arrays()
    assert ours.keys() == theirs.keys()
    for name in ours:
        assert np.array_equal(ours[name], theirs[name], equal_nan=True), name
    assert np.array_equal(first.c, second.c, equal_nan=True), "C"
    assert first.verdict.word == second.verdict.word
    assert first.verdict.reasons == second.verdict.reasons
    assert repr(first.verdict.errors) == repr(second.verdict.errors)
    assert repr(first.analysis) == repr(second.analysis)


@pytest.fixture(scope="session", autouse=True)
def _stop_children():
    yield
    from kernels.backends.child import stop_all
    stop_all()


# -- the app's window, for the tests that drive it (offscreen) ---------------------------------

@pytest.fixture
def settings(tmp_path):
    """The app's settings in a file of this test's own."""
    from app.settings import Settings
    return Settings(str(tmp_path / "settings.ini"))


@pytest.fixture
def window(qtbot, settings):
    """The main window, runs on the GUI thread (synchronous), every question
    answered yes, 1400 x 900 and shown."""
    from app.main_window import MainWindow
    win = MainWindow(synchronous=True, settings=settings, confirm=lambda title, text: True)
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    return win
