"""Schedulers written in Python: they run wherever a built-in does (run,
compare, replay), complete every I/O, give the same figures every time,
and fail clearly."""

import collections
import pathlib
import sys

import pytest

import elevator

from conftest import MIXED, SIZE_BOUND, TRACE

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "schedulers"))

from deadline import Deadline  # noqa: E402
from fifo import Fifo  # noqa: E402


def test_the_fifo_completes_every_io_of_a_size_bound_job():
    r = elevator.run(SIZE_BOUND, scheduler=Fifo, device="hdd-7200")
    read = r.data["jobs"][0]["read"]
    assert read["total_ios"] == 1024
    assert read["io_bytes"] == 4 << 20
    assert r.scheduler == "py-fifo"


def test_results_are_deterministic():
    a = elevator.run(MIXED, scheduler=Fifo, device="hdd-7200", seed=3)
    b = elevator.run(MIXED, scheduler=Fifo(), device="hdd-7200", seed=3)
    assert a.json == b.json
    c = elevator.run(MIXED, scheduler=Deadline, device="hdd-7200", seed=3)
    d = elevator.run(MIXED, scheduler=Deadline, device="hdd-7200", seed=3)
    assert c.json == d.json


def test_the_fifo_serves_as_none_does():
    # `none` is a FIFO too (it also scans recent requests for merges, which
    # random 4 KiB reads never make).
    fifo = elevator.run(SIZE_BOUND, scheduler=Fifo, device="hdd-7200").data["jobs"]
    none = elevator.run(SIZE_BOUND, scheduler="none", device="hdd-7200").data["jobs"]
    assert fifo == none


def test_compare_beside_built_ins():
    c = elevator.compare(MIXED, ["none", Fifo, "mq-deadline", Deadline], device="hdd-7200")
    assert list(c) == ["none", "py-fifo", "mq-deadline", "py-deadline"]
    df = c.to_pandas()
    assert set(df["scheduler"]) == {"none", "py-fifo", "mq-deadline", "py-deadline"}
    totals = df.groupby("scheduler")["total_ios"].sum()
    assert len(set(totals)) == 1  # every scheduler completed every I/O


def test_replay_of_the_shipped_trace():
    py = elevator.replay(TRACE, scheduler=Fifo, timing="asap")
    builtin = elevator.replay(TRACE, scheduler="none", timing="asap")
    assert py.data["scheduler"] == "py-fifo"
    assert py.data["bios"] == builtin.data["bios"] > 0
    ops = py.data["elevator"]["ops"]
    assert ops["write"]["queued"]["count"] == builtin.data["elevator"]["ops"]["write"]["queued"]["count"]


class Raises(elevator.Scheduler):
    def __init__(self):
        self.queue = collections.deque()

    def insert(self, request):
        if request.sector > 0 and len(self.queue) == 3:
            raise ValueError("no room for %d" % request.sector)
        self.queue.append(request)

    def dispatch(self, now):
        return self.queue.popleft() if self.queue else None


def test_a_scheduler_that_raises_fails_the_run_with_its_traceback():
    with pytest.raises(elevator.SchedulerError) as e:
        elevator.run(SIZE_BOUND, scheduler=Raises)
    text = str(e.value)
    assert text.startswith("scheduler Raises failed: insert(request) raised:\nTraceback (most recent call last):")
    assert 'test_scheduler.py", line' in text and "in insert" in text
    assert "ValueError: no room for" in text
    assert isinstance(e.value, elevator.RunError) and isinstance(e.value, RuntimeError)


class Dispatcher(elevator.Scheduler):
    """Dispatches what ``answer`` gives."""

    def __init__(self):
        self.queue = collections.deque()
        self.last = None

    def insert(self, request):
        self.queue.append(request)

    def dispatch(self, now):
        return self.answer(now)


class Twice(Dispatcher):
    def answer(self, now):
        if self.last is not None and len(self.queue) > 3:
            return self.last
        self.last = self.queue.popleft() if self.queue else None
        return self.last


class Stranger(Dispatcher):
    def answer(self, now):
        return "the next one" if self.queue else None


class Stale(Dispatcher):
    def answer(self, now):
        return now if self.queue else None  # a time that is not after now


@pytest.mark.parametrize(
    "cls,message",
    [
        (Twice, r"dispatch\(\d+\) returned Request\(id=\d+, op=read, .*\), which it does not hold"),
        (Stranger, r"dispatch\(0\) returned 'the next one': it must return a Request it holds, None, or a time"),
        (Stale, r"dispatch\(0\) returned 0: a time to wait until must be after now"),
    ],
)
def test_a_dispatch_the_protocol_forbids_fails_clearly(cls, message):
    with pytest.raises(elevator.SchedulerError, match=message):
        elevator.run(SIZE_BOUND, scheduler=cls)


class Idler(elevator.Scheduler):
    """Holds each request 1 ms after it came (an int from dispatch: wait)."""

    def __init__(self):
        self.queue = collections.deque()

    def insert(self, request):
        self.queue.append(request)

    def dispatch(self, now):
        if not self.queue:
            return None
        due = self.queue[0].queued_at + 1_000_000
        return self.queue.popleft() if now >= due else due


