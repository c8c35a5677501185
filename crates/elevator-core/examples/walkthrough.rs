//! A walk through elevator-core: bios merge into requests, mq-deadline sorts
//! them, a pretend device completes them, and every bio completes once.
//!
//! Run it with `cargo run -p elevator-core --example walkthrough`.

use elevator_core::{Bio, BioFlags, Dispatch, Outcome, Queue, QueueConfig, Status, Submitted};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut queue = Queue::with_scheduler(QueueConfig::default(), "mq-deadline")?;
    let mut now = 0;

    // Three adjacent 4 KiB reads, submitted out of order, and one far away.
    for (sector, token) in [(8, 2), (0, 1), (16, 3), (100_000, 4)] {
        let what = queue.submit(&Bio::read(sector, 4096, token), now)?;
        println!("submit read @{sector:>6} (token {token}): {what:?}");
        now += 1_000;
    }
    // A write that must reach stable media: never merged, dispatched first.
    let fua = Bio::write(24, 4096, 5).with_flags(BioFlags::FUA);
    println!(
        "submit FUA write @24 (token 5): {:?}",
        queue.submit(&fua, now)?
    );

    // A bad bio is refused with a reason, and nothing changes.
    if let Err(e) = queue.submit(&Bio::read(3, 1000, 6), now) {
        println!("refused: {e}");
    }

    // The "device": dispatch everything, fail the last request halfway.
    while let Dispatch::Request(id) = queue.dispatch(now) {
        let rq = queue.request(id);
        let tokens: Vec<u64> = queue.bios(id).map(|b| b.token).collect();
        println!(
            "dispatch {} of {} KiB at sector {} with bios {tokens:?}",
            rq.op(),
            rq.bytes() / 1024,
            rq.sector()
        );
        let outcome = if rq.sector() == 100_000 {
            Outcome::Failed {
                status: Status::IoError,
                good_bytes: 2048,
            }
        } else {
            Outcome::Done
        };
        now += 100_000;
        queue.complete(id, outcome, now, &mut |c| {
            println!(
                "  complete token {}: {} ({} bytes)",
                c.token, c.status, c.bytes
            );
        })?;
    }

    let s = queue.stats();
    println!(
        "{} bios, {} requests, {} back / {} front merges, {} dispatched",
        s.bios, s.requests, s.back_merges, s.front_merges, s.dispatches
    );
    assert!(queue.is_idle());
    assert_eq!(s.bios, s.bios_completed);
    assert!(matches!(
        queue.submit(&Bio::read(0, 4096, 7), now)?,
        Submitted::NewRequest(_)
    ));
    Ok(())
}

#[cfg(test)]
#[test]
fn runs() {
    main().expect("the walkthrough runs");
}
