# %% [markdown]
# # Schedulers × queue depth on two devices
#
# A notebook-style script (cells marked `# %%`, as Jupyter, VS Code and
# jupytext read them): sweep four Linux I/O schedulers over fio's `iodepth`
# on a 7200 rpm disk and a SATA SSD, both simulated, pivot the table with
# pandas and plot it with matplotlib.
#
# Run it whole: `python examples/python/sweep_schedulers_iodepth.py [PLOT.png]`
# (the plot's path: the argument, else `$ELEVATOR_EXAMPLE_PNG`, else
# `sweep_schedulers_iodepth.png` here).

# %%
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed: the plot goes to a file
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

import elevator  # noqa: E402

# %% [markdown]
# The workload: 4 KiB random reads with the page cache bypassed, bound by
# size (every configuration does the same 2,000 I/Os), so a configuration's
# figures differ only by what the scheduler and the device make of it.

# %%
JOB = """
[global]
ioengine=libaio
direct=1
rw=randread
bs=4k
number_ios=2000
[reader]
"""

GRID = {
    "device": ["hdd-7200", "ssd-sata"],
    "scheduler": ["none", "mq-deadline", "bfq", "kyber"],
    "iodepth": [1, 4, 16, 64],
}

# %% [markdown]
# One call runs the 32 configurations on every core of this machine
# (`backend="ray"` would send each to a Ray cluster instead, with the same
# table as the result). Each row is one configuration's reads.

# %%
df = elevator.sweep(JOB, GRID, seed=7, progress=False)
print(df[["device", "scheduler", "iodepth", "iops", "clat_p99_ns"]].head(8).to_string(index=False))

# %% [markdown]
# The pivot: IOPS by device and scheduler, one column per queue depth.

# %%
iops = df.pivot_table(index=["device", "scheduler"], columns="iodepth", values="iops").round(0).astype(int)
print()
print(iops.to_string())

# %% [markdown]
# The plot: IOPS (top) and the 99th percentile of completion latency
# (bottom) against queue depth, a line per scheduler, a column per device
# (their scales differ by two orders of magnitude). Where the schedulers
# agree their lines lie on top of each other: the markers tell them apart.

# %%
STYLES = {"none": ("o", "-"), "mq-deadline": ("s", "--"), "bfq": ("^", "-."), "kyber": ("x", ":")}
fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True, constrained_layout=True)
for col, (device, rows) in enumerate(df.groupby("device", sort=False)):
    for scheduler, line in rows.groupby("scheduler", sort=False):
        marker, style = STYLES.get(scheduler, (".", "-"))
        axes[0, col].plot(line["iodepth"], line["iops"], marker=marker, linestyle=style, label=scheduler)
        axes[1, col].plot(line["iodepth"], line["clat_p99_ns"] / 1e6, marker=marker, linestyle=style, label=scheduler)
    axes[0, col].set_title(f"{device}: 4 KiB random reads")
    axes[0, col].set_ylabel("IOPS")
    axes[1, col].set_ylabel("completion latency p99 (ms)")
    axes[1, col].set_yscale("log")
    axes[1, col].set_xlabel("iodepth")
    for ax in axes[:, col]:
        ax.set_xscale("log", base=2)
        ax.set_xticks(GRID["iodepth"], [str(d) for d in GRID["iodepth"]])
        ax.grid(True, alpha=0.3)
    axes[0, col].legend(title="scheduler")

out = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ELEVATOR_EXAMPLE_PNG", "sweep_schedulers_iodepth.png")
fig.savefig(out, dpi=100)
print(f"\nplot: {out}")
