"""elevator.sweep on this machine (backend="local") and python -m elevator.sweep."""

import os
import pathlib
import shutil
import subprocess
import sys

import pandas as pd
import pytest

import elevator

REPO = pathlib.Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "traces" / "pgbench-init-mq-deadline.trace.xz"

#: A small size-bound job: every configuration runs in a few milliseconds.
JOB = """[global]
ioengine=libaio
direct=1
bs=4k
size=2m
[reader]
rw=randread
"""

GRID = {"scheduler": ["none", "mq-deadline", "bfq"], "iodepth": [1, 8]}


def small_sweep(**kw):
    kw.setdefault("progress", False)
    return elevator.sweep(JOB, GRID, **kw)


def test_one_row_per_configuration_and_direction_sorted_by_config():
    df = small_sweep()
    assert len(df) == 6
    assert list(df.columns[:3]) == ["config", "scheduler", "iodepth"]
    assert list(df["config"]) == list(range(6))
    # the last key varies fastest
    assert list(df["scheduler"]) == ["none", "none", "mq-deadline", "mq-deadline", "bfq", "bfq"]
    assert [str(v) for v in df["iodepth"]] == ["1", "8"] * 3
    assert set(df["direction"]) == {"read"}
    assert (df["total_ios"] == 512).all()


def test_same_table_on_one_thread_and_two():
    pd.testing.assert_frame_equal(small_sweep(jobs=1), small_sweep(jobs=2))


def test_seeded_runs_repeat():
    pd.testing.assert_frame_equal(small_sweep(seed=3), small_sweep(seed=3))


def test_unknown_grid_key_is_refused_with_the_known_names():
    with pytest.raises(elevator.ConfigError) as e:
        elevator.sweep(JOB, {"iodeptth": [1, 2]}, progress=False)
    text = str(e.value)
    assert "iodeptth" in text
    assert "iodepth" in text  # did you mean


def test_unknown_scheduler_value_is_refused():
    with pytest.raises(elevator.ConfigError) as e:
        elevator.sweep(JOB, {"scheduler": ["none", "nope"]}, progress=False)
    assert "nope" in str(e.value) and "mq-deadline" in str(e.value)


def test_bad_backend_and_workload_are_refused():
    with pytest.raises(ValueError, match="backend"):
        elevator.sweep(JOB, GRID, backend="spark")
    with pytest.raises(ValueError, match="not both or neither"):
        elevator.sweep(grid=GRID)


def test_job_given_as_a_path(tmp_path):
    path = tmp_path / "small.fio"
    path.write_text(JOB)
    pd.testing.assert_frame_equal(small_sweep(), elevator.sweep(path, GRID, progress=False))


