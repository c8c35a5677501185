"""Shared fixtures: the repository, the ``elevator`` command to compare
with (``ELEVATOR_BIN``, which scripts/test-python sets; else a build in
target/), and small jobs."""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

#: The shipped real trace (PostgreSQL's pgbench -i under mq-deadline).
TRACE = REPO / "tests" / "traces" / "pgbench-init-mq-deadline.trace.xz"

#: A size-bound job: 4 MiB of 4 KiB random reads at depth 16 (1024 I/Os).
SIZE_BOUND = """
[random-reads]
rw=randread
bs=4k
size=4m
ioengine=libaio
iodepth=16
"""

#: Two jobs, reads and writes, so that a scheduler has choices.
MIXED = """
[readers]
rw=randread
bs=4k
size=2m
ioengine=libaio
iodepth=8
[writer]
rw=write
bs=64k
size=8m
ioengine=libaio
iodepth=4
"""


def _find_cli():
    given = os.environ.get("ELEVATOR_BIN")
    if given:
        return given
    for profile in ("release", "debug"):
        path = REPO / "target" / profile / "elevator"
        if path.is_file():
            return str(path)
    return None


@pytest.fixture(scope="session")
def cli():
    """A function running the ``elevator`` command: (returncode, stdout,
    stderr)."""
    path = _find_cli()
    if path is None:
        pytest.skip("no elevator command: set ELEVATOR_BIN or build elevator-cli")

    def run(*args):
        p = subprocess.run([path, *map(str, args)], capture_output=True, text=True, timeout=600)
        return p.returncode, p.stdout, p.stderr

    return run


@pytest.fixture
def job_file(tmp_path):
    """The size-bound job, written to a file."""
    path = tmp_path / "size-bound.fio"
    path.write_text(SIZE_BOUND)
    return path
