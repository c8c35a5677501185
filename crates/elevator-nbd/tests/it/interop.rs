//! The server against real NBD clients: libnbd's `nbdinfo`, `nbdcopy` and
//! `nbdfuse`, `qemu-img`, and fio's `nbd` engine. The server runs in-process
//! on a thread; the clients are the installed tools (CI installs them, as
//! does `scripts/test`), and their absence fails the test with a message
//! naming the program and its Debian package. Only what the kernel may deny
//! (FUSE, loop devices, mounting) is skipped, with a message saying why.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{
    Json, JsonExt, TestServer, assert_same_file, run, run_fio, run_ok, temp_dir, temp_dir_in,
    wait_for, write_image,
};

const MIB: u64 = 1 << 20;

fn nbdinfo_json(uri: &str) -> Json {
    let out = run_ok(Command::new("nbdinfo").arg("--json").arg(uri));
    serde_json::from_str::<Json>(&out)
        .unwrap_or_else(|e| panic!("nbdinfo --json {uri}: {e}:\n{out}"))
}

#[test]
fn a_missing_tool_names_its_package() {
    // Each tool, where no PATH finds it.
    let empty = temp_dir("nopath");
    for (program, package) in [
        ("nbdinfo", "libnbd-bin"),
        ("nbdcopy", "libnbd-bin"),
        ("nbdfuse", "libnbd-bin"),
        ("nbdkit", "nbdkit"),
        ("qemu-img", "qemu-utils"),
        ("fio", "fio"),
        ("fusermount3", "fuse3"),
        ("mkfs.ext4", "e2fsprogs"),
    ] {
        let missing = std::panic::catch_unwind(|| {
            run(Command::new(program).env("PATH", empty.path()));
        })
        .expect_err("running a program that is not installed must fail");
        let msg = missing
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(
            msg.contains(&format!("{program} is not installed"))
                && msg.contains(&format!("apt-get install {package}"))
                && msg.contains("scripts/test"),
            "{program}: {msg}"
        );
    }
}

/// What `nbdinfo` must say about one export.
struct Expect {
    name: &'static str,
    size: u64,
    read_only: bool,
    rotational: bool,
    min_block: u64,
}

fn check_export(e: &Json, want: &Expect) {
    let what = want.name;
    assert_eq!(e.at("export-name").str(), want.name);
    assert_eq!(e.at("export-size").num() as u64, want.size, "{what}: size");
    assert_eq!(
        e.at("is_read_only").bool(),
        want.read_only,
        "{what}: is_read_only"
    );
    assert_eq!(
        e.at("is_rotational").bool(),
        want.rotational,
        "{what}: is_rotational"
    );
    for flag in [
        "can_flush",
        "can_fua",
        "can_trim",
        "can_zero",
        "can_multi_conn",
    ] {
        assert!(e.at(flag).bool(), "{what}: {flag}");
    }
    assert_eq!(
        e.at("block_size_minimum").num() as u64,
        want.min_block,
        "{what}: minimum block"
    );
    assert_eq!(
        e.at("block_size_preferred").num() as u64,
        want.min_block.max(4096),
        "{what}: preferred block"
    );
    assert_eq!(
        e.at("block_size_maximum").num() as u64,
        32 * MIB,
        "{what}: maximum block"
    );
}

