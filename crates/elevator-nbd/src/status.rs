//! The commands answered from what the export's device knows, on the
//! thread that serves the connection, without queueing I/O:
//! `NBD_CMD_BLOCK_STATUS` for `base:allocation` (the device's allocation
//! extents, [`DataDevice::extents`], as block status descriptors),
//! `NBD_CMD_CACHE` (checked like a read, then done: the devices read with
//! O_DIRECT or from memory, so there is no cache to fill), and reads of
//! holes on memory exports, answered with one `OFFSET_HOLE` chunk when the
//! client allows fragmented replies (no `DF`); a read only partly in a
//! hole is read whole, as data.
//!
//! Block status rules, as `doc/proto.md` has them: a context must have been
//! selected (`EINVAL`), the range must be inside the export, not empty, and
//! on the export's block size (`EINVAL`); descriptors are whole blocks and
//! cover a leading part of the range (at most [`MAX_DESCRIPTORS`], or one
//! with `REQ_ONE`); the reply is one `BLOCK_STATUS` chunk with `DONE`.

use elevator_io::spec::RealDevice;
use elevator_io::{DataDevice, Extent};

use crate::conn::Conn;
use crate::proto::meta::{self, state};
use crate::proto::{self, Request, cflag, chunk, cmd, err};
use crate::shared::Shared;
use crate::transmit::{error_reply, request_range};

/// Most descriptors in one block status reply.
pub(crate) const MAX_DESCRIPTORS: usize = 4096;
/// The most bytes a block status reply takes: its chunk header, context id
/// and descriptors.
pub(crate) const MAX_REPLY: u64 =
    proto::STRUCTURED_HEADER_LEN as u64 + 4 + 8 * MAX_DESCRIPTORS as u64;

/// Whether requests of `kind` are answered here ([`request`]), not by the
/// export's engine.
pub(crate) fn answers(kind: u16) -> bool {
    matches!(kind, cmd::BLOCK_STATUS | cmd::CACHE)
}

/// Answer `BLOCK_STATUS` or `CACHE` request `r` on export `e`.
pub(crate) fn request(c: &mut Conn, shared: &Shared, e: usize, r: &Request) {
    let ex = &shared.exports[e];
    // FUA is accepted on every command (SEND_FUA is advertised); it
    // changes nothing here.
    let allowed = if r.kind == cmd::BLOCK_STATUS {
        cflag::REQ_ONE | cflag::FUA
    } else {
        cflag::FUA
    };
    let block = u64::from(ex.min_block);
    let bad = r.flags & !allowed != 0 || r.len == 0 || request_range(ex, r).is_err();
    if bad {
        error_reply(c, r, err::EINVAL);
        return;
    }
    if r.kind == cmd::CACHE {
        c.send(&proto::simple_reply(0, r.cookie), None);
        return;
    }
    let Some(context) = c.negotiated.meta_allocation else {
        error_reply(c, r, err::EINVAL);
        return;
    };
    // This worker's handle on the device: every handle sees the same
    // allocation. Connections reach the worker that serves their export
    // before they send a request, so there is one.
    let Some(engine) = shared.engines[e].as_ref() else {
        error_reply(c, r, err::EIO);
        return;
    };
    let max = MAX_DESCRIPTORS + 1;
    let extents = match engine.device().extents(r.offset, u64::from(r.len), max) {
        Ok(x) => x,
        Err(_) => {
            error_reply(c, r, err::EIO);
            return;
        }
    };
    let mut list = descriptors(&extents, block, u64::from(r.len));
    if r.flags & cflag::REQ_ONE != 0 {
        list.truncate(1);
    }
    list.truncate(MAX_DESCRIPTORS);
    if list.is_empty() {
        // The device said nothing useful: all data is never wrong.
        list.push((block.min(u64::from(r.len)) as u32, 0));
    }
    c.send_bytes(meta::block_status(chunk::DONE, r.cookie, context, &list));
}

