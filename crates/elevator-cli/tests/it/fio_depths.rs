//! The `IO depths` line on a real file says what fio says (issue 30): the
//! same 4 KiB random-read job at depths 1, 4 and 16, through fio's libaio
//! and through elevator on `file:PATH`; the bucket fio fills most is the
//! one elevator fills most. A scratch file in /var/tmp (O_DIRECT needs a
//! real file system; /tmp may be tmpfs). No timing is asserted.

use crate::common;

use std::path::PathBuf;

use common::fio::{TempDir, elevator, fio, json, stdout_ok};
use serde_json::Value;

/// A scratch file removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// fio's `iodepth_level` keys, in order.
const KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];

/// The `iodepth_level` key with the largest share in the first job of
/// `report`.
fn fullest(what: &str, report: &Value) -> &'static str {
    let level = &report["jobs"][0]["iodepth_level"];
    let share = |k: &str| {
        level[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: no iodepth_level {k} in {level}"))
    };
    KEYS.iter()
        .copied()
        .max_by(|a, b| share(a).total_cmp(&share(b)))
        .unwrap_or("1")
}

#[test]
fn real_file_io_depths_fill_the_bucket_fio_fills() {
    elevator_testkit::needs!("fio");
    let dir = TempDir::new("depths");
    let file = Scratch(PathBuf::from(format!(
        "/var/tmp/elevator-depths-{}.img",
        std::process::id()
    )));
    let path = file.0.to_string_lossy().into_owned();
    for depth in [1, 4, 16] {
        let job = [
            "--name=depths".to_string(),
            format!("--filename={path}"),
            "--size=32m".into(),
            "--rw=randread".into(),
            "--bs=4k".into(),
            format!("--iodepth={depth}"),
            "--ioengine=libaio".into(),
            "--direct=1".into(),
            "--runtime=1".into(),
            "--time_based".into(),
            "--output-format=json".into(),
        ];
        let args: Vec<&str> = job.iter().map(String::as_str).collect();
        let theirs = stdout_ok(&format!("fio at depth {depth}"), &fio(dir.path(), &args));
        let theirs = json("fio", &theirs);
        let device = format!("file:{path}");
        let mut ours_args = vec!["run"];
        ours_args.extend(&args);
        ours_args.extend(["--device", &device]);
        let ours = stdout_ok(
            &format!("elevator at depth {depth}"),
            &elevator(dir.path(), &ours_args),
        );
        let ours = json("elevator", &ours);
        assert_eq!(
            fullest("elevator", &ours),
            fullest("fio", &theirs),
            "depth {depth}: elevator {} vs fio {}",
            ours["jobs"][0]["iodepth_level"],
            theirs["jobs"][0]["iodepth_level"]
        );
    }
}
