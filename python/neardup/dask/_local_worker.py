"""Imported by the process the local cluster's workers are forked from (`python3 -m neardup.dask`
without --scheduler): the workers inherit what it sets.

Ctrl-C reaches the whole process group. The command stops the cluster itself and exits with 130;
a worker interrupted on its own would print a traceback of its event loop. The server imports this
before it sets its own handlers, and gives each worker these back.
"""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
