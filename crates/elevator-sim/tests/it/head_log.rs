//! The head-position log of a run (`run_observed`): samples in time order,
//! on real cylinders, bounded by the cap; no samples from devices without
//! heads.

use crate::common;

use elevator_fio::RunConfig;
use elevator_fio::job::RwMode;
use elevator_sim::device::{Hdd, HddParams, ModelSpec};
use elevator_sim::engine::{HeadsOut, run_observed};

use common::{file, job};

fn observed(dev: &str, cap: usize) -> HeadsOut {
    let jobs = file(
        "heads.fio",
        vec![
            job("r", RwMode::RandRead, 2 << 20, 8),
            job("w", RwMode::Write, 2 << 20, 4),
        ],
    );
    let mut heads = HeadsOut::new(cap);
    let cfg = RunConfig {
        scheduler: "mq-deadline".into(),
        ..RunConfig::default()
    };
    run_observed(
        &jobs,
        &ModelSpec::parse(dev).unwrap(),
        &cfg,
        &mut |_| {},
        None,
        Some(&mut heads),
    )
    .unwrap();
    heads
}

#[test]
fn hdd_heads_move_forward_in_time_on_real_cylinders() {
    let cylinders = Hdd::new(&HddParams::preset("hdd-7200").unwrap())
        .unwrap()
        .cylinders();
    let h = observed("hdd-7200", 1 << 20);
    assert!(h.samples.len() > 500, "{} samples", h.samples.len());
    assert_eq!(h.dropped, 0);
    assert!(h.samples.windows(2).all(|w| w[0].time <= w[1].time));
    assert!(h.samples.iter().all(|s| s.cylinder < cylinders));
}

#[test]
fn the_cap_bounds_the_log_and_counts_the_rest() {
    let all = observed("hdd-7200", 1 << 20);
    let few = observed("hdd-7200", 100);
    assert_eq!(few.samples.len(), 100);
    assert_eq!(few.samples[..], all.samples[..100]);
    assert_eq!(few.dropped as usize, all.samples.len() - 100);
}

#[test]
fn devices_without_heads_record_nothing() {
    let h = observed("ssd-sata", 1000);
    assert!(h.samples.is_empty());
    assert_eq!(h.dropped, 0);
}
