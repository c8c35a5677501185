//! `elevator microbench`: its options, their checks and its table or JSON.
//! The measuring (the CPU cost per I/O of elevator-core's path with no
//! device) is [`elevator_run::microbench`]'s.

use std::io::Write;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use elevator_core::Limits;
use elevator_run::microbench::{Case, CaseResult, MAX_REPEAT, Pattern, check_case, measure};
use serde::Serialize;

/// Access pattern of the generated bios (`--pattern`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PatternArg {
    /// Uniformly random, block-aligned positions over the whole device.
    Random,
    /// Each bio starts where the previous one ended.
    Sequential,
}

impl From<PatternArg> for Pattern {
    fn from(p: PatternArg) -> Pattern {
        match p {
            PatternArg::Random => Pattern::Random,
            PatternArg::Sequential => Pattern::Sequential,
        }
    }
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// A table for people.
    Normal,
    /// One JSON document.
    Json,
}

/// Options of `elevator microbench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scheduler(s), comma-separated (`elevator schedulers` lists them).
    #[arg(long, value_delimiter = ',', default_value = "none,mq-deadline")]
    scheduler: Vec<String>,
    /// Requests kept queued in the scheduler; several values separated by commas.
    #[arg(long, value_delimiter = ',', default_value = "128,512,4096")]
    depth: Vec<u32>,
    /// Access pattern(s), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "random")]
    pattern: Vec<PatternArg>,
    /// Bio size in bytes (suffixes k and m accepted: 4k, 1m).
    #[arg(long, default_value = "4096", value_parser = parse_bytes)]
    bs: u32,
    /// Merge policy(ies), comma-separated: 0 all merges, 1 only the one-hit
    /// cache, 2 none.
    #[arg(long, value_delimiter = ',', default_value = "0",
          value_parser = clap::value_parser!(u8).range(0..=2))]
    nomerges: Vec<u8>,
    /// Bios timed per case (after filling the queue and a warm-up).
    #[arg(long, default_value_t = 1_000_000)]
    ios: u64,
    /// Runs per case (1 to 1000); the median is reported.
    #[arg(long, default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=MAX_REPEAT as i64))]
    repeat: u32,
    /// Requests the pretend device holds before completing the oldest.
    #[arg(long, default_value_t = 32)]
    inflight: u32,
    /// Seed of the random positions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Set a queue or scheduler tunable for every case (repeatable), e.g.
    /// --set fifo_batch=32.
    #[arg(long = "set", value_name = "TUNABLE=VALUE")]
    set: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    output_format: OutputFormat,
}

impl Args {
    /// The case of these options for one scheduler, depth, pattern and
    /// merge policy.
    fn case<'a>(&self, scheduler: &'a str, depth: u32, pattern: Pattern, nomerges: u8) -> Case<'a> {
        Case {
            scheduler,
            depth,
            pattern,
            nomerges,
            bs: self.bs,
            ios: self.ios,
            inflight: self.inflight,
            seed: self.seed,
        }
    }
}

/// Parse a byte count with an optional k/m/g suffix (powers of 1024).
pub fn parse_bytes(text: &str) -> Result<u32, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, mult) = match t.trim_end_matches(['b', 'i']).char_indices().last() {
        Some((i, 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'm')) => (&t[..i], 1 << 20),
        Some((i, 'g')) => (&t[..i], 1 << 30),
        _ => (t.as_str(), 1),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a byte count (examples: 4096, 4k, 1m)"))?;
    let bytes = n
        .checked_mul(mult)
        .filter(|&b| b <= u64::from(u32::MAX))
        .ok_or_else(|| format!("'{text}' is too large (at most 4 GiB - 1)"))?;
    Ok(bytes as u32)
}
#[derive(Debug, Serialize)]
struct Report {
    benchmark: &'static str,
    elevator_version: &'static str,
    bs: u32,
    ios: u64,
    repeat: u32,
    inflight: u32,
    seed: u64,
    cases: Vec<CaseResult>,
}

fn validate(args: &Args) -> Result<Vec<(String, String)>> {
    if args.bs == 0 || !args.bs.is_multiple_of(512) {
        bail!("--bs {}: must be a positive multiple of 512 bytes", args.bs);
    }
    if u64::from(args.bs) > u64::from(Limits::default().max_sectors) * 512 {
        bail!(
            "--bs {}: at most 4 MiB (one request; larger bios would be split)",
            args.bs
        );
    }
    if args.ios == 0 {
        bail!("--ios must be at least 1");
    }
    if args.inflight == 0 || args.inflight > 4096 {
        bail!("--inflight {}: must be 1..=4096", args.inflight);
    }
    for &d in &args.depth {
        if d == 0 || d + args.inflight + 1 > 65536 {
            bail!(
                "--depth {d}: must be 1..={} (depth + inflight + 1 requests must fit in 65536 tags)",
                65535 - args.inflight
            );
        }
    }
    args.set
        .iter()
        .map(|s| {
            let (name, value) = s
                .split_once('=')
                .with_context(|| format!("--set '{s}': expected TUNABLE=VALUE"))?;
            Ok((name.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

/// Run `elevator microbench`.
pub fn run(args: &Args) -> Result<()> {
    let schedulers = crate::list::several_schedulers("--scheduler", &args.scheduler)?;
    let sets = validate(args)?;
    // Every case's queue is built once before anything is printed or timed,
    // so a bad --set fails at once.
    for sched in &schedulers {
        for &nomerges in &args.nomerges {
            for &depth in &args.depth {
                let case = args.case(sched, depth, Pattern::Random, nomerges);
                check_case(&case, &sets)?;
            }
        }
    }
    let json = args.output_format == OutputFormat::Json;
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(
            out,
            "elevator microbench: core path per bio (submit, merge attempt, insert, dispatch, complete), no device"
        )?;
        writeln!(
            out,
            "{}-byte reads, {} bios timed per case, up to {} in flight; median of {} runs of thread CPU time\n",
            args.bs, args.ios, args.inflight, args.repeat
        )?;
        writeln!(
            out,
            "{:<14} {:>6}  {:<10} {:>8} {:>9} {:>9} {:>8} {:>8}",
            "scheduler", "depth", "pattern", "nomerges", "ns/IO", "min ns/IO", "Mbio/s", "merged"
        )?;
    }
    let mut cases = Vec::new();
    for sched in &schedulers {
        for &pattern in &args.pattern {
            for &nomerges in &args.nomerges {
                for &depth in &args.depth {
                    let case = args.case(sched, depth, pattern.into(), nomerges);
                    let result = measure(&case, &sets, args.repeat)?;
                    if !json {
                        writeln!(
                            out,
                            "{:<14} {:>6}  {:<10} {:>8} {:>9.1} {:>9.1} {:>8.2} {:>7.1}%",
                            result.scheduler,
                            depth,
                            Pattern::from(pattern).name(),
                            nomerges,
                            result.ns_per_io,
                            result.ns_per_io_min,
                            1000.0 / result.ns_per_io,
                            result.merged_pct
                        )?;
                        out.flush()?;
                    }
                    cases.push(result);
                }
            }
        }
    }
    if json {
        let report = Report {
            benchmark: "elevator microbench",
            elevator_version: env!("CARGO_PKG_VERSION"),
            bs: args.bs,
            ios: args.ios,
            repeat: args.repeat,
            inflight: args.inflight,
            seed: args.seed,
            cases,
        };
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("4k"), Ok(4096));
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("1m"), Ok(1 << 20));
        assert!(parse_bytes("4x").is_err());
        assert!(parse_bytes("8g").is_err());
        assert!(parse_bytes("").is_err());
    }
}
