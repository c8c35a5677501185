"""elevator.run and compare give exactly the command's figures."""

import json

import pytest

import elevator

from conftest import MIXED, SIZE_BOUND


def cli_error(stderr):
    """The message the command printed after ``error: ``."""
    for line in stderr.splitlines():
        if line.startswith("elevator: error: "):
            return line[len("elevator: error: "):]
    return None


@pytest.mark.parametrize(
    "device,scheduler,sets",
    [
        ("hdd-7200", "mq-deadline", {}),
        ("ssd-sata", "bfq", {"slice_idle": 0}),
        ("hdd-7200,rpm=5400", "kyber", {"nomerges": 2}),
    ],
)
def test_run_json_equals_the_commands(cli, job_file, device, scheduler, sets):
    args = ["run", job_file, "--device", device, "--scheduler", scheduler, "--seed", 7]
    for k, v in sets.items():
        args += ["--set", "%s=%s" % (k, v)]
    code, out, err = cli(*args, "--output-format", "json")
    assert code == 0, err
    r = elevator.run(job_file, device=device, scheduler=scheduler, seed=7, set=sets)
    assert r.json == out
    assert r.data == json.loads(out)


def test_a_str_naming_a_file_is_a_path_and_other_text_is_a_job(job_file):
    by_path = elevator.run(str(job_file), device="ssd-sata")
    by_text = elevator.run(SIZE_BOUND, device="ssd-sata")
    # Same figures; only the job's name in messages differs.
    assert by_path.data["jobs"] == by_text.data["jobs"]


def test_fio_options_as_on_fios_command_line(cli):
    fio = {"name": "cmd", "rw": "randwrite", "bs": "8k", "size": "2m", "ioengine": "libaio", "iodepth": 4}
    code, out, err = cli(
        "run", *["--%s=%s" % kv for kv in fio.items()], "--seed", 7, "--output-format", "json"
    )
    assert code == 0, err
    assert elevator.run(fio=fio).json == out


def test_to_pandas_has_a_row_per_job_and_direction():
    df = elevator.run(MIXED, device="hdd-7200", scheduler="mq-deadline").to_pandas()
    assert list(df["job"]) == ["readers", "writer"]
    assert list(df["direction"]) == ["read", "write"]
    for column in ("iops", "bw_bytes", "total_ios", "clat_mean_ns", "clat_p99_ns", "lat_mean_ns", "util"):
        assert column in df.columns
    assert df.loc[0, "total_ios"] == 512
    assert df.loc[1, "total_ios"] == 128


def test_compare_puts_schedulers_side_by_side(cli, job_file):
    c = elevator.compare(job_file, ["none", "bfq"], device="ssd-sata")
    assert list(c) == ["none", "bfq"]
    code, out, _ = cli("run", job_file, "--device", "ssd-sata", "--scheduler", "bfq", "--seed", 7, "--output-format", "json")
    assert code == 0
    assert c["bfq"].json == out
    df = c.to_pandas()
    assert list(df["scheduler"]) == ["none", "bfq"]


def test_an_alias_runs_its_scheduler_with_a_note():
    r = elevator.run(SIZE_BOUND, scheduler="noop", device="ssd-sata")
    assert r.scheduler == "none"
    assert any("noop is Linux's old name for none" in n for n in r.notes)


@pytest.mark.parametrize(
    "kwargs,cli_args",
    [
        ({"device": "hdd-72000"}, ["--device", "hdd-72000"]),
        ({"scheduler": "bfqq"}, ["--scheduler", "bfqq"]),
        ({"set": {"read_expir": 3}}, ["--set", "read_expir=3"]),
        ({"set": {"read_expire": "soon"}}, ["--set", "read_expire=soon"]),
    ],
)
def test_bad_arguments_are_refused_with_the_commands_message(cli, job_file, kwargs, cli_args):
    code, _, err = cli("run", job_file, *cli_args)
    assert code != 0
    with pytest.raises(elevator.ConfigError) as e:
        elevator.run(job_file, **kwargs)
    assert str(e.value) == cli_error(err)
    assert isinstance(e.value, ValueError)


def test_unknown_names_are_listed():
    with pytest.raises(elevator.ConfigError, match="did you mean bfq.*known: none"):
        elevator.run(SIZE_BOUND, scheduler="bfqq")


def test_a_bad_job_says_where():
    with pytest.raises(elevator.ConfigError, match=r"<text>.*rw"):
        elevator.run("[a]\nrw=sideways\nsize=1m\n")


def test_listings():
    devs = elevator.devices()
    assert "hdd-7200" in [d["name"] for d in devs]
    assert {"name", "kind", "description"} <= set(devs.to_pandas().columns)
    scheds = elevator.schedulers()
    names = [s["name"] for s in scheds]
    assert names[:2] == ["none", "mq-deadline"] and "bfq" in names
    assert "noop" in scheds[0]["aliases"]
    assert any(t["name"] == "nomerges" for t in scheds.queue_tunables)
    assert len(scheds.to_pandas()) == len(names)


def test_replay_json_equals_the_commands(cli):
    from conftest import TRACE

    code, out, err = cli("replay", TRACE, "--scheduler", "bfq", "--timing", "asap", "--output-format", "json")
    assert code == 0, err
    rp = elevator.replay(TRACE, scheduler="bfq", timing="asap")
    strip = lambda d: {k: v for k, v in d.items() if k != "host_cpu_s"}  # noqa: E731
    assert strip(rp.data) == strip(json.loads(out))
    assert set(rp.to_pandas()["source"]) == {"elevator", "recorded"}


def test_advise_equals_the_commands(cli, job_file):
    code, out, err = cli("advise", job_file, "--schedulers", "none,bfq", "--seed", 7, "--output-format", "json")
    assert code == 0, err
    a = elevator.advise(job_file, schedulers=["none", "bfq"], seed=7)
    assert a.json == out
    assert a.best in ("none", "bfq")
    assert list(a.to_pandas()["scheduler"]) == [r["scheduler"] for r in json.loads(out)["runs"]]
