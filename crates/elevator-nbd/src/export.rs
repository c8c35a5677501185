//! Exports: what `--export` names, and the device, queue and scheduler
//! behind each.
//!
//! `NAME=DEVICE[,OPTION...]`, where DEVICE is `file:PATH`, `mem:SIZE`, or a
//! simulated preset (`hdd-7200`, `ssd-nvme`, ... as `elevator devices` lists
//! them), run on the real clock. Options:
//! - `scheduler=S` (default `mq-deadline`);
//! - `ro` (or `readonly`): refuse writes;
//! - for a file, `cache=direct` (the default: O_DIRECT, the host's page
//!   cache out of the way) or `cache=page` (through the page cache, as
//!   nbdkit's file plugin serves files by default: compare like with like);
//! - the device's own options (`queue_depth`, `lbs`, `huge_pages` and the
//!   fault options, `fail_rate`, `lse_sectors`, `vanish_at`, ... as
//!   [`elevator_io::fault::options`] lists them, for real devices; the
//!   model's parameters, such as `rpm=5400`, for a preset);
//! - anything else is a queue or scheduler tunable (`nomerges=2`,
//!   `slice_idle=0`), or the engine's `submit_batch`.
//!
//! Without `NAME=`, the export is called `""` (the default export). The first
//! export also answers to the empty name.

use std::sync::Arc;

use elevator_core::Device;
use elevator_io::mq::{LockMode, MultiQueue};
use elevator_io::spec::{DeviceKind, RealDevice};
use elevator_io::{DataDevice, DeviceSpec, EngineConfig, FileCache};
use thiserror::Error;

use crate::proto::tflag;
use crate::rmw::RangeLocks;

/// A disk's sector: the smallest block a file export takes.
const SECTOR: u32 = 512;

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
        let mut cache = None;
        // What the device does not take is the export's: its scheduler,
        // `ro`, a file's cache, or a tunable.
        let mut device = DeviceSpec::parse_with(rest, &mut |k, v| {
            match k {
                "scheduler" => scheduler = v.to_string(),
                "ro" | "readonly" if v.is_empty() || v == "1" => read_only = true,
                "cache" => {
                    cache = Some(FileCache::parse(v).ok_or_else(|| {
                        format!(
                            "cache={v}: expected direct (O_DIRECT, the default) or page \
                             (through the page cache)"
                        )
                    })?)
                }
                _ if v.is_empty() => return Err(format!("'{k}': expected NAME=VALUE")),
                _ => tunables.push((k.to_string(), v.to_string())),
            }
            Ok(true)
        })
        .map_err(|e| bad(e.to_string()))?;
        if let Some(cache) = cache {
            match &mut device.kind {
                DeviceKind::File { opts, .. } => opts.cache = cache,
                _ => return Err(bad("cache= is a file export's option".into())),
            }
        }
        Ok(ExportSpec {
            name,
            device,
            scheduler,
            tunables,
            read_only,
        })
    }

    /// Open the device for `threads` workers and build its queue: one
    /// handle per worker (each with its own io_uring ring, for a file) over
    /// one multi-queue layer, or, for a device that cannot be shared
    /// between threads (a simulated disk), one handle that worker 0 serves
    /// alone.
    pub fn open(&self, threads: usize) -> Result<Opened, ExportError> {
        let fail = |source: Box<dyn std::error::Error + Send + Sync>| ExportError::Open {
            name: self.name.clone(),
            source,
        };
        // The workers' event loops wait on the devices' descriptors.
        let first = self.device.open_polled().map_err(|e| fail(Box::new(e)))?;
        let read_only = self.read_only || matches!(&first, RealDevice::File(f) if f.read_only());
        let describe = first.describe();
        let rotational = first.rotational();
        let shareable = threads > 1 && first.shareable();
        let mut handles = Vec::with_capacity(threads);
        if shareable {
            for _ in 1..threads {
                handles.push(Some(first.share().map_err(|e| fail(Box::new(e)))?));
            }
            handles.insert(0, Some(first));
        } else {
            handles.push(Some(first));
            handles.resize_with(threads, || None);
        }
        let cfg = EngineConfig {
            scheduler: self.scheduler.clone(),
            tunables: self.tunables.clone(),
            max_requests: 1 << 16,
            read_only,
        };
        let users = handles.iter().filter(|h| h.is_some()).count();
        let (capacity, align, file) = {
            let Some(Some(d)) = handles.first() else {
                return Err(fail("no device handle".into()));
            };
            let limits = d.limits();
            let file = match d {
                RealDevice::File(_) => true,
                RealDevice::Faulty(f) => matches!(f.inner(), RealDevice::File(_)),
                _ => false,
            };
            (
                limits.capacity << 9,
                d.alignment().offset.max(limits.logical_block_size),
                file,
            )
        };
        // A file or block device takes I/O in 512-byte sectors, as a disk
        // does (a loop device's default): below its direct-I/O alignment
        // the server reads, modifies and writes (`rmw`). A memory or
        // simulated device keeps the block size it was given.
        let (min_block, locks) = if file && align > SECTOR {
            (SECTOR, Some(Arc::new(RangeLocks::default())))
        } else {
            (align, None)
        };
        let mq = {
            let Some(Some(d)) = handles.first() else {
                return Err(fail("no device handle".into()));
            };
            MultiQueue::new(&[d], &[users], &cfg, LockMode::Mq, false)
                .map_err(|e| fail(Box::new(e)))?
        };
        let mut flags = tflag::HAS_FLAGS
            | tflag::SEND_FLUSH
            | tflag::SEND_FUA
            | tflag::SEND_TRIM
            | tflag::SEND_WRITE_ZEROES
            | tflag::SEND_CACHE
            // Every connection's requests reach the one device (through
            // whichever worker's handle), and a flush of any handle
            // covers every write the device has completed: a flush on any
            // connection covers writes completed on all.
            | tflag::CAN_MULTI_CONN;
        if read_only {
            flags |= tflag::READ_ONLY;
        }
        if rotational {
            flags |= tflag::ROTATIONAL;
        }
        let threads_note = if users > 1 {
            format!(", {users} workers")
        } else if threads > 1 {
            ", one worker (a simulated disk is not shared between threads)".to_string()
        } else {
            String::new()
        };
        Ok(Opened {
            export: Export {
                name: self.name.clone(),
                size: capacity,
                min_block,
                align,
                locks,
                flags,
                read_only,
                description: format!("{describe}, scheduler {}{threads_note}", self.scheduler),
                home: (users == 1).then_some(0),
            },
            mq: Arc::new(mq),
            handles,
        })
    }
}