#[test]
fn nbdinfo_describes_every_export() {
    elevator_testkit::needs!("nbdinfo");
    let server = TestServer::start(&[
        "disk=mem:64m",
        "slow=hdd-7200,scheduler=bfq",
        "ro=mem:16m,ro",
        "big=mem:64m,lbs=4096,scheduler=kyber",
    ]);
    let expect = [
        Expect {
            name: "disk",
            size: 64 * MIB,
            read_only: false,
            rotational: false,
            min_block: 512,
        },
        Expect {
            name: "slow",
            size: 1_000_204_886_016,
            read_only: false,
            rotational: true,
            min_block: 512,
        },
        Expect {
            name: "ro",
            size: 16 * MIB,
            read_only: true,
            rotational: false,
            min_block: 512,
        },
        Expect {
            name: "big",
            size: 64 * MIB,
            read_only: false,
            rotational: false,
            min_block: 4096,
        },
    ];
    for want in &expect {
        let j = nbdinfo_json(&server.uri(want.name));
        assert_eq!(j.at("protocol").str(), "newstyle-fixed");
        assert!(j.at("structured").bool(), "structured replies negotiated");
        let exports = j.at("exports").arr();
        assert_eq!(exports.len(), 1);
        check_export(&exports[0], want);
        let description = exports[0].at("description").str();
        assert!(
            description.contains("scheduler"),
            "description {description:?}"
        );
    }
    // The empty name is the first export.
    let j = nbdinfo_json(&server.uri(""));
    assert_eq!(
        j.at("exports").arr()[0].at("export-size").num() as u64,
        64 * MIB
    );

    // --list names every export, in order, with the same details.
    let list = run_ok(
        Command::new("nbdinfo")
            .arg("--list")
            .arg("--json")
            .arg(server.uri("")),
    );
    let j = serde_json::from_str::<Json>(&list)
        .unwrap_or_else(|e| panic!("nbdinfo --list --json: {e}:\n{list}"));
    let exports = j.at("exports").arr();
    let names: Vec<&str> = exports.iter().map(|e| e.at("export-name").str()).collect();
    assert_eq!(names, ["disk", "slow", "ro", "big"]);
    for (e, want) in exports.iter().zip(&expect) {
        check_export(e, want);
    }
    let text = run_ok(Command::new("nbdinfo").arg("--list").arg(server.uri("")));
    for want in &expect {
        assert!(
            text.contains(&format!("export=\"{}\"", want.name)),
            "{text}"
        );
    }
    server.stop();
}

#[test]
fn tcp_listener_serves_nbdinfo_and_nbdcopy() {
    elevator_testkit::needs!("nbdcopy", "nbdinfo", "qemu-img");
    let server = TestServer::start_with(&["disk=mem:32m"], |cfg| {
        cfg.tcp = vec!["127.0.0.1:0".parse().expect("address")];
    });
    let addr = server.tcp[0];
    assert_ne!(addr.port(), 0, "port 0 became a real port");
    let uri = format!("nbd://{addr}/disk");
    let j = nbdinfo_json(&uri);
    assert_eq!(
        j.at("exports").arr()[0].at("export-size").num() as u64,
        32 * MIB
    );

    let dir = temp_dir("tcp");
    let (img, out) = (dir.path().join("in.img"), dir.path().join("out.img"));
    write_image(&img, 32 * MIB, 7);
    run_ok(Command::new("nbdcopy").arg("--flush").arg(&img).arg(&uri));
    run_ok(Command::new("nbdcopy").arg(&uri).arg(&out));
    assert_same_file(&img, &out);
    // The Unix socket sees the same export.
    let out2 = dir.path().join("out2.img");
    run_ok(Command::new("nbdcopy").arg(server.uri("disk")).arg(&out2));
    assert_same_file(&img, &out2);
    assert!(
        server
            .log_lines()
            .iter()
            .any(|l| l.starts_with("127.0.0.1:")),
        "TCP peers are logged"
    );
    server.stop();
}

fn qemu_img_in_and_out(img: &Path, uri: &str, out: &Path) {
    // -n: the export exists; do not try to create it.
    run_ok(
        Command::new("qemu-img")
            .args(["convert", "-n", "-f", "raw", "-O", "raw"])
            .arg(img)
            .arg(uri),
    );
    run_ok(
        Command::new("qemu-img")
            .args(["convert", "-f", "raw", "-O", "raw"])
            .arg(uri)
            .arg(out),
    );
}

