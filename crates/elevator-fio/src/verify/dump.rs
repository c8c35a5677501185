//! fio's `verify_dump`: what to write when a block fails its check, the
//! block as read and as it should have been, named as fio names them
//! (`BASE.OFFSET.received` and `BASE.OFFSET.expected`, `BASE` the file's
//! name without its directory, `OFFSET` the failing interval's device
//! offset in decimal). Pure: the engine writes the files.

use super::{VerifyError, VerifySpec, fill};

/// One file of a dump: its name and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpFile {
    /// The file's name (no directory: fio writes it in the current one).
    pub name: String,
    /// What goes in it.
    pub bytes: Vec<u8>,
}

/// The base of dump file names for a job: its `filename`'s last component,
/// or fio's default file name `NAME.0.0`.
pub fn dump_base(filename: Option<&str>, job_name: &str) -> String {
    match filename.and_then(|f| f.rsplit('/').find(|c| !c.is_empty())) {
        Some(base) => base.to_string(),
        None => format!("{job_name}.0.0"),
    }
}

/// The two files of `verify_dump` for `error`, found checking `got` read at
/// device byte `offset` with `generation`: the failing interval as read
/// (`received`) and as [`fill`] writes it (`expected`). `None` when the
/// error names no interval of `got` (a spec that does not fit). Allocates:
/// call it only on a failure.
pub fn dump_files(
    spec: &VerifySpec,
    base: &str,
    got: &[u8],
    offset: u64,
    generation: u64,
    error: &VerifyError,
) -> Option<[DumpFile; 2]> {
    let at = error.offset()?;
    let start = usize::try_from(at.checked_sub(offset)?).ok()?;
    let interval = spec.interval_len(got.len()).ok()?;
    let end = start.checked_add(interval)?.min(got.len());
    let mut expected = vec![0u8; got.len()];
    fill(spec, &mut expected, offset, generation).ok()?;
    let file = |kind: &str, bytes: &[u8]| DumpFile {
        name: format!("{base}.{at}.{kind}"),
        bytes: bytes.to_vec(),
    };
    Some([
        file("received", got.get(start..end)?),
        file("expected", expected.get(start..end)?),
    ])
}
