"""A local worker process of a sweep (``python -m startlab.sweep.worker FD``).

It runs the tasks that the sweep sends over the socket ``FD`` (the local pool of
:mod:`startlab.sweep.execute`) until told to stop or the socket closes.
"""

from __future__ import annotations

import multiprocessing.connection
import signal
import sys
from typing import Any

from startlab.sweep.execute import run_point

__all__ = ["main", "serve"]


def serve(connection: multiprocessing.connection.Connection) -> None:
    """A local worker: run the tasks the parent sends until it sends ``None`` or goes away."""
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        key, scenario, metrics, series_dir = message
        try:
            reply: tuple[str, Any] = ("record", run_point(key, scenario, metrics, series_dir))
        except BaseException as e:  # reported to the parent as a crash
            reply = ("crash", f"{type(e).__name__}: {e}")
        try:
            connection.send(reply)
        except (BrokenPipeError, OSError):
            return


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print(
            "usage: python -m startlab.sweep.worker FD (started by startlab sweep)", file=sys.stderr
        )
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    serve(multiprocessing.connection.Connection(int(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
