"""The real app, started as a user would, opens its window (under Xvfb)."""
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


@contextmanager
def x_server(home: Path) -> Iterator[tuple[str, dict]]:
    """A virtual X server, and the environment an app started on it gets (a
    new user's HOME): (display, env).  The server ends with the block."""
    display = _free_display()
    xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1600x1000x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", HOME=str(home),
               XDG_CONFIG_HOME=str(home / "config"))
    try:
        deadline = time.monotonic() + 20
        while "Root window" not in _window_names(display):
            assert time.monotonic() < deadline, "Xvfb did not start"
            time.sleep(0.2)
        yield display, env
    finally:
        xvfb.terminate()
        xvfb.wait(10)


@pytest.mark.parametrize("command", [["-m", "app"], ["-m", "app.launcher"]])
def test_app_opens_a_window_titled_threadmap(tmp_path, command):
    with x_server(tmp_path) as (display, env):
        _opens_a_window(tmp_path, command, display, env)


def _opens_a_window(tmp_path: Path, command: list[str], display: str, env: dict) -> None:
    app = None
    try:
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


@pytest.mark.skipif(shutil.which("xdotool") is None,
                    reason="needs xdotool (apt package xdotool: .ci/run installs it)")
@pytest.mark.parametrize("keys", [["alt+f", "q"], ["ctrl+q"]], ids=["file-menu", "shortcut"])
def test_quit_ends_the_process(tmp_path, keys):
    """File > Quit (through the menu, as a user opens it) and Ctrl+Q end the
    process within 2 s: they used to hide the window while the process ran
    on, held by the export's offscreen figure, which Qt counted as a window."""
    with x_server(tmp_path) as (_display, env):
        _quits(env, keys)


def _quits(env: dict, keys: list[str]) -> None:
    app = None
    try:
        app = subprocess.Popen([sys.executable, "-m", "app"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 90
        window = ""
        while not window:
            assert app.poll() is None, f"the app exited early with {app.returncode}"
            assert time.monotonic() < deadline, "no ThreadMap window appeared"
            found = subprocess.run(["xdotool", "search", "--name", "which CUDA thread"],
                                   env=env, capture_output=True, text=True, timeout=10)
            window = found.stdout.split()[0] if found.stdout.split() else ""
            time.sleep(0.3)
        time.sleep(1.0)  # (its first layout and paint)
        subprocess.run(["xdotool", "windowfocus", "--sync", window], env=env,
                       capture_output=True, timeout=10)
        for key in keys:
            subprocess.run(["xdotool", "key", key], env=env, timeout=10, check=True)
            time.sleep(0.4)
        asked = time.monotonic()
        try:
            app.wait(2.0)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the process still runs 2 s after {' then '.join(keys)}")
        assert app.returncode == 0
        assert time.monotonic() - asked <= 2.0
    finally:
        if app is not None and app.poll() is None:
            app.kill()
            app.wait(10)
