"""Sweeps: every configuration of a grid, run here or on a Ray cluster.

This module owns :func:`sweep` (a grid in, one ``pandas.DataFrame`` out) and
the command ``python -m elevator.sweep SPEC.toml [--ray ADDRESS]``, which runs
the spec file ``elevator sweep`` takes. The grid itself (its keys, checks,
expansion, one configuration's rows and the CSV) is the Rust library's
(``elevator_run::sweep``, through ``elevator._native.Sweep``), so a sweep
refuses the same keys with the same messages as the CLI and writes the same
CSV.

Two backends run the configurations:

- ``"local"``: the Rust thread pool, on every core of this machine (or
  ``jobs`` threads), the GIL released while it runs.
- ``"ray"``: each configuration is a Ray task. The spec travels once
  (``ray.put`` of its JSON); a task whose worker died is run again (Ray's
  ``max_retries``); a configuration's own error is a row with an ``error``
  column, never retried. Results are identical to ``"local"`` for simulated
  devices: every configuration is seeded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import warnings
import time
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from . import _native

__all__ = ["sweep", "main"]

# `python -m elevator.sweep` imports the package first, whose __init__ imports
# this module for `elevator.sweep()`; runpy then warns that the module was
# imported before it ran as __main__. It is harmless here (__main__ below
# calls the imported module's main), so that one warning is silenced.
warnings.filterwarnings("ignore", message=r"'elevator\.sweep' found in sys\.modules", category=RuntimeWarning)

#: How many times Ray runs a configuration again whose worker died.
RAY_MAX_RETRIES = 3


def _value_text(value: Any) -> Any:
    """A grid or option value as the text the spec takes (classes pass through)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, str)):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value  # a Python scheduler class or instance: the native side names it


def _pairs(mapping: Optional[Mapping[str, Any]], what: str) -> list:
    if mapping is None:
        return []
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{what} must be a dict of names to values, not {type(mapping).__name__}")
    return [(str(k), _value_text(v)) for k, v in mapping.items()]


def _grid_pairs(grid: Optional[Mapping[str, Any]]) -> list:
    if grid is None:
        return []
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid must be a dict of keys to lists of values, not {type(grid).__name__}")
    pairs = []
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            values = [values]
        pairs.append((str(key), [_value_text(v) for v in values]))
    return pairs


def _workload(job: Any, trace: Any) -> tuple:
    """(kind, text or path) for the native spec: kind is job_text, job_file or trace."""
    if (job is None) == (trace is None):
        raise ValueError("sweep takes a job (fio job text or a path) or a trace (a path), not both or neither")
    if trace is not None:
        return ("trace", os.fspath(trace))
    if isinstance(job, os.PathLike) or (isinstance(job, str) and "\n" not in job and os.path.isfile(job)):
        return ("job_file", os.fspath(job))
    if not isinstance(job, str):
        raise TypeError(f"job must be fio job text or a path, not {type(job).__name__}")
    return ("job_text", job)


def _spec(job, grid, seed, device, scheduler, set, fio, trace):
    kind, source = _workload(job, trace)
    return _native.Sweep(
        kind=kind,
        source=source,
        device=str(device),
        scheduler=_value_text(scheduler),
        seed=int(seed),
        set=_pairs(set, "set"),
        fio=_pairs(fio, "fio"),
        grid=_grid_pairs(grid),
    )


