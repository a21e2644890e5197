"""I/O: processes, file descriptors, clocks, signals, files and the command line.

Everything that decides what a frame becomes lives in ``compat``; this package only moves
bytes and time. Nothing here prints to stdout except the protocol (stdout is the channel).
"""

from compat import __version__

__all__ = ["__version__"]
