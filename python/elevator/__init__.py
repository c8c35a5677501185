"""elevator from Python: fio jobs and block traces through Linux's I/O
schedulers on simulated devices, and schedulers written in Python.

The functions (each documented where it is defined):

- :func:`run`: fio jobs on a device under a scheduler, a :class:`Result`
  with ``.json`` (the fio JSON ``elevator run --output-format json``
  writes), ``.data`` and ``.to_pandas()``.
- :func:`compare`: one job under several schedulers, built-in or written
  in Python, side by side.
- :func:`replay`: a recorded block trace through a scheduler.
- :func:`advise`: which scheduler suits a job or a trace.
- :func:`devices`, :func:`schedulers`: what can be named.
- :class:`Scheduler`: subclass it to write a scheduler in Python;
  :class:`Request` is what it is handed.
- :mod:`elevator.errors`: the exceptions, with the CLI's messages.

See docs/python.md in the repository.
"""

from .api import advise, compare, devices, replay, run, schedulers
from .errors import ConfigError, ElevatorError, RunError, SchedulerError
from .result import Advice, Comparison, Listing, Replay, Result
from .scheduler import Request, Scheduler

__all__ = [
    "Advice",
    "Comparison",
    "ConfigError",
    "ElevatorError",
    "Listing",
    "Replay",
    "Request",
    "Result",
    "RunError",
    "Scheduler",
    "SchedulerError",
    "advise",
    "compare",
    "devices",
    "replay",
    "run",
    "schedulers",
]

try:  # the sweep (python/elevator/sweep.py) is optional: its import may fail alone
    from .sweep import sweep  # noqa: F401

    __all__.append("sweep")
except ImportError:  # pragma: no cover
    pass
