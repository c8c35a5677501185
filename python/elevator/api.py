"""elevator's functions: :func:`run`, :func:`compare`, :func:`replay`,
:func:`advise`, :func:`devices`, :func:`schedulers`. Each turns its
arguments into what the ``elevator`` command takes and calls the native
module, which runs the same library code as the command (with the GIL
released, unless a scheduler written in Python takes part)."""

import os

from . import _native
from .result import Advice, Comparison, Listing, Replay, Result


def _job(job):
    """``(path, text)`` for a job argument: an :class:`os.PathLike` is a
    path; a ``str`` with a newline is a job's text, one without is a path;
    ``None`` is no job (the job is then all in ``fio``)."""
    if job is None:
        return None, None
    if isinstance(job, os.PathLike):
        return os.fspath(job), None
    if isinstance(job, bytes):
        job = job.decode()
    if not isinstance(job, str):
        raise TypeError("job: a job's text or a path (str or os.PathLike), not %s" % type(job).__name__)
    if "\n" in job:
        return None, job
    return job, None


def _value(v):
    """A tunable's or fio option's value as the command line writes it."""
    if v is True:
        return "1"
    if v is False:
        return "0"
    return str(v)


def _set(set):
    """``--set`` options from a dict of tunables (or a list of
    ``NAME=VALUE``)."""
    if set is None:
        return []
    if isinstance(set, dict):
        return ["%s=%s" % (k, _value(v)) for k, v in set.items()]
    return [str(s) for s in set]


def _fio(fio):
    """fio's command-line options from a dict (``{"rw": "randread"}`` is
    ``--rw=randread``; ``None`` as a value is a bare ``--name``), in
    order."""
    if fio is None:
        return []
    if isinstance(fio, dict):
        return ["--%s" % k if v is None else "--%s=%s" % (k, _value(v)) for k, v in fio.items()]
    return [s if s.startswith("--") else "--" + s for s in map(str, fio)]


def _seed(seed):
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise TypeError("seed: a whole number >= 0 (or None), not %r" % (seed,))
    return seed


def run(job=None, device="hdd-7200", scheduler="mq-deadline", seed=7, set=None, fio=None):
    """Run fio jobs on a device under a scheduler, as ``elevator run`` does.

    - ``job``: the job: a path (an :class:`os.PathLike`, or a ``str``
      without a newline) or the job file's text (a ``str`` with a newline);
      ``None`` when ``fio`` gives the whole job.
    - ``device``: a ``--device`` spec: a simulated preset with overrides
      (``"hdd-7200,rpm=5400"``; :func:`devices` lists them), or a real
      device (``"file:PATH"``, ``"mem:1g"``).
    - ``scheduler``: a built-in's name (:func:`schedulers` lists them), or
      a scheduler written in Python (a :class:`elevator.Scheduler` subclass
      or instance; simulated devices only).
    - ``seed``: mixed into every job's random stream (``None``: the
      command's default, 0).
    - ``set``: queue and scheduler tunables, ``{"read_expire": 250}`` (as
      ``--set read_expire=250``).
    - ``fio``: fio options, as on fio's command line: ``{"iodepth": 32}``
      is ``--iodepth=32`` (they override the job file's for every job).

    Returns a :class:`~elevator.result.Result` (``.json``, ``.data``,
    ``.to_pandas()``). Raises :class:`elevator.ConfigError` for a wrong
    argument and :class:`elevator.RunError` for a run that failed, with the
    command's message.

    Example::

        >>> import elevator
        >>> job = "[r]\\nrw=randread\\nbs=4k\\nsize=16m\\niodepth=8\\nioengine=libaio\\n"
        >>> r = elevator.run(job, device="hdd-7200", scheduler="bfq", seed=7)
        >>> r.to_pandas()[["job", "iops", "clat_p99_ns"]]
    """
    return compare(job, [scheduler], device=device, seed=seed, set=set, fio=fio)[0]


def _names_and_plugins(schedulers):
    """The names of ``schedulers`` (built-ins by name, Python schedulers
    by their class's name) and the Python ones."""
    if isinstance(schedulers, (str, bytes)) or not hasattr(schedulers, "__iter__"):
        schedulers = [schedulers]
    names, plugins = [], []
    for s in schedulers:
        if isinstance(s, str):
            names.append(s)
            continue
        from .scheduler import scheduler_name

        names.append(scheduler_name(s))
        plugins.append(s)
    return names, plugins


def _results(outs):
    return [Result(json_text, notes) for json_text, notes in outs]


def compare(job=None, schedulers=("none", "mq-deadline", "deadline-list"), device="hdd-7200", seed=7, set=None, fio=None):
    """Run one job under several schedulers, each on the same device from
    the same start, as ``elevator compare`` does: built-ins by name, and
    schedulers written in Python (:class:`elevator.Scheduler` subclasses or
    instances) beside them. The other arguments are :func:`run`'s.

    Returns a :class:`~elevator.result.Comparison`: ``results`` by
    scheduler name, ``to_pandas()`` with a ``scheduler`` column.

    Example::

        >>> c = elevator.compare(job, ["none", "mq-deadline", MyFifo], device="ssd-sata")
        >>> c.to_pandas().pivot_table(index="scheduler", values="iops")
    """
    names, plugins = _names_and_plugins(schedulers)
    if not names:
        raise _native_config_error("schedulers: give at least one scheduler")
    path, text = _job(job)
    outs = _native.run_jobs(path, text, _fio(fio), device, names, _seed(seed), _set(set), plugins)
    return Comparison([(r.scheduler or n, r) for r, n in zip(_results(outs), names)])


