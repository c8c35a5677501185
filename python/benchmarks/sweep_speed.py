"""The local backend's speed-up: a 64-configuration sweep of the shipped
PostgreSQL trace (examples/sweep/pgbench-64.toml, the spec of `elevator
sweep`'s figure) on 1 thread and on 2, alternating, the median of each.
Each run reads the spec anew (the trace read, decompressed and parsed once
per run, as `elevator sweep` does).

    python python/benchmarks/sweep_speed.py [--reps N]

Prints each run's wall and CPU (user+sys) seconds, then the medians and the
ratio (1 thread's wall / 2 threads'). Wall-clock time on a shared machine
is noisy: run it when the machine is otherwise idle, and read the CPU
figures beside it (a speed-up bought with more CPU shows there). Last, the
CPU split that bounds the speed-up whatever the machine's load: the serial
part (the spec and trace read, decompressed and parsed, once) against the
configurations' CPU, run one at a time, and the best case on 2 idle cores
that follows (Amdahl's law).
"""

import argparse
import os
import pathlib
import statistics
import time

import elevator
from elevator import _native

REPO = pathlib.Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "sweep" / "pgbench-64.toml"


def one(jobs):
    t0, c0 = time.perf_counter(), os.times()
    spec = _native.Sweep.from_toml(str(SPEC))
    df = elevator.sweep(spec=spec, jobs=jobs, progress=False)
    c1, t1 = os.times(), time.perf_counter()
    assert len(df) == 64, len(df)
    return t1 - t0, (c1.user - c0.user) + (c1.system - c0.system), df


def cpu_idle_fraction(seconds=2.0):
    """The machine's idle CPU share over ``seconds`` (Linux: /proc/stat)."""

    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
        return fields[3], sum(fields)

    idle0, total0 = sample()
    time.sleep(seconds)
    idle1, total1 = sample()
    return (idle1 - idle0) / max(1, total1 - total0)


def wait_idle(limit_s=600):
    """Wait (at most ``limit_s``) until the machine has been 90 % idle for 2 s."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        idle = cpu_idle_fraction()
        if idle >= 0.9:
            print(f"machine idle ({idle:.0%} over 2 s): starting", flush=True)
            return
    print("the machine never went idle: measuring anyway", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="runs of each (alternating)")
    parser.add_argument("--wait-idle", action="store_true",
                        help="start once the machine has been 90%% idle for 2 s (Linux; a shared machine)")
    args = parser.parse_args()
    if args.wait_idle:
        wait_idle()
    walls = {1: [], 2: []}
    cpus = {1: [], 2: []}
    tables = {}
    one(2)  # warm-up, not counted: the module loaded, the files cached
    for rep in range(args.reps):
        for jobs in (1, 2) if rep % 2 == 0 else (2, 1):
            wall, cpu, df = one(jobs)
            walls[jobs].append(wall)
            cpus[jobs].append(cpu)
            tables.setdefault(jobs, df)
            print(f"run {rep + 1} jobs={jobs}: wall {wall:.2f} s, cpu {cpu:.2f} s", flush=True)
    assert tables[1].equals(tables[2]), "1 thread and 2 gave different tables"
    w1, w2 = statistics.median(walls[1]), statistics.median(walls[2])
    c1, c2 = statistics.median(cpus[1]), statistics.median(cpus[2])
    print(f"64 configurations, median of {args.reps}: jobs=1 wall {w1:.2f} s (cpu {c1:.2f} s), "
          f"jobs=2 wall {w2:.2f} s (cpu {c2:.2f} s)")
    print(f"speed-up (jobs=1 wall / jobs=2 wall): {w1 / w2:.2f}x on {os.cpu_count()} cores")
    serial, configs = [], []
    for _ in range(args.reps):
        c0 = time.process_time()
        spec = _native.Sweep.from_toml(str(SPEC))
        spec.run_config(0)  # the trace read, decompressed and parsed, then configuration 0
        c1 = time.process_time()
        spec.run_config(0)  # configuration 0 alone (the parsed trace is kept)
        c2 = time.process_time()
        for i in range(1, len(spec)):
            spec.run_config(i)
        c3 = time.process_time()
        serial.append((c1 - c0) - (c2 - c1))
        configs.append(c3 - c1)
    s, p = statistics.median(serial), statistics.median(configs)
    print(f"CPU split, median of {args.reps}: serial {s * 1e3:.1f} ms (spec, trace read and parsed once), "
          f"64 configurations {p * 1e3:.1f} ms; best case on 2 idle cores {(s + p) / (s + p / 2):.2f}x")


if __name__ == "__main__":
    main()
