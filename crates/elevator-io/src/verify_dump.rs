//! fio's `verify_dump` on a real device: when a block read back fails its
//! check, the failing interval as read and as expected are written to the
//! files [`dump_files`] names, in the current directory, as fio does. Best
//! effort: a dump that cannot be written is skipped (it only helps to look
//! at the failure, which is reported as usual).

use elevator_fio::verify::{VerifyError, VerifySpec, dump_files};

/// Writes the dump of `error`, found checking `got` (read at device byte
/// `offset`, written with `generation`), when `spec` asks for one. Runs only
/// on a failure.
#[cold]
pub(crate) fn dump_failure(
    spec: &VerifySpec,
    got: &[u8],
    offset: u64,
    generation: u64,
    error: &VerifyError,
) {
    let Some(base) = spec.dump.as_deref() else {
        return;
    };
    let Some(files) = dump_files(spec, base, got, offset, generation, error) else {
        return;
    };
    for f in files {
        // A diagnostic only: the failure is reported whether or not it is
        // written.
        let _ = std::fs::write(&f.name, &f.bytes);
    }
}
