"""The headless command line: ``threadmap run`` (and ``sweep``, ``kernels``,
``cache``, ``hunt``, ``check``, ``open``).

It calls the same engine as the GUI, through its public face.  Image export
(``--png`` / ``--svg``) needs Qt and is provided by the ``app`` package,
which passes a renderer in; without one those options are refused.

``shell.py`` parses (``parser.py``), runs the command named and turns what
goes wrong into one line; each command is a module (``run``, ``sweep``,
``hunt``, ``check``, ``listings``); ``options.py`` makes the options into a
request, checked before anything runs; ``printing.py`` says what came of it.
"""
from .shell import main

__all__ = ["main"]
