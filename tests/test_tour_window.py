"""The Start here window (app/views/tour_window.py): each step shows its run,
its map and its line in the main window; steps 1-3 share one run."""
import pytest

pytest.importorskip("pytestqt")


def test_the_help_menu_opens_the_walk_and_each_step_shows_its_map_and_line(window):
    window.controls.backend_combo.setCurrentText("cpu")
    help_menu = [a for a in window.menuBar().actions() if a.text() == "&Help"][0].menu()
    start = [a for a in help_menu.actions() if a.text().startswith("&Start here")][0]
    start.trigger()
    tour = window._tour
    assert tour is not None and tour.isVisible()
    assert tour.step_list.count() == 6
    assert "One block of 1,024 threads" in tour.title.text()
    assert not tour.back_button.isEnabled()
    table = window.results_view.results
    tour.show_button.click()
    result = window.session.current
    assert (result.request.kernel, result.request.grid, result.request.block) == (
        "tid-rows", (1,), (1024,))
    assert window.maps_view.map_combo.currentData() == "stores"
    assert window.maps_view.analysis.currentIndex() == 0  # the Source page
    source = window.maps_view.source_view
    assert source.table.currentRow() == source.row_of_line(19)
    assert table.rowCount() == 1
    # steps 2 and 3: the same run, another map and line; no new row
    tour.next_button.click()
    assert window.maps_view.map_combo.currentData() == "oob"
    assert source.table.currentRow() == source.row_of_line(23)
    tour.next_button.click()
    assert window.maps_view.map_combo.currentData() == "count"
    assert table.rowCount() == 1
    # step 4: 64 threads, a run of its own
    tour.next_button.click()
    assert window.session.current.request.block == (64,) and table.rowCount() == 2
    assert window.maps_view.map_combo.currentData() == "error"
    # the fixes PASS
    for _ in range(2):
        tour.next_button.click()
        assert window.session.current.verdict.passed
    assert not tour.next_button.isEnabled() and table.rowCount() == 4
    # Back goes to the step before, which is shown again (its run remade)
    tour.back_button.click()
    assert "canonical" in tour.title.text()
    assert window.session.current.request.kernel == "naive-2d"
