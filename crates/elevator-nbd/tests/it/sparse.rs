//! Sparse exports against real clients: `nbdinfo --map` and `qemu-img map`
//! show the layout the server reports through `base:allocation` (a sparse
//! file's holes, a memory export's unwritten and zeroed pages), and
//! `nbdcopy` and `qemu-img convert` copy a sparse export reading only its
//! data (the server's per-connection log counts the bytes read), giving a
//! byte-identical copy.

use crate::common;

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;

use common::{Client, Json, JsonExt, TestServer, assert_same_file, pattern, run_ok, temp_dir_in};
use elevator_nbd::proto::cmd;

const MIB: u64 = 1 << 20;

/// A sparse file of `size` bytes with `data` (offset, length) written with
/// random bytes and the rest left as holes, on disk.
fn sparse_file(path: &Path, size: u64, data: &[(u64, u64)]) {
    let mut f = File::create(path).expect("creating the sparse file");
    f.set_len(size).expect("sizing the sparse file");
    for &(at, len) in data {
        f.seek(SeekFrom::Start(at)).expect("seek");
        f.write_all(&pattern(at, len as usize)).expect("write");
    }
    f.sync_all().expect("sync");
}

/// The layout `size` bytes with data at `data` (in order) should show:
/// (offset, length, is data).
fn layout(size: u64, data: &[(u64, u64)]) -> Vec<(u64, u64, bool)> {
    let mut out = Vec::new();
    let mut pos = 0;
    for &(at, len) in data {
        if at > pos {
            out.push((pos, at - pos, false));
        }
        out.push((at, len, true));
        pos = at + len;
    }
    if pos < size {
        out.push((pos, size - pos, false));
    }
    out
}

fn json(text: &str, what: &str) -> Json {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: {e}:\n{text}"))
}

/// What `nbdinfo --map --json` says of `uri`: (offset, length, is data),
/// checking that every other extent is "hole,zero" (type 3).
fn nbdinfo_map(uri: &str) -> Vec<(u64, u64, bool)> {
    let out = run_ok(Command::new("nbdinfo").args(["--map", "--json"]).arg(uri));
    json(&out, "nbdinfo --map --json")
        .arr()
        .iter()
        .map(|e| {
            let kind = e.at("type").num() as u32;
            assert!(kind == 0 || kind == 3, "extent type {kind} in {e:?}");
            let desc = e.at("description").str();
            assert_eq!(desc, if kind == 0 { "data" } else { "hole,zero" });
            (
                e.at("offset").num() as u64,
                e.at("length").num() as u64,
                kind == 0,
            )
        })
        .collect()
}

/// What `qemu-img map --output=json` says of `uri`: (start, length, is
/// data), checking that what is not data reads as zero.
fn qemu_map(uri: &str) -> Vec<(u64, u64, bool)> {
    let out = run_ok(
        Command::new("qemu-img")
            .args(["map", "--output=json", "-f", "raw"])
            .arg(uri),
    );
    json(&out, "qemu-img map")
        .arr()
        .iter()
        .map(|e| {
            let data = e.at("data").bool();
            assert_eq!(e.at("zero").bool(), !data, "{e:?}");
            (
                e.at("start").num() as u64,
                e.at("length").num() as u64,
                data,
            )
        })
        .collect()
}

#[test]
fn maps_of_a_sparse_file_export_show_its_layout() {
    elevator_testkit::needs!("nbdinfo", "qemu-img");
    // A real file system for O_DIRECT and SEEK_HOLE: /var/tmp, not tmpfs.
    let dir = temp_dir_in(Path::new("/var/tmp"), "sparse-map");
    let backing = dir.path().join("disk.img");
    let data = [(4 * MIB, MIB), (20 * MIB, 2 * MIB), (60 * MIB, 65536)];
    sparse_file(&backing, 64 * MIB, &data);
    let server = TestServer::start(&[&format!("f=file:{}", backing.display())]);
    let want = layout(64 * MIB, &data);
    assert_eq!(nbdinfo_map(&server.uri("f")), want, "nbdinfo --map");
    assert_eq!(qemu_map(&server.uri("f")), want, "qemu-img map");
    server.stop();
}

