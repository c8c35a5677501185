"""A FIFO scheduler written in Python: requests go to the device in the
order they came (what the built-in ``none`` does, without its merge scan).

    python examples/schedulers/fifo.py            # runs a small job under it
"""

import collections

import elevator


class Fifo(elevator.Scheduler):
    """First in, first out."""

    name = "py-fifo"

    def __init__(self):
        self.queue = collections.deque()

    def insert(self, request):
        self.queue.append(request)

    def dispatch(self, now):
        return self.queue.popleft() if self.queue else None


JOB = """
[random-reads]
rw=randread
bs=4k
size=8m
ioengine=libaio
iodepth=16
"""

if __name__ == "__main__":
    c = elevator.compare(JOB, ["none", Fifo], device="hdd-7200")
    print(c.to_pandas()[["scheduler", "job", "iops", "clat_mean_ns", "clat_p99_ns"]])
