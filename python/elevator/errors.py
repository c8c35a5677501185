"""The exceptions elevator raises, each with the message the ``elevator``
command prints after ``error:``.

- :class:`ElevatorError`: every one of them.
- :class:`ConfigError` (also a :class:`ValueError`): what was given is
  wrong: an unknown device, scheduler or tunable, a job that does not
  parse, options that do not go together.
- :class:`RunError` (also a :class:`RuntimeError`): the run could not be
  done, or went to its end but failed on its own terms (a job's verify
  error, the write log's check).
- :class:`SchedulerError` (a :class:`RunError`): a scheduler written in
  Python raised, or answered what the protocol forbids; the message has
  the Python traceback.

Example::

    >>> import elevator
    >>> try:
    ...     elevator.run("[a]\\nrw=randread\\nsize=1m\\n", device="no-such-disk")
    ... except elevator.ConfigError as e:
    ...     print("refused:", e)
"""


class ElevatorError(Exception):
    """Every error elevator raises."""


class ConfigError(ElevatorError, ValueError):
    """What was given is wrong (device, job, scheduler, tunable, options)."""


class RunError(ElevatorError, RuntimeError):
    """The run could not be done, or failed on its own terms."""


class SchedulerError(RunError):
    """A scheduler written in Python failed; the message has its traceback."""
