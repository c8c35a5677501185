//! Once warm, the hot path (submit, merge attempt, insert, dispatch,
//! complete) makes no heap allocation, for every scheduler and `nomerges`
//! value, random and sequential.

use elevator_core::{Bio, Dispatch, Limits, Outcome, Queue, QueueConfig, SCHEDULER_NAMES};
use elevator_testkit::TestRng;

/// Drive `ios` bios through `q`, keeping about `depth` requests queued.
fn drive(q: &mut Queue, ios: u64, depth: u32, sequential: bool, rng: &mut TestRng, now: &mut u64) {
    let mut completed = 0u64;
    for i in 0..ios {
        let sector = if sequential {
            i * 8
        } else {
            rng.below(1 << 24) * 8
        };
        let bio = Bio::read(sector, 4096, i);
        while q.submit(&bio, *now).is_err() {
            let Dispatch::Request(id) = q.dispatch(*now) else {
                panic!("stuck")
            };
            q.complete(id, Outcome::Done, *now, &mut |_| completed += 1)
                .unwrap();
        }
        while q.queued() > depth {
            let Dispatch::Request(id) = q.dispatch(*now) else {
                break;
            };
            q.complete(id, Outcome::Done, *now, &mut |_| completed += 1)
                .unwrap();
        }
        *now += 1000;
    }
}

#[test]
fn warm_hot_path_does_not_allocate() {
    for sched in SCHEDULER_NAMES {
        for nomerges in 0..=2u8 {
            for sequential in [false, true] {
                let depth = 256;
                let cfg = QueueConfig {
                    limits: Limits {
                        capacity: 1 << 28,
                        ..Limits::default()
                    },
                    nr_requests: depth + 8,
                    queue_depth: 8,
                    nomerges,
                    max_bios: None,
                    rotational: true,
                };
                let mut q = Queue::with_scheduler(cfg, sched).unwrap();
                let (mut rng, mut now) = (TestRng::new(0x9E37_79B9), 0u64);
                // Warm up: run the measured pattern until every pool and free
                // list has reached its working size.
                for _ in 0..4 {
                    drive(&mut q, 50_000, depth, sequential, &mut rng, &mut now);
                }
                let info = allocation_counter::measure(|| {
                    drive(&mut q, 50_000, depth, sequential, &mut rng, &mut now);
                });
                assert_eq!(
                    info.count_total, 0,
                    "{sched}, nomerges={nomerges}, sequential={sequential}: {} allocations",
                    info.count_total
                );
            }
        }
    }
}
