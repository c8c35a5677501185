//! The elevator-fio integration tests: job files, patterns, verification and report formats.
//! One test binary for the crate (linking one is faster than one per file);
//! each module below was a test file of its own.

mod files;
mod job_parse;
mod pattern;
mod report_formats;
mod verify;
mod verify_fio;
