//! Queue limits: what a single request may be, as the device declares it.
//!
//! Bios that break a limit are split into pieces that keep it; merges that would
//! break one are refused (and the request is marked unmergeable, as in Linux).

use crate::bio::{Bio, Op, SECTOR_SHIFT, SECTOR_SIZE, Sector};
use crate::error::{BioError, ConfigError};

/// The limits of a device, in Linux's terms. Defaults follow Linux's software
/// defaults (`block/blk-settings.c`): 512-byte logical blocks, a 4 MiB cap on
/// request size, 128 segments of at most 64 KiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Smallest addressable unit in bytes: a power of two, 512..=65536.
    /// Linux default 512.
    pub logical_block_size: u32,
    /// Largest read or write request, in sectors. Linux default 8192 (4 MiB).
    pub max_sectors: u32,
    /// Most data segments (buffers) in one request. Linux default 128.
    pub max_segments: u16,
    /// Largest data segment in bytes. Linux default 65536.
    pub max_segment_size: u32,
    /// Largest discard request, in sectors. Default: the largest a bio can be.
    pub max_discard_sectors: u32,
    /// Largest write-zeroes request, in sectors. Default: as discard.
    pub max_write_zeroes_sectors: u32,
    /// If non-zero, a power of two: no request crosses a multiple of it
    /// (RAID stripe chunks, zones). Linux default 0.
    pub chunk_sectors: u32,
    /// Device size in sectors.
    pub capacity: Sector,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            logical_block_size: 512,
            max_sectors: 8192,
            max_segments: 128,
            max_segment_size: 65536,
            max_discard_sectors: u32::MAX >> SECTOR_SHIFT,
            max_write_zeroes_sectors: u32::MAX >> SECTOR_SHIFT,
            chunk_sectors: 0,
            // 1 TiB: a size to start from; real devices report theirs.
            capacity: 1 << 31,
        }
    }
}