#[test]
fn qemu_img_round_trip_mem() {
    elevator_testkit::needs!("qemu-img");
    let server = TestServer::start(&["a=mem:256m"]);
    let dir = temp_dir("qemu");
    let (img, out) = (dir.path().join("in.img"), dir.path().join("out.img"));
    write_image(&img, 256 * MIB, 1);
    qemu_img_in_and_out(&img, &server.uri("a"), &out);
    assert_same_file(&img, &out);
    let lines = server.wait_log_count(2);
    assert!(lines.iter().all(|l| l.contains("0 errors")), "{lines:#?}");
    server.stop();
}

#[test]
fn nbdcopy_round_trip_mem() {
    elevator_testkit::needs!("nbdcopy");
    let server = TestServer::start(&["b=mem:256m,scheduler=bfq"]);
    let dir = temp_dir("nbdcopy");
    let (img, out) = (dir.path().join("in.img"), dir.path().join("out.img"));
    write_image(&img, 256 * MIB, 2);
    run_ok(
        Command::new("nbdcopy")
            .arg("--flush")
            .arg(&img)
            .arg(server.uri("b")),
    );
    run_ok(Command::new("nbdcopy").arg(server.uri("b")).arg(&out));
    assert_same_file(&img, &out);
    server.stop();
}

#[test]
fn file_export_round_trip() {
    elevator_testkit::needs!("nbdcopy", "nbdinfo", "qemu-img", "fio");
    // O_DIRECT wants a real filesystem: /var/tmp, not a tmpfs.
    let dir = temp_dir_in(Path::new("/var/tmp"), "file-export");
    let backing = dir.path().join("disk.img");
    std::fs::File::create(&backing)
        .and_then(|f| f.set_len(256 * MIB))
        .expect("creating the backing file");
    let spec = format!("f=file:{},scheduler=mq-deadline", backing.display());
    let (img, out1, out2) = (
        dir.path().join("in.img"),
        dir.path().join("out1.img"),
        dir.path().join("out2.img"),
    );
    write_image(&img, 256 * MIB, 3);
    {
        let server = TestServer::start(&[&spec]);
        let uri = server.uri("f");
        let j = nbdinfo_json(&uri);
        assert_eq!(
            j.at("exports").arr()[0].at("export-size").num() as u64,
            256 * MIB
        );
        // In with nbdcopy, out with qemu-img; then in with qemu-img over it
        // and out with nbdcopy.
        run_ok(Command::new("nbdcopy").arg("--flush").arg(&img).arg(&uri));
        run_ok(
            Command::new("qemu-img")
                .args(["convert", "-f", "raw", "-O", "raw"])
                .arg(&uri)
                .arg(&out1),
        );
        assert_same_file(&img, &out1);
        run_ok(
            Command::new("qemu-img")
                .args(["convert", "-n", "-f", "raw", "-O", "raw"])
                .arg(&img)
                .arg(&uri),
        );
        run_ok(Command::new("nbdcopy").arg(&uri).arg(&out2));
        assert_same_file(&img, &out2);
        server.stop();
    }
    // What the clients wrote is in the file once the server has stopped
    // (it flushes every writable export).
    assert_same_file(&img, &backing);
}

fn fio_job(uri: &str, rw: &str, extra: &[&str], dir: &Path) -> Json {
    let mut cmd = Command::new("fio");
    // fio may leave files (verify state) where it runs.
    cmd.current_dir(dir)
        .args([
            "--name=verify",
            "--ioengine=nbd",
            "--size=64m",
            "--bs=4k",
            "--iodepth=32",
            "--verify=crc32c",
            "--verify_state_save=0",
            "--output-format=json",
        ])
        .arg(format!("--uri={uri}"))
        .arg(format!("--rw={rw}"))
        .args(extra);
    let what = format!("{cmd:?}");
    let j = run_fio(&mut cmd);
    for job in j.at("jobs").arr() {
        assert_eq!(job.at("error").num(), 0.0, "{what}: fio reported an error");
    }
    j
}