def test_out_writes_the_csv_and_resumes_a_partial_one(tmp_path):
    full = tmp_path / "full.csv"
    fresh = small_sweep(out=full)
    lines = full.read_text().splitlines(keepends=True)
    assert len(lines) == 1 + 6
    # a sweep killed after 3 configurations, in the middle of writing a 4th line
    partial = tmp_path / "partial.csv"
    partial.write_text("".join(lines[:4]) + lines[4][: len(lines[4]) // 2])
    resumed = small_sweep(out=partial)
    pd.testing.assert_frame_equal(fresh, resumed)
    assert partial.read_text() == full.read_text()


def test_resume_refuses_a_file_of_another_sweep(tmp_path):
    out = tmp_path / "results.csv"
    small_sweep(out=out)
    with pytest.raises(elevator.ElevatorError):
        elevator.sweep(JOB, {"scheduler": ["kyber"], "iodepth": [4]}, out=out, progress=False)


def test_trace_sweep_one_row_per_configuration():
    df = elevator.sweep(trace=TRACE, grid={"scheduler": ["none", "mq-deadline"]}, progress=False)
    assert len(df) == 2
    assert list(df["scheduler"]) == ["none", "mq-deadline"]


def test_python_scheduler_in_the_grid():
    Scheduler = getattr(elevator, "Scheduler", None)
    if Scheduler is None:
        pytest.skip("elevator.Scheduler not built")

    class PyFifo(Scheduler):
        def __init__(self):
            self.queue = []

        def insert(self, request):
            self.queue.append(request)

        def dispatch(self, now):
            return self.queue.pop(0) if self.queue else None

        def has_work(self):
            return bool(self.queue)

    df = elevator.sweep(JOB, {"scheduler": ["none", PyFifo]}, progress=False)
    assert list(df["scheduler"]) == ["none", "PyFifo"]
    assert (df["total_ios"] == 512).all()


SPEC = """job_text = '''
[global]
ioengine=libaio
direct=1
bs=4k
size=2m
[reader]
rw=randread
'''
device = "ssd-sata"
seed = 7
[grid]
scheduler = ["none", "kyber"]
iodepth = [1, 16]
"""


def _elevator_cli():
    """The `elevator` binary, if the test script named one (ELEVATOR_BIN) or it is on PATH."""
    path = os.environ.get("ELEVATOR_BIN") or shutil.which("elevator")
    return path if path and os.path.exists(path) else None


def test_module_command_writes_the_cli_csv(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "py.csv"
    run = subprocess.run(
        [sys.executable, "-m", "elevator.sweep", str(spec), "--out", str(out), "--quiet", "--jobs", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "RuntimeWarning" not in run.stderr
    assert len(out.read_text().splitlines()) == 1 + 4
    stdout = subprocess.run(
        [sys.executable, "-m", "elevator.sweep", str(spec), "--quiet", "--jobs", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert stdout.returncode == 0, stdout.stderr
    assert stdout.stdout == out.read_text()
    cli = _elevator_cli()
    if cli is None:
        return
    cli_out = tmp_path / "cli.csv"
    made = subprocess.run([cli, "sweep", str(spec), "--out", str(cli_out), "--quiet", "--jobs", "1"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert cli_out.read_text() == out.read_text()


def test_module_command_refuses_a_bad_key_like_the_cli(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text(SPEC.replace("iodepth =", "iodeptth ="))
    run = subprocess.run([sys.executable, "-m", "elevator.sweep", str(spec)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1
    assert run.stderr.startswith("error: ")
    assert "iodeptth" in run.stderr
    cli = _elevator_cli()
    if cli is not None:
        made = subprocess.run([cli, "sweep", str(spec)], capture_output=True, text=True)
        assert made.returncode != 0
        assert run.stderr.strip() in made.stderr


def test_frame_with_out_equals_the_frame_without(tmp_path):
    pd.testing.assert_frame_equal(small_sweep(), small_sweep(out=tmp_path / "r.csv"))
    trace = elevator.sweep(trace=TRACE, grid={"scheduler": ["none", "bfq"]}, progress=False)
    on_file = elevator.sweep(trace=TRACE, grid={"scheduler": ["none", "bfq"]}, progress=False, out=tmp_path / "t.csv")
    pd.testing.assert_frame_equal(trace, on_file)


def test_spec_file_runs_as_the_same_grid_given_in_python(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    from_file = elevator.sweep(spec=spec, progress=False)
    in_python = elevator.sweep(
        JOB, {"scheduler": ["none", "kyber"], "iodepth": [1, 16]}, device="ssd-sata", seed=7, progress=False
    )
    pd.testing.assert_frame_equal(from_file, in_python)
    with pytest.raises(ValueError, match="not both"):
        elevator.sweep(JOB, spec=spec)


class Raises(elevator.Scheduler):
    """A scheduler that fails at its first dispatch."""

    def __init__(self):
        self.queue = []

    def insert(self, request):
        self.queue.append(request)

    def dispatch(self, now):
        raise ZeroDivisionError("sweep test: dispatch failed on purpose")


def test_a_python_scheduler_that_raises_fails_the_sweep_with_its_traceback():
    with pytest.raises(elevator.SchedulerError) as e:
        elevator.sweep(JOB, {"scheduler": ["none", Raises]}, progress=False)
    assert "ZeroDivisionError: sweep test: dispatch failed on purpose" in str(e.value)
    assert "Traceback" in str(e.value)
