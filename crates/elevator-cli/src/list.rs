//! `elevator schedulers`: what schedulers exist and what can be tuned.

use anyhow::Result;
use elevator_core::queue::QUEUE_TUNABLES;
use elevator_core::{AnyScheduler, SCHEDULER_NAMES, Scheduler, TunableSpec};

fn print_specs(specs: &[TunableSpec]) {
    for s in specs {
        let default = if s.read_only {
            "(read-only)".to_string()
        } else {
            format!("{} {}", s.default, s.unit.name())
                .trim_end()
                .to_string()
        };
        println!("    {:<20} {:<16} {}", s.name, default, s.help);
    }
}

/// Print every scheduler with its tunables and defaults.
pub fn schedulers() -> Result<()> {
    println!("queue tunables (every scheduler), Linux names and defaults:");
    print_specs(&QUEUE_TUNABLES);
    for name in SCHEDULER_NAMES {
        let s = AnyScheduler::by_name(name)?;
        println!();
        if s.tunables().is_empty() {
            println!("{name}: no tunables");
        } else {
            println!("{name}:");
            print_specs(s.tunables());
        }
    }
    Ok(())
}