fn fio_write_then_read_verify(scheduler: &str) {
    let server = TestServer::start(&[&format!("disk=mem:64m,scheduler={scheduler}")]);
    let uri = server.uri("disk");
    let dir = temp_dir("fio");
    // Random writes of checksummed blocks, verified by reading them back...
    let w = fio_job(&uri, "randwrite", &["--do_verify=1"], dir.path());
    let written = w.at("jobs").arr()[0].at("write").at("io_bytes").num() as u64;
    assert_eq!(written, 64 * MIB, "fio wrote the whole area");
    // ...then a separate job reading them in random order, verifying.
    let r = fio_job(&uri, "randread", &[], dir.path());
    let read = r.at("jobs").arr()[0].at("read").at("io_bytes").num() as u64;
    assert_eq!(read, 64 * MIB, "fio read the whole area");
    let lines = server.wait_log_count(2);
    assert!(lines.iter().all(|l| l.contains(" 0 errors")), "{lines:#?}");
    server.stop();
}

#[test]
fn fio_verify_mq_deadline() {
    elevator_testkit::needs!("fio");
    fio_write_then_read_verify("mq-deadline");
}

#[test]
fn fio_verify_bfq() {
    elevator_testkit::needs!("fio");
    fio_write_then_read_verify("bfq");
}

#[test]
fn concurrent_multi_connection_copies() {
    elevator_testkit::needs!("nbdcopy");
    let server = TestServer::start(&["a=mem:64m", "b=mem:64m,scheduler=bfq"]);
    let dir = temp_dir("multi");
    let (img_a, img_b) = (dir.path().join("a.img"), dir.path().join("b.img"));
    write_image(&img_a, 64 * MIB, 11);
    write_image(&img_b, 64 * MIB, 12);
    let copy = |src: String, dst: String| {
        std::thread::spawn(move || {
            run_ok(
                Command::new("nbdcopy")
                    .args(["-C", "4", "-T", "4", "-R", "16", "--flush"])
                    .arg(src)
                    .arg(dst),
            );
        })
    };
    // Two copies at once, each over four connections.
    let s = |p: &PathBuf| p.display().to_string();
    let t1 = copy(s(&img_a), server.uri("a"));
    let t2 = copy(s(&img_b), server.uri("b"));
    t1.join().expect("copy into a");
    t2.join().expect("copy into b");
    let (out_a, out_b) = (dir.path().join("a.out"), dir.path().join("b.out"));
    let t1 = copy(server.uri("a"), s(&out_a));
    let t2 = copy(server.uri("b"), s(&out_b));
    t1.join().expect("copy out of a");
    t2.join().expect("copy out of b");
    assert_same_file(&img_a, &out_a);
    assert_same_file(&img_b, &out_b);
    // Each copy used several connections (logged as the server sees them
    // go): four in and four out per export.
    for export in ["a", "b"] {
        let needle = format!("export '{export}'");
        wait_for(
            &format!("eight connections to '{export}' in the log"),
            || {
                (server
                    .log_lines()
                    .iter()
                    .filter(|l| l.contains(&needle))
                    .count()
                    >= 8)
                    .then_some(())
            },
        );
    }
    let lines = server.log_lines();
    assert!(lines.iter().all(|l| l.contains(" 0 errors")), "{lines:#?}");
    server.stop();
}

