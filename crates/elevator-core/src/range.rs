//! Ranges of a device's bytes that come from outside, checked once where they
//! are read.
//!
//! A trace's sector and length, an iolog's offset and length, an NBD
//! request's offset and length, a fio job's offset and size, a write log's
//! record: each is a start and a length that someone else wrote, and each can
//! be anything a `u64` holds. Added up unchecked, a start near 2^64 and a
//! small length wrap to a small end, and an I/O meant for nowhere lands at
//! the start of the device. [`ByteRange`] is the one boundary they all cross:
//! it can only be made by a constructor that checks that the end (and, from
//! sectors, every product) fits in a `u64`, so code that holds one never
//! needs to check again. [`ByteRange::within`] then checks it against a
//! device's size, and [`ByteRange::bio_bytes`] against what one bio carries.

use thiserror::Error;

use crate::bio::{SECTOR_SHIFT, Sector};

/// A range that cannot be taken as given.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum RangeError {
    /// Offset plus length is past 2^64.
    #[error("offset {offset} + length {len} is past 2^64 bytes")]
    Wraps {
        /// Start in bytes.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
    /// A sector range whose bytes are past 2^64.
    #[error("sector {sector} + {sectors} sectors is past 2^64 bytes")]
    SectorsWrap {
        /// Start sector.
        sector: u64,
        /// Length in sectors.
        sectors: u64,
    },
    /// The range ends past the device's last byte.
    #[error("bytes {offset}..{end} run past the end of the device ({capacity} bytes)")]
    BeyondEnd {
        /// Start in bytes.
        offset: u64,
        /// End in bytes (exclusive).
        end: u64,
        /// Device size in bytes.
        capacity: u64,
    },
    /// Longer than one I/O may carry.
    #[error("length {len} bytes is more than one I/O carries ({max} bytes)")]
    TooLong {
        /// Length in bytes.
        len: u64,
        /// The most one I/O takes.
        max: u64,
    },
}

/// `offset..offset + len` in bytes, with an end that fits in a `u64`.
///
/// ```
/// use elevator_core::range::{ByteRange, RangeError};
///
/// let r = ByteRange::from_sectors(8, 8)?;
/// assert_eq!((r.offset(), r.len(), r.end()), (4096, 4096, 8192));
/// assert!(matches!(
///     ByteRange::from_sectors(u64::MAX, 8),
///     Err(RangeError::SectorsWrap { .. })
/// ));
/// assert!(matches!(ByteRange::new(u64::MAX, 1), Err(RangeError::Wraps { .. })));
/// assert!(ByteRange::new(4096, 4096)?.within(4096).is_err());
/// # Ok::<(), RangeError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ByteRange {
    offset: u64,
    len: u64,
}

impl ByteRange {
    /// `len` bytes from byte `offset`; an error if the end is past 2^64.
    pub fn new(offset: u64, len: u64) -> Result<ByteRange, RangeError> {
        match offset.checked_add(len) {
            Some(_) => Ok(ByteRange { offset, len }),
            None => Err(RangeError::Wraps { offset, len }),
        }
    }

    /// `sectors` 512-byte sectors from `sector`; an error if the start, the
    /// length or the end in bytes is past 2^64.
    pub fn from_sectors(sector: Sector, sectors: u64) -> Result<ByteRange, RangeError> {
        let wrap = RangeError::SectorsWrap { sector, sectors };
        let offset = sector.checked_mul(1 << SECTOR_SHIFT).ok_or(wrap)?;
        let len = sectors.checked_mul(1 << SECTOR_SHIFT).ok_or(wrap)?;
        ByteRange::new(offset, len).map_err(|_| wrap)
    }

    /// `len` bytes from `sector`; an error if the start or end in bytes is
    /// past 2^64.
    pub fn at_sector(sector: Sector, len: u64) -> Result<ByteRange, RangeError> {
        let offset = sector
            .checked_mul(1 << SECTOR_SHIFT)
            .ok_or(RangeError::SectorsWrap {
                sector,
                sectors: len.div_ceil(1 << SECTOR_SHIFT),
            })?;
        ByteRange::new(offset, len)
    }

    /// Start in bytes.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// End in bytes (exclusive); never wraps.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }

    /// The sector it starts in (its offset rounded down to a sector).
    pub fn sector(&self) -> Sector {
        self.offset >> SECTOR_SHIFT
    }

    /// Itself, if it ends at or before `capacity` bytes.
    pub fn within(self, capacity: u64) -> Result<ByteRange, RangeError> {
        if self.end() <= capacity {
            Ok(self)
        } else {
            Err(RangeError::BeyondEnd {
                offset: self.offset,
                end: self.end(),
                capacity,
            })
        }
    }

    /// Its length as one bio's byte count (at most `u32::MAX`).
    pub fn bio_bytes(&self) -> Result<u32, RangeError> {
        u32::try_from(self.len).map_err(|_| RangeError::TooLong {
            len: self.len,
            max: u64::from(u32::MAX),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXTREMES: [u64; 7] = [0, 1, 511, 1 << 55, 1 << 63, u64::MAX - 1, u64::MAX];

    #[test]
    fn every_extreme_either_fits_or_is_refused() {
        for &a in &EXTREMES {
            for &b in &EXTREMES {
                match ByteRange::new(a, b) {
                    Ok(r) => assert_eq!(u128::from(r.end()), u128::from(a) + u128::from(b)),
                    Err(e) => {
                        assert!(u128::from(a) + u128::from(b) > u128::from(u64::MAX), "{e}")
                    }
                }
                match ByteRange::from_sectors(a, b) {
                    Ok(r) => assert_eq!(u128::from(r.end()), (u128::from(a) + u128::from(b)) * 512),
                    Err(e) => assert!(
                        (u128::from(a) + u128::from(b)) * 512 > u128::from(u64::MAX)
                            || u128::from(a) * 512 > u128::from(u64::MAX)
                            || u128::from(b) * 512 > u128::from(u64::MAX),
                        "{e}"
                    ),
                }
                if let Ok(r) = ByteRange::at_sector(a, b) {
                    assert_eq!(u128::from(r.end()), u128::from(a) * 512 + u128::from(b));
                }
            }
        }
    }

    #[test]
    fn the_reported_sector_is_refused_not_wrapped() {
        let e = ByteRange::from_sectors(u64::MAX, 8).unwrap_err();
        assert_eq!(
            e.to_string(),
            "sector 18446744073709551615 + 8 sectors is past 2^64 bytes"
        );
        assert!(ByteRange::at_sector(u64::MAX, 4096).is_err());
    }

    #[test]
    fn within_and_bio_bytes() {
        let r = ByteRange::new(0, 8192).unwrap();
        assert!(r.within(8192).is_ok());
        assert_eq!(
            r.within(4096).unwrap_err().to_string(),
            "bytes 0..8192 run past the end of the device (4096 bytes)"
        );
        assert_eq!(r.bio_bytes(), Ok(8192));
        assert!(ByteRange::new(0, 1 << 32).unwrap().bio_bytes().is_err());
        assert_eq!(ByteRange::new(4096, 1).unwrap().sector(), 8);
    }
}
