"""A local worker process of a sweep (``python -m startlab.sweep.worker FD``).

It runs the tasks that the sweep sends over the socket ``FD`` (see
:class:`startlab.sweep.execute._LocalPool`) until told to stop or the socket closes.
"""

from __future__ import annotations

import multiprocessing.connection
import signal
import sys

from startlab.sweep.execute import _worker_main


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print(
            "usage: python -m startlab.sweep.worker FD (started by startlab sweep)", file=sys.stderr
        )
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    _worker_main(multiprocessing.connection.Connection(int(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
