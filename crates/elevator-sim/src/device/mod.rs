//! Device models on a virtual clock, behind elevator-core's [`Device`] trait,
//! and the registry that builds one from a spec such as `hdd-7200` or
//! `hdd-7200,rpm=5400,ncq=0`.
//!
//! | preset | model | what |
//! |---|---|---|
//! | `null` | `null.rs` | completes every I/O at once |
//! | `ssd-sata`, `nvme` | `ssd.rs` | channels, per-op latency, bandwidth limit |
//! | `hdd-7200`, `hdd-sas-10k`, `hdd-sas-15k`, `hdd-sata-2011` | `hdd/` | zoned disk: seek curve, rotation, NCQ, write cache |
//! | `raid0-8x-sas-10k` | `raid0.rs` | stripes over member devices of any model |

pub mod hdd;
pub mod null;
pub mod param;
pub mod raid0;
pub mod ssd;

use elevator_core::Device;
use thiserror::Error;

pub use hdd::{Hdd, HddParams};
pub use null::{NullDevice, NullParams};
pub use param::{ParamError, ParamUnit, ParamValue, parse_param};
pub use raid0::{Raid0, Raid0Params};
pub use ssd::{Ssd, SsdParams};

/// A device spec that cannot be built.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SpecError {
    /// No preset of that name.
    #[error(
        "unknown device '{name}'{hint}: a device is a preset ({known}), optionally with \
         overrides (hdd-7200,rpm=5400), or a real device: file:PATH or mem:SIZE"
    )]
    UnknownPreset {
        /// The name given.
        name: String,
        /// The presets, comma-separated.
        known: String,
        /// `" (did you mean ...?)"` when presets start with the name, or empty.
        hint: String,
    },
    /// An override that is not `name=value`.
    #[error("device spec '{spec}': '{part}' is not name=value")]
    Malformed {
        /// The whole spec.
        spec: String,
        /// The bad part.
        part: String,
    },
    /// A parameter that could not be set or a model that cannot be built.
    #[error("device spec '{spec}': {error}")]
    Param {
        /// The whole spec.
        spec: String,
        /// What went wrong.
        error: ParamError,
    },
}

/// A model with its parameters, ready to build.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelSpec {
    /// A null device.
    Null(NullParams),
    /// A flash SSD.
    Ssd(SsdParams),
    /// A hard disk.
    Hdd(HddParams),
    /// RAID-0 over identical members.
    Raid0(Raid0Params),
}

/// Every preset: name and one line on what it is.
pub fn presets() -> Vec<(&'static str, &'static str)> {
    let mut v = vec![NullParams::PRESET];
    v.extend(SsdParams::PRESETS);
    v.extend(HddParams::PRESETS);
    v.extend(Raid0Params::PRESETS);
    v
}

impl ModelSpec {
    /// The preset called `name`, with its default parameters.
    pub fn preset(name: &str) -> Result<ModelSpec, SpecError> {
        if name == NullParams::PRESET.0 {
            return Ok(ModelSpec::Null(NullParams::default()));
        }
        if let Some(p) = SsdParams::preset(name) {
            return Ok(ModelSpec::Ssd(p));
        }
        if let Some(p) = HddParams::preset(name) {
            return Ok(ModelSpec::Hdd(p));
        }
        if let Some(p) = Raid0Params::preset(name) {
            return Ok(ModelSpec::Raid0(p));
        }
        let names: Vec<&str> = presets().iter().map(|(n, _)| *n).collect();
        let close: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !name.is_empty() && (n.starts_with(name) || n.contains(name)))
            .collect();
        Err(SpecError::UnknownPreset {
            name: name.to_string(),
            known: names.join(", "),
            hint: if close.is_empty() {
                String::new()
            } else {
                format!(" (did you mean {}?)", close.join(" or "))
            },
        })
    }

    /// Parse `PRESET[,name=value]...`, e.g. `hdd-7200,rpm=5400`.
    pub fn parse(spec: &str) -> Result<ModelSpec, SpecError> {
        let mut parts = spec.split(',').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let mut dev = ModelSpec::preset(name)?;
        for part in parts {
            let Some((k, v)) = part.split_once('=') else {
                return Err(SpecError::Malformed {
                    spec: spec.to_string(),
                    part: part.to_string(),
                });
            };
            dev.set(k.trim(), v.trim())
                .map_err(|error| SpecError::Param {
                    spec: spec.to_string(),
                    error,
                })?;
        }
        dev.validate().map_err(|error| SpecError::Param {
            spec: spec.to_string(),
            error,
        })?;
        Ok(dev)
    }

    /// Set a parameter by name from text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        match self {
            ModelSpec::Null(p) => p.set(name, text),
            ModelSpec::Ssd(p) => p.set(name, text),
            ModelSpec::Hdd(p) => p.set(name, text),
            ModelSpec::Raid0(p) => p.set(name, text),
        }
    }

    /// Check that the parameters work together.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.build().map(|_| ())
    }

    /// The parameters and their values.
    pub fn params(&self) -> Vec<ParamValue> {
        match self {
            ModelSpec::Null(p) => p.list(),
            ModelSpec::Ssd(p) => p.list(),
            ModelSpec::Hdd(p) => p.list(),
            ModelSpec::Raid0(p) => p.list(),
        }
    }

    /// The model's name (`null`, `ssd`, `hdd`, `raid0`).
    pub fn model(&self) -> &'static str {
        match self {
            ModelSpec::Null(_) => NullParams::MODEL,
            ModelSpec::Ssd(_) => SsdParams::MODEL,
            ModelSpec::Hdd(_) => HddParams::MODEL,
            ModelSpec::Raid0(_) => Raid0Params::MODEL,
        }
    }

    /// Build the device.
    pub fn build(&self) -> Result<Box<dyn Device + Send>, ParamError> {
        Ok(match self {
            ModelSpec::Null(p) => Box::new(NullDevice::new(p)?),
            ModelSpec::Ssd(p) => Box::new(Ssd::new(p)?),
            ModelSpec::Hdd(p) => Box::new(Hdd::new(p)?),
            ModelSpec::Raid0(p) => Box::new(Raid0::new(p)?),
        })
    }
}
