"""``python -m kernels``: the headless command line (no GUI, no image export)."""
import sys

from .cli import main

sys.exit(main())
