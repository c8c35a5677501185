//! Lock statistics printed: lockmeter's table ([`lockmeter_table`], the one
//! the 2001 lock-scaling report took of `io_request_lock`),
//! the counts of Linux's `/proc/lock_stat` ([`lockstat_table`]), and JSON
//! ([`to_json`]). The figures and the columns derived from them are
//! [`elevator_core::lockstat`]'s; this module owns how they print.
//!
//! HOLD MEAN is lockmeter's own (over all requests, rejects included, see
//! [`LockStat::hold_mean_ns`](elevator_core::lockstat::LockStat::hold_mean_ns)); [`lockstat_table`] shows the mean per
//! acquisition, as `/proc/lock_stat` does. The CPUs-spent lines end with
//! their sum: `Sum = 2.85 CPUs`.
//!
//! Times print as lockmeter prints them, in a field six wide: `1.8us` below
//! 10 µs, `2968us` below 10 ms, then `4385ms` (and, past lockmeter, whole
//! seconds from 10 s). Percentages print with two decimals up to 1%, one
//! decimal above, and none for 0% and above 99.9%.

use elevator_core::lockstat::LockReport;
use serde_json::{Value, json};

/// A time in ns as lockmeter prints it (without padding): `1.8us`, `118us`,
/// `2968ms`; from 10 s on, whole seconds (`12s`). The unit changes where the
/// rounded figure would need a fifth digit.
fn lockmeter_time(ns: f64) -> String {
    let us = ns / 1e3;
    if us < 9.95 {
        format!("{us:.1}us")
    } else if us < 9_999.5 {
        format!("{us:.0}us")
    } else if us < 9_999_500.0 {
        format!("{:.0}ms", us / 1e3)
    } else {
        format!("{:.0}s", us / 1e6)
    }
}

/// A percentage as lockmeter prints it (without padding): `0%`, `0.58%`,
/// `47.9%`, `100%`.
fn lockmeter_percent(percent: f64) -> String {
    if percent == 0.0 || percent > 99.9 {
        format!("{percent:.0}%")
    } else if percent > 1.0 {
        format!("{percent:.1}%")
    } else {
        format!("{percent:.2}%")
    }
}

/// A percentage with three significant figures up to 100 (`0.00%`, `3.40%`,
/// `47.9%`), as the seed's CPUs-spent lines print the wait.
fn three_figure_percent(percent: f64) -> String {
    if percent < 9.995 {
        format!("{percent:.2}%")
    } else if percent < 99.95 {
        format!("{percent:.1}%")
    } else {
        format!("{percent:.0}%")
    }
}

// Widths of the lockmeter table's columns, each printed after one space.
const UTIL_WIDTH: usize = 5;
const CON_WIDTH: usize = 5;
const TIME_WIDTH: usize = 6;
/// `MEAN(  MAX )`: a time, a time in parentheses.
const HOLD_WIDTH: usize = TIME_WIDTH + 1 + TIME_WIDTH + 1;
/// A percentage in parentheses, `(47.9%)`.
const WAIT_CPU_WIDTH: usize = 5;
/// `MEAN(  MAX )(% CPU)`.
const WAIT_WIDTH: usize = HOLD_WIDTH + 1 + WAIT_CPU_WIDTH + 1;
const MIN_TOTAL_WIDTH: usize = 9;
const NOWAIT_WIDTH: usize = 6;
const SPIN_WIDTH: usize = 5;
const RJECT_WIDTH: usize = 5;

/// `mean(max)` with both times six wide.
fn mean_max(mean_ns: f64, max_ns: u64) -> String {
    format!(
        "{:>w$}({:>w$})",
        lockmeter_time(mean_ns),
        lockmeter_time(max_ns as f64),
        w = TIME_WIDTH
    )
}

