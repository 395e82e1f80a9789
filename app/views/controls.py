"""The control panel: kernel, shapes, dtype, inputs, launch, backend, presets, Run."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kernels import (
    BACKENDS,
    CATALOGUE,
    DTYPES,
    FILE_LAUNCH,
    GUESSED_LAUNCH,
    MAX_DIMENSION,
    PATTERNS,
    PRESETS,
    RequestError,
    RunRequest,
    ThreadMapError,
    check_launch,
    counted,
    default_launch,
    describe_request,
    file_launch_dims,
    format_dims,
    parse_dims,
    parse_scalars,
    split_argument_text,
)

from ..qt import QtCore, QtWidgets

OPEN_FILE = "open-file"
#: the start of a launch source that holds whatever the shape (a kernel
#: file's own literal launch: kernels.presets.default_launch)


class _AppliedLaunch(NamedTuple):
    """A launch the panel was given (a preset, a file's, a run's), and what
    it was given for: its source is named while all of it still holds."""

    grid: str
    block: str
    source: str
    #: the shape shown when it was applied (M, K, N, or the Arguments)
    shape: tuple
    #: the kernel box's item it was applied for ("builtin:tiled", "file:PATH")
    kernel: str


def _dims_text(dims: tuple[int, ...]) -> str:
    return format_dims(dims)


class ControlPanel(QtWidgets.QWidget):
    """Builds a :class:`RunRequest` from its widgets; emits ``run_requested``."""

    run_requested = QtCore.Signal()
    #: search for the smallest shape and launch where the kernel fails
    hunt_requested = QtCore.Signal()
    open_file_requested = QtCore.Signal()
    kernel_changed = QtCore.Signal()
    #: rows shown or hidden (Arguments or Shape): the panel's width may change
    rows_changed = QtCore.Signal()

    def __init__(self, backend_availability: dict[str, str | None], parent=None):
        """``backend_availability`` maps each backend to None (usable) or why not."""
        super().__init__(parent)
        self._files: dict[str, tuple[str, ...]] = {}  # path -> kernel names in it
        layout = QtWidgets.QFormLayout(self)
        layout.setFieldGrowthPolicy(QtWidgets.QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)

        self.kernel_combo = QtWidgets.QComboBox()
        self.kernel_combo.setObjectName("kernel")
        for name, spec in CATALOGUE.items():
            self.kernel_combo.addItem(name, f"builtin:{name}")
            self.kernel_combo.setItemData(self.kernel_combo.count() - 1, spec.summary,
                                          QtCore.Qt.ItemDataRole.ToolTipRole)
        self.kernel_combo.insertSeparator(self.kernel_combo.count())
        self.kernel_combo.addItem("Open kernel file...", f"{OPEN_FILE}:")
        self.kernel_combo.activated.connect(self._on_kernel_combo_activated)
        self.kernel_combo.currentIndexChanged.connect(lambda _: self._show_kernel_tooltip())
        self.kernel_combo.currentIndexChanged.connect(self._forget_another_kernels_reference)
        self._shown_kernel = self.kernel_combo.currentData()
        self._show_kernel_tooltip()
        layout.addRow("Kernel", self.kernel_combo)

        self.function_combo = QtWidgets.QComboBox()
        self.function_combo.setObjectName("function")
        self.function_combo.setToolTip("the file has several kernels: choose one")
        self.function_combo.currentIndexChanged.connect(lambda _: self.kernel_changed.emit())
        layout.addRow("Function", self.function_combo)
        self._set_function_row_visible(False)

        self.m_spin, self.k_spin, self.n_spin = (self._dimension_spin(v) for v in (128, 256, 128))
        shape_row = QtWidgets.QHBoxLayout()
        for label, spin in (("M", self.m_spin), ("K", self.k_spin), ("N", self.n_spin)):
            shape_row.addWidget(QtWidgets.QLabel(label))
            shape_row.addWidget(spin, 1)
        self._shape_row = shape_row
        layout.addRow("Shape", shape_row)
        self._matmul_label = QtWidgets.QLabel("C (M x N) = A (M x K) @ B (K x N)")
        layout.addRow("", self._matmul_label)

        # A kernel that is not C = A @ B runs as it is, on arguments described
        # as --arg describes them (its file's THREADMAP_ARGS fills them in).
        self.arguments_edit = QtWidgets.QLineEdit()
        self.arguments_edit.setObjectName("arguments")
        self.arguments_edit.setPlaceholderText("x=float32[4096] out=float32[4096] n=4096")
        self.arguments_edit.setToolTip(
            "the kernel's arguments, separated by spaces: an array as NAME=float32[LENGTH] or "
            "NAME=float32[ROWS, COLS], a scalar as NAME=4096 or NAME=float32(2.5); the kernel "
            "file's THREADMAP_ARGS fills them in (read, never run), and these replace its "
            "entries by name. Inputs are filled as Inputs says; the output starts as NaN")
        layout.addRow("Arguments", self.arguments_edit)
        self.reference_edit = QtWidgets.QLineEdit()
        self.reference_edit.setObjectName("reference")
        self.reference_edit.setPlaceholderText("your_code.py:function (optional)")
        self.reference_edit.setToolTip(
            "YOUR host code, FILE.py:FUNCTION: imported and called by the app after the kernel "
            "(never a kernel file's code), with float64 copies of the inputs in the kernel's "
            "parameter order; it returns the expected output. Without it: maps and checks "
            "only, no correctness verdict")
        layout.addRow("Reference", self.reference_edit)

        self.dtype_combo = QtWidgets.QComboBox()
        self.dtype_combo.addItems(DTYPES)
        layout.addRow("dtype", self.dtype_combo)
        self.pattern_combo = QtWidgets.QComboBox()
        self.pattern_combo.addItems(PATTERNS)
        self.pattern_combo.setToolTip("random by default: all-ones inputs hide index bugs")
        self.seed_spin = QtWidgets.QSpinBox()
        self.seed_spin.setRange(0, 2**31 - 1)
        inputs_row = QtWidgets.QHBoxLayout()
        inputs_row.addWidget(self.pattern_combo, 1)
        inputs_row.addWidget(QtWidgets.QLabel("seed"))
        inputs_row.addWidget(self.seed_spin)
        layout.addRow("Inputs", inputs_row)

        self.grid_edit = QtWidgets.QLineEdit("1")
        self.grid_edit.setObjectName("grid")
        self.grid_edit.setToolTip("blocks per grid: N, or NxM for a 2-D grid (x first)")
        self.block_edit = QtWidgets.QLineEdit("1024")
        self.block_edit.setObjectName("block")
        self.block_edit.setToolTip("threads per block: N, or NxM (x first); at most 1024 in all")
        launch_row = QtWidgets.QHBoxLayout()
        launch_row.addWidget(self.grid_edit, 1)
        launch_row.addWidget(QtWidgets.QLabel("blocks x"))
        launch_row.addWidget(self.block_edit, 1)
        launch_row.addWidget(QtWidgets.QLabel("threads"))
        layout.addRow("Launch", launch_row)
        self.launch_info = QtWidgets.QLabel()
        self.launch_info.setWordWrap(True)
        layout.addRow("", self.launch_info)
        for edit in (self.grid_edit, self.block_edit):
            edit.textChanged.connect(self._update_launch_info)

        self.preset_combo = QtWidgets.QComboBox()
        self.preset_combo.addItem("Presets...", None)
        self.preset_combo.addItem("Kernel's own launch", "kernel")
        for key, (label, _) in PRESETS.items():
            self.preset_combo.addItem(label, key)
        self.preset_combo.activated.connect(self._on_preset_activated)
        layout.addRow("", self.preset_combo)

        self.backend_combo = QtWidgets.QComboBox()
        self.backend_combo.setObjectName("backend")
        model = self.backend_combo.model()
        for backend in BACKENDS:
            self.backend_combo.addItem(backend, backend)
            why_not = backend_availability.get(backend)
            index = self.backend_combo.count() - 1
            if why_not:
                model.item(index).setEnabled(False)
                self.backend_combo.setItemData(index, why_not, QtCore.Qt.ItemDataRole.ToolTipRole)
        layout.addRow("Backend", self.backend_combo)

        self.scalars_edit = QtWidgets.QLineEdit()
        self.scalars_edit.setPlaceholderText("n=16, ...")
        self.scalars_edit.setToolTip("values of the kernel's scalar parameters: name=value, ...")
        layout.addRow("Scalars", self.scalars_edit)

        self.run_button = QtWidgets.QPushButton("Run")
        self.run_button.setObjectName("run")
        self.run_button.setToolTip("Ctrl+R")
        self.run_button.clicked.connect(self.run_requested.emit)
        layout.addRow(self.run_button)
        self.hunt_button = QtWidgets.QPushButton("Find a failing case")
        self.hunt_button.setObjectName("hunt")
        self.hunt_button.setToolTip("Try shapes and launches that break index arithmetic "
                                    "(ones, primes, ragged sizes, too few and too many "
                                    "threads), smallest first; open the first that fails "
                                    "(at most 60 s)")
        self.hunt_button.clicked.connect(self.hunt_requested.emit)
        layout.addRow(self.hunt_button)
        self.message = QtWidgets.QLabel()
        self.message.setObjectName("controls-message")
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: #c62828")
        layout.addRow(self.message)
        self._described = False
        self._show_described(False)
        #: the launch last applied (None: none yet)
        self._applied_launch: _AppliedLaunch | None = None
        self._showing_request = False
        #: (kernel, function, Arguments) a kernel file's THREADMAP_ARGS last
        #: gave, which were not typed
        self._arguments_from_the_file: tuple[str, ...] | None = None
        # (the first kernel's own launch, said so: another kernel chosen
        # before any edit takes its own)
        self._apply_builtin_launch(self.kernel_choice()[1])
        self._update_launch_info()

    # -- building blocks --------------------------------------------------------------

    @staticmethod
    def _dimension_spin(value: int) -> QtWidgets.QSpinBox:
        spin = QtWidgets.QSpinBox()
        spin.setRange(1, MAX_DIMENSION)
        spin.setValue(value)
        spin.setAccelerated(True)
        # Typed more than stepped; without arrows three fit the Run panel at
        # 1280 px (the wheel and the arrow keys still step).
        spin.setButtonSymbols(QtWidgets.QAbstractSpinBox.ButtonSymbols.NoButtons)
        return spin

    @property
    def described(self) -> bool:
        """Whether the kernel runs as it is, on the Arguments (else as C = A @ B)."""
        return self._described

    def _show_described(self, described: bool) -> None:
        """Arguments and Reference for a kernel run as it is; Shape, dtype and
        Scalars for C = A @ B (a described kernel's come from its arguments)."""
        self._described = described
        layout: QtWidgets.QFormLayout = self.layout()
        for row in (self.arguments_edit, self.reference_edit):
            layout.setRowVisible(row, described)
        for row in (self._shape_row, self._matmul_label, self.dtype_combo, self.scalars_edit):
            layout.setRowVisible(row, not described)
        self.rows_changed.emit()

    def widest_minimum(self) -> int:
        """The panel's minimum width with either set of rows shown (the
        Arguments label is wider than Shape's: a panel sized for one was cut
        off on the right with the other)."""
        current = self._described
        widths = []
        for described in (False, True):
            self._show_described(described)
            widths.append(self.minimumSizeHint().width())
        self._show_described(current)
        return max(widths)

    def describe(self, arguments: str, reference: str | None = None,
                 from_the_file: bool = False) -> None:
        """Run the chosen kernel as it is, on ``arguments`` (``--arg`` items);
        ``from_the_file``: they are its file's THREADMAP_ARGS, not typed."""
        self.arguments_edit.setText(arguments)
        if from_the_file:
            self._arguments_from_the_file = self._kernel_shown() + (" ".join(arguments.split()),)
        if reference is not None:
            self.reference_edit.setText(reference)
        self._show_described(True)

    def _set_function_row_visible(self, visible: bool) -> None:
        layout: QtWidgets.QFormLayout = self.layout()
        layout.setRowVisible(self.function_combo, visible)

    # -- kernel choice ----------------------------------------------------------------

    def kernel_choice(self) -> tuple[str, str]:
        """("builtin", name) or ("file", path)."""
        kind, _, value = str(self.kernel_combo.currentData() or "builtin:grid-stride").partition(":")
        return kind, value

    def select_kernel(self, kind: str, value: str) -> bool:
        """Select a built-in kernel ("builtin", name) or a loaded file ("file", path)."""
        index = self.kernel_combo.findData(f"{kind}:{value}")
        if index < 0:
            return False
        self.kernel_combo.setCurrentIndex(index)
        if kind == "builtin":
            self._show_described(False)
            self._apply_builtin_launch(value)
        self._refresh_functions()
        self.kernel_changed.emit()
        return True

    @property
    def kernel_files(self) -> list[str]:
        """Kernel files loaded in this session (remembered in the settings)."""
        return list(self._files)

    def add_kernel_file(self, path: str, kernel_names: tuple[str, ...]) -> None:
        """Add (or refresh) a kernel file in the kernel list and select it."""
        path = str(Path(path).resolve())
        self._files[path] = kernel_names
        index = self.kernel_combo.findData(f"file:{path}")
        if index < 0:
            index = self.kernel_combo.count() - 1  # before "Open kernel file..."
            self.kernel_combo.insertItem(index, Path(path).name, f"file:{path}")
            self.kernel_combo.setItemData(index, path, QtCore.Qt.ItemDataRole.ToolTipRole)
        self.kernel_combo.setCurrentIndex(index)
        self._refresh_functions()
        self.kernel_changed.emit()

    def update_kernel_names(self, path: str, kernel_names: tuple[str, ...]) -> None:
        """A loaded kernel file's kernels as it reads after a save: the
        Function list offers them (a kernel added could not be chosen, and one
        renamed stayed listed by its old name until the file was opened
        again).  The kernel chosen stays chosen while it is there."""
        path = str(Path(path).resolve())
        if self._files.get(path, kernel_names) == kernel_names:
            return
        self._files[path] = kernel_names
        if self.kernel_choice() != ("file", path):
            return
        chosen = self.function_combo.currentText()
        self._refresh_functions()
        if chosen in kernel_names:
            blocked = self.function_combo.blockSignals(True)
            self.function_combo.setCurrentText(chosen)
            self.function_combo.blockSignals(blocked)
        else:  # (the first one shown instead, with its own launch and arguments)
            self.kernel_changed.emit()

    def _show_kernel_tooltip(self) -> None:
        """The chosen kernel's whole name and path on hover: a long file
        name is elided in the box."""
        index = self.kernel_combo.currentIndex()
        tip = self.kernel_combo.itemData(index, QtCore.Qt.ItemDataRole.ToolTipRole)
        self.kernel_combo.setToolTip(f"{self.kernel_combo.currentText()}\n{tip}" if tip
                                     else self.kernel_combo.currentText())

    def _refresh_functions(self) -> None:
        kind, value = self.kernel_choice()
        names = self._files.get(value, ()) if kind == "file" else ()
        blocked = self.function_combo.blockSignals(True)
        self.function_combo.clear()
        self.function_combo.addItems(names)
        self.function_combo.blockSignals(blocked)
        self._set_function_row_visible(len(names) > 1)

    def _forget_another_kernels_reference(self, _index: int) -> None:
        """A Reference is the host code of one kernel: another kernel chosen,
        it is cleared (a saxpy reference kept for the next file made every
        run of it say the reference raised TypeError)."""
        shown = self.kernel_combo.currentData()
        if shown != self._shown_kernel and not str(shown).startswith(f"{OPEN_FILE}:"):
            self._shown_kernel = shown
            self.reference_edit.clear()

    def _on_kernel_combo_activated(self, index: int) -> None:
        kind, _, value = str(self.kernel_combo.itemData(index) or "").partition(":")
        if kind == OPEN_FILE:
            # Back to the kernel shown before at once: the dialog's file, when
            # one is chosen, is selected as it is added; a cancelled dialog
            # left "Open kernel file..." in the box, and Run said "no kernel
            # given".
            previous = self.kernel_combo.findData(self._shown_kernel)
            self.kernel_combo.setCurrentIndex(max(previous, 0))
            self.open_file_requested.emit()
            return
        if kind == "builtin":
            self._show_described(False)
            self._apply_builtin_launch(value)
        self._refresh_functions()
        self.kernel_changed.emit()

    def _apply_builtin_launch(self, name: str) -> None:
        """A built-in kernel's own launch, unless the user typed the one
        shown or it was given for this kernel (a 1-D launch of a kernel
        file had stayed for the 16 x 16 tiles of ``tiled``)."""
        applied = self._applied_launch
        if applied is not None and (self._launch_typed() or
                                    applied.kernel == f"builtin:{name}"):
            return
        try:
            chosen = default_launch(RunRequest(kernel=name, m=self.m_spin.value(),
                                               k=self.k_spin.value(), n=self.n_spin.value()))
        except ThreadMapError:
            return
        self.apply_launch(chosen.grid, chosen.block, chosen.launch_source)

    def select_previous_kernel(self, choice: tuple[str, str]) -> None:
        """Back to ``choice`` after an Open dialog was cancelled (nothing
        changes when it is still the one shown: its function, its launch)."""
        if tuple(choice) == self.kernel_choice():
            return
        if not self.select_kernel(*choice):
            self.select_kernel("builtin", "grid-stride")

    # -- the request ------------------------------------------------------------------

    def request(self, as_described: bool | None = None) -> RunRequest:
        """The request the widgets describe; RequestError for text that is not
        one.  ``as_described=False``: the kernel file's request before any
        Arguments (what its THREADMAP_ARGS are read against)."""
        described = self._described if as_described is None else as_described
        kind, value = self.kernel_choice()
        grid = parse_dims(self.grid_edit.text().strip(), "grid")
        block = parse_dims(self.block_edit.text().strip(), "block")
        scalars = self._scalars()
        common = dict(m=self.m_spin.value(), k=self.k_spin.value(), n=self.n_spin.value(),
                      dtype=self.dtype_combo.currentText(),
                      pattern=self.pattern_combo.currentText(), seed=self.seed_spin.value(),
                      grid=grid, block=block, backend=self.backend_combo.currentData(),
                      scalars=scalars, launch_source=self.launch_source())
        if kind == "file":
            function = self.function_combo.currentText() or None
            if described:
                return self._described_request(RunRequest(
                    kernel=function, kernel_file=value, **{
                        key: v for key, v in common.items()
                        if key not in ("m", "k", "n", "dtype", "scalars")}))
            return RunRequest(kernel=function, kernel_file=value, **common)
        return RunRequest(kernel=value, **common)

    def _described_request(self, base: RunRequest) -> RunRequest:
        """``base`` run as it is on the Arguments (and the file's
        THREADMAP_ARGS), held to the Reference where one is given."""
        items = split_argument_text(self.arguments_edit.text())
        reference = self.reference_edit.text().strip() or None
        try:
            described = describe_request(base.with_(reference=reference), items,
                                         as_it_is_unless_matmul=True)
        except ThreadMapError as exc:
            raise RequestError(str(exc).replace("--arg ", "Arguments: ")
                               .replace("--reference", "Reference")) from None
        if not described.arguments:  # (they describe C = A @ B after all)
            raise RequestError("Arguments: these describe C = A @ B (three matrices): choose "
                               "its shape in Shape instead")
        return described

    def described_to_keep(self) -> tuple[str, str] | None:
        """What a restart needs to run the kernel as it is again: (the
        Arguments, "" where they are the file's own THREADMAP_ARGS, so that
        the file's later edits of them are read; the Reference); None for a
        kernel run as C = A @ B."""
        if not self._described:
            return None
        reference = self.reference_edit.text().strip()
        text = self.arguments_edit.text()
        if self._kernel_shown() + (" ".join(text.split()),) == self._arguments_from_the_file:
            return "", reference  # (as the file gave them when it was read)
        try:
            shown = self.request()
            own = describe_request(self.request(as_described=False).with_(
                reference=reference or None), as_it_is_unless_matmul=True)
        except ThreadMapError:
            own = shown = None
        typed = "" if own is not None and own.arguments == shown.arguments else text
        return typed, reference

    def _kernel_shown(self) -> tuple[str, str]:
        return str(self.kernel_combo.currentData()), self.function_combo.currentText()

    def launch_from_the_file(self, source: str) -> bool:
        """Whether a launch of ``source`` was read from the kernel file (its
        literal launch, or a guess from its shapes) rather than chosen."""
        return source.startswith((FILE_LAUNCH, GUESSED_LAUNCH))

    def _scalars(self) -> tuple[tuple[str, float], ...]:
        items = [p.strip() for p in self.scalars_edit.text().split(",") if p.strip()]
        try:
            return parse_scalars(items)
        except ThreadMapError as exc:
            raise RequestError(str(exc).replace("--scalar", "scalar")) from None

    def set_request(self, request: RunRequest) -> None:
        """Show ``request`` in the widgets (presets, settings, a table row:
        its ``asked_request``, on the backend the user asked for)."""
        self._showing_request = True
        try:
            self._set_request(request)
        finally:
            self._showing_request = False

    @property
    def showing_request(self) -> bool:
        """Whether a whole request is being shown: a kernel chosen for it
        takes the request's launch and arguments, not its file's own (whose
        launch was announced, then replaced by the row's)."""
        return self._showing_request

    def _set_request(self, request: RunRequest) -> None:
        if request.kernel_file:
            choice = ("file", str(Path(request.kernel_file).resolve()))
            # (the kernel shown already: not chosen again, which would refill
            # its functions and announce its file's launch once more)
            if (choice == self.kernel_choice() or self.select_kernel(*choice)) \
                    and request.kernel and self.function_combo.currentText() != request.kernel:
                self.function_combo.setCurrentText(request.kernel)
        elif ("builtin", request.kernel or "grid-stride") != self.kernel_choice():
            self.select_kernel("builtin", request.kernel or "grid-stride")
        if request.arguments:
            self.describe(" ".join(str(a) for a in request.arguments), request.reference or "")
        elif request.kernel_file:
            self._show_described(False)
        self.m_spin.setValue(request.m)
        self.k_spin.setValue(request.k)
        self.n_spin.setValue(request.n)
        self.dtype_combo.setCurrentText(request.dtype)
        self.pattern_combo.setCurrentText(request.pattern)
        self.seed_spin.setValue(request.seed)
        self.apply_launch(request.grid, request.block, request.launch_source)
        index = self.backend_combo.findData(request.backend)
        model = self.backend_combo.model()
        if index >= 0 and model.item(index).isEnabled():
            self.backend_combo.setCurrentIndex(index)
        # (a described run's scalars are among its Arguments: none carried over
        # into the next kernel run as C = A @ B)
        self.scalars_edit.setText("" if request.arguments else
                                  ", ".join(f"{n}={v}" for n, v in request.scalars))

    def apply_shape(self, request: RunRequest) -> None:
        """Show ``request``'s shape, dtype and scalars (a kernel file's own
        description of its arguments); its Arguments where it runs as it is."""
        if request.arguments:
            self.describe(" ".join(str(a) for a in request.arguments), from_the_file=True)
            return
        self._show_described(False)
        self.m_spin.setValue(request.m)
        self.k_spin.setValue(request.k)
        self.n_spin.setValue(request.n)
        self.dtype_combo.setCurrentText(request.dtype)
        self.scalars_edit.setText(", ".join(f"{n}={v}" for n, v in request.scalars))

    def apply_launch(self, grid: tuple[int, ...], block: tuple[int, ...],
                     source: str = "given") -> None:
        """Show a launch, and where it came from until the user edits it (or
        the shape it was given for)."""
        self.grid_edit.setText(_dims_text(grid))
        self.block_edit.setText(_dims_text(block))
        self._applied_launch = _AppliedLaunch(_dims_text(grid), _dims_text(block), source,
                                              self._shape_shown(),
                                              str(self.kernel_combo.currentData()))

    def _shape_shown(self) -> tuple:
        """What a launch is worked out from: M, K and N, or the Arguments."""
        if self._described:
            return ("arguments", " ".join(self.arguments_edit.text().split()))
        return (self.m_spin.value(), self.k_spin.value(), self.n_spin.value())

    def _launch_typed(self) -> bool:
        """Whether the grid or block shown is not the one last applied."""
        applied = self._applied_launch
        shown = (self.grid_edit.text().strip(), self.block_edit.text().strip())
        return applied is None or shown != (applied.grid, applied.block)

    def launch_source(self) -> str:
        """Where the launch shown came from: "given" once edited, or once the
        shape it was worked out for was (a preset's one thread per element,
        a guess that covers C); a kernel file's own launch holds for any shape."""
        applied = self._applied_launch
        if applied is None or self._launch_typed():
            return "given"
        if applied.shape != self._shape_shown() and not applied.source.startswith(FILE_LAUNCH):
            return "given"
        return applied.source

    def _on_preset_activated(self, index: int) -> None:
        key = self.preset_combo.itemData(index)
        self.preset_combo.setCurrentIndex(0)
        if key is None:
            return
        self.apply_preset(key)

    def apply_preset(self, key: str) -> None:
        """Apply a launch preset ("kernel", "seed", "per-element", "ragged")."""
        try:
            request = self.request()
            if key == "kernel":
                chosen = default_launch(request)
                self.apply_launch(chosen.grid, chosen.block, chosen.launch_source)
                return
            dims = file_launch_dims(request)
        except ThreadMapError as exc:
            self.show_message(str(exc))
            return
        chosen = PRESETS[key][1](request, dims)
        self.set_request(chosen.with_(launch_source=f"the preset: {PRESETS[key][0]}"))
        self.show_message("")

    def show_message(self, text: str) -> None:
        self.message.setText(text)

    def _update_launch_info(self) -> None:
        try:
            grid = parse_dims(self.grid_edit.text().strip(), "grid")
            block = parse_dims(self.block_edit.text().strip(), "block")
            check_launch(grid, block)  # (said as typed: Run would refuse it)
        except RequestError as exc:
            self.launch_info.setText(str(exc))
            self.launch_info.setStyleSheet("color: #c62828")
            return
        blocks = 1
        for g in grid:
            blocks *= g
        threads = 1
        for b in block:
            threads *= b
        self.launch_info.setStyleSheet("")
        self.launch_info.setText(f"{counted(blocks, 'block')} x {counted(threads, 'thread')} = "
                                 f"{counted(blocks * threads, 'thread')}, "
                                 f"{counted(-(-threads // 32), 'warp')} per block")
