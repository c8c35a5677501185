//! CFQ through the simulator: two equal sequential readers share a disk
//! fairly, and both CFQ behaviours run the eight O_DIRECT writers of
//! `examples/seed004.fio` to the end.

use crate::common;

use elevator_fio::job::{JobSpec, RwMode};
use elevator_fio::result::READ;

use common::{file, sim, timed};

fn reader(name: &str) -> JobSpec {
    let mut j = timed(name, RwMode::Read, 1 << 30, 1, 10_000_000_000);
    j.bs = [64 << 10; 3];
    j
}

#[test]
fn two_equal_sequential_readers_share_the_disk() {
    let jobs = file("fair.fio", vec![reader("a"), reader("b")]);
    for tunables in [&[][..], &[("deep_seeky_idle", "0")]] {
        let r = sim(&jobs, "hdd-7200", "cfq", tunables);
        let a = r.jobs[0].dirs[READ].bytes as f64;
        let b = r.jobs[1].dirs[READ].bytes as f64;
        let share = a / (a + b);
        assert!(
            (0.4..=0.6).contains(&share),
            "cfq {tunables:?}: share {share}"
        );
    }
}
