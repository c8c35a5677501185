//! Copying a crash state's image from the working image: its data extents
//! only, so holes stay holes and the file system may share blocks.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rustix::fs::SeekFrom;
use thiserror::Error;

/// Why an image could not be copied.
#[derive(Debug, Error)]
pub enum CopyError {
    /// The copy could not be created.
    #[error("creating {}", path.display())]
    Create {
        /// The copy.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Sizing, reading or writing failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Copy `from` (`len` bytes) to a new file `to`, its data extents only:
/// holes stay holes, and copy_file_range lets the file system share
/// blocks. A file system without SEEK_DATA or copy_file_range gets a plain
/// copy.
pub(super) fn copy_sparse(from: &File, len: u64, to: &Path) -> Result<File, CopyError> {
    let out = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(to)
        .map_err(|source| CopyError::Create {
            path: to.to_path_buf(),
            source,
        })?;
    out.set_len(len)?;
    let mut pos = 0u64;
    let mut buf = Vec::new();
    while pos < len {
        let (start, end) = match rustix::fs::seek(from, SeekFrom::Data(pos)) {
            Ok(start) => {
                let end = rustix::fs::seek(from, SeekFrom::Hole(start)).unwrap_or(len);
                (start, end.min(len))
            }
            Err(rustix::io::Errno::NXIO) => break,
            Err(_) => (pos, len),
        };
        if start >= len {
            break;
        }
        copy_range(from, &out, start, end, &mut buf)?;
        pos = end;
    }
    Ok(out)
}

/// Copy bytes `start..end` of `from` to the same place in `to`.
fn copy_range(from: &File, to: &File, start: u64, end: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    let (mut off_in, mut off_out) = (start, start);
    while off_in < end {
        let want = (end - off_in).min(1 << 30) as usize;
        match rustix::fs::copy_file_range(from, Some(&mut off_in), to, Some(&mut off_out), want) {
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
    // What copy_file_range did not copy (a file system without it).
    buf.resize(1 << 20, 0);
    while off_in < end {
        let n = (end - off_in).min(buf.len() as u64) as usize;
        from.read_exact_at(&mut buf[..n], off_in)?;
        to.write_all_at(&buf[..n], off_in)?;
        off_in += n as u64;
    }
    Ok(())
}
