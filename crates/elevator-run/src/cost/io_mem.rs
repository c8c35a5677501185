//! The io engine's scenario (`io/mem-randread-qd32`): 4 KiB random reads
//! through [`elevator_io::Engine`] on a memory device, 32 in flight, each
//! completion's buffer sent straight back out: submit, the queue, the
//! device's copy and the completion, per I/O, on this thread.

use std::time::Duration;

use elevator_core::rng::Rng;
use elevator_io::{
    AlignedBuf, Completion, DioRequest, Engine, EngineConfig, EngineError, MemDevice, MemOptions,
};

use super::measured;

/// The device's size: 64 MiB.
const DEVICE_BYTES: u64 = 64 << 20;
/// Bytes per read.
const BS: u64 = 4096;
/// Reads in flight.
const DEPTH: u64 = 32;

/// Why the scenario failed.
#[derive(Debug, thiserror::Error)]
pub enum IoMemError {
    /// The device, a buffer or the engine could not be made.
    #[error("setting up: {0}")]
    Setup(String),
    /// The engine refused a read.
    #[error("the engine refused a read: {0}")]
    Rejected(String),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A read failed or came back short.
    #[error("a read ended with {0}")]
    Read(String),
}

/// Run `ops` reads (beyond the first 32, submitted before the count) and
/// return how many completed.
pub fn run(ops: u64) -> Result<u64, IoMemError> {
    let device = MemDevice::new(
        DEVICE_BYTES,
        MemOptions {
            queue_depth: DEPTH as u32,
            host_reserve: 0,
            ..MemOptions::default()
        },
    )
    .map_err(|e| IoMemError::Setup(e.to_string()))?;
    let cfg = EngineConfig {
        scheduler: "none".to_string(),
        ..EngineConfig::default()
    };
    let mut engine: Engine<MemDevice> =
        Engine::new(device, &cfg).map_err(|e| IoMemError::Setup(e.to_string()))?;
    let mut rng = Rng::new(28);
    let blocks = DEVICE_BYTES / BS;
    let mut submit = |engine: &mut Engine<MemDevice>, buf: AlignedBuf, token: u64| {
        let offset = rng.below(blocks) * BS;
        engine
            .submit(DioRequest::read(offset, vec![buf], token))
            .map_err(|r| IoMemError::Rejected(r.error.to_string()))
    };
    for token in 0..DEPTH {
        let buf =
            AlignedBuf::new(BS as usize, 4096).map_err(|e| IoMemError::Setup(e.to_string()))?;
        submit(&mut engine, buf, token)?;
    }
    let mut out: Vec<Completion<AlignedBuf>> = Vec::with_capacity(DEPTH as usize);
    let (mut done, mut sent) = (0u64, DEPTH);
    let mut result = Ok(());
    measured(&mut || {
        result = (|| {
            while done < ops {
                engine.poll(Some(Duration::ZERO), &mut out)?;
                for c in out.drain(..) {
                    if c.result != Ok(BS) {
                        return Err(IoMemError::Read(format!("{:?}", c.result)));
                    }
                    done += 1;
                    if sent < ops + DEPTH {
                        let buf =
                            c.bufs.into_iter().next().ok_or_else(|| {
                                IoMemError::Read("no buffer given back".to_string())
                            })?;
                        submit(&mut engine, buf, sent)?;
                        sent += 1;
                    }
                }
            }
            Ok(())
        })();
    });
    result?;
    let mut rest = Vec::new();
    engine.drain(&mut rest)?;
    Ok(done)
}
