"""Schedulers written in Python: subclass :class:`Scheduler`, and pass the
class (or an instance, copied for each run) wherever a scheduler's name
goes: ``elevator.run(job, scheduler=MyFifo)``, ``elevator.compare(job,
["mq-deadline", MyFifo])``, ``elevator.replay(trace, scheduler=MyFifo)``.
They run in simulation only (the virtual clock).

The queue calls the hooks in a fixed order: each request is handed to
:meth:`Scheduler.insert` once, then handed back by :meth:`Scheduler.dispatch`
(once); a dispatched request is later :meth:`Scheduler.completed`. A bio
that merges into a request the scheduler holds changes that request's
``sector``/``size`` (:meth:`Scheduler.merged` is told). Requests are
:class:`elevator.Request` objects: the same object for a request from its
insert to its completion (you may set attributes of your own on it).

A Python exception in a hook fails the run with
:class:`elevator.SchedulerError`, whose message has the traceback; so does
a ``dispatch`` that answers a request the scheduler does not hold (never
inserted, already dispatched) or anything but a request, ``None`` or a
time. See docs/python-schedulers.md.

Example (a FIFO)::

    import collections, elevator

    class Fifo(elevator.Scheduler):
        def __init__(self):
            self.queue = collections.deque()
        def insert(self, request):
            self.queue.append(request)
        def dispatch(self, now):
            return self.queue.popleft() if self.queue else None

    elevator.run(job, scheduler=Fifo)
"""

from . import _native

#: Request: what a scheduler is handed (a class of the native module).
Request = _native.Request


class Scheduler:
    """The class to subclass. Override :meth:`insert` and :meth:`dispatch`;
    the other hooks are optional: a hook a subclass does not override is
    not called at all (it costs nothing).

    The scheduler's name (in results, in ``compare``'s table) is the
    class's ``name`` attribute if it has one, else the class's name; it may
    not be a built-in scheduler's.
    """

    def insert(self, request):
        """Take ``request`` (an :class:`elevator.Request`): hold it until
        :meth:`dispatch` hands it to the device."""
        raise NotImplementedError("%s.insert" % type(self).__name__)

    def dispatch(self, now):
        """The next request for the device, at virtual time ``now`` (ns):
        one the scheduler holds; ``None`` for nothing now (the queue asks
        again after the next insert or completion); or an ``int``, a time
        in ns after ``now``: nothing until then (the scheduler idles on
        purpose; asked again then, or at the next insert or completion)."""
        raise NotImplementedError("%s.dispatch" % type(self).__name__)

    def has_work(self):
        """Whether the scheduler holds requests. Not overridden: whether
        any request was inserted and not yet dispatched (counted for
        you)."""
        raise NotImplementedError  # never called unless overridden

    def completed(self, request, now):
        """``request``, which this scheduler dispatched, completed at
        ``now`` (ns). Optional."""

    def merged(self, request):
        """A bio merged into ``request``, which the scheduler holds: its
        ``sector`` (a front merge) or ``size`` changed. Optional: a
        scheduler that sorts by sector re-sorts it here."""


def scheduler_name(scheduler):
    """The name a Python scheduler (class or instance) runs under."""
    cls = scheduler if isinstance(scheduler, type) else type(scheduler)
    if not (isinstance(cls, type) and issubclass(cls, Scheduler)):
        from .errors import ConfigError

        raise ConfigError(
            "scheduler: a built-in's name or an elevator.Scheduler subclass (or instance), not %r"
            % (scheduler,)
        )
    name = getattr(scheduler, "name", None)
    return name if isinstance(name, str) and name else cls.__name__
