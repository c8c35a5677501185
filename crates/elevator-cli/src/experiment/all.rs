//! `elevator experiment all`: every experiment, one after the other.

use anyhow::{Result, bail};

use super::Args;

/// Run every experiment.
pub fn run(_args: &Args) -> Result<()> {
    bail!("experiment all: not built yet")
}
