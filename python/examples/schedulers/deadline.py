"""A small deadline-style scheduler written in Python.

Requests wait in two places: a FIFO per direction (reads, writes), in the
order they came, and a batch sorted by sector. Each dispatch takes the
next request of the current batch, in sector order (one sweep of the
disk's head); when the batch is empty, a new one is formed from
everything queued. A request older than its expiry (reads 500 ms, writes
5 s, as mq-deadline's defaults) is served first, from the FIFO's head,
so that no request waits for ever behind a busy region of the disk.

    python examples/schedulers/deadline.py        # compares it with mq-deadline
"""

import collections

import elevator


class Deadline(elevator.Scheduler):
    """Sorted batches by sector, with FIFO expiry per direction."""

    name = "py-deadline"

    def __init__(self, read_expire_ms=500, write_expire_ms=5000, batch=16):
        self.expire = {True: read_expire_ms * 1_000_000, False: write_expire_ms * 1_000_000}
        self.batch_size = batch
        self.fifo = {True: collections.deque(), False: collections.deque()}
        self.batch = []  # (sector, id, request), sorted
        self.queued = set()  # ids of requests held (inserted, not dispatched)

    def insert(self, request):
        self.fifo[request.is_read].append(request)
        self.queued.add(request.id)

    def _expired(self, now):
        """The oldest request past its expiry, reads first."""
        for read in (True, False):
            fifo = self.fifo[read]
            while fifo and fifo[0].id not in self.queued:
                fifo.popleft()  # dispatched from a batch already
            if fifo and now - fifo[0].queued_at >= self.expire[read]:
                return fifo.popleft()
        return None

    def _next_batch(self):
        """The next batch: up to batch_size requests, sorted by sector,
        taken from the FIFOs (reads first)."""
        taken = []
        for read in (True, False):
            fifo = self.fifo[read]
            while fifo and len(taken) < self.batch_size:
                r = fifo.popleft()
                if r.id in self.queued:
                    taken.append((r.sector, r.id, r))
        taken.sort(key=lambda t: t[:2])
        self.batch = taken

    def dispatch(self, now):
        request = self._expired(now)
        if request is None:
            while self.batch and self.batch[0][1] not in self.queued:
                self.batch.pop(0)
            if not self.batch:
                self._next_batch()
            if not self.batch:
                return None
            request = self.batch.pop(0)[2]
        self.queued.discard(request.id)
        return request

    def merged(self, request):
        # A front merge moved the request's start: keep the batch sorted.
        for i, (_, rid, r) in enumerate(self.batch):
            if r is request:
                self.batch[i] = (request.sector, rid, request)
                self.batch.sort(key=lambda t: t[:2])
                break


JOB = """
[readers]
rw=randread
bs=4k
size=8m
ioengine=libaio
iodepth=16
[writer]
rw=write
bs=64k
size=32m
"""

if __name__ == "__main__":
    # One request at a time on the disk (ncq=1): the order is the scheduler's.
    c = elevator.compare(JOB, ["none", "mq-deadline", Deadline], device="hdd-7200,ncq=1")
    print(c.to_pandas()[["scheduler", "job", "direction", "iops", "clat_mean_ns", "clat_p99_ns"]])
