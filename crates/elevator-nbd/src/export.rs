//! Exports: what `--export` names, and the device, queue and scheduler
//! behind each.
//!
//! `NAME=DEVICE[,OPTION...]`, where DEVICE is `file:PATH`, `mem:SIZE`, or a
//! simulated preset (`hdd-7200`, `ssd-nvme`, ... as `elevator devices` lists
//! them), run on the real clock. Options:
//! - `scheduler=S` (default `mq-deadline`);
//! - `ro` (or `readonly`): refuse writes;
//! - the device's own options (`queue_depth`, `lbs`, `huge_pages`, `fail_rate`,
//!   `fail_sectors`, `fail_seed` for real devices; the model's parameters,
//!   such as `rpm=5400`, for a preset);
//! - anything else is a queue or scheduler tunable (`nomerges=2`,
//!   `slice_idle=0`), or the engine's `submit_batch`.
//!
//! Without `NAME=`, the export is called `""` (the default export). The first
//! export also answers to the empty name.

use elevator_core::Device;
use elevator_io::spec::RealDevice;
use elevator_io::{DeviceSpec, Engine, EngineConfig, EngineError};
use thiserror::Error;

use crate::pool::Buf;
use crate::proto::tflag;

/// A parsed `--export`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportSpec {
    /// The name clients ask for.
    pub name: String,
    /// The device.
    pub device: DeviceSpec,
    /// The scheduler.
    pub scheduler: String,
    /// Tunables, by name.
    pub tunables: Vec<(String, String)>,
    /// Refuse writes.
    pub read_only: bool,
}

/// An export that cannot be had.
#[derive(Debug, Error)]
pub enum ExportError {
    /// The text does not parse.
    #[error("--export '{spec}': {why}")]
    Parse {
        /// The text.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// The device or its queue cannot be built.
    #[error("export '{name}'")]
    Open {
        /// The export.
        name: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ExportSpec {
    /// Parse `NAME=DEVICE[,OPTION...]`.
    pub fn parse(text: &str) -> Result<ExportSpec, ExportError> {
        let bad = |why: String| ExportError::Parse {
            spec: text.to_string(),
            why,
        };
        let first = text.split(',').next().unwrap_or_default();
        let (name, rest) = match first.split_once('=') {
            Some((n, _)) if !n.contains(':') => (n.trim().to_string(), &text[n.len() + 1..]),
            _ => (String::new(), text),
        };
        if rest.split(',').next().is_none_or(|h| h.trim().is_empty()) {
            return Err(bad("no device: give file:PATH, mem:SIZE or a preset".into()));
        }
        let (mut scheduler, mut tunables, mut read_only) =
            ("mq-deadline".to_string(), Vec::new(), false);
        // What the device does not take is the export's: its scheduler,
        // `ro`, or a tunable.
        let device = DeviceSpec::parse_with(rest, &mut |k, v| {
            match k {
                "scheduler" => scheduler = v.to_string(),
                "ro" | "readonly" if v.is_empty() || v == "1" => read_only = true,
                _ if v.is_empty() => return Err(format!("'{k}': expected NAME=VALUE")),
                _ => tunables.push((k.to_string(), v.to_string())),
            }
            Ok(true)
        })
        .map_err(|e| bad(e.to_string()))?;
        Ok(ExportSpec {
            name,
            device,
            scheduler,
            tunables,
            read_only,
        })
    }

    /// Open the device and build its queue.
    pub fn open(&self) -> Result<Export, ExportError> {
        let fail = |source: Box<dyn std::error::Error + Send + Sync>| ExportError::Open {
            name: self.name.clone(),
            source,
        };
        // The server's event loop waits on the device's descriptor.
        let device = self.device.open_polled().map_err(|e| fail(Box::new(e)))?;
        let read_only = self.read_only || matches!(&device, RealDevice::File(f) if f.read_only());
        let describe = device.describe();
        let rotational = device.rotational();
        let cfg = EngineConfig {
            scheduler: self.scheduler.clone(),
            tunables: self.tunables.clone(),
            max_requests: 1 << 16,
            read_only,
        };
        let engine = Engine::new(device, &cfg).map_err(|e: EngineError| fail(Box::new(e)))?;
        let mut flags = tflag::HAS_FLAGS
            | tflag::SEND_FLUSH
            | tflag::SEND_FUA
            | tflag::SEND_TRIM
            | tflag::SEND_WRITE_ZEROES
            // Every connection to an export shares its one queue and device,
            // so a flush on any of them covers writes completed on all.
            | tflag::CAN_MULTI_CONN;
        if read_only {
            flags |= tflag::READ_ONLY;
        }
        if rotational {
            flags |= tflag::ROTATIONAL;
        }
        Ok(Export {
            name: self.name.clone(),
            size: engine.capacity(),
            min_block: engine.alignment().offset,
            flags,
            read_only,
            description: format!("{describe}, scheduler {}", self.scheduler),
            engine,
        })
    }
}

/// An export being served.
pub struct Export {
    /// Its name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Smallest I/O unit (the device's logical block size).
    pub min_block: u32,
    /// Transmission flags.
    pub flags: u16,
    /// Whether writes are refused.
    pub read_only: bool,
    /// One line on what it is.
    pub description: String,
    /// The queue and device.
    pub engine: Engine<RealDevice, Buf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let s = ExportSpec::parse("disk=mem:64m,scheduler=bfq,slice_idle=0,ro").expect("parses");
        assert_eq!(s.name, "disk");
        assert_eq!(s.scheduler, "bfq");
        assert_eq!(
            s.tunables,
            vec![("slice_idle".to_string(), "0".to_string())]
        );
        assert!(s.read_only);
        let d = ExportSpec::parse("mem:1g").expect("parses");
        assert_eq!(d.name, "");
        let h =
            ExportSpec::parse("slow=hdd-7200,rpm=5400,scheduler=cfq,nomerges=2").expect("parses");
        assert!(h.device.model().is_some());
        assert_eq!(h.tunables, vec![("nomerges".to_string(), "2".to_string())]);
        let f = ExportSpec::parse("f=file:/tmp/x.img,queue_depth=8,fail_rate=0.1").expect("parses");
        assert!(f.device.model().is_none());
    }

    #[test]
    fn bad_specs_say_why() {
        for (text, needle) in [
            ("disk=", "no device"),
            ("disk=floppy", "floppy"),
            ("disk=hdd-7200,rpm=fast", "rpm"),
            ("disk=mem:1g,nomerges", "expected NAME=VALUE"),
            ("disk=mem:lots", "mem"),
        ] {
            let e = ExportSpec::parse(text).expect_err(text).to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
