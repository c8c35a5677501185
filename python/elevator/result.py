"""What elevator's functions give back: :class:`Result` (one run: its fio
JSON, parsed, and as a DataFrame), :class:`Comparison` (one job under
several schedulers), :class:`Listing` (devices, schedulers).

pandas is imported only by ``to_pandas()``.
"""

import json as _json

#: The latency percentiles a DataFrame row has, as fio's JSON keys them,
#: with the column suffix each gets (``clat_p99_ns``).
_PERCENTILES = (
    ("1.000000", "p1"),
    ("5.000000", "p5"),
    ("10.000000", "p10"),
    ("50.000000", "p50"),
    ("90.000000", "p90"),
    ("95.000000", "p95"),
    ("99.000000", "p99"),
    ("99.900000", "p99_9"),
    ("99.990000", "p99_99"),
)

#: The directions of a job, as fio's JSON names them.
_DIRECTIONS = ("read", "write", "trim", "mixed")


def _latency_columns(row, prefix, lat):
    """Add ``lat`` (a ``clat_ns``-like object) to ``row`` as columns."""
    if not isinstance(lat, dict):
        return
    row[prefix + "_min_ns"] = lat.get("min")
    row[prefix + "_mean_ns"] = lat.get("mean")
    row[prefix + "_max_ns"] = lat.get("max")
    row[prefix + "_stddev_ns"] = lat.get("stddev")
    pct = lat.get("percentile") or {}
    for key, name in _PERCENTILES:
        if key in pct:
            row["%s_%s_ns" % (prefix, name)] = pct[key]


def job_rows(data):
    """One dict per job clone and direction that did I/O, from fio's JSON
    (parsed): ``job``, ``clone`` (its place among the jobs of that name),
    ``direction``, ``iops``, ``bw_bytes``, ``io_bytes``, ``total_ios``,
    ``runtime_ms``, ``errors``, the latencies in ns (``clat_mean_ns``,
    ``clat_p99_ns``, ``lat_mean_ns``...), and the run's ``scheduler``,
    ``device`` and the device's ``util`` (percent)."""
    top = data.get("elevator") or {}
    disks = data.get("disk_util") or [{}]
    util = disks[0].get("util") if disks else None
    seen = {}
    rows = []
    for job in data.get("jobs", []):
        name = job.get("jobname")
        clone = seen.get(name, 0)
        seen[name] = clone + 1
        for direction in _DIRECTIONS:
            d = job.get(direction)
            if not isinstance(d, dict) or not d.get("total_ios"):
                continue
            row = {
                "job": name,
                "clone": clone,
                "direction": direction,
                "iops": d.get("iops"),
                "bw_bytes": d.get("bw_bytes"),
                "io_bytes": d.get("io_bytes"),
                "total_ios": d.get("total_ios"),
                "runtime_ms": d.get("runtime"),
                "errors": d.get("errors", 0),
            }
            _latency_columns(row, "clat", d.get("clat_ns"))
            _latency_columns(row, "lat", d.get("lat_ns"))
            row["scheduler"] = top.get("scheduler")
            row["device"] = disks[0].get("name") if disks else None
            row["util"] = util
            rows.append(row)
    return rows


