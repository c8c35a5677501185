//! Allocation extents: which parts of a device's bytes hold data and which
//! are holes or read as zeroes ([`Extent`]), as
//! [`DataDevice::extents`](crate::DataDevice::extents) reports them, and how
//! a file's are found (`lseek` with `SEEK_DATA` and `SEEK_HOLE`).

use std::os::fd::AsFd;

use rustix::fs::SeekFrom;
use rustix::io::Errno;

use crate::device::DeviceError;

/// A stretch of a device's bytes and what it holds. Extents come in order
/// and without gaps, each following the one before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Length in bytes.
    pub len: u64,
    /// Not allocated: the device keeps nothing for it.
    pub hole: bool,
    /// Reads as zeroes.
    pub zero: bool,
}

impl Extent {
    /// `len` bytes of data.
    pub fn data(len: u64) -> Extent {
        Extent {
            len,
            hole: false,
            zero: false,
        }
    }

    /// `len` bytes of hole, which read as zeroes.
    pub fn hole(len: u64) -> Extent {
        Extent {
            len,
            hole: true,
            zero: true,
        }
    }

    /// Whether `other` says the same about its bytes.
    pub fn same_kind(&self, other: &Extent) -> bool {
        self.hole == other.hole && self.zero == other.zero
    }
}

/// Append `e` to `out`, merged into the last extent when both say the same
/// about their bytes. Empty extents are dropped.
pub fn push_extent(out: &mut Vec<Extent>, e: Extent) {
    if e.len == 0 {
        return;
    }
    match out.last_mut() {
        Some(last) if last.same_kind(&e) => last.len += e.len,
        _ => out.push(e),
    }
}

/// The extents of the `len` bytes at `offset` of the regular file `fd`, at
/// most `max` of them (at least one when `len > 0`), covering the range or
/// a leading part of it. A file system that cannot tell holes from data
/// reports all data, as Linux's generic `lseek` does.
pub(crate) fn file_extents(
    fd: impl AsFd,
    offset: u64,
    len: u64,
    max: usize,
) -> Result<Vec<Extent>, DeviceError> {
    let end = offset.saturating_add(len);
    let mut out = Vec::new();
    let mut pos = offset;
    while pos < end && out.len() < max.max(1) {
        let data = match rustix::fs::seek(&fd, SeekFrom::Data(pos)) {
            Ok(d) => d,
            // No data from `pos` to the end of the file.
            Err(Errno::NXIO) => end,
            Err(Errno::INVAL | Errno::OPNOTSUPP) => {
                push_extent(&mut out, Extent::data(end - pos));
                break;
            }
            Err(e) => return Err(DeviceError::Extents(e.into())),
        };
        if data > pos {
            push_extent(&mut out, Extent::hole(data.min(end) - pos));
            pos = data.min(end);
            if pos >= end || out.len() >= max.max(1) {
                break;
            }
        }
        let hole = match rustix::fs::seek(&fd, SeekFrom::Hole(pos)) {
            Ok(h) => h,
            // The file shrank under us: what is left reads as zeroes.
            Err(Errno::NXIO) => pos,
            Err(e) => return Err(DeviceError::Extents(e.into())),
        };
        if hole <= pos {
            push_extent(&mut out, Extent::hole(end - pos));
            break;
        }
        push_extent(&mut out, Extent::data(hole.min(end) - pos));
        pos = hole.min(end);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

    #[test]
    fn extents_merge_and_drop_empty() {
        let mut v = Vec::new();
        push_extent(&mut v, Extent::data(4));
        push_extent(&mut v, Extent::data(4));
        push_extent(&mut v, Extent::hole(0));
        push_extent(&mut v, Extent::hole(8));
        assert_eq!(v, vec![Extent::data(8), Extent::hole(8)]);
    }

    #[test]
    fn a_sparse_file_shows_its_holes() {
        let mut f = tempfile::tempfile().expect("temp file");
        let mib = 1u64 << 20;
        f.set_len(8 * mib).expect("set_len");
        for at in [mib, 5 * mib] {
            f.seek(std::io::SeekFrom::Start(at)).expect("seek");
            f.write_all(&vec![7u8; 65536]).expect("write");
        }
        f.sync_all().expect("sync");
        let got = file_extents(&f, 0, 8 * mib, 100).expect("extents");
        let total: u64 = got.iter().map(|e| e.len).sum();
        assert_eq!(total, 8 * mib);
        // Some file systems (tmpfs included) keep holes; where they do, the
        // layout is exact at their block granularity.
        if got.len() > 1 {
            assert_eq!(got[0], Extent::hole(mib));
            assert!(!got[1].hole && got[1].len >= 65536 && got[1].len < mib);
            assert!(got.iter().filter(|e| !e.hole).count() == 2, "{got:?}");
        }
        // At most `max` extents, covering a leading part of the range.
        let one = file_extents(&f, 0, 8 * mib, 1).expect("extents");
        assert_eq!(one.len(), 1);
        let part = file_extents(&f, mib, 4096, 10).expect("extents");
        assert_eq!(part, vec![Extent::data(4096)]);
    }
}
