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
    _, second = two_results
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


def _resident_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def _another_run(result):
    """A distinct result with arrays of its own, as a new run of the same
    inputs would give (the reference stays shared, as the engine shares it)."""
    import dataclasses
    maps = dataclasses.replace(result.maps, reads=tuple(r.copy() for r in result.maps.reads), **{
        name: getattr(result.maps, name).copy() for name in (
            "count", "atomics", "min_writer", "max_writer", "iteration", "stores_per_thread",
            "oob_per_thread")})
    return dataclasses.replace(result, maps=maps, c=result.c.copy())


def test_forty_4096_squared_runs_stay_within_the_memory_budget(qapp):
    """Point 9 of the app issue: each run holds ~0.5 GB of maps; 40 of them
    stay within the budget plus a fixed overhead, and the first comes back
    from disk identical."""
    from app.models.session import Session
    first = run(RunRequest(kernel="grid-stride", m=4096, k=16, n=4096, grid=(2048,),
                           block=(256,), backend="cpu", repeats=1))
    expected = {name: array.copy() for name, array in first.maps_arrays().items()}
    one_run = sum(a.nbytes for name, a in first.maps_arrays().items() if name != "reference")
    budget = 3 * one_run
    session = Session(memory_budget=budget, synchronous=True)
    try:
        before = _resident_bytes()
        session.add_result(first)
        del first
        for _ in range(39):
            session.add_result(_another_run(session.current))
            assert session.bytes_in_memory <= budget + one_run  # (+ the one just shown)
        grown = _resident_bytes() - before
        on_disk = sum(r.stowed is not None for r in session.results)
        assert on_disk >= 35
        # Without the budget: 40 x ~0.55 GB = 22 GB.  With it: the budget, the
        # run on screen and a fixed overhead (the shared reference, allocator slack).
        assert grown < budget + one_run + (512 << 20), f"{grown / 2**20:.0f} MiB"
        print(f"40 runs of {one_run / 2**20:.0f} MiB each: grew {grown / 2**20:.0f} MiB "
              f"(budget {budget / 2**20:.0f} MiB), {on_disk} on disk")
        session.show(session.results[0])
        back = session.current.maps_arrays()
        assert session.results[0].stowed is None and session.current is session.results[0]
        assert back.keys() == expected.keys()
        for name, array in expected.items():
            assert back[name].dtype == array.dtype, name
            np.testing.assert_array_equal(back[name], array, err_msg=name)
    finally:
        session.close()


def test_results_go_to_disk_and_come_back_off_the_gui_thread(qtbot):
    from app.models.session import Session
    from app.views.results_table import ResultsView
    small = [run(RunRequest(kernel="grid-stride", m=64 + i, k=4, n=64, grid=(1,), block=(64,),
                            backend="cpu", repeats=1)) for i in range(3)]
    one = sum(a.nbytes for n, a in small[0].maps_arrays().items() if n != "reference")
    session = Session(memory_budget=one + 1)
    table = ResultsView(session)
    qtbot.addWidget(table)
    try:
        for result in small:
            session.add_result(result)
        qtbot.waitUntil(lambda: sum(r.stowed is not None for r in session.results) == 2,
                        timeout=20000)
        assert table.results.cell_text(0, 0) == "1 (on disk)"
        table.selectRow(0)  # the user selects the first run
        qtbot.waitUntil(lambda: session.current is session.results[0], timeout=20000)
        np.testing.assert_array_equal(session.current.c, small[0].c)
        assert session.current.stowed is None
    finally:
        session.close()


def test_the_source_beside_the_map_names_each_line_s_findings(qtbot, two_results):
    """tid-rows reads B[tid, col] past B's rows and strides through B: the
    source view puts both on that line, selecting it shows the map involved,
    and clicking an element marks the line that stores into C."""
    from app.models.session import Session
    from app.views.maps_view import MapsView
    session = Session()
    view = MapsView(session)
    qtbot.addWidget(view)
    _, tid_rows = two_results
    session.add_result(tid_rows)
    source = view.source_view
    lines = tid_rows.kernel.lines
    b_line = next(n for n in source.findings if "B[tid, col]" in lines[n - 1])
    kinds = {f.kind for f in source.findings[b_line]}
    assert {"out of bounds", "coalescing"} <= kinds
    row = source.row_of_line(b_line)
    assert source.table.item(row, 1).text() == lines[b_line - 1]
    assert source.table.item(row, 0).background().color().name() == "#fdecea"  # a fault
    source.select_line(b_line)
    assert session.map_name == "oob"  # the fault first: who went out of bounds
    # The list of findings: faults first; selecting one selects its line and its map.
    listed = [source.list.item(i).text() for i in range(source.list.count())]
    coalescing = next(i for i, text in enumerate(listed) if "sectors per request" in text
                      and "B[tid, col]" in text)
    source.select_finding(coalescing)
    assert session.map_name == "sectors" and view.heatmap.image.name == "sectors"
    assert source.table.selectionModel().selectedRows()[0].row() == row
    assert listed.index(next(t for t in listed if "store" in t.split(",")[1])) > coalescing
    store_line = next(n for n in source.findings
                      if any(f.kind == "store" for f in source.findings[n]))
    assert "C[" in lines[store_line - 1]
    view.heatmap.clicked.emit(2, 3)  # only the maps of C's elements mark lines
    session.set_map("count")
    view.heatmap.clicked.emit(2, 3)
    assert f"line {store_line}" in source.note.text()
    assert source.table.item(source.row_of_line(store_line), 1).background().color().name() \
        == "#e3f2fd"


def test_work_threads_give_way_to_the_gui_thread_and_pass_it_on():
    import os
    import threading

    from app.background import WORK_NICENESS, yield_to_the_gui
    if not hasattr(os, "setpriority"):
        pytest.skip("no per-thread priority on this system")
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen = {}

    def inner():
        seen["inner"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def work():
        yield_to_the_gui()
        seen["work"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        child = threading.Thread(target=inner)  # as the engine starts its workers
        child.start()
        child.join()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    if base > WORK_NICENESS:
        pytest.skip(f"this process already runs at niceness {base}")
    assert seen["work"] == WORK_NICENESS  # (setpriority sets, it does not add)
    assert seen["inner"] == seen["work"]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base
