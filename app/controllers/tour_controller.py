"""Start here: showing a step of the walk (kernels.seed_tour) in the window.

A step is a run of its request (made unless it is the run on screen already:
steps 1 to 3 share one), then, once that run is shown, the cause's line
selected on the Source page and the step's map chosen.
"""
from __future__ import annotations

from ..qt import QtCore


class TourController(QtCore.QObject):
    """Shows Start here steps through the window's own controls and views."""

    def __init__(self, session, controls, maps_view, run, show_maps, parent=None):
        """``run``: starts the Run panel's request (the Run action);
        ``show_maps``: brings the Maps tab forward."""
        super().__init__(parent)
        self.session, self.controls, self.maps_view = session, controls, maps_view
        self._run, self._show_maps = run, show_maps
        #: the step whose line and map are chosen once its run is shown
        self._pending = None
        session.current_changed.connect(self._finish)

    def show_step(self, step) -> None:
        self._show_maps()
        self._pending = step
        backend = self.controls.backend_combo.currentData() or "auto"
        request = step.request.with_(backend=backend)
        shown = self.session.current
        if shown is not None and same_run(shown.request, request):
            self._finish(shown)
            return
        self.controls.set_request(request)
        self._run()

    def _finish(self, result) -> None:
        step, self._pending = self._pending, None
        if result is None or step is None:
            return
        self.maps_view.analysis.setCurrentIndex(0)  # (the Source page)
        # (the line first: selecting an access's line shows its own map)
        self.maps_view.source_view.select_line(step.line)
        combo = self.maps_view.map_combo
        combo.setCurrentIndex(combo.findData(step.map_name))


def same_run(a, b) -> bool:
    """Whether two requests ask for the same run (where the launch came from,
    and the backend auto resolved to, aside)."""
    keep = ("kernel", "kernel_file", "m", "k", "n", "dtype", "pattern", "seed", "grid", "block")
    backends = {a.backend, b.backend}
    return all(getattr(a, f) == getattr(b, f) for f in keep) and (
        len(backends) == 1 or "auto" in backends)
