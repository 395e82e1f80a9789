"""``python -m app``: the desktop app (or the command line, given arguments)."""
import sys

from .launcher import main

sys.exit(main())
