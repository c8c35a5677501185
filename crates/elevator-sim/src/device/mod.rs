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
//!
//! Not a preset: `recorded.rs` serves each request in the time a recorded
//! trace's device took for it (`elevator replay` builds it from the trace).
//!
//! Any spec may add fault options (`fault.rs`: `torn_rate`, `vanish_at`,
//! `power_cut_at`, ...), which wrap the model in [`FaultDevice`]. Models track
//! which write each media sector holds when asked (`media.rs`,
//! [`SimDevice`]); `write_log.rs` records a write log of a model and checks its
//! media against it ([`WriteLogDevice`]). Wrappers pass the calls they do
//! not change on with [`forward_sim_device!`](crate::forward_sim_device)
//! and [`elevator_core::forward_device!`].

pub mod fault;
pub mod hdd;
pub mod media;
pub mod null;
pub mod param;
pub mod raid0;
pub mod recorded;
pub mod ssd;
pub mod write_log;

use elevator_core::Device;
use thiserror::Error;

pub use elevator_core::fault::{FaultCounts, Gone};
pub use fault::{FaultDevice, FaultParams, FaultState};
pub use hdd::{Hdd, HddParams};
pub use media::{ExtentMap, SimDevice, WriteNo};
pub use null::{NullDevice, NullParams};
pub use param::{ParamError, ParamUnit, ParamValue, parse_param};
pub use raid0::{Raid0, Raid0Params};
pub use recorded::{RecordedDevice, RecordedParams};
pub use ssd::{Ssd, SsdParams};
pub use write_log::{WriteLogDevice, WriteLogReport};

/// A device spec that cannot be built.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SpecError {
    /// No preset of that name.
    #[error(
        "unknown device '{name}'{hint}: a device is a preset ({known}), optionally with \
         overrides (hdd-7200,rpm=5400), or a real device: file:PATH or mem:SIZE \
         (`elevator devices` lists every kind)"
    )]
    UnknownPreset {
        /// The name given.
        name: String,
        /// The presets, comma-separated.
        known: String,
        /// `" (did you mean ...?)"` when presets hold the name or one is
        /// a few edits from it, or empty.
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

/// A model with its parameters and faults, ready to build.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// The model and its parameters.
    pub kind: Model,
    /// Faults to inject (none by default; boxed: a spec is passed around
    /// by value, and faults are rare).
    pub faults: Box<FaultParams>,
}

