"""The Ray backend's overhead per task, on a two-node Ray cluster started
on this machine (as the tests start it), or on the cluster at --address.

    python python/benchmarks/ray_overhead.py [--configs N] [--address ADDR]

Two measurements:

1. A sweep of N tiny configurations (a few milliseconds each): the Ray
   sweep's wall time minus the CPU the same configurations take run one at
   a time locally, divided by N. No credit is taken for the two nodes
   running in parallel, so this over-states the overhead.
2. An empty Ray task's round trip (submit, run, get), one at a time, beside
   a tiny configuration's round trip as a task.
"""

import argparse
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import elevator

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

JOB = """[tiny]
rw=randread
bs=4k
size=64k
"""


def grid(n):
    """n configurations: seeds 1..n under one scheduler."""
    return {"seed": list(range(1, n + 1))}


def cpu():
    t = os.times()
    return t.user + t.system


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=400)
    parser.add_argument("--address", help="a running Ray cluster (default: start two nodes here)")
    args = parser.parse_args()
    import ray

    base = None
    if args.address is None:
        from ray_cluster import start_cluster, stop_cluster

        base = tempfile.mkdtemp(prefix="elevray")
        address = start_cluster(base).address
    else:
        address = args.address
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        nodes = len([n for n in ray.nodes() if n["Alive"]])
        n = args.configs
        # warm the workers (the spec cache, imports) with one sweep first
        elevator.sweep(JOB, grid(n), backend="ray", progress=False)
        c0 = cpu()
        local = elevator.sweep(JOB, grid(n), jobs=1, progress=False)
        local_cpu = cpu() - c0
        walls = []
        for _ in range(3):
            t0 = time.perf_counter()
            on_ray = elevator.sweep(JOB, grid(n), backend="ray", progress=False)
            walls.append(time.perf_counter() - t0)
        assert local.equals(on_ray)
        wall = statistics.median(walls)
        print(f"{n} tiny configurations on {nodes} nodes: local one at a time {local_cpu:.3f} s CPU "
              f"({local_cpu / n * 1e3:.2f} ms each); Ray wall {wall:.3f} s (median of 3)")
        print(f"overhead per task (Ray wall - local CPU) / tasks: {(wall - local_cpu) / n * 1e3:.2f} ms")

        @ray.remote
        def empty():
            return None

        ray.get(empty.remote())
        rounds = []
        for _ in range(200):
            t0 = time.perf_counter()
            ray.get(empty.remote())
            rounds.append(time.perf_counter() - t0)
        one = []
        for i in range(50):
            t0 = time.perf_counter()
            elevator.sweep(JOB, {"seed": [i + 1]}, backend="ray", progress=False)
            one.append(time.perf_counter() - t0)
        print(f"empty task round trip: median {statistics.median(rounds) * 1e3:.2f} ms; "
              f"a one-configuration Ray sweep (spec shipped, task, table): median {statistics.median(one) * 1e3:.2f} ms")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if base is not None:
            stop_cluster(base)
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