def _native_config_error(message):
    from .errors import ConfigError

    return ConfigError(message)


def replay(
    trace,
    device=None,
    scheduler="mq-deadline",
    set=None,
    events="Q",
    timing="recorded",
    speed=1.0,
    depth=None,
    format=None,
    dev=None,
    skip_bad=False,
    reorder_window="1s",
    fua=False,
    write_through=False,
):
    """Replay a recorded block trace through a scheduler, as ``elevator
    replay`` does (each argument is its option of the same name).

    - ``trace``: its path (blktrace, blkparse, tracefs text or a fio
      iolog; plain, xz or gzip, recognised from the content).
    - ``device``: a device spec; ``None``: the recording's own service
      times (``recorded``) when the trace has completions, else
      ``null,latency=200,queue_depth=128``.
    - ``scheduler``: a built-in's name or a Python scheduler
      (:class:`elevator.Scheduler` subclass or instance).
    - ``set``: tunables (dict); ``events``: ``"Q"`` (bios) or ``"D"``
      (issued requests); ``timing``: ``"recorded"`` (open loop, ``speed``
      times faster) or ``"asap"``; ``depth``: a closed loop of at most that
      many bios; ``format``, ``dev`` (``"MAJ,MIN"``), ``skip_bad``,
      ``reorder_window``, ``fua``, ``write_through``: as the command's.

    Returns a :class:`~elevator.result.Replay` (``.json``, ``.data``,
    ``.to_pandas()``: one row per operation).

    Example::

        >>> rp = elevator.replay("tests/traces/pgbench-init-mq-deadline.trace.xz",
        ...                      scheduler="bfq", timing="asap")
        >>> rp.data["bios"], rp.to_pandas()[["source", "op", "queued", "q2c_p99_ns"]]
    """
    names, plugins = _names_and_plugins(scheduler)
    if len(names) != 1:
        raise _native_config_error("scheduler: give one scheduler")
    json_text, notes = _native.replay_trace(
        os.fspath(trace),
        device,
        names[0],
        _set(set),
        str(events),
        str(timing),
        float(speed),
        depth,
        format,
        dev,
        bool(skip_bad),
        str(reorder_window),
        bool(fua),
        bool(write_through),
        plugins,
    )
    return Replay(json_text, notes)


def advise(
    workload=None,
    device="hdd-7200",
    goal="throughput",
    schedulers=None,
    nomerges=(0,),
    set=None,
    seed=7,
    depth=None,
    trace=False,
    fio=None,
):
    """Which built-in scheduler suits a workload on a device model, as
    ``elevator advise`` answers: the workload is run under each scheduler
    (and each ``nomerges`` setting) and the runs ranked by ``goal``
    (``"throughput"``, ``"p99"`` or ``"fairness"``).

    - ``workload``: a fio job (text or path, as :func:`run` takes it) or
      a trace's path (recognised from its content; ``trace=True`` says so).
    - ``schedulers``: names (default: every built-in); ``nomerges``: the
      settings to try each with; ``set``, ``seed``, ``fio``: as
      :func:`run`; ``depth``: replay a trace as a closed loop.

    Returns an :class:`~elevator.result.Advice` (``.best``,
    ``.explanation``, ``.to_pandas()``: one row per run, ranked).

    Example::

        >>> a = elevator.advise(job, device="hdd-7200", goal="p99")
        >>> a.best, a.to_pandas()[["rank", "scheduler", "goal_p99_ns"]]
    """
    path, text = _job(workload)
    names = [] if schedulers is None else _names_and_plugins(schedulers)[0]
    json_text, notes = _native.advise_on(
        path,
        text,
        _fio(fio),
        bool(trace),
        device,
        str(goal),
        names,
        [int(n) for n in nomerges],
        _set(set),
        _seed(seed) or 0,
        depth,
    )
    return Advice(json_text, notes)


def devices():
    """The simulated devices (presets), each a dict: ``name``, ``kind``,
    ``description``, ``params`` (name, value, unit, help); a
    :class:`~elevator.result.Listing` (``to_pandas()``: one row per
    device). Real devices are named ``file:PATH`` and ``mem:SIZE``.

    Example::

        >>> [d["name"] for d in elevator.devices()][:3]
    """
    return Listing(_native.devices())


def schedulers():
    """The built-in schedulers, each a dict: ``name``, ``aliases``,
    ``tunables`` (name, default, min, max, unit, read_only, help); a
    :class:`~elevator.result.Listing` (``to_pandas()``: one row per
    scheduler, its tunables' names in a list). The queue's own tunables,
    which every scheduler has, are the listing's ``queue_tunables``.

    Example::

        >>> [s["name"] for s in elevator.schedulers()]
    """
    scheds, queue = _native.schedulers()
    out = Listing(scheds)
    out.queue_tunables = queue
    return out
