"""The CPU emulation's two drivers as native code, run without numba.

A warm run of the compiled tier spent ~0.5-0.65 s before its first block
ran: importing numba (0.25-0.4 s) and loading the drivers from numba's cache
(0.2-0.27 s: its index, its typing and target contexts, then the code).  Only
the last step is needed.  So once numba has compiled (or loaded) a module's
drivers, their final LLVM code, already optimised, is compiled once more into
one object, kept beside numba's files (``<module>.native.json``).  A later
run loads that object into LLVM's JIT through llvmlite alone (0.05 s to
import) and calls the drivers through ctypes, with the arguments laid out as
numba passes them.  The code that runs is the code numba made; tests check
both routes element by element (tests/test_native_drivers.py).

Only what fits is kept: drivers that call nothing outside the object but
LLVM's intrinsics and the C library, and that take C-contiguous arrays and
plain numbers.  Anything else, or a file made for another CPU or another
llvmlite, goes the usual way, through numba.
"""
from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import tempfile
import threading
from pathlib import Path

import numpy as np

#: The format of the file; another is ignored (numba's route is taken).
FORMAT = 2
#: What the drivers may call besides their own code: LLVM's intrinsics
#: (``llvm.*``, lowered to instructions or to these) and the C library's
#: memory functions, which LLVM's JIT finds in this process.
C_LIBRARY = frozenset({"memset", "memcpy", "memmove", "memcmp"})
#: How an entry reads each LLVM argument type numba passes from its 64-bit
#: word: integers and pointers as int64 (truncated), reals as float64.
_WORD_LOADS = {"ptr": "load ptr, ptr {slot}", "i64": "load i64, ptr {slot}",
               "i32": "trunc i64 {word} to i32", "i16": "trunc i64 {word} to i16",
               "i8": "trunc i64 {word} to i8", "i1": "trunc i64 {word} to i1",
               "double": "load double, ptr {slot}", "float": "fptrunc double {real} to float"}


def _entry_code(entry: str, symbol: str, function_type: str, llvm_args: list[str]) -> str:
    """LLVM code of ``i32 entry(i64 *words)``: calls the driver with its
    arguments read from ``words``, one 64-bit word each.  ctypes then passes
    one pointer, not ~300 arguments (165 us a call, against numba's 2.5 us)."""
    lines = [f"define i32 @{entry}(ptr %words) {{"]
    for i, kind in enumerate(llvm_args):
        lines.append(f"  %s{i} = getelementptr i64, ptr %words, i64 {i}")
        load = _WORD_LOADS[kind]
        if "{word}" in load:
            lines.append(f"  %w{i} = load i64, ptr %s{i}")
        elif "{real}" in load:
            lines.append(f"  %r{i} = load double, ptr %s{i}")
        lines.append(f"  %a{i} = " + load.format(slot=f"%s{i}", word=f"%w{i}", real=f"%r{i}"))
    arguments = ", ".join(f"{kind} %a{i}" for i, kind in enumerate(llvm_args))
    callee = f'@"{symbol}"'
    returned, _, parameters = function_type.partition(" (")
    lines += [f"  %status = call i32 {callee}({arguments})", "  ret i32 %status", "}",
              f"declare {returned} {callee}({parameters}"]
    return "\n".join(lines) + "\n"


def number_type(value) -> str | None:
    """The numba type of a number passed to a driver, as numba names it
    (``typeof``): a Python int is int64, a float float64, a numpy scalar its
    dtype; None for anything else.  A number of another type than the
    code's parameter would make numba compile another signature, so it goes
    to numba."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (np.integer, np.floating)):
        return value.dtype.name
    if isinstance(value, int):
        return "int64" if -(1 << 63) <= value < (1 << 63) else None
    if isinstance(value, float):
        return "float64"
    return None


class NativeError(RuntimeError):
    """A driver's native code returned an error status."""


def native_path(module_path: Path) -> Path:
    """Where the native drivers of the generated module at ``module_path`` are kept."""
    return module_path.parent / "__pycache__" / f"{module_path.stem}.native.json"


def host() -> dict[str, str]:
    """What native code is made for: this CPU, and the LLVM that made it."""
    import llvmlite
    import llvmlite.binding as ll

    return {"cpu": ll.get_host_cpu_name(), "features": ll.get_host_cpu_features().flatten(),
            "triple": ll.get_process_triple(), "llvmlite": llvmlite.__version__}


def _target_machine():
    import llvmlite.binding as ll

    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    here = host()
    target = ll.Target.from_triple(here["triple"])
    # (as numba's JIT makes its code: this CPU, opt 3, the JIT's code model)
    return target.create_target_machine(cpu=here["cpu"], features=here["features"], opt=3,
                                        jit=True)


# -- made where numba is loaded -------------------------------------------------------


def keep_native(path: Path, dispatchers: dict[str, object]) -> None:
    """:func:`save_native`, unless ``path`` already holds code this machine
    loads.  Never an error: the native form only saves time, and numba's
    route stays as it was wherever it cannot be made."""
    try:
        if not usable(path):
            save_native(path, dispatchers)
    except Exception:  # noqa: BLE001 (llvmlite and numba raise many kinds)
        pass