/// Answer read `r` on export `e` here if the whole range is a hole and the
/// client takes an `OFFSET_HOLE` chunk for it (structured replies, no
/// `DF`); `false` leaves the read to the engine. Asked of memory exports
/// only, whose extents cost a look-up in a bitmap (a file's would cost an
/// `lseek` per read, and devices with injected faults must fail reads of
/// holes too). Such a read counts in the connection's reads, not in its
/// bytes read: no bytes were read.
pub(crate) fn hole_read(c: &mut Conn, shared: &Shared, e: usize, r: &Request) -> bool {
    if !c.negotiated.structured || r.flags & cflag::DF != 0 {
        return false;
    }
    let Some(device) = shared.engines[e].as_ref().map(|engine| engine.device()) else {
        return false;
    };
    if !matches!(device, RealDevice::Mem(_)) {
        return false;
    }
    let len = u64::from(r.len);
    match device.extents(r.offset, len, 1).as_deref() {
        Ok([x]) if x.hole && x.zero && x.len >= len => {
            c.stats.reads += 1;
            c.send(
                &meta::offset_hole(chunk::DONE, r.cookie, r.offset, r.len),
                None,
            );
            true
        }
        _ => false,
    }
}

/// The `base:allocation` flags of an extent.
fn flags_of(x: &Extent) -> u32 {
    (if x.hole { state::HOLE } else { 0 }) | (if x.zero { state::ZERO } else { 0 })
}

/// Block status descriptors (length, flags) for `extents`, which run in
/// order from a block-aligned offset and cover at most `len` bytes (a
/// multiple of `block`). Every descriptor is whole blocks: a block that
/// straddles extents gets only the flags all of them share. A tail shorter
/// than a block, where the extents stop short of `len`, is left out.
fn descriptors(extents: &[Extent], block: u64, len: u64) -> Vec<(u32, u32)> {
    let covered: u64 = extents.iter().map(|x| x.len).sum::<u64>().min(len);
    let end = if covered == len {
        len
    } else {
        covered / block * block
    };
    let mut out: Vec<(u32, u32)> = Vec::new();
    let push = |out: &mut Vec<(u32, u32)>, n: u64, f: u32| match out.last_mut() {
        Some((l, lf)) if *lf == f => *l += n as u32,
        _ => out.push((n as u32, f)),
    };
    // `pos` is the offset (from the range's start) reached, always a block
    // boundary; `i`/`start` the extent holding it and where it starts.
    let (mut pos, mut i, mut start) = (0u64, 0usize, 0u64);
    while pos < end {
        while i < extents.len() && start + extents[i].len <= pos {
            start += extents[i].len;
            i += 1;
        }
        let Some(x) = extents.get(i) else { break };
        let x_end = (start + x.len).min(end);
        let whole = if x_end == end {
            x_end - pos
        } else {
            (x_end - pos) / block * block
        };
        if whole > 0 {
            push(&mut out, whole, flags_of(x));
            pos += whole;
            continue;
        }
        // A block shared by several extents.
        let stop = (pos + block).min(end);
        let (mut f, mut j, mut s) = (flags_of(x), i, start);
        while j < extents.len() && s < stop {
            f &= flags_of(&extents[j]);
            s += extents[j].len;
            j += 1;
        }
        push(&mut out, stop - pos, f);
        pos = stop;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u32 = state::HOLE | state::ZERO;

    #[test]
    fn descriptors_follow_the_extents_in_whole_blocks() {
        let x = [Extent::hole(8192), Extent::data(4096), Extent::hole(4096)];
        assert_eq!(
            descriptors(&x, 512, 16384),
            vec![(8192, HZ), (4096, 0), (4096, HZ)]
        );
        // 64 KiB blocks over 4 KiB pages: a block with any data is data.
        let y = [
            Extent::hole(65536 + 4096),
            Extent::data(4096),
            Extent::hole(1 << 20),
        ];
        assert_eq!(
            descriptors(&y, 65536, 4 * 65536),
            vec![(65536, HZ), (65536, 0), (2 * 65536, HZ)]
        );
        // Extents stopping short of the range: a partial block is left out.
        let z = [Extent::data(4096), Extent::hole(1000)];
        assert_eq!(descriptors(&z, 4096, 65536), vec![(4096, 0)]);
        // Extents running past the range are cut at it.
        let w = [Extent::hole(1 << 20)];
        assert_eq!(descriptors(&w, 512, 4096), vec![(4096, HZ)]);
        assert!(descriptors(&[], 512, 4096).is_empty());
    }
}
