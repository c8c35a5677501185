//! elevator as an embedded I/O layer: direct I/O to a file through io_uring,
//! with mq-deadline merging and ordering the requests on the way.
//!
//! Run it with `cargo run -p elevator-io --example direct_io [PATH]` (default:
//! a scratch file in /dev/shm, removed at the end).

use elevator_core::Device;
use elevator_io::{AlignedBuf, DioRequest, Engine, EngineConfig, FileDevice, FileOptions, Slice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = std::env::args().nth(1).is_none();
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("/dev/shm/elevator-example-{}.img", std::process::id()));
    if scratch {
        std::fs::File::create(&path)?.set_len(16 << 20)?;
    }
    let result = run(&path);
    if scratch {
        std::fs::remove_file(&path)?;
    }
    result
}

fn run(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    let device = FileDevice::open(path.as_ref(), &FileOptions::default())?;
    println!("device: {}", device.describe());
    let cfg = EngineConfig {
        scheduler: "mq-deadline".into(),
        ..EngineConfig::default()
    };
    let mut engine: Engine<FileDevice, Slice<AlignedBuf>> = Engine::new(device, &cfg)?;
    let align = engine.alignment();
    let buf = |len: usize, fill: u8| -> Result<Slice<AlignedBuf>, Box<dyn std::error::Error>> {
        let mut b = AlignedBuf::new(len, align.memory as usize)?;
        b.fill(fill);
        Ok(Slice::new(b, 0, len).map_err(|_| "slice outside its buffer")?)
    };

    // Eight adjacent 64 KiB writes under one plug: they merge into requests
    // of up to max_sectors_kb on their way to the file.
    engine.plug();
    for i in 0..8u64 {
        engine
            .submit(DioRequest::write(i << 16, vec![buf(65536, i as u8)?], i))
            .map_err(|r| r.error)?;
    }
    // One write from three buffers (an iovec), right after them.
    let iov = vec![buf(4096, 0xA0)?, buf(8192, 0xA1)?, buf(4096, 0xA2)?];
    engine
        .submit(DioRequest::write(8 << 16, iov, 8))
        .map_err(|r| r.error)?;
    engine.unplug();
    let mut done = Vec::new();
    engine.drain(&mut done)?;
    for c in &done {
        println!(
            "write {}: {:?}, {} buffers back",
            c.user_data,
            c.result,
            c.bufs.len()
        );
    }

    // Read it all back in one request and check every byte.
    done.clear();
    engine
        .submit(DioRequest::read(0, vec![buf((8 << 16) + 16384, 0)?], 100))
        .map_err(|r| r.error)?;
    engine.drain(&mut done)?;
    let data = &done[0].bufs[0];
    for i in 0..8usize {
        assert!(data[i << 16..(i + 1) << 16].iter().all(|&b| b == i as u8));
    }
    assert!(data[8 << 16..(8 << 16) + 4096].iter().all(|&b| b == 0xA0));
    assert!(data[(8 << 16) + 12288..].iter().all(|&b| b == 0xA2));
    println!("read back {:?}: every byte as written", done[0].result);

    // A misaligned segment is refused before anything is submitted, and the
    // buffers come back.
    let off = Slice::new(AlignedBuf::new(8192, 4096)?, 100, 4096).map_err(|_| "slice")?;
    let rejected = engine
        .submit(DioRequest::read(0, vec![buf(4096, 0)?, off], 101))
        .expect_err("misaligned");
    println!(
        "refused: {} ({} buffers back)",
        rejected.error,
        rejected.request.bufs.len()
    );

    let q = engine.queue().stats();
    let e = engine.stats();
    println!(
        "requests from callers {}, bios {}, device requests {}, merges {}",
        e.submitted,
        q.bios,
        q.requests,
        q.bio_merges()
    );
    assert!(q.bio_merges() > 0 && q.requests < q.bios);
    Ok(())
}

#[cfg(test)]
#[test]
fn runs() {
    main().expect("the example runs");
}
