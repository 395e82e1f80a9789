"""The command line's parser: its commands and their options."""
from __future__ import annotations

import argparse

from ..request import BACKENDS, DTYPES, PATTERNS, TIERS
from ..sources.catalogue import CATALOGUE

#: An exported image's size when --size is not given.
IMAGE_SIZE = "1200x900"


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``run`` and ``sweep``."""
    parser.add_argument("--kernel", help=f"built-in kernel ({', '.join(CATALOGUE)}), or the "
                        "kernel's name in --kernel-file (default: grid-stride, or the file's "
                        "only kernel)")
    parser.add_argument("--kernel-file", help="a .py file with your own @cuda.jit kernel")
    parser.add_argument("--shape", default=None,
                        help="M x K x N: C (M x N) = A (M x K) @ B (K x N) (default 128x256x128, "
                             "or what --arg or the file's THREADMAP_ARGS describe)")
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                        help="describe a kernel parameter (repeatable): an array as "
                             "NAME=float32[ROWS, COLS] (or [LENGTH] when the kernel indexes it "
                             "flat), a scalar as NAME=4096 or NAME=float32(2.5). M, K and N "
                             "follow from the matrices. A kernel file may describe them in a "
                             "literal THREADMAP_ARGS = {\"A\": \"float32[64, 32]\", ...}, "
                             "read, never run; --arg replaces its entries by name")
    parser.add_argument("--dtype", choices=DTYPES, default=None,
                        help="the matrices' element type (default float32, or what --arg "
                             "describes)")
    parser.add_argument("--pattern", choices=PATTERNS, default="random",
                        help="input values (default random: all-ones hides index bugs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", choices=BACKENDS, default="auto")
    add_tier_option(parser)
    parser.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                        help="value of a kernel's scalar parameter (repeatable)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="end the run (in a child process) if it takes longer (default: "
                             "300 s for a kernel file, none for a built-in kernel)")
    parser.add_argument("--yes", action="store_true",
                        help="run even when the estimate is over a minute")
    parser.add_argument("--gpu-model", default="H100 SXM",
                        help="GPU model for the occupancy figures (H100 SXM, H200, A100, "
                             "RTX 4090, T4)")
    parser.add_argument("--registers", type=int, default=None,
                        help="registers per thread to assume when neither a GPU nor ptxas "
                             "can measure them (default 32)")


def add_tier_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tier", choices=TIERS, default="auto",
                        help="the CPU emulation's tier: instant (numpy, no compile), compiled "
                             "(numba: seconds to compile a new kernel, then ~100x faster), or "
                             "auto (by the estimated work; default)")


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad option refused in one line (no usage text), as
    every other refusal is; ``--help`` still shows the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog.split()[0]} "
                     f"{' '.join(self.prog.split()[1:]) + ' ' if ' ' in self.prog else ''}"
                     "--help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="threadmap",
        description="Show which CUDA thread computes which element of C = A @ B. "
                    "Without a command, opens the desktop app.")
    commands = parser.add_subparsers(dest="command")
    run_parser = commands.add_parser("run", help="run one kernel and launch; write its maps")
    add_run_options(run_parser)
    run_parser.add_argument("--grid", help="blocks per grid: N or NxM (default: the kernel's "
                            "preset launch)")
    run_parser.add_argument("--block", help="threads per block: N or NxM")
    run_parser.add_argument("--out", required=True, help="directory for result.json and maps.npz")
    run_parser.add_argument(
        "--reference", metavar="FILE.py:FUNCTION",
        help="for a kernel whose arguments are described (--arg): YOUR HOST CODE, imported and "
             "run by this command (never a kernel file's code), that returns the expected "
             "output; it gets float64 copies of the inputs and the scalars, in the kernel's "
             "parameter order without the output. Without it, a kernel that is not C = A @ B "
             "gets maps and checks only")
    run_parser.add_argument("--watch", action="store_true",
                            help="with --kernel-file: run again each time the file is saved "
                                 "(until Ctrl-C), writing --out afresh each time")
    run_parser.add_argument("--png", help="also export the write-count heatmap to this PNG")
    run_parser.add_argument("--svg", help="also export the write-count heatmap to this SVG")
    run_parser.add_argument("--map", default="count",
                            help="which map --png/--svg draw (count, writer, iteration, ...; "
                                 "count:<array> for another array the kernel stores into)")
    run_parser.add_argument("--size", default=IMAGE_SIZE,
                            help=f"exported image size in pixels, WxH (default {IMAGE_SIZE})")
    sweep_parser = commands.add_parser(
        "sweep", help="run one kernel across blocks x threads-per-block configurations")
    add_run_options(sweep_parser)
    sweep_parser.add_argument("--grids",
                              help="grids, comma-separated, each N or NxM (default "
                                   "1,2,4,8,16,32; for a kernel that indexes in 2-D, "
                                   "1x1,2x2,4x4,8x8,16x16)")
    sweep_parser.add_argument("--blocks",
                              help="blocks, comma-separated, each N or NxM threads (default "
                                   "32,64,128,256,512,1024; in 2-D 8x8,16x16,32x8,32x32; for "
                                   "a kernel whose tile fixes its block, that block)")
    sweep_parser.add_argument("--out", required=True,
                              help="directory for summary.csv, summary.json and per-configuration "
                                   ".npz / .png files")
    sweep_parser.add_argument("--map", default="count", help="map drawn in the .png files")
    sweep_parser.add_argument("--no-images", action="store_true",
                              help="skip the .png files and the contact sheet")
    commands.add_parser("kernels", help="list the built-in kernels")
    cache_parser = commands.add_parser(
        "cache", help="the cache of generated kernels: its size, or --clear it")
    cache_parser.add_argument("--clear", action="store_true",
                              help="remove every generated module and compiled code")
    hunt_parser = commands.add_parser(
        "hunt", help="search for the smallest shape and launch where a kernel fails")
    hunt_parser.add_argument("--kernel-file", required=True,
                             help="a .py file with your own @cuda.jit kernel")
    hunt_parser.add_argument("--kernel", help="the kernel's name in the file (default: its "
                             "only kernel)")
    hunt_parser.add_argument("--out", required=True, help="directory for hunt.json (and the "
                             "failing case's result.json and maps.npz)")
    hunt_parser.add_argument("--budget", type=float, default=60.0, metavar="SECONDS",
                             help="stop after this long (default 60 s)")
    hunt_parser.add_argument("--backend", choices=BACKENDS, default="auto",
                             help="where cases run (default auto: a GPU if there is one, else "
                                  "the CPU emulation, else the simulator; cpu never runs "
                                  "elsewhere)")
    hunt_parser.add_argument("--grid", help="pin the grid (N or NxM); with --block, only "
                             "the shapes vary")
    hunt_parser.add_argument("--block", help="pin the block (N or NxM; default: the kernel's "
                             "own, when its file launches it or its shared tile fixes it)")
    add_tier_option(hunt_parser)
    hunt_parser.add_argument("--dtype", choices=DTYPES, default=None,
                             help="float32 (the default) or float64: the matrices', or every "
                                  "described array's")
    hunt_parser.add_argument("--seed", type=int, default=0)
    hunt_parser.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                             help="value of a kernel's scalar parameter (repeatable)")
    hunt_parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                             help="describe a kernel parameter, as for run (repeatable; a "
                                  "file's THREADMAP_ARGS too): a kernel that is not C = A @ B "
                                  "is hunted on its arrays, each distinct dimension given "
                                  "small, prime and uneven sizes (an integer scalar equal to "
                                  "a dimension follows it), and on launches around them")
    hunt_parser.add_argument("--reference", default=None, metavar="FILE.py:FUNCTION",
                             help="YOUR host code, as for run, that every case is held to; "
                                  "without it a kernel run as it is fails a case only on the "
                                  "checks (elements never written, out of bounds, races)")
    check_parser = commands.add_parser(
        "check", help="check many kernel files on many shapes and launches; write a report")
    check_parser.add_argument("paths", nargs="+", metavar="FILE_OR_DIR",
                              help="kernel files, or folders searched for .py files")
    check_parser.add_argument("--shapes", default=None,
                              help="M x K x N, separated by commas (default 64x64x64,100x37x90, "
                                   "or what --arg describes)")
    check_parser.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                              help="describe every kernel's parameters (repeatable), as for "
                                   "run: x=float32[4096], n=4096; a submission's own "
                                   "THREADMAP_ARGS entries are replaced by name, and one whose "
                                   "parameters do not fit is an ERROR row saying why")
    check_parser.add_argument("--reference", default=None, metavar="FILE.py[:FUNCTION]",
                              help="YOUR host code (never a submission's: a file among those "
                                   "checked is refused, but for references.py at the top of a "
                                   "folder checked, which is then not graded), imported and "
                                   "called in check's own processes with float64 copies of "
                                   "each described kernel's inputs; it returns the expected "
                                   "output, which each submission is held to (PASS or FAIL, "
                                   "not CHECKED). FILE.py:FUNCTION holds every kernel to one "
                                   "function; FILE.py alone, a course's references, each "
                                   "kernel to the function named after it (or, in a file of "
                                   "one kernel, after the file)")
    check_parser.add_argument("--launches", default="file",
                              help="GRID:BLOCK (each N or NxM), or 'file' for the file's own "
                                   "launch (or one guessed, said so), separated by commas "
                                   "(default file: each file at its own launch, as run does; "
                                   "e.g. file,1:1024,4:256 adds two)")
    check_parser.add_argument("--out", required=True, help="directory for report.csv, "
                              "report.json and report.html")
    check_parser.add_argument("--backend", choices=BACKENDS, default="auto",
                              help="where cases run (default auto: a GPU if there is one, else "
                                   "the CPU emulation, else the simulator; cpu never runs "
                                   "elsewhere)")
    add_tier_option(check_parser)
    check_parser.add_argument("--dtype", choices=DTYPES, default="float32")
    check_parser.add_argument("--seed", type=int, default=0)
    check_parser.add_argument("--workers", type=int, default=None,
                              help="local processes (default: half the cores, at least 1)")
    check_parser.add_argument("--time-limit", type=float, default=30.0, metavar="SECONDS",
                              help="seconds one case may take (its kernel's first case three "
                                   "times as long: it compiles); a kernel past it is a failed "
                                   "row and its other cases are not run (default 30)")
    check_parser.add_argument("--scheduler", metavar="ADDRESS",
                              help="run on this Dask distributed scheduler (tcp://host:8786) "
                                   "instead of local processes")
    check_parser.add_argument("--follow-links", action="store_true",
                              help="grade a symbolic link inside a folder given (a file, or a "
                                   "folder's files), marked as a link in the report; by "
                                   "default it is an ERROR row and what it names is never "
                                   "opened (a file named here that is a link is graded)")
    open_parser = commands.add_parser("open", help="open the desktop app on a kernel file")
    open_parser.add_argument("kernel_file", help="a .py file with @cuda.jit kernels (parsed, "
                             "never run)")
    return parser