/// A model with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    /// A null device.
    Null(NullParams),
    /// A flash SSD.
    Ssd(SsdParams),
    /// A hard disk.
    Hdd(HddParams),
    /// RAID-0 over identical members.
    Raid0(Raid0Params),
    /// A recording's service times (built from a trace, not a preset).
    Recorded(RecordedParams),
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
        let kind = if name == NullParams::PRESET.0 {
            Some(Model::Null(NullParams::default()))
        } else if let Some(p) = SsdParams::preset(name) {
            Some(Model::Ssd(p))
        } else if let Some(p) = HddParams::preset(name) {
            Some(Model::Hdd(p))
        } else {
            Raid0Params::preset(name).map(Model::Raid0)
        };
        if let Some(kind) = kind {
            return Ok(ModelSpec {
                kind,
                faults: Box::default(),
            });
        }
        let names: Vec<&str> = presets().iter().map(|(n, _)| *n).collect();
        let mut close: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !name.is_empty() && (n.starts_with(name) || n.contains(name)))
            .collect();
        if close.is_empty() {
            close.extend(elevator_core::spelling::closest(
                name,
                names.iter().copied(),
            ));
        }
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

    /// Set a parameter (or a fault option, see [`fault`]) by name from
    /// text.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), ParamError> {
        if FaultParams::knows(name) {
            return self.faults.set(name, text);
        }
        let r = match &mut self.kind {
            Model::Null(p) => p.set(name, text),
            Model::Ssd(p) => p.set(name, text),
            Model::Hdd(p) => p.set(name, text),
            Model::Raid0(p) => p.set(name, text),
            Model::Recorded(p) => p.set(name, text),
        };
        // Name the fault options among what exists, and the nearest name.
        let params = self.params();
        r.map_err(|e| match e {
            ParamError::Unknown {
                model, name, known, ..
            } => ParamError::Unknown {
                model,
                hint: elevator_core::spelling::did_you_mean(
                    &name,
                    params
                        .iter()
                        .map(|p| p.name)
                        .chain(fault::FAULT_PARAMS.iter().map(|(n, _, _)| *n)),
                ),
                name,
                known: format!(
                    "{known}; faults: {}",
                    fault::FAULT_PARAMS.map(|(n, _, _)| n).join(", ")
                ),
            },
            e => e,
        })
    }

    /// Check that the parameters work together.
    pub fn validate(&self) -> Result<(), ParamError> {
        self.build().map(|_| ())
    }

    /// The parameters and their values.
    pub fn params(&self) -> Vec<ParamValue> {
        match &self.kind {
            Model::Null(p) => p.list(),
            Model::Ssd(p) => p.list(),
            Model::Hdd(p) => p.list(),
            Model::Raid0(p) => p.list(),
            Model::Recorded(p) => p.list(),
        }
    }

    /// The model's name (`null`, `ssd`, `hdd`, `raid0`, `recorded`).
    pub fn model(&self) -> &'static str {
        match &self.kind {
            Model::Null(_) => NullParams::MODEL,
            Model::Ssd(_) => SsdParams::MODEL,
            Model::Hdd(_) => HddParams::MODEL,
            Model::Raid0(_) => Raid0Params::MODEL,
            Model::Recorded(_) => RecordedParams::MODEL,
        }
    }

    /// Build the device (with its faults, if any).
    pub fn build(&self) -> Result<Box<dyn Device + Send>, ParamError> {
        Ok(self.build_sim()?)
    }

    /// Build the device as a [`SimDevice`], whose media can be tracked:
    /// the model, wrapped in [`FaultDevice`] if any fault is asked for.
    pub fn build_sim(&self) -> Result<Box<dyn SimDevice + Send>, ParamError> {
        let model: Box<dyn SimDevice + Send> = match &self.kind {
            Model::Null(p) => Box::new(NullDevice::new(p)?),
            Model::Ssd(p) => Box::new(Ssd::new(p)?),
            Model::Hdd(p) => Box::new(Hdd::new(p)?),
            Model::Raid0(p) => Box::new(Raid0::new(p)?),
            Model::Recorded(p) => Box::new(RecordedDevice::new(p)?),
        };
        if self.faults.is_active() {
            Ok(Box::new(FaultDevice::new(model, &self.faults)?))
        } else {
            Ok(model)
        }
    }

    /// Whether it injects faults.
    pub fn has_faults(&self) -> bool {
        self.faults.is_active()
    }
}

/// Writes [`SimDevice`] methods that pass the call on, unchanged, to a
/// field of the device (a wrapper's model), as
/// [`elevator_core::forward_device!`] does for [`Device`]'s.
#[macro_export]
macro_rules! forward_sim_device {
    ($inner:ident: $($method:ident),+ $(,)?) => {
        $($crate::forward_sim_device!(@one $inner $method);)+
    };
    (@one $i:ident track_media) => {
        ::elevator_core::forward_method!($i: fn track_media(&mut self));
    };
    (@one $i:ident media) => {
        ::elevator_core::forward_method!($i: fn media(&self)
            -> ::std::option::Option<&$crate::device::ExtentMap>);
    };
    (@one $i:ident volatile_cache) => {
        ::elevator_core::forward_method!($i: fn volatile_cache(&self) -> bool);
    };
    (@one $i:ident end_of_run) => {
        ::elevator_core::forward_method!($i: fn end_of_run(&mut self, now: ::elevator_core::Nanos));
    };
    (@one $i:ident power_cut) => {
        ::elevator_core::forward_method!($i: fn power_cut(&mut self, now: ::elevator_core::Nanos));
    };
    (@one $i:ident mark) => {
        ::elevator_core::forward_method!($i: fn mark(&mut self, text: &str, now: ::elevator_core::Nanos));
    };
    (@one $i:ident fault_counts) => {
        ::elevator_core::forward_method!($i: fn fault_counts(&self)
            -> ::std::option::Option<$crate::device::FaultState>);
    };
}
