"""A real two-node Ray cluster on this machine, for the Ray tests.

``ray start --head`` and a second ``ray start --address`` (one CPU each, a
small object store), started once per test session from this interpreter's
own ``ray`` (so the workers import the same ``elevator``), and stopped after
by its processes' ids (``ray stop`` would stop every Ray cluster of the
machine, a developer's own too). The workers' environment has
``ELEVATOR_SWEEP_PID_DIR``: a sweep task writes its worker's pid there, so a
test can kill a worker that is running one.

Import the fixture in a test module: ``from ray_cluster import ray_cluster``.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

#: Each node's object store (bytes): small, /dev/shm is shared with builders.
OBJECT_STORE_BYTES = 80_000_000


def _ray_command():
    """The ``ray`` command beside this interpreter (so its workers run this venv)."""
    exe = os.path.join(os.path.dirname(sys.executable), "ray")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "ray.scripts.scripts"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayCluster:
    """The running cluster: its address and where its tasks write their pids."""

    def __init__(self, address, pid_dir):
        self.address = address
        self.pid_dir = pid_dir

    def busy_pids(self):
        """Pids of workers that started a sweep task (from the files the tasks write)."""
        pids = set()
        for name in os.listdir(self.pid_dir):
            try:
                pids.add(int(name.split(".")[0]))
            except ValueError:
                pass
        return pids

    def clear_pids(self):
        for name in os.listdir(self.pid_dir):
            os.unlink(os.path.join(self.pid_dir, name))


def start_cluster(base):
    """Start the two nodes with their files under ``base`` (a short path: Ray's
    sockets live there); returns the :class:`RayCluster`. Stop with
    :func:`stop_cluster`, also after a failed start."""
    pid_dir = os.path.join(base, "pids")
    os.makedirs(pid_dir, exist_ok=True)
    env = dict(os.environ, ELEVATOR_SWEEP_PID_DIR=pid_dir, RAY_USAGE_STATS_ENABLED="0")
    port = _free_port()
    common = [
        "--num-cpus=1",
        f"--object-store-memory={OBJECT_STORE_BYTES}",
        "--disable-usage-stats",
        f"--temp-dir={os.path.join(base, 'ray')}",
    ]
    with open(os.path.join(base, "start.log"), "a") as log:
        for extra in (["--head", f"--port={port}", "--include-dashboard=false"], [f"--address=127.0.0.1:{port}"]):
            subprocess.run(
                _ray_command() + ["start"] + extra + common,
                env=env, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=120,
            )
    return RayCluster(f"127.0.0.1:{port}", pid_dir)


def _cluster_pids(base):
    """The pids of the cluster started under ``base``: the processes whose
    command line names it (GCS, raylets, monitors) and all their descendants
    (workers and agents, whose titles Ray rewrites)."""
    parents = {}
    roots = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except OSError:
            continue
        pid = int(entry)
        # the parent pid is the second field after the command's closing parenthesis
        parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        if base in cmdline and pid != os.getpid():
            roots.add(pid)
    found = set(roots)
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def stop_cluster(base, timeout=5.0):
    """Stop the cluster started under ``base`` and only it, by its processes'
    ids (``ray stop`` would stop every Ray cluster of the machine): SIGTERM,
    then SIGKILL what is left after ``timeout`` seconds. Returns the pids
    that outlived SIGKILL too (none, normally)."""
    pids = _cluster_pids(base)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pids):
        time.sleep(0.2)
    for pid in _alive(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.5)
    return _alive(pids | _cluster_pids(base))


def _alive(pids):
    """Those of ``pids`` still running (zombies count as gone)."""
    alive = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().decode(errors="replace").rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


@pytest.fixture(scope="session")
def ray_cluster():
    """A two-node Ray cluster on 127.0.0.1, with the driver connected; stopped after the session."""
    ray = pytest.importorskip("ray")
    base = tempfile.mkdtemp(prefix="elevray")
    try:
        cluster = start_cluster(base)
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        yield cluster
    finally:
        if ray.is_initialized():
            ray.shutdown()
        left = stop_cluster(base)
        shutil.rmtree(base, ignore_errors=True)
        assert not left, f"Ray processes left running: {sorted(left)}"
