//! `elevator schedulers`: what schedulers exist (with their aliases) and
//! what can be tuned; and the scheduler names a command line gives, as
//! they run (aliases and `all` resolved, a note on stderr for an alias).

use anyhow::Result;
use elevator_core::queue::QUEUE_TUNABLES;
use elevator_core::{AnyScheduler, SCHEDULER_ALIASES, SCHEDULER_NAMES, Scheduler, TunableSpec};
use elevator_run::names::choose_schedulers;

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

/// Print every scheduler with its aliases, tunables and defaults.
pub fn schedulers() -> Result<()> {
    println!("queue tunables (every scheduler), Linux names and defaults:");
    print_specs(&QUEUE_TUNABLES);
    for name in SCHEDULER_NAMES {
        let s = AnyScheduler::by_name(name)?;
        let aliases: Vec<&str> = SCHEDULER_ALIASES
            .iter()
            .filter(|(_, to)| *to == name)
            .map(|(alias, _)| *alias)
            .collect();
        let alias = if aliases.is_empty() {
            String::new()
        } else {
            format!(" (alias: {})", aliases.join(", "))
        };
        println!();
        if s.tunables().is_empty() {
            println!("{name}: no tunables{alias}");
        } else {
            println!("{name}:{alias}");
            print_specs(s.tunables());
        }
    }
    println!();
    println!(
        "An alias (Linux's old name) runs the scheduler it stands for; `--schedulers all` \
         names every one."
    );
    Ok(())
}

/// The scheduler `--scheduler NAME` runs (an alias's scheduler, with a
/// note on stderr saying so).
pub fn one_scheduler(name: &str) -> Result<String> {
    let chosen = choose_schedulers(
        "--scheduler",
        std::slice::from_ref(&name.to_string()),
        false,
    )?;
    for note in &chosen.notes {
        eprintln!("elevator: note: {note}");
    }
    Ok(chosen
        .names
        .into_iter()
        .next()
        .unwrap_or_else(|| name.to_string()))
}

/// The schedulers a list option (`option A,B,...`) runs: `all` is every
/// one, each alias runs its scheduler (with a note on stderr), each name
/// once.
pub fn several_schedulers(option: &str, names: &[String]) -> Result<Vec<String>> {
    let chosen = choose_schedulers(option, names, true)?;
    for note in &chosen.notes {
        eprintln!("elevator: note: {note}");
    }
    Ok(chosen.names)
}
