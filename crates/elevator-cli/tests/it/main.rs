//! The elevator-cli integration tests: the `elevator` binary run as a user runs it.
//! One test binary for the crate (linking one is faster than one per file);
//! each module below was a test file of its own.

mod advise;
mod architecture;
mod cli;
mod common;
mod cost_guard;
mod crash_ext4;
mod crash_states;
mod docs;
mod experiment_seeds;
mod fio_cmdline;
mod fio_compat;
mod fio_depths;
mod fio_examples;
mod fio_verify;
mod help_pages;
mod hostile;
mod input_checks;
mod iolog;
mod json_keys;
mod layering;
mod names;
mod real;
mod replay;
mod replay_recorded;
mod report_browser;
mod report_run;
mod run;
mod serve;
mod sweep;
mod trace_convert;
mod trace_out;
mod write_log;