#[test]
fn maps_of_a_memory_export_follow_writes_and_zeroes() {
    elevator_testkit::needs!("nbdinfo", "qemu-img");
    let server = TestServer::start(&["m=mem:64m"]);
    let uri = server.uri("m");
    assert_eq!(nbdinfo_map(&uri), vec![(0, 64 * MIB, false)]);
    let mut c = Client::open(&server.sock, "m");
    assert_eq!(c.write_at(1, 0, MIB, &pattern(1, 8192)), 0);
    assert_eq!(c.write_at(2, 0, 32 * MIB, &pattern(2, 1 << 20)), 0);
    // Zeroing whole pages makes holes of them again.
    assert_eq!(c.command(3, 0, cmd::WRITE_ZEROES, MIB + 4096, 4096), 0);
    assert_eq!(c.command(4, 0, cmd::TRIM, 32 * MIB, 65536), 0);
    c.disc();
    let want = layout(64 * MIB, &[(MIB, 4096), (32 * MIB + 65536, MIB - 65536)]);
    assert_eq!(nbdinfo_map(&uri), want, "nbdinfo --map");
    assert_eq!(qemu_map(&uri), want, "qemu-img map");
    server.stop();
}

/// Bytes read on the connection a server log line is about.
fn read_bytes(line: &str) -> u64 {
    line.split_once("reads (")
        .and_then(|(_, rest)| rest.split_once(" bytes)"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no read bytes in the log line {line:?}"))
}

/// Copy export `name` of `server` out with nbdcopy (one connection) and
/// with `qemu-img convert`, each into a file compared with `want`; check
/// that each read at most 15% of the export (its data is ~10%).
fn copy_out_reading_only_data(server: &TestServer, name: &str, want: &Path, dir: &Path) {
    let size = std::fs::metadata(want).expect("stat").len();
    let uri = server.uri(name);
    let (out1, out2) = (dir.join("nbdcopy.img"), dir.join("qemu.img"));
    let mut logged = server.log_lines().len();
    for (tool, out) in [("nbdcopy", &out1), ("qemu-img", &out2)] {
        let mut cmd = Command::new(tool);
        if tool == "nbdcopy" {
            cmd.args(["--connections=1", &uri]).arg(out);
        } else {
            cmd.args(["convert", "-f", "raw", "-O", "raw", &uri])
                .arg(out);
        }
        run_ok(&mut cmd);
        let lines = server.wait_log_count(logged + 1);
        let read: u64 = lines[logged..].iter().map(|l| read_bytes(l)).sum();
        logged = lines.len();
        eprintln!("{tool} read {read} bytes of {size}");
        assert!(
            read * 100 <= size * 15,
            "{tool} read {read} bytes of a {size}-byte export that is ~10% data: {lines:#?}"
        );
        assert!(read > 0, "{tool} read nothing: {lines:#?}");
        assert_same_file(want, out);
    }
}

/// A 256 MiB layout with ~10% data: 1 MiB every 10 MiB, and 64 KiB at
/// the very end.
fn tenth_data() -> Vec<(u64, u64)> {
    let mut d: Vec<(u64, u64)> = (0..25).map(|i| (i * 10 * MIB + MIB, MIB)).collect();
    d.push((256 * MIB - 65536, 65536));
    d
}

#[test]
fn copies_of_a_sparse_file_export_read_only_its_data() {
    elevator_testkit::needs!("nbdcopy", "nbdinfo");
    let dir = temp_dir_in(Path::new("/var/tmp"), "sparse-copy");
    let backing = dir.path().join("disk.img");
    sparse_file(&backing, 256 * MIB, &tenth_data());
    let server = TestServer::start(&[&format!("f=file:{}", backing.display())]);
    copy_out_reading_only_data(&server, "f", &backing, dir.path());
    server.stop();
}

#[test]
fn copies_of_a_sparse_memory_export_read_only_its_data() {
    elevator_testkit::needs!("nbdcopy", "nbdinfo");
    let dir = temp_dir_in(Path::new("/var/tmp"), "sparse-mem");
    let image = dir.path().join("in.img");
    let data = tenth_data();
    sparse_file(&image, 256 * MIB, &data);
    let server = TestServer::start(&["m=mem:256m"]);
    // In: nbdcopy skips the holes (or zeroes them, which keeps them holes).
    run_ok(
        Command::new("nbdcopy")
            .arg("--connections=1")
            .arg(&image)
            .arg(server.uri("m")),
    );
    server.wait_log_count(1);
    assert_eq!(
        nbdinfo_map(&server.uri("m")),
        layout(256 * MIB, &data),
        "the copied-in export's layout"
    );
    server.wait_log_count(2);
    copy_out_reading_only_data(&server, "m", &image, dir.path());
    server.stop();
}
