"""The real app, started as a user would, opens its window (under Xvfb)."""
import os
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("Xvfb") is None or shutil.which("xwininfo") is None,
    reason="needs Xvfb and xwininfo (apt packages xvfb, x11-utils: .ci/run installs them)")


def _free_display() -> str:
    for number in range(91, 140):
        if not os.path.exists(f"/tmp/.X11-unix/X{number}") and \
                not os.path.exists(f"/tmp/.X{number}-lock"):
            return f":{number}"
    raise RuntimeError("no free X display number")


def _window_names(display: str) -> str:
    proc = subprocess.run(["xwininfo", "-root", "-tree", "-display", display],
                          capture_output=True, text=True, timeout=10)
    return proc.stdout


@pytest.mark.parametrize("command", [["-m", "app"], ["-m", "app.launcher"]])
def test_app_opens_a_window_titled_threadmap(tmp_path, command):
    display = _free_display()
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    app = None
    try:
        deadline = time.monotonic() + 20
        while "Root window" not in _window_names(display):
            assert time.monotonic() < deadline, "Xvfb did not start"
            time.sleep(0.2)
        log = tmp_path / "app.log"
        with open(log, "w") as handle:
            app = subprocess.Popen([sys.executable, *command], env=env, stdout=handle,
                                   stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while True:
            names = _window_names(display)
            if '"ThreadMap' in names:
                break
            if app.poll() is not None:
                pytest.fail(f"the app exited with {app.returncode}: {log.read_text()}")
            assert time.monotonic() < deadline, f"no ThreadMap window appeared:\n{names}"
            time.sleep(0.3)
        assert app.poll() is None  # still running, window shown
    finally:
        if app is not None:
            app.terminate()
            try:
                app.wait(10)
            except subprocess.TimeoutExpired:
                app.kill()
        xvfb.terminate()
        xvfb.wait(10)