def replace_native(path: Path, dispatchers: dict[str, object]) -> None:
    """:func:`save_native` over the file at ``path``, whose code declined
    the arguments ``dispatchers`` were just compiled for.  Never an error."""
    try:
        save_native(path, dispatchers)
    except Exception:  # noqa: BLE001 (llvmlite and numba raise many kinds)
        pass



def save_native(path: Path, dispatchers: dict[str, object]) -> bool:
    """Write the native form of ``dispatchers`` (driver name -> numba
    dispatcher, each compiled for exactly one signature) to ``path``, whole
    or not at all; whether it was written (False for drivers it cannot hold)."""
    import llvmlite.binding as ll
    from numba.core import types

    drivers, modules = {}, []
    for name, dispatcher in dispatchers.items():
        if len(dispatcher.signatures) != 1:
            return False
        signature = dispatcher.signatures[0]
        params = []
        for kind in signature:
            if isinstance(kind, types.Array):
                if kind.layout != "C" or not kind.mutable or not kind.aligned:
                    return False
                params.append(["array", np.dtype(str(kind.dtype)).str, kind.ndim])
            elif isinstance(kind, (types.Integer, types.Float, types.Boolean)):
                params.append(["number", str(kind)])
            else:
                return False
        result = dispatcher.overloads[signature]
        modules.append(ll.parse_bitcode(result.library._get_module_for_linking().as_bitcode()))
        drivers[name] = {"symbol": result.fndesc.llvm_func_name, "params": params}
    symbols = {d["symbol"] for d in drivers.values()}
    for module in modules:  # (linkonce_odr: dropped by the link unless kept)
        for function in module.functions:
            if function.name in symbols:
                function.linkage = "external"
    combined = modules[0]
    for module in modules[1:]:
        combined.link_in(module)
    for function in combined.functions:
        if not function.is_declaration:
            function.linkage = "external" if function.name in symbols else "internal"
    for variable in combined.global_variables:
        if not variable.is_declaration:
            variable.linkage = "internal"
    machine = _target_machine()
    passes = ll.create_new_module_pass_manager()
    # (what is left of numba's Python-facing wrappers, and their calls into
    # Python, goes: only the drivers and what they call stay)
    passes.add_global_dead_code_eliminate_pass()
    passes.run(combined, ll.create_pass_builder(machine, ll.create_pipeline_tuning_options()))
    for function in combined.functions:
        if function.is_declaration and not function.name.startswith("llvm.") \
                and function.name not in C_LIBRARY:
            return False
    for index, (name, driver) in enumerate(drivers.items()):
        function = combined.get_function(driver["symbol"])
        driver["llvm_args"] = [str(argument.type) for argument in function.arguments]
        if any(a not in _WORD_LOADS for a in driver["llvm_args"]) \
                or str(function.global_value_type).split(" ", 1)[0] != "i32" \
                or len(driver["llvm_args"]) != 2 + sum(
                    5 + 2 * p[2] if p[0] == "array" else 1 for p in driver["params"]):
            return False
        driver["entry"] = f"_tm_native_entry_{index}"
        combined.link_in(ll.parse_assembly(_entry_code(
            driver["entry"], driver["symbol"], str(function.global_value_type),
            driver["llvm_args"])))
    record = {"format": FORMAT, "host": host(), "drivers": drivers,
              "object": base64.b64encode(machine.emit_object(combined)).decode()}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(record, handle)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return True


# -- loaded without numba --------------------------------------------------------------


class NativeDrivers:
    """The drivers of one generated module, as attributes (``_tm_run_record``,
    ``_tm_run_plain``), each called as numba's dispatcher would be; ``numba``
    gives the module itself (imported through numba), for arguments the
    native code was not made for."""

    def __init__(self, engine, record: dict, numba):
        self._engine = engine  # (the code lives as long as its engine)
        self._numba = numba
        self._drivers = [_Driver(name, engine.get_function_address(driver["entry"]), driver,
                                 numba) for name, driver in record["drivers"].items()]
        for driver in self._drivers:
            setattr(self, driver.name, driver)

    @property
    def declined(self) -> bool:
        """Whether a driver was called with arguments its code was not made
        for (they went through numba): the file is then out of date, as when
        the recording arrays' types change from one version to the next."""
        return any(driver.declined for driver in self._drivers)

    def through_numba(self):
        """The generated module, imported through numba."""
        return self._numba()


#: Sets of arrays whose words a driver keeps (and so keeps alive): one per
#: worker of the emulation (8 at most), calling with the same arrays chunk
#: after chunk.  (A caller with new arrays at each call, as the comparison's
#: blocks are, calls ``once``: nothing kept.)
LAYOUTS_KEPT = 8


