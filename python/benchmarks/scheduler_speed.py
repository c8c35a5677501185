"""How fast a scheduler written in Python simulates, beside the built-in
``none`` (also a FIFO): I/Os per second of host CPU time for a size-bound
job (random 4 KiB reads at depth 32 on the ``null`` device, a model that
takes no time to compute, so that the scheduler's cost shows), the median
of 5 runs of each, alternating.

    python benchmarks/scheduler_speed.py [--ios N] [--runs 5] [--device null]

Prints one line per scheduler: its median, and every run's figure.
"""

import argparse
import importlib.util
import pathlib
import statistics
import time

import elevator


def example_fifo():
    """The FIFO of examples/schedulers/fifo.py, loaded from that file (the
    figure is the example's, not a copy's)."""
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "schedulers" / "fifo.py"
    spec = importlib.util.spec_from_file_location("elevator_example_fifo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Fifo


Fifo = example_fifo()


def job(ios):
    return "[bench]\nrw=randread\nbs=4k\nsize=%dk\nioengine=libaio\niodepth=32\nnorandommap=1\n" % (4 * ios)


def measure(scheduler, text, device):
    """I/Os per CPU second of one run."""
    t0 = time.process_time()
    r = elevator.run(text, scheduler=scheduler, device=device, seed=7)
    cpu = time.process_time() - t0
    ios = r.data["jobs"][0]["read"]["total_ios"]
    return ios / cpu, ios


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ios", type=int, default=200_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--device", default="null")
    a = p.parse_args()
    text = job(a.ios)
    figures = {"none": [], "py-fifo": []}
    for _ in range(a.runs):
        for name, sched in (("none", "none"), ("py-fifo", Fifo)):
            rate, ios = measure(sched, text, a.device)
            figures[name].append(rate)
    print("size-bound job: %d random 4 KiB reads at depth 32 on %s; I/Os per CPU second, median of %d" % (ios, a.device, a.runs))
    for name, rates in figures.items():
        print("%-8s %10.0f   (%s)" % (name, statistics.median(rates), ", ".join("%.0f" % r for r in rates)))


if __name__ == "__main__":
    main()
