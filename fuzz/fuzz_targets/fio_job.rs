//! The fio job parser on arbitrary text: it must never panic, whatever the
//! sections, options, values, includes or environment references; a job
//! file it accepts must describe a workload the engines can size (total
//! depth, memory estimate) without panicking either.
//!
//! Run: `cargo +nightly fuzz run fio_job` (from the repository root).

#![no_main]

use elevator_fio::job::JobFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(jobs) = JobFile::parse(&text, "fuzz.fio") {
        let _ = elevator_fio::workload::total_depth(&jobs);
        let _ = elevator_sim::engine::memory_estimate(&jobs);
        for job in &jobs.jobs {
            let _ = format!("{job:?}");
        }
    }
});