class _Driver:
    def __init__(self, name: str, address: int, driver: dict, numba):
        self.name = name
        self._numba = numba
        #: whether a call took numba's route (arguments not the code's)
        self.declined = False
        self._params = [(p[0], np.dtype(p[1]) if p[0] == "array" else p[1], *p[2:])
                        for p in driver["params"]]
        self._arrays = [i for i, p in enumerate(self._params) if p[0] == "array"]
        self._numbers = [i for i, p in enumerate(self._params) if p[0] == "number"]
        self._entry = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(address)
        self._reals = [kind in ("double", "float") for kind in driver["llvm_args"]]
        #: each set of arrays' words (their fields laid out), with the arrays
        #: they point into, kept alive with them; by the arrays' ids
        self._laid_out: dict[tuple[int, ...], tuple[list, ctypes.Array, list[int]]] = {}

    def accepts(self, args) -> bool:
        """Whether ``args`` are what the code was made for (else numba's route)."""
        if len(args) != len(self._params):
            return False
        for value, param in zip(args, self._params):
            if param[0] == "array":
                if not (isinstance(value, np.ndarray) and value.dtype == param[1]
                        and value.ndim == param[2] and value.flags.c_contiguous
                        and value.flags.writeable and value.flags.aligned):
                    return False
            elif number_type(value) != param[1]:
                return False
        return True

    def _layout(self, args, keep: bool = True):
        """The words of ``args``' arrays (their fields, as numba passes an
        array), and each number's word; None for arguments not accepted.
        ``keep``: kept for the next call with the same arrays."""
        if len(args) != len(self._params):
            return None
        key = tuple(id(args[i]) for i in self._arrays)
        found = self._laid_out.get(key)
        if found is not None and all(args[i] is kept for i, kept in zip(self._arrays, found[0])):
            return found
        if not self.accepts(args):
            return None
        words: list[int] = [0, 0]  # (the result's and the exception's addresses)
        slots = []
        for value, param in zip(args, self._params):
            if param[0] == "array":
                # meminfo, parent, nitems, itemsize, data, shape..., strides...
                words += [0, 0, value.size, value.itemsize, value.ctypes.data,
                          *value.shape, *value.strides]
            else:
                slots.append(len(words))
                words.append(0)
        template = (ctypes.c_int64 * (len(words) + 2))(*words)  # (+ the two places)
        found = ([args[i] for i in self._arrays], template, slots)
        if keep:
            if len(self._laid_out) >= LAYOUTS_KEPT:
                self._laid_out.pop(next(iter(self._laid_out)))
            self._laid_out[key] = found
        return found

    def once(self, *args):
        """As a call, for arrays not passed again: their layout is not kept."""
        return self(*args, _keep=False)

    def __call__(self, *args, _keep: bool = True):
        """Run the driver; its return value (an int64, as numba returns it)."""
        laid_out = self._layout(args, _keep)
        if laid_out is None:
            self.declined = True
            return getattr(self._numba(), self.name)(*args)
        kept, template, slots = laid_out
        words = type(template)()  # (one per call: workers call at once)
        ctypes.memmove(words, template, ctypes.sizeof(template))
        base = ctypes.addressof(words)
        for slot, index in zip(slots, self._numbers):
            value = args[index]
            if number_type(value) != self._params[index][1]:
                self.declined = True
                return getattr(self._numba(), self.name)(*args)  # (numba: another signature)
            if self._reals[slot]:
                ctypes.c_double.from_address(base + 8 * slot).value = float(value)
            else:
                words[slot] = (int(value) + (1 << 63)) % (1 << 64) - (1 << 63)  # (as 64 bits)
        result = len(words) - 2
        words[0], words[1] = base + 8 * result, base + 8 * (result + 1)
        status = self._entry(base)  # (ctypes lets go of the GIL meanwhile)
        del kept  # (the arrays the words point into: alive until here)
        if status != 0:
            raise NativeError(f"the emulation's native {self.name} returned status {status}")
        return words[result]


#: Loaded native drivers, by file (their engines stay alive with them).
_LOADED: dict[tuple[str, float], NativeDrivers] = {}
_LOCK = threading.Lock()


def _record(path: Path) -> dict | None:
    """The file at ``path`` if it was made by this format for this machine."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT \
            or record.get("host") != host():
        return None
    return record


def usable(path: Path) -> bool:
    """Whether ``path`` holds native drivers this machine can load (else
    they are made again)."""
    return _record(path) is not None


def load_native(path: Path, numba) -> NativeDrivers | None:
    """The native drivers kept at ``path``, loaded; None where there are none
    usable here (no file, another format, CPU or llvmlite, a damaged file).
    ``numba()``: the generated module, imported, for arguments they do not take."""
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return None
    key = (str(path), stamp)
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        record = _record(path)
        if record is None:
            return None
        try:
            import llvmlite.binding as ll

            machine = _target_machine()
            engine = ll.create_mcjit_compiler(ll.parse_assembly(""), machine)
            engine.add_object_file(ll.ObjectFileRef.from_data(
                base64.b64decode(record["object"])))
            engine.finalize_object()
            drivers = NativeDrivers(engine, record, numba)
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            return None
        _LOADED[key] = drivers
        return drivers