impl Limits {
    /// Check that the limits make sense together.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let lbs = self.logical_block_size;
        if !lbs.is_power_of_two() || !(512..=65536).contains(&lbs) {
            return Err(ConfigError::Limit {
                name: "logical_block_size",
                value: u64::from(lbs),
                why: "must be a power of two from 512 to 65536",
            });
        }
        let lbs_sectors = lbs / SECTOR_SIZE;
        for (name, value) in [
            ("max_sectors", self.max_sectors),
            ("max_discard_sectors", self.max_discard_sectors),
            ("max_write_zeroes_sectors", self.max_write_zeroes_sectors),
        ] {
            if value < lbs_sectors || value > u32::MAX >> SECTOR_SHIFT {
                return Err(ConfigError::Limit {
                    name,
                    value: u64::from(value),
                    why: "must hold at least one logical block and at most 4 GiB - 512",
                });
            }
        }
        if self.max_segments == 0 {
            return Err(ConfigError::Limit {
                name: "max_segments",
                value: 0,
                why: "must be at least 1",
            });
        }
        if self.max_segment_size < 4096 || !self.max_segment_size.is_multiple_of(lbs) {
            return Err(ConfigError::Limit {
                name: "max_segment_size",
                value: u64::from(self.max_segment_size),
                why: "must be at least 4096 bytes and a multiple of the logical block size",
            });
        }
        if self.chunk_sectors != 0
            && (!self.chunk_sectors.is_power_of_two() || self.chunk_sectors < lbs_sectors)
        {
            return Err(ConfigError::Limit {
                name: "chunk_sectors",
                value: u64::from(self.chunk_sectors),
                why: "must be 0 or a power of two of at least one logical block",
            });
        }
        if self.capacity == 0 || !self.capacity.is_multiple_of(u64::from(lbs_sectors)) {
            return Err(ConfigError::Limit {
                name: "capacity",
                value: self.capacity,
                why: "must be non-zero and a multiple of the logical block size",
            });
        }
        Ok(())
    }

    /// Sectors per logical block.
    #[inline]
    pub fn block_sectors(&self) -> u32 {
        self.logical_block_size >> SECTOR_SHIFT
    }

    /// The most sectors one request of `op` may carry.
    #[inline]
    pub fn max_sectors_for(&self, op: Op) -> u32 {
        match op {
            Op::Read | Op::Write => self.max_sectors,
            Op::Discard => self.max_discard_sectors,
            Op::WriteZeroes => self.max_write_zeroes_sectors,
            Op::Flush => 0,
        }
    }

    /// Segments a bio of `len` bytes of `op` needs: a data bio is one buffer,
    /// cut at `max_segment_size`; other operations carry no segments.
    #[inline]
    pub fn segments_for(&self, op: Op, len: u32) -> u32 {
        if !op.has_data() {
            0
        } else if len <= self.max_segment_size {
            1
        } else {
            len.div_ceil(self.max_segment_size)
        }
    }

    /// The most bytes one piece of a split `op` bio may carry, a multiple of
    /// the logical block size.
    pub fn max_piece_bytes(&self, op: Op) -> u32 {
        let by_sectors = u64::from(self.max_sectors_for(op)) << SECTOR_SHIFT;
        let bytes = if op.has_data() {
            let by_segments = u64::from(self.max_segments) * u64::from(self.max_segment_size);
            by_sectors.min(by_segments)
        } else {
            by_sectors
        };
        let lbs = u64::from(self.logical_block_size);
        // Fits: both bounds are below 4 GiB by validation.
        (bytes - bytes % lbs) as u32
    }

    /// Whether a request `[sector, sector + sectors)` would cross a chunk boundary.
    #[inline]
    pub fn crosses_chunk(&self, sector: Sector, sectors: u64) -> bool {
        if self.chunk_sectors == 0 || sectors == 0 {
            return false;
        }
        let mask = u64::from(self.chunk_sectors) - 1;
        (sector & !mask) != ((sector + sectors - 1) & !mask)
    }

    /// Check a bio against the device: alignment, length and size rules.
    pub fn check_bio(&self, bio: &Bio) -> Result<(), BioError> {
        let lbs = self.logical_block_size;
        if bio.op == Op::Flush {
            if bio.len != 0 {
                return Err(BioError::FlushWithData { len: bio.len });
            }
            return Ok(());
        }
        if bio.len == 0 {
            return Err(BioError::ZeroLength {
                op: bio.op,
                sector: bio.sector,
            });
        }
        // The logical block size is a power of two (validated): mask, not divide.
        if bio.sector & u64::from(self.block_sectors() - 1) != 0 {
            return Err(BioError::MisalignedSector {
                op: bio.op,
                sector: bio.sector,
                logical_block_size: lbs,
            });
        }
        if bio.len & (lbs - 1) != 0 {
            return Err(BioError::MisalignedLength {
                op: bio.op,
                len: bio.len,
                logical_block_size: lbs,
            });
        }
        let end = bio.sector.checked_add(u64::from(bio.sectors()));
        match end {
            Some(end) if end <= self.capacity => Ok(()),
            _ => Err(BioError::BeyondEnd {
                op: bio.op,
                sector: bio.sector,
                len: bio.len,
                capacity: self.capacity,
            }),
        }
    }

    /// How many pieces `bio` (already checked) splits into, in closed form:
    /// within each chunk, the chunk's part cut into pieces of at most
    /// `max_piece_bytes`.
    pub fn pieces(&self, bio: &Bio) -> u32 {
        if bio.op == Op::Flush {
            return 1;
        }
        let max = u64::from(self.max_piece_bytes(bio.op));
        let len = u64::from(bio.len);
        if self.chunk_sectors == 0 {
            return len.div_ceil(max) as u32;
        }
        let chunk = u64::from(self.chunk_sectors) << SECTOR_SHIFT;
        let into = (bio.sector << SECTOR_SHIFT) % chunk;
        let first = len.min(chunk - into);
        let rest = len - first;
        let count = first.div_ceil(max)
            + (rest / chunk) * chunk.div_ceil(max)
            + (rest % chunk).div_ceil(max);
        count as u32
    }

    /// Length of the piece starting at `sector` with `left` bytes to go: at
    /// most `max` bytes and never past a chunk boundary.
    #[inline]
    pub(crate) fn piece_len(&self, _op: Op, sector: Sector, left: u32, max: u32) -> u32 {
        let mut len = left.min(max);
        if self.chunk_sectors != 0 {
            let chunk = u64::from(self.chunk_sectors);
            let to_boundary = (chunk - (sector & (chunk - 1))) << SECTOR_SHIFT;
            if u64::from(len) > to_boundary {
                len = to_boundary as u32;
            }
        }
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        Limits::default().validate().unwrap();
    }

    #[test]
    fn bad_limits_are_named() {
        let l = Limits {
            logical_block_size: 1000,
            ..Limits::default()
        };
        let e = l.validate().unwrap_err().to_string();
        assert!(e.contains("logical_block_size"), "{e}");
        let l = Limits {
            chunk_sectors: 3,
            ..Limits::default()
        };
        assert!(
            l.validate()
                .unwrap_err()
                .to_string()
                .contains("chunk_sectors")
        );
    }

    #[test]
    fn bio_checks() {
        let l = Limits {
            logical_block_size: 4096,
            capacity: 1024,
            ..Limits::default()
        };
        assert!(matches!(
            l.check_bio(&Bio::read(0, 0, 1)),
            Err(BioError::ZeroLength { .. })
        ));
        assert!(matches!(
            l.check_bio(&Bio::read(1, 4096, 1)),
            Err(BioError::MisalignedSector { .. })
        ));
        assert!(matches!(
            l.check_bio(&Bio::read(8, 512, 1)),
            Err(BioError::MisalignedLength { .. })
        ));
        assert!(matches!(
            l.check_bio(&Bio::read(1024 - 8, 8192, 1)),
            Err(BioError::BeyondEnd { .. })
        ));
        assert!(matches!(
            l.check_bio(&Bio::new(Op::Flush, 0, 4096, 1)),
            Err(BioError::FlushWithData { .. })
        ));
        assert!(l.check_bio(&Bio::read(1024 - 8, 4096, 1)).is_ok());
        assert!(matches!(
            l.check_bio(&Bio::read(u64::MAX - 7, 4096, 1)),
            Err(BioError::BeyondEnd { .. })
        ));
    }

    #[test]
    fn pieces_respect_sectors_segments_and_chunks() {
        let l = Limits::default();
        assert_eq!(l.pieces(&Bio::read(0, 4 << 20, 1)), 1);
        assert_eq!(l.pieces(&Bio::read(0, (4 << 20) + 512, 1)), 2);
        let l = Limits {
            max_segments: 2,
            max_segment_size: 4096,
            ..Limits::default()
        };
        assert_eq!(l.max_piece_bytes(Op::Read), 8192);
        assert_eq!(l.pieces(&Bio::read(0, 16384, 1)), 2);
        assert_eq!(l.max_piece_bytes(Op::Discard), l.max_discard_sectors << 9);
        let l = Limits {
            chunk_sectors: 16,
            ..Limits::default()
        };
        assert_eq!(l.pieces(&Bio::read(8, 8192, 1)), 2);
        assert!(l.crosses_chunk(8, 16));
        assert!(!l.crosses_chunk(0, 16));
    }
}