class _Progress:
    """Progress as configurations finish: tqdm if installed, else a line on
    stderr for every 5 % of the configurations (every one of a small sweep)."""

    def __init__(self, spec, enabled: bool, already: int = 0):
        self.spec = spec
        self.total = len(spec)
        self.count = already
        self.ran = 0
        self.enabled = enabled and self.total > 0
        self.bar = None
        self.step = max(1, self.total // 20)
        self.start = time.monotonic()
        if self.enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=self.total, initial=already, unit="config", desc="sweep")

    def done(self, index: int, seconds: Optional[float] = None) -> None:
        """Configuration ``index`` completed (in ``seconds``, if known)."""
        if not self.enabled:
            return
        self.count += 1
        self.ran += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.count % self.step == 0 or self.count == self.total:
            values = " ".join(f"{k}={v}" for k, v in self.spec.config(index))
            took = f" ({seconds:.1f} s)" if seconds is not None else ""
            print(f"sweep: {self.count}/{self.total} done: config {index} {values}{took}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.ran:
            print(f"sweep: ran {self.ran} configurations in {time.monotonic() - self.start:.1f} s", file=sys.stderr, flush=True)


def _kinds(columns: list, rows: list) -> list:
    """Each column's Python type in ``rows`` (its first value's), or None."""
    kinds = [None] * len(columns)
    for row in rows:
        for i, value in enumerate(row):
            if kinds[i] is None and value is not None:
                kinds[i] = type(value)
        if all(k is not None for k in kinds):
            break
    return kinds


def _from_text(text: str, kind) -> Any:
    """A CSV field as the value the row had: by its column's type, else guessed."""
    if text == "":
        return None
    if kind is not None:
        return kind(text)
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    return text


def _frame(spec, results: Sequence, out) -> "Any":
    """The DataFrame: every row, sorted by configuration (rows of a
    configuration in their order). With ``out`` the rows are the file's (an
    earlier run's too), read back as the values they were written from."""
    import csv

    import pandas as pd

    columns = spec.columns()
    rows = [row for _, config_rows in sorted(results, key=lambda r: r[0]) for row in config_rows]
    if out is not None:
        kinds = _kinds(columns, rows)
        with open(out, newline="", encoding="utf-8") as table:
            records = csv.reader(table)
            next(records, None)  # the header: the spec's columns (checked when opened)
            rows = [[_from_text(f, k) for f, k in zip(record, kinds)] for record in records]
        rows.sort(key=lambda row: row[0])
    frame = pd.DataFrame(rows, columns=columns)
    # Grid values travel as text; numbers come back as numbers.
    for key, _ in spec.grid():
        try:
            frame[key] = pd.to_numeric(frame[key])
        except (ValueError, TypeError):
            pass
    return frame


def _run_local(spec, jobs, results_file, progress: _Progress):
    threads = int(jobs) if jobs else 0  # 0: one thread per CPU
    return spec.run_local(threads, results_file, progress.done)


# -- Ray --------------------------------------------------------------------

_WORKER_SPECS: dict = {}  # a worker's parsed specs, by the object id of their JSON
_REMOTE = None


def _by_value(classes: list) -> bytes:
    """Python scheduler classes pickled by value, so that a worker needs only
    ``elevator`` installed, not the module (a notebook, a test) they came from."""
    from ray import cloudpickle

    modules = {getattr(c if isinstance(c, type) else type(c), "__module__", None) for c in classes}
    registered = set(cloudpickle.list_registry_pickle_by_value())
    added = []
    for name in modules:
        module = sys.modules.get(name) if name else None
        if module is None or name in registered or name == "__main__" or name.split(".")[0] == "elevator":
            continue
        cloudpickle.register_pickle_by_value(module)
        added.append(module)
    try:
        return cloudpickle.dumps(classes)
    finally:
        for module in added:
            cloudpickle.unregister_pickle_by_value(module)


def _worker_spec(boxed_refs: list):
    """The spec on a Ray worker, parsed once per worker (the refs are boxed
    in a list so that they arrive unresolved and can be cached by id)."""
    import ray
    from ray import cloudpickle

    spec_ref, classes_ref = boxed_refs
    key = spec_ref.hex()
    spec = _WORKER_SPECS.get(key)
    if spec is None:
        spec_json, classes = ray.get([spec_ref, classes_ref])
        spec = _native.Sweep.from_json(spec_json, cloudpickle.loads(classes))
        if len(_WORKER_SPECS) >= 4:
            _WORKER_SPECS.pop(next(iter(_WORKER_SPECS)))
        _WORKER_SPECS[key] = spec
    return spec


def _ray_task(boxed_refs: list, index: int):
    """One configuration on a Ray worker: (index, rows)."""
    pid_dir = os.environ.get("ELEVATOR_SWEEP_PID_DIR")
    if pid_dir:  # the tests find a worker that is running a configuration by this file
        with open(os.path.join(pid_dir, f"{os.getpid()}.{index}"), "w") as pid_file:
            pid_file.write(str(os.getpid()))
    return index, _worker_spec(boxed_refs).run_config(index)


def _remote():
    global _REMOTE
    if _REMOTE is None:
        import ray

        # max_retries: a task whose worker died runs again. Of the exceptions a
        # task raises, only the loss of the spec's object (its node gone while
        # the worker fetched it) is retried: a configuration's own error is a
        # row, and a Python scheduler's exception would only raise again.
        _REMOTE = ray.remote(
            max_retries=RAY_MAX_RETRIES,
            retry_exceptions=[ray.exceptions.ObjectLostError],
            num_cpus=1,
        )(_ray_task)
    return _REMOTE


def _run_ray(spec, address, jobs, results_file, todo: list, progress: _Progress):
    try:
        import ray
    except ImportError as e:
        raise ImportError("backend='ray' needs Ray: pip install 'elevator[ray]'") from e

    if not ray.is_initialized():
        if address is None:
            ray.init(logging_level="ERROR", log_to_driver=False)
        else:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    elif address is not None and address != "auto":
        connected = ray.get_runtime_context().gcs_address
        if address.split("://")[-1] != connected:
            raise ValueError(
                f"Ray is already connected here to {connected}, not {address}: "
                "call sweep without address= or ray.shutdown() first"
            )

    boxed_refs = [ray.put(spec.to_json()), ray.put(_by_value(spec.python_schedulers()))]
    task = _remote()
    in_flight = int(jobs) if jobs else max(64, 4 * int(ray.cluster_resources().get("CPU", 1)))
    pending = {}
    results = []
    queue = list(todo)
    queue.reverse()
    try:
        while queue or pending:
            while queue and len(pending) < in_flight:
                index = queue.pop()
                pending[task.remote(boxed_refs, index)] = index
            refs = list(pending)
            ready, rest = ray.wait(refs, num_returns=1)
            if rest:  # and every other one already done, without waiting
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            for ref in ready:
                del pending[ref]
                index, rows = ray.get(ref)
                if results_file is not None:
                    results_file.append(index, rows)
                results.append((index, rows))
                progress.done(index)
    finally:
        for ref in pending:
            ray.cancel(ref, force=False)
    return results


# -- the API ----------------------------------------------------------------


def sweep(
    job: Any = None,
    grid: Optional[Mapping[str, Any]] = None,
    backend: str = "local",
    *,
    seed: int = 7,
    device: str = "hdd-7200",
    scheduler: Any = "mq-deadline",
    set: Optional[Mapping[str, Any]] = None,
    fio: Optional[Mapping[str, Any]] = None,
    trace: Any = None,
    jobs: Optional[int] = None,
    address: Optional[str] = None,
    out: Any = None,
    progress: bool = True,
    spec: Any = None,
):
    """Run every configuration of a grid and return one ``pandas.DataFrame``.

    ``job`` is fio job text or a path (a path if it names a file); or give
    ``trace=`` (a blktrace text file, ``.xz`` too) instead. ``grid`` maps a key
    to the list of its values; every combination runs, the last key varying
    fastest. Keys: ``scheduler`` (names, or :class:`elevator.Scheduler`
    subclasses), ``device``, ``seed``, any tunable (the names ``--set`` takes)
    and, for jobs, any fio option. ``device``, ``scheduler``, ``seed``, ``set``
    and ``fio`` are the fixed values the grid does not vary. An unknown key or a
    bad value raises :class:`elevator.ElevatorError` before anything runs,
    with the known names.

    ``backend="local"`` runs on this machine's cores (``jobs`` threads, default
    all of them). ``backend="ray"`` runs each configuration as a Ray task:
    ``ray.init()`` as you configured it (call it yourself first), or
    ``ray.init(address=address)``; ``jobs`` bounds the tasks in flight. A
    task whose worker dies runs again. ``out=`` writes the CSV
    ``elevator sweep --out`` writes, a row at a time as configurations finish;
    an existing file is resumed (only the missing configurations run) and the
    frame is then read back from it. ``progress`` reports on stderr (tqdm if
    installed). ``spec=`` runs a sweep spec file instead (the TOML
    ``elevator sweep`` takes; its paths are relative to it) in place of
    ``job``/``trace`` and the fixed values and grid.

    The frame has one row per configuration and job direction (per
    configuration for a trace): ``config``, the grid keys, then the results.

    >>> import elevator
    >>> df = elevator.sweep("[r]\\nrw=randread\\nsize=4m\\n",
    ...                     grid={"scheduler": ["none", "bfq"], "iodepth": [1, 8]})
    >>> len(df)
    4
    """
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', not {backend!r}")
    if jobs is not None and int(jobs) < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    if spec is None:
        spec = _spec(job, grid, seed, device, scheduler, set, fio, trace)
    elif not isinstance(spec, _native.Sweep):
        if job is not None or trace is not None or grid is not None:
            raise ValueError("sweep takes a spec file or a job/trace and a grid, not both")
        spec = _native.Sweep.from_toml(os.fspath(spec))
    results_file = spec.open_results(os.fspath(out)) if out is not None else None
    done = frozenset(results_file.done()) if results_file is not None else frozenset()
    todo = [i for i in range(len(spec)) if i not in done]
    if done and progress:
        print(f"{os.fspath(out)}: {len(done)} of {len(spec)} configurations done, running {len(todo)}",
              file=sys.stderr, flush=True)
    bar = _Progress(spec, progress, already=len(done))
    try:
        if backend == "local":
            results = _run_local(spec, jobs, results_file, bar)
        else:
            results = _run_ray(spec, address, jobs, results_file, todo, bar)
    finally:
        bar.close()
        if results_file is not None:
            results_file.close()
    return _frame(spec, results, os.fspath(out) if out is not None else None)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m elevator.sweep SPEC.toml [--ray ADDRESS] [--out results.csv] [--jobs N]``."""
    parser = argparse.ArgumentParser(
        prog="python -m elevator.sweep",
        description="Run a sweep spec (the file `elevator sweep` takes) here or on a Ray cluster.",
    )
    parser.add_argument("spec", help="the sweep spec (TOML); paths in it are relative to it")
    parser.add_argument("--ray", metavar="ADDRESS", help="run on this Ray cluster (e.g. 127.0.0.1:6379, or 'auto')")
    parser.add_argument("--out", metavar="CSV", help="write the results here as they complete, resuming it (default: stdout at the end)")
    parser.add_argument("--jobs", metavar="N", type=int, help="local threads (default: every core), or Ray tasks in flight")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    from . import ElevatorError

    try:
        spec = _native.Sweep.from_toml(args.spec)
        with tempfile.TemporaryDirectory(prefix="elevator-sweep") as scratch:
            # Without --out the CSV is written beside, then printed: the CLI's bytes either way.
            out = args.out if args.out is not None else os.path.join(scratch, "results.csv")
            sweep(
                spec=spec,
                backend="ray" if args.ray else "local",
                address=args.ray,
                jobs=args.jobs,
                out=out,
                progress=not args.quiet,
            )
            if args.out is None:
                with open(out, encoding="utf-8") as table:
                    try:
                        shutil.copyfileobj(table, sys.stdout)
                        sys.stdout.flush()
                    except BrokenPipeError:
                        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (ElevatorError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    from elevator.sweep import main as _main  # the importable module, so Ray pickles its task by reference

    sys.exit(_main())
