"""elevator.sweep(backend="ray") on a real two-node Ray cluster started on this machine."""

import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import elevator
from ray_cluster import ray_cluster  # noqa: F401  (the session fixture)

pytest.importorskip("ray")

REPO = pathlib.Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "traces" / "pgbench-init-mq-deadline.trace.xz"

JOB = """[global]
ioengine=libaio
direct=1
bs=4k
size=2m
[reader]
rw=randread
"""

GRID = {"scheduler": ["none", "mq-deadline", "bfq", "kyber"], "iodepth": [1, 8]}


def test_ray_table_equals_local(ray_cluster):
    local = elevator.sweep(JOB, GRID, progress=False)
    on_ray = elevator.sweep(JOB, GRID, backend="ray", progress=False)
    pd.testing.assert_frame_equal(local, on_ray)


def test_ray_trace_table_equals_local(ray_cluster):
    grid = {"scheduler": ["none", "mq-deadline"], "device": ["hdd-7200", "ssd-sata"]}
    local = elevator.sweep(trace=TRACE, grid=grid, progress=False)
    on_ray = elevator.sweep(trace=TRACE, grid=grid, backend="ray", progress=False)
    pd.testing.assert_frame_equal(local, on_ray)


def test_ray_runs_on_both_nodes(ray_cluster):
    import ray

    assert len([n for n in ray.nodes() if n["Alive"]]) == 2


def test_bad_grid_key_refused_before_any_task(ray_cluster):
    ray_cluster.clear_pids()
    with pytest.raises(elevator.ConfigError) as e:
        elevator.sweep(JOB, {"scheduler": ["none"], "io_depth": [1, 8]}, backend="ray", progress=False)
    assert "io_depth" in str(e.value) and "iodepth" in str(e.value)
    assert ray_cluster.busy_pids() == set()


def test_ray_writes_and_resumes_the_csv(ray_cluster, tmp_path):
    full = tmp_path / "local.csv"
    local = elevator.sweep(JOB, GRID, out=full, progress=False, jobs=1)
    lines = full.read_text().splitlines(keepends=True)
    partial = tmp_path / "ray.csv"
    partial.write_text("".join(lines[:4]) + lines[4][:10])  # 3 configurations and a torn line
    ray_cluster.clear_pids()
    on_ray = elevator.sweep(JOB, GRID, backend="ray", out=partial, progress=False)
    pd.testing.assert_frame_equal(local, on_ray)
    # only the missing configurations ran
    ran = {int(name.split(".")[1]) for name in os.listdir(ray_cluster.pid_dir)}
    assert ran == set(range(3, 8))
    assert sorted(partial.read_text().splitlines()) == sorted(full.read_text().splitlines())


#: Configurations slow enough (2 M random reads each, about half a CPU-second
#: here) that a worker can be killed while it runs one.
SLOW_JOB = JOB.replace("size=2m", "size=8g").replace("[reader]", "iodepth=16\n[reader]")
SLOW_GRID = {"scheduler": ["none", "mq-deadline", "bfq", "kyber"]}


def test_worker_killed_mid_sweep_is_retried_and_the_table_is_complete(ray_cluster):
    local = elevator.sweep(SLOW_JOB, SLOW_GRID, device="nvme", progress=False)
    ray_cluster.clear_pids()
    result = {}

    def run():
        try:
            result["frame"] = elevator.sweep(SLOW_JOB, SLOW_GRID, device="nvme", backend="ray", progress=False)
        except BaseException as e:  # noqa: BLE001 (reported by the assertion below)
            result["error"] = e

    sweeper = threading.Thread(target=run)
    sweeper.start()
    # a worker that started a configuration: kill it while it runs
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline and sweeper.is_alive():
        names = os.listdir(ray_cluster.pid_dir)
        if names:  # the configuration started last is the likeliest still running
            victim = max((tuple(int(x) for x in n.split(".")) for n in names), key=lambda pv: pv[1])
        else:
            time.sleep(0.01)
    assert victim is not None, "no configuration started"
    os.kill(victim[0], signal.SIGKILL)
    sweeper.join(timeout=600)
    assert not sweeper.is_alive()
    assert "error" not in result, result.get("error")
    pd.testing.assert_frame_equal(local, result["frame"])
    # the killed worker's configuration ran again, in another worker
    runs_of_victim = [n for n in os.listdir(ray_cluster.pid_dir) if int(n.split(".")[1]) == victim[1]]
    assert len(runs_of_victim) == 2, runs_of_victim


def test_python_scheduler_on_ray_equals_local(ray_cluster):
    Scheduler = getattr(elevator, "Scheduler", None)
    if Scheduler is None:
        pytest.skip("elevator.Scheduler not built")

    class RayFifo(Scheduler):
        def __init__(self):
            self.queue = []

        def insert(self, request):
            self.queue.append(request)

        def dispatch(self, now):
            return self.queue.pop(0) if self.queue else None

        def has_work(self):
            return bool(self.queue)

    grid = {"scheduler": ["none", RayFifo], "iodepth": [1, 8]}
    local = elevator.sweep(JOB, grid, progress=False)
    on_ray = elevator.sweep(JOB, grid, backend="ray", progress=False)
    pd.testing.assert_frame_equal(local, on_ray)
    assert "RayFifo" in set(on_ray["scheduler"])


def test_module_command_on_ray_equals_local(ray_cluster, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        "job_text = '''\n" + JOB + "'''\n[grid]\nscheduler = [\"none\", \"bfq\"]\niodepth = [1, 4]\n"
    )
    outs = {}
    for name, extra in (("local", ["--jobs", "1"]), ("ray", ["--ray", ray_cluster.address])):
        out = tmp_path / f"{name}.csv"
        run = subprocess.run(
            [sys.executable, "-m", "elevator.sweep", str(spec), "--out", str(out), "--quiet"] + extra,
            capture_output=True, text=True, timeout=300,
        )
        assert run.returncode == 0, run.stderr
        outs[name] = sorted(out.read_text().splitlines())
    assert outs["local"] == outs["ray"]


def test_a_python_scheduler_that_raises_fails_the_ray_sweep_once(ray_cluster):
    from test_sweep import Raises

    ray_cluster.clear_pids()
    with pytest.raises(elevator.SchedulerError) as e:
        elevator.sweep(JOB, {"scheduler": [Raises]}, backend="ray", progress=False)
    assert "ZeroDivisionError: sweep test: dispatch failed on purpose" in str(e.value)
    # a configuration's own error is not retried
    assert len(os.listdir(ray_cluster.pid_dir)) == 1