def test_dispatch_may_wait_until_a_time():
    r = elevator.run(SIZE_BOUND, scheduler=Idler, device="ssd-sata").data["jobs"][0]["read"]
    assert r["total_ios"] == 1024
    assert r["clat_ns"]["mean"] >= 1_000_000


class Tracked(elevator.Scheduler):
    """Counts its hooks, and checks what it is handed."""

    calls = collections.Counter()

    def __init__(self):
        self.queue = collections.deque()

    def insert(self, request):
        assert request.size == request.sectors * 512 and request.op in ("read", "write")
        assert request.priority == ("be", 4)
        request.mine = True  # attributes of one's own stay on the object
        self.queue.append(request)
        Tracked.calls["insert"] += 1

    def dispatch(self, now):
        return self.queue.popleft() if self.queue else None

    def completed(self, request, now):
        assert request.mine and now >= request.queued_at
        Tracked.calls["completed"] += 1

    def merged(self, request):
        assert request.mine and request.size > 4096
        Tracked.calls["merged"] += 1


def test_hooks_see_every_request_and_merges():
    Tracked.calls.clear()
    job = "[seq]\nrw=write\nbs=4k\nsize=1m\nioengine=libaio\niodepth=16\n"
    r = elevator.run(job, scheduler=Tracked, device="hdd-7200,ncq=1")
    assert r.data["jobs"][0]["write"]["total_ios"] == 256
    # Sequential 4 KiB writes merge on the submitter's plug, before the
    # scheduler: 16 requests of 16 bios each.
    assert Tracked.calls["insert"] == Tracked.calls["completed"] == 16
    assert Tracked.calls["merged"] == 0
    # With the disk busy (one request at a time, random reads beside),
    # the writes wait in the scheduler, and the next bios merge into them.
    Tracked.calls.clear()
    job = (
        "[r]\nrw=randread\nbs=4k\nsize=1m\nioengine=libaio\niodepth=4\n"
        "[w]\nrw=write\nbs=4k\nsize=1m\nioengine=libaio\niodepth=16\n"
    )
    r = elevator.run(job, scheduler=Tracked, device="hdd-7200,ncq=1")
    assert r.data["jobs"][1]["write"]["total_ios"] == 256
    assert Tracked.calls["merged"] > 0
    assert Tracked.calls["insert"] == Tracked.calls["completed"]


def test_python_schedulers_are_refused_on_real_devices():
    with pytest.raises(elevator.ConfigError, match="written in Python: it runs in simulation only"):
        elevator.run(SIZE_BOUND, scheduler=Fifo, device="mem:64m")


def test_a_class_must_define_insert_and_dispatch():
    class Nothing(elevator.Scheduler):
        pass

    with pytest.raises(elevator.ConfigError, match="must define insert"):
        elevator.run(SIZE_BOUND, scheduler=Nothing)


def test_a_built_in_name_is_refused():
    class Mine(Fifo):
        name = "bfq"

    with pytest.raises(elevator.ConfigError, match="a built-in scheduler has that name"):
        elevator.run(SIZE_BOUND, scheduler=Mine)


def test_a_constructor_that_raises_fails_the_run():
    class Broken(Fifo):
        def __init__(self):
            raise RuntimeError("cannot start")

    with pytest.raises(elevator.SchedulerError, match="creating it raised:(.|\n)*RuntimeError: cannot start"):
        elevator.run(SIZE_BOUND, scheduler=Broken)


class RaisesIn(elevator.Scheduler):
    """A FIFO whose hook ``where`` raises on its 10th call."""

    where = None

    def __init__(self):
        self.queue = collections.deque()
        self.calls = collections.Counter()

    def _count(self, hook):
        self.calls[hook] += 1
        if hook == self.where and self.calls[hook] == 10:
            raise KeyError("%s broke" % hook)

    def insert(self, request):
        self._count("insert")
        self.queue.append(request)

    def dispatch(self, now):
        self._count("dispatch")
        return self.queue.popleft() if self.queue else None

    def has_work(self):
        self._count("has_work")
        return bool(self.queue)

    def completed(self, request, now):
        self._count("completed")


@pytest.mark.parametrize("hook,shown", [
    ("dispatch", "dispatch(now)"),
    ("completed", "completed(request, now)"),
    ("has_work", "has_work()"),
])
def test_any_hook_that_raises_fails_the_run_after_it_ends(hook, shown):
    cls = type("Raises_" + hook, (RaisesIn,), {"where": hook})
    with pytest.raises(elevator.SchedulerError) as e:
        elevator.run(SIZE_BOUND, scheduler=cls, device="ssd-sata")
    text = str(e.value)
    assert text.startswith("scheduler Raises_%s failed: %s raised:\nTraceback" % (hook, shown))
    assert text.endswith("KeyError: '%s broke'" % hook)
