"""The session model, its controller and the views on it: driven through
their public methods and signals only."""
import numpy as np
import pytest

from kernels import RunRequest, run


@pytest.fixture(scope="module")
def two_results():
    first = run(RunRequest(kernel="grid-stride", m=40, k=8, n=24, grid=(1,), block=(64,),
                           backend="cpu", repeats=1))
    second = run(RunRequest(kernel="tid-rows", m=40, k=8, n=24, grid=(1,), block=(32,),
                            backend="cpu", repeats=1))
    return first, second


def test_a_new_result_is_added_then_shown_in_that_order(qapp, two_results):
    from app.models.session import Session
    session = Session()
    seen = []
    session.result_added.connect(lambda row: seen.append(("added", row)))
    session.current_changed.connect(lambda result: seen.append(("shown", result)))
    first, second = two_results
    assert session.add_result(first) == 0
    assert session.add_result(second) == 1
    assert seen == [("added", 0), ("shown", first), ("added", 1), ("shown", second)]
    session.show(second)  # already shown: no signal
    assert len(seen) == 4
    assert session.row_of(first) == 0 and session.current is second


def test_an_analysis_map_gives_way_to_the_count_map_on_a_new_result(qapp, two_results):
    from app.models.session import Session
    session = Session()
    first, second = two_results
    session.add_result(first)
    session.show_warp_row("sectors", 0)
    assert session.current_image().name == "sectors"
    session.add_result(second)
    assert session.map_name == "count"
    assert session.current_image().name == "count"


def test_compare_sets_the_pair_and_draws_the_diff(qapp, two_results):
    from app.models.session import Session
    session = Session()
    first, second = two_results
    session.add_result(first)
    session.add_result(second)
    pairs = []
    session.diff_changed.connect(pairs.append)
    session.compare(first, second)
    assert pairs == [(first, second)] and session.map_name == "diff"
    assert session.shown_result() is first
    assert "writer" in session.diff_summary or "written" in session.diff_summary
    assert session.current_image().name == "diff"
    session.show(first)  # a result shown on its own: the diff no longer applies
    assert session.diff_pair is None


def test_a_refused_request_keeps_what_was_shown(qapp, two_results):
    from app.controllers.session_controller import SessionController
    from app.models.session import Session
    session = Session()
    controller = SessionController(session, confirm=lambda title, text: True, synchronous=True)
    first, _ = two_results
    session.add_result(first)
    errors = []
    session.error_raised.connect(lambda message, about: errors.append(message))
    too_many = RunRequest(kernel="grid-stride", m=40, k=8, n=24, grid=(1,), block=(2048,),
                          backend="cpu")
    assert not controller.run(too_many)
    assert errors and "1024" in errors[0].replace(",", "")
    assert session.results == [first] and session.current is first


def test_the_controller_runs_into_the_session(qapp):
    from app.controllers.session_controller import SessionController
    from app.models.session import Session
    session = Session()
    controller = SessionController(session, confirm=lambda title, text: True, synchronous=True)
    busy = []
    controller.busy_changed.connect(busy.append)
    request = RunRequest(kernel="grid-stride", m=33, k=5, n=17, grid=(2,), block=(32,),
                         backend="cpu", repeats=1)
    assert controller.run(request)
    assert busy == [True, False]
    assert session.current.request == request
    assert session.current.verdict.passed
    assert session.current.occupancy  # worked out in the worker, for every GPU model


def test_the_maps_view_draws_what_the_session_holds(qtbot, two_results):
    from app.models.session import Session
    from app.views.maps_view import MapsView
    session = Session()
    view = MapsView(session)
    qtbot.addWidget(view)
    first, second = two_results
    session.add_result(second)
    drawn = view.heatmap.image
    assert drawn.name == "count"
    np.testing.assert_array_equal(view.heatmap.heatmap.image.image, drawn.data)
    assert "FAIL" in view.verdict_label.text()
    session.set_map("writer", "block")
    assert view.heatmap.image.name == "writer"
    assert view.map_combo.currentData() == "writer"
    session.raise_error("something went wrong")
    assert not view.error_label.isHidden() and view.heatmap.image.name == "writer"


def test_a_large_map_is_made_off_the_gui_thread_and_the_last_choice_wins(qtbot):
    from app.models.session import Session
    from app.views.colors import image_rgba
    from app.views.map_painter import OFF_THREAD_ELEMENTS
    from app.views.maps_view import MapsView
    big = run(RunRequest(kernel="tid-rows", m=1100, k=2, n=1000, grid=(1,), block=(128,),
                         backend="cpu", repeats=1))
    assert big.c.size > OFF_THREAD_ELEMENTS
    session = Session()
    view = MapsView(session)
    qtbot.addWidget(view)
    session.add_result(big)
    assert view.drawing  # not drawn yet: the GUI thread went on
    session.set_map("iteration")
    session.set_map("writer", "warp")  # chosen while the others are made
    qtbot.waitUntil(lambda: not view.drawing, timeout=30000)
    drawn = view.heatmap.image
    assert drawn.name == "writer" and "warp" in drawn.title.lower()
    np.testing.assert_array_equal(view.heatmap.heatmap.image.image, image_rgba(drawn))
    assert view.heatmap.text_at(5, 7) is not None  # hover reads the map's values