#[test]
fn read_only_export_refuses_writes() {
    elevator_testkit::needs!("nbdcopy", "qemu-img");
    let server = TestServer::start(&["ro=mem:16m,ro", "disk=mem:16m"]);
    let dir = temp_dir("ro");
    let img = dir.path().join("in.img");
    write_image(&img, 16 * MIB, 5);
    let out = run(Command::new("nbdcopy").arg(&img).arg(server.uri("ro")));
    assert!(
        !out.status.success(),
        "nbdcopy into a read-only export succeeded"
    );
    let out = run(Command::new("qemu-img")
        .args(["convert", "-n", "-f", "raw", "-O", "raw"])
        .arg(&img)
        .arg(server.uri("ro")));
    assert!(
        !out.status.success(),
        "qemu-img into a read-only export succeeded"
    );
    // Nothing was written: it still reads as zeroes.
    let back = dir.path().join("ro.out");
    run_ok(Command::new("nbdcopy").arg(server.uri("ro")).arg(&back));
    let data = std::fs::read(&back).expect("read");
    assert_eq!(data.len() as u64, 16 * MIB);
    assert!(data.iter().all(|&b| b == 0), "the read-only export changed");
    server.stop();
}

// ---------------------------------------------------------------------------
// nbdfuse, a loop device and ext4.

#[test]
fn nbdfuse_loop_ext4() {
    elevator_testkit::needs!(in common::ext4::TOOLS);
    // Dropped last: after the server.
    let work = temp_dir("fuse");
    let server = TestServer::start(&["disk=mem:64m"]);
    if let Err(why) = common::ext4::round_trip(&server.uri("disk"), &work) {
        common::skip("nbdfuse_loop_ext4", &why);
        return;
    }
    let lines = server.log_lines();
    assert!(lines.iter().all(|l| l.contains(" 0 errors")), "{lines:#?}");
    server.stop();
}

// ---------------------------------------------------------------------------
// 512-byte I/O on a file whose direct I/O is aligned to 4096 (tmpfs).

#[test]
fn a_tmpfs_file_export_takes_512_byte_direct_io_through_a_loop_device() {
    elevator_testkit::needs!("nbdinfo");
    elevator_testkit::needs!(in common::ext4::TOOLS);
    let test = "a_tmpfs_file_export_takes_512_byte_direct_io_through_a_loop_device";
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        common::skip(test, "/dev/shm does not exist");
        return;
    }
    let dir = temp_dir_in(shm, "sectors");
    let backing = dir.path().join("disk.img");
    std::fs::File::create(&backing)
        .and_then(|f| f.set_len(16 * MIB))
        .expect("creating the backing file");
    let spec = format!("disk=file:{}", backing.display());
    match elevator_nbd::ExportSpec::parse(&spec).map(|s| s.open(1)) {
        Ok(Ok(o)) if o.export.align > 512 => {}
        Ok(Ok(o)) => {
            let why = format!("direct I/O on this tmpfs is aligned to {}", o.export.align);
            common::skip(test, &why);
            return;
        }
        Ok(Err(e)) | Err(e) => {
            let why = format!("a file on tmpfs cannot be served: {}", common::chain(&e));
            common::skip(test, &why);
            return;
        }
    }
    let server = TestServer::start(&[&spec]);
    // What libnbd sees: 512-byte blocks, 4096 preferred.
    let info = nbdinfo_json(&server.uri("disk"));
    let export = &info.at("exports").arr()[0];
    assert_eq!(export.at("block_size_minimum").num(), 512.0, "{info}");
    assert_eq!(export.at("block_size_preferred").num(), 4096.0, "{info}");
    // As the issue found it: dd of 512 bytes with O_DIRECT on a loop device
    // over nbdfuse, which libnbd refused as unaligned.
    let work = temp_dir("sectors");
    if let Err(why) = common::ext4::sectors_direct(&server.uri("disk"), &work, &[3, 9, 10, 4095]) {
        common::skip(test, &why);
        return;
    }
    let lines = server.log_lines();
    assert!(lines.iter().all(|l| l.contains(" 0 errors")), "{lines:#?}");
    server.stop();
    let file = std::fs::read(&backing).expect("reading the backing file");
    for s in [3usize, 9, 10, 4095] {
        assert!(
            file[s * 512..(s + 1) * 512] == common::pattern(500 + s as u64, 512),
            "sector {s} wrong in the backing file"
        );
    }
}