/// lockmeter's report of `r`: a header, then for each lock its name on a
/// line of its own and its figures on the next; then the CPUs each lock
/// cost and their sum. No line ends in a space.
///
/// ```
/// use elevator_core::lockstat::{LockReport, LockStat};
/// use elevator_fio::report::locks::lockmeter_table;
///
/// // The lock-scaling report's io_request_lock: 22 s on 4 CPUs.
/// let io_request_lock = LockStat {
///     acquisitions: 6_914_223,
///     contentions: 4_107_049,
///     hold_total_ns: 12_694_000_000,
///     hold_max_ns: 118_000,
///     wait_total_ns: 42_152_000_000,
///     wait_max_ns: 192_000,
///     ..LockStat::new("io_request_lock")
/// };
/// let report = LockReport { elapsed_ns: 22_000_000_000, cpus: 4, locks: vec![io_request_lock] };
/// assert_eq!(
///     lockmeter_table(&report),
///     "\
/// SPINLOCKS         HOLD           WAIT
///   UTIL   CON   MEAN(  MAX )   MEAN(  MAX )(% CPU)     TOTAL NOWAIT  SPIN RJECT
///
/// io_request_lock
///  57.7% 59.4%  1.8us( 118us)   10us( 192us)(47.9%)   6914223  40.6% 59.4%    0%
///
/// io_request_lock 57.7% + 47.9% * 4 = 2.49
/// ========================================
/// Sum = 2.49 CPUs
/// "
/// );
/// ```
///
/// A lock that never waited shows `0us` for its wait and nothing for its
/// maximum and (% CPU); one never held shows no hold. The CPUs-spent lines
/// print UTIL with one decimal and the wait's CPU share with three figures.
pub fn lockmeter_table(r: &LockReport) -> String {
    let total_width = r
        .locks
        .iter()
        .map(|l| l.total().to_string().len())
        .max()
        .unwrap_or(0)
        .max(MIN_TOTAL_WIDTH);
    let mut lines: Vec<String> = Vec::new();
    // The group titles sit centred over the MEAN(  MAX ) of their columns.
    let before_hold = 1 + UTIL_WIDTH + 1 + CON_WIDTH + 1;
    lines.push(format!(
        "{:<before_hold$}{:^hw$} {:^hw$}",
        "SPINLOCKS",
        "HOLD",
        "WAIT",
        hw = HOLD_WIDTH
    ));
    lines.push(format!(
        " {:>UTIL_WIDTH$} {:>CON_WIDTH$} {:>HOLD_WIDTH$} {:>WAIT_WIDTH$} {:>total_width$} \
         {:>NOWAIT_WIDTH$} {:>SPIN_WIDTH$} {:>RJECT_WIDTH$}",
        "UTIL", "CON", "MEAN(  MAX )", "MEAN(  MAX )(% CPU)", "TOTAL", "NOWAIT", "SPIN", "RJECT",
    ));
    for l in &r.locks {
        lines.push(String::new());
        lines.push(l.name.clone());
        let hold = if l.hold_total_ns > 0 && l.total() > 0 {
            mean_max(l.hold_mean_ns(), l.hold_max_ns)
        } else {
            String::new()
        };
        let wait = if l.wait_total_ns > 0 && l.contentions > 0 {
            format!(
                "{}({:>WAIT_CPU_WIDTH$})",
                mean_max(l.wait_mean_ns(), l.wait_max_ns),
                lockmeter_percent(l.wait_cpu(r.elapsed_ns, r.cpus))
            )
        } else {
            format!("{:>TIME_WIDTH$}", "0us")
        };
        lines.push(format!(
            " {:>UTIL_WIDTH$} {:>CON_WIDTH$} {:>HOLD_WIDTH$} {:<WAIT_WIDTH$} {:>total_width$} \
             {:>NOWAIT_WIDTH$} {:>SPIN_WIDTH$} {:>RJECT_WIDTH$}",
            lockmeter_percent(l.util(r.elapsed_ns)),
            lockmeter_percent(l.con()),
            hold,
            wait,
            l.total(),
            lockmeter_percent(l.nowait()),
            lockmeter_percent(l.spin()),
            lockmeter_percent(l.rject()),
        ));
    }
    if !r.locks.is_empty() {
        lines.push(String::new());
        let name_width = r
            .locks
            .iter()
            .map(|l| l.name.chars().count())
            .max()
            .unwrap_or(0);
        let spent: Vec<(String, String, String)> = r
            .locks
            .iter()
            .map(|l| {
                (
                    format!("{:.1}%", l.util(r.elapsed_ns)),
                    three_figure_percent(l.wait_cpu(r.elapsed_ns, r.cpus)),
                    format!("{:.2}", l.cpus_spent(r.elapsed_ns)),
                )
            })
            .collect();
        let util_width = spent.iter().map(|s| s.0.len()).max().unwrap_or(0);
        let wait_width = spent.iter().map(|s| s.1.len()).max().unwrap_or(0);
        let cpus_width = spent.iter().map(|s| s.2.len()).max().unwrap_or(0);
        let mut rule = 0;
        for (l, (util, wait, cpus)) in r.locks.iter().zip(&spent) {
            let line = format!(
                "{:<name_width$} {util:>util_width$} + {wait:>wait_width$} * {} = {cpus:>cpus_width$}",
                l.name, r.cpus
            );
            rule = rule.max(line.chars().count());
            lines.push(line);
        }
        lines.push("=".repeat(rule));
    }
    lines.push(format!("Sum = {:.2} CPUs", r.cpus_spent_sum()));
    let mut out = String::new();
    for line in lines {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Nanoseconds as `/proc/lock_stat` prints them: microseconds with two
/// decimals, rounded to the nearest 10 ns.
fn lock_stat_us(ns: u64) -> String {
    let hundredths = ns / 10 + u64::from(ns % 10 >= 5);
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

/// Width of each `/proc/lock_stat` figure column.
const LOCK_STAT_WIDTH: usize = 14;

/// The figures of `r` as Linux's `/proc/lock_stat` prints them: a class
/// (here, a lock) per line, its name right-aligned and followed by `:`, then
/// contentions, waittime-min, -max, -total, -avg, acquisitions,
/// holdtime-min, -max, -total, -avg; times in µs with two decimals. The
/// bounce columns (cross-CPU cache-line transfers, which a user-space lock
/// cannot see) are left out, and rejected `try_lock`s are not shown (see
/// [`lockmeter_table`]). Averages are per contention and per acquisition,
/// as lock_stat's are. No line ends in a space.
pub fn lockstat_table(r: &LockReport) -> String {
    let name_width = r
        .locks
        .iter()
        .map(|l| l.name.chars().count() + 1)
        .max()
        .unwrap_or(0)
        .max(40);
    let w = LOCK_STAT_WIDTH;
    let header = format!(
        "{:>name_width$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$}",
        "class name",
        "contentions",
        "waittime-min",
        "waittime-max",
        "waittime-total",
        "waittime-avg",
        "acquisitions",
        "holdtime-min",
        "holdtime-max",
        "holdtime-total",
        "holdtime-avg",
    );
    let rule = "-".repeat(header.len());
    let mut out = format!("{rule}\n{header}\n{rule}\n");
    for l in &r.locks {
        let wait_avg = l.wait_total_ns.checked_div(l.contentions).unwrap_or(0);
        let hold_avg = l.hold_total_ns.checked_div(l.acquisitions).unwrap_or(0);
        let line = format!(
            "{:>name_width$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$} {:>w$}",
            format!("{}:", l.name),
            l.contentions,
            lock_stat_us(l.wait_min_ns),
            lock_stat_us(l.wait_max_ns),
            lock_stat_us(l.wait_total_ns),
            lock_stat_us(wait_avg),
            l.acquisitions,
            lock_stat_us(l.hold_min_ns),
            lock_stat_us(l.hold_max_ns),
            lock_stat_us(l.hold_total_ns),
            lock_stat_us(hold_avg),
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `r` as JSON:
///
/// ```text
/// { "elapsed_ns": u64, "cpus": u32, "cpus_spent_sum": f64, "locks": [lock, ...] }
/// ```
///
/// where each `lock` has the raw counts of
/// [`LockStat`](elevator_core::lockstat::LockStat), under the same names
/// (`name`, `acquisitions`, `contentions`, `rejects`, `hold_total_ns`,
/// `hold_min_ns`, `hold_max_ns`, `wait_total_ns`, `wait_min_ns`,
/// `wait_max_ns`), and lockmeter's derived columns
/// (see [`elevator_core::lockstat`]), unrounded:
///
/// - `total`: TOTAL, `acquisitions + rejects`;
/// - `util`, `con`, `wait_cpu`, `nowait`, `spin`, `rject`: in percent;
/// - `hold_mean_ns` (lockmeter's: per request of TOTAL),
///   `wait_mean_ns` (per contention): in ns;
/// - `cpus_spent`: CPUs, `UTIL + %CPU × cpus`.
///
/// `cpus_spent_sum` adds up the locks' `cpus_spent`. No value is NaN: a
/// ratio with nothing to divide by is 0.
pub fn to_json(r: &LockReport) -> Value {
    let locks: Vec<Value> = r
        .locks
        .iter()
        .map(|l| {
            json!({
                "name": l.name,
                "acquisitions": l.acquisitions,
                "contentions": l.contentions,
                "rejects": l.rejects,
                "hold_total_ns": l.hold_total_ns,
                "hold_min_ns": l.hold_min_ns,
                "hold_max_ns": l.hold_max_ns,
                "wait_total_ns": l.wait_total_ns,
                "wait_min_ns": l.wait_min_ns,
                "wait_max_ns": l.wait_max_ns,
                "total": l.total(),
                "util": l.util(r.elapsed_ns),
                "con": l.con(),
                "hold_mean_ns": l.hold_mean_ns(),
                "wait_mean_ns": l.wait_mean_ns(),
                "wait_cpu": l.wait_cpu(r.elapsed_ns, r.cpus),
                "nowait": l.nowait(),
                "spin": l.spin(),
                "rject": l.rject(),
                "cpus_spent": l.cpus_spent(r.elapsed_ns),
            })
        })
        .collect();
    json!({
        "elapsed_ns": r.elapsed_ns,
        "cpus": r.cpus,
        "cpus_spent_sum": r.cpus_spent_sum(),
        "locks": locks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::lockstat::LockStat;

    const SECOND: u64 = 1_000_000_000;
    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    /// The lock-scaling report's `io_request_lock` of run (2), from counts chosen to give
    /// its figures: 22 s on 4 CPUs, 6914223 acquisitions of which 59.4%
    /// waited, held 57.7% of the time, waiting 47.9% of the CPUs' time.
    fn io_request_lock_2() -> LockStat {
        LockStat {
            name: "io_request_lock".into(),
            acquisitions: 6_914_223,
            contentions: 4_107_049,
            rejects: 0,
            hold_total_ns: 12_694 * MS,
            hold_min_ns: 200,
            hold_max_ns: 118 * US,
            wait_total_ns: 42_152 * MS,
            wait_min_ns: 300,
            wait_max_ns: 192 * US,
        }
    }

    /// The lock-scaling report's `global_bh_lock` of run (2): 8.9% of its 32543 requests
    /// were rejected `try_lock`s.
    fn global_bh_lock_2() -> LockStat {
        LockStat {
            name: "global_bh_lock".into(),
            acquisitions: 29_647,
            rejects: 2_896,
            hold_total_ns: 7_876 * MS,
            hold_min_ns: US,
            hold_max_ns: 2_968 * US,
            ..LockStat::default()
        }
    }

    /// Run (2) with `io_request_lock` alone.
    fn io_request_lock_run_2() -> LockReport {
        LockReport {
            elapsed_ns: 22 * SECOND,
            cpus: 4,
            locks: vec![io_request_lock_2()],
        }
    }

    fn run_2() -> LockReport {
        LockReport {
            elapsed_ns: 22 * SECOND,
            cpus: 4,
            locks: vec![global_bh_lock_2(), io_request_lock_2()],
        }
    }

    /// The lock-scaling report's run (1): 4 CPUs, "38 seconds", which the figures put
    /// between 37.26 and 37.65 s; 37.5 s gives every one of them.
    fn run_1() -> LockReport {
        let elapsed_ns = 37_500 * MS;
        let util = |percent: f64| (elapsed_ns as f64 * percent / 100.0) as u64;
        LockReport {
            elapsed_ns,
            cpus: 4,
            locks: vec![
                LockStat {
                    name: "emergency_lock".into(),
                    acquisitions: 3_200_001,
                    hold_total_ns: util(23.8),
                    hold_min_ns: 100,
                    hold_max_ns: 54 * US,
                    ..LockStat::default()
                },
                LockStat {
                    name: "global_bh_lock".into(),
                    acquisitions: 2_526,
                    rejects: 112_299,
                    hold_total_ns: util(24.6),
                    hold_min_ns: 100,
                    hold_max_ns: 4_385 * MS,
                    ..LockStat::default()
                },
                LockStat {
                    name: "io_request_lock".into(),
                    acquisitions: 7_633_079,
                    contentions: 877_804,
                    hold_total_ns: util(27.6),
                    hold_min_ns: 100,
                    hold_max_ns: 64 * US,
                    wait_total_ns: 5_100 * MS,
                    wait_min_ns: 100,
                    wait_max_ns: 115 * US,
                    ..LockStat::default()
                },
                LockStat {
                    name: "rmqueue+0x2c".into(),
                    acquisitions: 3_200_862,
                    contentions: 435_317,
                    hold_total_ns: util(6.7),
                    hold_min_ns: 100,
                    hold_max_ns: 9_500,
                    wait_total_ns: 870 * MS,
                    wait_min_ns: 100,
                    wait_max_ns: 15 * US,
                    ..LockStat::default()
                },
            ],
        }
    }

    /// The words of `text`'s lines, blank lines dropped: the seed's mail
    /// lost its column alignment, so it is compared word by word.
    fn words(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .filter(|w| !w.is_empty())
            .collect()
    }

    fn assert_no_trailing_space(text: &str) {
        for line in text.lines() {
            assert_eq!(line, line.trim_end(), "trailing space in {line:?}");
        }
    }

    #[test]
    fn derived_columns_of_io_request_lock() {
        let l = io_request_lock_2();
        let e = 22 * SECOND;
        assert_eq!(format!("{:.1}", l.util(e)), "57.7");
        assert_eq!(format!("{:.1}", l.con()), "59.4");
        assert_eq!(format!("{:.1}", l.nowait()), "40.6");
        assert_eq!(format!("{:.1}", l.spin()), "59.4");
        assert_eq!(l.rject(), 0.0);
        assert_eq!(format!("{:.1}", l.hold_mean_ns() / 1e3), "1.8");
        assert_eq!(format!("{:.0}", l.wait_mean_ns() / 1e3), "10");
        assert_eq!(format!("{:.1}", l.wait_cpu(e, 4)), "47.9");
        assert_eq!(l.total(), 6_914_223);
        // 57.7% + 47.9% * 4, computed from the unrounded counts.
        assert_eq!(format!("{:.2}", l.cpus_spent(e)), "2.49");
    }

    #[test]
    fn io_request_lock_line_reproduces_the_seed() {
        let r = io_request_lock_run_2();
        let table = lockmeter_table(&r);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[3], "io_request_lock");
        assert_eq!(
            lines[4],
            " 57.7% 59.4%  1.8us( 118us)   10us( 192us)(47.9%)   6914223  40.6% 59.4%    0%"
        );
        assert!(table.contains("\nio_request_lock 57.7% + 47.9% * 4 = 2.49\n"));
        assert!(table.ends_with("\nSum = 2.49 CPUs\n"));
    }

    #[test]
    fn header_columns_sit_over_their_figures() {
        let table = lockmeter_table(&run_2());
        let lines: Vec<&str> = table.lines().collect();
        let header = lines[1];
        assert_eq!(lines[6], "io_request_lock");
        let figures = lines[7];
        assert_eq!(header.len(), figures.len());
        // Every column label ends where its figures end.
        for label in [
            "UTIL", "CON", "MAX )", "% CPU)", "TOTAL", "NOWAIT", "SPIN", "RJECT",
        ] {
            let end = header.find(label).map(|at| at + label.len());
            let end = end.unwrap_or_else(|| panic!("{label} missing"));
            let figures = figures.as_bytes();
            assert_ne!(figures[end - 1], b' ', "{label}");
            assert!(end == figures.len() || figures[end] == b' ', "{label}");
        }
    }

    #[test]
    fn run_2_reproduces_the_seed_word_for_word() {
        let seed = "\
SPINLOCKS HOLD WAIT
UTIL CON MEAN( MAX ) MEAN( MAX )(% CPU) TOTAL NOWAIT SPIN RJECT

global_bh_lock
35.8% 8.9% 242us(2968us) 0us 32543 91.1% 0% 8.9%

io_request_lock
57.7% 59.4% 1.8us( 118us) 10us( 192us)(47.9%) 6914223 40.6% 59.4% 0%

global_bh_lock 35.8% + 0.00% * 4 = 0.36
io_request_lock 57.7% + 47.9% * 4 = 2.49
===================================================================
Sum = 2.85 CPUs
";
        let table = lockmeter_table(&run_2());
        assert_no_trailing_space(&table);
        let (mut ours, mut theirs) = (words(&table), words(seed));
        // The rule's length is the table's own.
        let rule = ours.len() - 2;
        assert!(ours[rule][0].chars().all(|c| c == '='));
        ours.remove(rule);
        theirs.remove(rule);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn run_1_reproduces_the_seed_table_word_for_word() {
        // The seed's CPUs-spent lines of run (1) were laid out by hand
        // ("27.6 % + 3.40% * 4"); its table and its sum are compared.
        let seed = "\
SPINLOCKS HOLD WAIT
UTIL CON MEAN( MAX ) MEAN( MAX )(% CPU) TOTAL NOWAIT SPIN RJECT

emergency_lock
23.8% 0% 2.8us( 54us) 0us 3200001 100% 0% 0%

global_bh_lock
24.6% 97.8% 80us(4385ms) 0us 114825 2.2% 0% 97.8%

io_request_lock
27.6% 11.5% 1.4us( 64us) 5.8us( 115us)( 3.4%) 7633079 88.5% 11.5% 0%

rmqueue+0x2c
6.7% 13.6% 0.8us( 9.5us) 2.0us( 15us)(0.58%) 3200862 86.4% 13.6% 0%
";
        let table = lockmeter_table(&run_1());
        let ours = words(&table);
        let theirs = words(seed);
        assert_eq!(ours[..theirs.len()], theirs[..]);
        assert!(table.ends_with("\nSum = 0.99 CPUs\n"));
        assert!(table.contains("\nio_request_lock 27.6% + 3.40% * 4 = 0.41\n"));
        assert!(table.contains("\nrmqueue+0x2c     6.7% + 0.58% * 4 = 0.09\n"));
    }

    #[test]
    fn times_and_percentages_print_as_lockmeter_does() {
        assert_eq!(lockmeter_time(0.0), "0.0us");
        assert_eq!(lockmeter_time(1_440.0), "1.4us");
        assert_eq!(lockmeter_time(9_960.0), "10us");
        assert_eq!(lockmeter_time(64_000.0), "64us");
        assert_eq!(lockmeter_time(2_968_000.0), "2968us");
        assert_eq!(lockmeter_time(9_999_600.0), "10ms");
        assert_eq!(lockmeter_time(4_385_000_000.0), "4385ms");
        assert_eq!(lockmeter_time(12_000_000_000.0), "12s");
        assert_eq!(lockmeter_percent(0.0), "0%");
        assert_eq!(lockmeter_percent(0.004), "0.00%");
        assert_eq!(lockmeter_percent(0.58), "0.58%");
        assert_eq!(lockmeter_percent(3.4), "3.4%");
        assert_eq!(lockmeter_percent(99.95), "100%");
        assert_eq!(lockmeter_percent(100.0), "100%");
        assert_eq!(three_figure_percent(0.0), "0.00%");
        assert_eq!(three_figure_percent(3.4), "3.40%");
        assert_eq!(three_figure_percent(47.9), "47.9%");
    }

    #[test]
    fn nothing_counted_renders_without_nan() {
        let r = LockReport {
            elapsed_ns: 0,
            cpus: 0,
            locks: vec![LockStat::new("idle_lock")],
        };
        let table = lockmeter_table(&r);
        assert!(!table.contains("NaN") && !table.contains("inf"), "{table}");
        assert_no_trailing_space(&table);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[3], "idle_lock");
        assert_eq!(
            lines[4],
            "    0%    0%                   0us                        0     0%    0%    0%"
        );
        assert!(table.contains("\nidle_lock 0.0% + 0.00% * 0 = 0.00\n"));
        assert!(table.ends_with("\nSum = 0.00 CPUs\n"));

        let stat = lockstat_table(&r);
        assert!(!stat.contains("NaN"));
        assert_no_trailing_space(&stat);

        let json = to_json(&r);
        let lock = &json["locks"][0];
        for key in [
            "util",
            "con",
            "hold_mean_ns",
            "wait_mean_ns",
            "wait_cpu",
            "nowait",
        ] {
            assert_eq!(lock[key].as_f64(), Some(0.0), "{key}");
        }
        assert_eq!(json["cpus_spent_sum"].as_f64(), Some(0.0));
    }

    #[test]
    fn cpus_spent_lines_align_names_by_characters() {
        let r = LockReport {
            elapsed_ns: SECOND,
            cpus: 2,
            locks: vec![
                LockStat::new("queue_lock file:/tmp/café"),
                LockStat::new("q"),
            ],
        };
        let table = lockmeter_table(&r);
        let plus_at: Vec<usize> = table
            .lines()
            .filter(|l| l.contains(" + "))
            .filter_map(|l| l.chars().position(|c| c == '+'))
            .collect();
        assert_eq!(plus_at.len(), 2);
        assert_eq!(plus_at[0], plus_at[1]);
    }

    #[test]
    fn no_locks_is_a_header_and_a_zero_sum() {
        let table = lockmeter_table(&LockReport::default());
        assert_eq!(table.lines().count(), 3);
        assert!(table.ends_with("\nSum = 0.00 CPUs\n"));
        assert_eq!(lockstat_table(&LockReport::default()).lines().count(), 3);
    }

    #[test]
    fn lockstat_prints_microseconds_with_two_decimals() {
        assert_eq!(lock_stat_us(0), "0.00");
        assert_eq!(lock_stat_us(4), "0.00");
        assert_eq!(lock_stat_us(5), "0.01");
        assert_eq!(lock_stat_us(260), "0.26");
        assert_eq!(lock_stat_us(939_104), "939.10");
        assert_eq!(lock_stat_us(17_464_026_916_320), "17464026916.32");

        let r = io_request_lock_run_2();
        let table = lockstat_table(&r);
        assert_no_trailing_space(&table);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].chars().all(|c| c == '-'));
        assert_eq!(lines[0].len(), lines[1].len());
        assert_eq!(lines[1].len(), lines[3].len());
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            [
                "class",
                "name",
                "contentions",
                "waittime-min",
                "waittime-max",
                "waittime-total",
                "waittime-avg",
                "acquisitions",
                "holdtime-min",
                "holdtime-max",
                "holdtime-total",
                "holdtime-avg"
            ]
        );
        // Averages per contention and per acquisition: 42152 ms / 4107049
        // = 10263.38 ns, 12694 ms / 6914223 = 1835.93 ns (lock_stat
        // divides in whole ns).
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>(),
            [
                "io_request_lock:",
                "4107049",
                "0.30",
                "192.00",
                "42152000.00",
                "10.26",
                "6914223",
                "0.20",
                "118.00",
                "12694000.00",
                "1.84"
            ]
        );
        assert!(lines[3].starts_with(&format!("{:>40}", "io_request_lock:")));
    }

    #[test]
    fn json_has_counts_and_lockmeter_columns() {
        let json = to_json(&run_2());
        assert_eq!(json["elapsed_ns"], 22 * SECOND);
        assert_eq!(json["cpus"], 4);
        let sum = json["cpus_spent_sum"].as_f64().unwrap_or(f64::NAN);
        assert_eq!(format!("{sum:.2}"), "2.85");
        let bh = &json["locks"][0];
        assert_eq!(bh["name"], "global_bh_lock");
        assert_eq!(bh["acquisitions"], 29_647);
        assert_eq!(bh["rejects"], 2_896);
        assert_eq!(bh["total"], 32_543);
        let io = &json["locks"][1];
        assert_eq!(io["contentions"], 4_107_049);
        assert_eq!(io["hold_max_ns"], 118 * US);
        let f = |v: &Value, key: &str| v[key].as_f64().unwrap_or(f64::NAN);
        assert_eq!(format!("{:.1}", f(io, "util")), "57.7");
        assert_eq!(format!("{:.1}", f(io, "con")), "59.4");
        assert_eq!(format!("{:.1}", f(io, "wait_cpu")), "47.9");
        assert_eq!(format!("{:.1}", f(io, "nowait")), "40.6");
        assert_eq!(format!("{:.1}", f(io, "spin")), "59.4");
        assert_eq!(f(io, "rject"), 0.0);
        assert_eq!(format!("{:.0}", f(io, "hold_mean_ns")), "1836");
        assert_eq!(format!("{:.0}", f(io, "wait_mean_ns")), "10263");
        assert_eq!(format!("{:.2}", f(io, "cpus_spent")), "2.49");
        assert_eq!(format!("{:.1}", f(bh, "rject")), "8.9");
        assert_eq!(format!("{:.1}", f(bh, "con")), "8.9");
    }
}
