//! What elevator's integration tests share (a dev-dependency only, as
//! tokio-test is tokio's): skipping a test with its reason and the two test
//! tiers ([`tier`]), the outside programs the tests run and the Debian
//! package of each ([`programs`]), commands run with a deadline
//! ([`process`]), a seeded test RNG ([`rng`]), and a device wrapper that
//! checks the tag protocol ([`ledger`]), and a FIFO plugin scheduler
//! ([`plugin`]).

pub mod ledger;
pub mod plugin;
pub mod process;
pub mod programs;
pub mod rng;
pub mod tier;

pub use ledger::TagLedger;
pub use plugin::FifoPlugin;
pub use process::{run_with_deadline, spawn, stdout_ok, wait_for, wait_with_deadline};
pub use programs::{missing, package_of};
pub use rng::{Rng, TestRng};
pub use tier::{needs, skip, slow};
