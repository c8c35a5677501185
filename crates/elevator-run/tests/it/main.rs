//! elevator-run's integration tests, one module per area.

mod sweep;
mod sweep_plugin;
