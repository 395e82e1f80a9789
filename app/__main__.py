"""``python -m app``: the desktop app (or the command line, given arguments)."""
from .launcher import command

command()
