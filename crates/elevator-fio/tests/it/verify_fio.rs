//! fio's on-disk verify format against fio 3.33 itself: files fio writes
//! with `verify=KIND` pass elevator's [`check_fio`] (and a flipped byte
//! fails, at its block); files elevator's [`fill_fio`] writes pass fio's
//! `--verify_only` (and a flipped byte fails fio's check).

use elevator_fio::verify::{
    BlockFormat, VerifyError, VerifyKind, VerifySpec, check, check_fio, fill_fio,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BS: usize = 4096;
const SIZE: usize = 64 * 1024;

/// Every kind fio's format carries (fio's sha512 stores no digest).
fn kinds() -> impl Iterator<Item = VerifyKind> {
    VerifyKind::ALL
        .into_iter()
        .filter(|k| !matches!(k, VerifyKind::Sha512 | VerifyKind::Pattern))
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(what: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("elevator-verify-fio-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fio(dir: &Path, args: &[String]) -> Output {
    Command::new("fio")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run fio")
}

fn fio_args(file: &Path, kind: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=v",
        "--ioengine=psync",
        "--rw=write",
        "--bs=4k",
        "--size=64k",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push(format!("--filename={}", file.display()));
    a.push(format!("--verify={kind}"));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

fn spec(kind: VerifyKind, interval: Option<usize>, pattern: Option<&[u8]>) -> VerifySpec {
    VerifySpec {
        kind,
        pattern: pattern.map(<[u8]>::to_vec),
        seed: 0x5eed,
        interval,
        format: BlockFormat::Fio,
        dump: None,
    }
}

fn check_file(s: &VerifySpec, data: &[u8]) -> Result<(), VerifyError> {
    for (i, block) in data.chunks_exact(BS).enumerate() {
        check_fio(s, block, (i * BS) as u64)?;
    }
    Ok(())
}

/// fio writes, elevator checks: every kind, with one header per block and
/// with `verify_interval=1024`, random payloads; then a flipped payload byte
/// is caught in its interval.
#[test]
fn elevator_checks_what_fio_wrote() {
    elevator_testkit::needs!("fio");
    let dir = Scratch::new("read");
    for kind in kinds() {
        for interval in [None, Some(1024)] {
            let file = dir.0.join(format!("{kind}.dat"));
            let mut extra = vec!["--do_verify=0"];
            if interval.is_some() {
                extra.push("--verify_interval=1024");
            }
            let out = fio(&dir.0, &fio_args(&file, kind.name(), &extra));
            assert!(out.status.success(), "fio {kind}: {}", text(&out));
            let mut data = std::fs::read(&file).expect("read fio's file");
            assert_eq!(data.len(), SIZE);
            let s = spec(kind, interval, None);
            if let Err(e) = check_file(&s, &data) {
                panic!("{kind} {interval:?}: fio's file fails elevator's check: {e}");
            }
            // The same check through verify::check.
            assert_eq!(check(&s, &data[..BS], 0, 0), Ok(()), "{kind}");
            if kind == VerifyKind::Meta {
                continue; // meta checks headers only
            }
            let bad = 5 * BS + 1000;
            data[bad] ^= 0x10;
            let e = check_file(&s, &data).expect_err("a flipped byte");
            let at = (bad / interval.unwrap_or(BS) * interval.unwrap_or(BS)) as u64;
            assert_eq!(e.offset(), Some(at), "{kind}: {e}");
            assert!(
                matches!(e, VerifyError::DigestMismatch { .. }),
                "{kind}: {e}"
            );
            // A header moved to another offset is named as misdirected.
            let e = check_fio(&s, &data[..BS], BS as u64).expect_err("moved");
            assert!(matches!(e, VerifyError::WrongOffset { .. }), "{kind}: {e}");
        }
    }
}

/// fio's `verify=pattern` (no header) and `meta` with a pattern, as fio
/// writes them, pass; a changed payload byte is named.
#[test]
fn elevator_checks_fios_patterns() {
    elevator_testkit::needs!("fio");
    let dir = Scratch::new("pattern");
    let pattern = [0xde, 0xad, 0xbe];
    for kind in [VerifyKind::Pattern, VerifyKind::Meta, VerifyKind::Crc32c] {
        let file = dir.0.join(format!("{kind}.dat"));
        let out = fio(
            &dir.0,
            &fio_args(
                &file,
                kind.name(),
                &["--do_verify=0", "--verify_pattern=0xdeadbe"],
            ),
        );
        assert!(out.status.success(), "fio {kind}: {}", text(&out));
        let mut data = std::fs::read(&file).expect("read fio's file");
        let s = spec(kind, None, Some(&pattern));
        if let Err(e) = check_file(&s, &data) {
            panic!("{kind}: fio's file fails elevator's check: {e}");
        }
        data[3 * BS + 700] ^= 1;
        let e = check_file(&s, &data).expect_err("a flipped byte");
        assert_eq!(e.offset(), Some(3 * BS as u64), "{kind}: {e}");
        if kind != VerifyKind::Crc32c {
            assert!(
                matches!(e, VerifyError::PatternMismatch { at: 700, .. }),
                "{kind}: {e}"
            );
        }
    }
}

/// elevator writes, fio checks (`--verify_only`): every kind passes; a
/// flipped payload byte fails fio's check.
#[test]
fn fio_checks_what_elevator_wrote() {
    elevator_testkit::needs!("fio");
    let dir = Scratch::new("write");
    for kind in kinds() {
        for interval in [None, Some(1024)] {
            let file = dir.0.join(format!("{kind}.dat"));
            let s = spec(kind, interval, None);
            let mut data = vec![0u8; SIZE];
            for (i, block) in data.chunks_exact_mut(BS).enumerate() {
                fill_fio(&s, block, (i * BS) as u64, i as u16).expect("fill");
            }
            std::fs::write(&file, &data).expect("write");
            let mut extra = vec!["--verify_only=1"];
            if interval.is_some() {
                extra.push("--verify_interval=1024");
            }
            let args = fio_args(&file, kind.name(), &extra);
            let out = fio(&dir.0, &args);
            assert!(
                out.status.success(),
                "fio's verify_only fails elevator's {kind} {interval:?} blocks: {}",
                text(&out)
            );
            if kind == VerifyKind::Meta {
                continue; // meta checks headers only
            }
            data[7 * BS + 3000] ^= 0x80;
            std::fs::write(&file, &data).expect("write");
            // fio 3.33 reports a failed interval but loses it from its exit
            // status when a later interval of the block verifies: its
            // message is what counts.
            let out = fio(&dir.0, &args);
            let said = text(&out);
            assert!(
                said.contains("verify failed at file"),
                "fio missed a flipped byte in {kind} {interval:?}: {said}"
            );
        }
    }
}