/// An export opened for the workers: what they all see, the multi-queue
/// layer its engines share, and each worker's device handle (`None` for a
/// worker that does not serve it).
pub struct Opened {
    /// What clients are told.
    pub export: Export,
    /// The queue layer of its engines.
    pub mq: Arc<MultiQueue>,
    /// One handle per worker.
    pub handles: Vec<Option<RealDevice>>,
}

/// An export being served: what every worker knows of it.
#[derive(Clone, Debug)]
pub struct Export {
    /// Its name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Smallest I/O unit clients are told of: 512 for a file or block
    /// device, else the device's block size.
    pub min_block: u32,
    /// The device's direct-I/O alignment (its logical block size, or more):
    /// requests below it are read-modify-writes.
    pub align: u32,
    /// The ranges taken by writes in flight, when requests may be below
    /// the alignment (`None`: they may not, and writes take no range).
    pub(crate) locks: Option<Arc<RangeLocks>>,
    /// Transmission flags.
    pub flags: u16,
    /// Whether writes are refused.
    pub read_only: bool,
    /// One line on what it is.
    pub description: String,
    /// The one worker that serves it, for a device that cannot be shared
    /// between threads; `None`: every worker does.
    pub home: Option<usize>,
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
        let cache = |text: &str| match ExportSpec::parse(text).expect(text).device.kind {
            DeviceKind::File { opts, .. } => opts.cache,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(cache("file:/tmp/x.img"), FileCache::Direct);
        assert_eq!(cache("file:/tmp/x.img,cache=direct"), FileCache::Direct);
        assert_eq!(
            cache("f=file:/tmp/x.img,cache=page,scheduler=none"),
            FileCache::Page
        );
    }

    #[test]
    fn bad_specs_say_why() {
        for (text, needle) in [
            ("disk=", "no device"),
            ("disk=floppy", "floppy"),
            ("disk=hdd-7200,rpm=fast", "rpm"),
            ("disk=mem:1g,nomerges", "expected NAME=VALUE"),
            ("disk=mem:lots", "mem"),
            ("disk=file:/tmp/x.img,cache=none", "expected direct"),
            ("disk=mem:1g,cache=page", "file export's option"),
        ] {
            let e = ExportSpec::parse(text).expect_err(text).to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