class Result:
    """One run of fio jobs.

    - ``json``: the fio JSON document, byte for byte what ``elevator run
      --output-format json`` writes for the same job, device, scheduler and
      seed.
    - ``data``: that document parsed (a dict).
    - ``notes``: what ``elevator`` would print on stderr (warnings, the
      alias a scheduler name stood for...).
    - ``to_pandas()``: a DataFrame, one row per job and direction.

    Example::

        >>> r = elevator.run("[r]\\nrw=randread\\nsize=4m\\n", device="ssd-sata")
        >>> r.data["jobs"][0]["read"]["total_ios"]
        1024
        >>> r.to_pandas()[["job", "direction", "iops", "clat_p99_ns"]]
    """

    def __init__(self, json_text, notes=()):
        self.json = json_text
        self.notes = list(notes)
        self._data = None

    @property
    def data(self):
        """The fio JSON, parsed (computed once)."""
        if self._data is None:
            self._data = _json.loads(self.json)
        return self._data

    @property
    def scheduler(self):
        """The scheduler the run ran under."""
        return (self.data.get("elevator") or {}).get("scheduler")

    def rows(self):
        """The DataFrame's rows, as dicts (see :func:`job_rows`)."""
        return job_rows(self.data)

    def to_pandas(self):
        """A pandas DataFrame, one row per job clone and direction that did
        I/O (columns: see :func:`job_rows`)."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def __repr__(self):
        top = self.data.get("elevator") or {}
        return "<elevator.Result %s on %s: %s I/Os>" % (
            top.get("scheduler"),
            top.get("device"),
            top.get("ios"),
        )


class Comparison:
    """One job under several schedulers: ``results`` maps each scheduler's
    name to its :class:`Result`, in the order given (``c["bfq"]``, or by
    position: ``c[0]``); ``to_pandas()`` puts their rows in one DataFrame
    (its ``scheduler`` column tells them apart)."""

    def __init__(self, pairs):
        pairs = list(pairs)
        self.results = dict(pairs)
        self._order = [r for _, r in pairs]

    def __getitem__(self, key):
        if isinstance(key, int):
            return self._order[key]
        return self.results[key]

    def __iter__(self):
        return iter(self.results)

    def __len__(self):
        return len(self.results)

    def rows(self):
        """Every run's rows, scheduler by scheduler."""
        out = []
        for name, result in self.results.items():
            for row in result.rows():
                row["scheduler"] = name
                out.append(row)
        return out

    def to_pandas(self):
        """A pandas DataFrame of every run's rows."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def __repr__(self):
        return "<elevator.Comparison of %s>" % ", ".join(self.results)


class Listing(list):
    """A list of dicts (devices, schedulers) with ``to_pandas()``: one row
    per dict."""

    def to_pandas(self):
        """A pandas DataFrame, one row per element."""
        import pandas as pd

        return pd.DataFrame(list(self))


class Replay(Result):
    """One replay of a trace: ``json`` (what ``elevator replay
    --output-format json`` prints), ``data``, ``notes``, and
    ``to_pandas()``: one row per operation (``read``, ``write``...) that
    elevator's queue or the recording saw, with ``source`` (``elevator`` or
    ``recorded``), ``queued``/``issued`` counts and bytes, and Q2C
    latency percentiles in ns."""

    @property
    def scheduler(self):
        return self.data.get("scheduler")

    def rows(self):
        out = []
        for source in ("elevator", "recorded"):
            analysis = self.data.get(source)
            if not isinstance(analysis, dict):
                continue
            for op, d in (analysis.get("ops") or {}).items():
                queued = d.get("queued") or {}
                issued = d.get("issued") or {}
                if not queued.get("count") and not issued.get("count"):
                    continue
                row = {
                    "source": source,
                    "op": op,
                    "queued": queued.get("count"),
                    "queued_bytes": queued.get("bytes"),
                    "issued": issued.get("count"),
                    "issued_bytes": issued.get("bytes"),
                }
                for key, v in (d.get("q2c_percentiles_ns") or {}).items():
                    row["q2c_%s_ns" % key] = v
                row["scheduler"] = self.data.get("scheduler")
                row["device"] = self.data.get("device")
                out.append(row)
        return out

    def __repr__(self):
        return "<elevator.Replay of %s under %s: %s bios>" % (
            self.data.get("trace"),
            self.data.get("scheduler"),
            self.data.get("bios"),
        )


class Advice(Result):
    """Advice on a scheduler: ``json`` (what ``elevator advise
    --output-format json`` prints), ``data``, ``best`` (the first
    scheduler of the ranking), ``explanation``, and ``to_pandas()``: one
    row per run (scheduler and ``nomerges``), in ranking order."""

    @property
    def best(self):
        """The scheduler ranked first."""
        return (self.data.get("best") or {}).get("scheduler")

    @property
    def scheduler(self):
        return self.best

    @property
    def explanation(self):
        """Why, in words."""
        return self.data.get("explanation")

    def rows(self):
        out = []
        for run in self.data.get("runs", []):
            row = {k: v for k, v in run.items() if k != "shares"}
            out.append(row)
        return out

    def __repr__(self):
        return "<elevator.Advice for %s: %s>" % (self.data.get("workload"), self.best)
