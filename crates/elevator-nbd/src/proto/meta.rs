//! The wire format of metadata contexts and block status, as
//! `doc/proto.md` specifies it: the data of `NBD_OPT_LIST_META_CONTEXT`
//! and `NBD_OPT_SET_META_CONTEXT` ([`MetaQuery`]), the `NBD_REP_META_CONTEXT`
//! reply, and the structured reply chunks `NBD_REPLY_TYPE_OFFSET_HOLE` and
//! `NBD_REPLY_TYPE_BLOCK_STATUS`. Pure, like the rest of [`proto`](super).

use super::{OptionRefusal, STRUCTURED_HEADER_LEN, be32, chunk, rep, structured_header};

/// The one metadata context this server knows: allocation.
pub const BASE_ALLOCATION: &str = "base:allocation";

/// Flags of a `base:allocation` block status descriptor.
pub mod state {
    /// The extent is not allocated (a hole).
    pub const HOLE: u32 = 1;
    /// The extent reads as zeroes.
    pub const ZERO: u32 = 2;
}

/// The data of `LIST_META_CONTEXT` or `SET_META_CONTEXT`: an export name
/// and the queries (context names, or namespace prefixes for `LIST`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaQuery {
    /// The export the contexts are for.
    pub export: String,
    /// The queries, in order.
    pub queries: Vec<String>,
}

fn invalid(message: &str) -> OptionRefusal {
    OptionRefusal {
        reply: rep::ERR_INVALID,
        message: message.to_string(),
    }
}

/// A length-prefixed string at the start of `data`, and what follows it.
fn string<'a>(data: &'a [u8], what: &str) -> Result<(String, &'a [u8]), OptionRefusal> {
    let Some(head) = data.get(..4) else {
        return Err(invalid(&format!("{what}: length runs past the option")));
    };
    let n = be32(head) as usize;
    let Some(bytes) = data.get(4..).and_then(|d| d.get(..n)) else {
        return Err(invalid(&format!("{what} runs past the option")));
    };
    let s =
        String::from_utf8(bytes.to_vec()).map_err(|_| invalid(&format!("{what} is not UTF-8")))?;
    Ok((s, &data[4 + n..]))
}

/// Parse the data of `LIST_META_CONTEXT` or `SET_META_CONTEXT`: every
/// byte must be accounted for.
pub fn meta_query(data: &[u8]) -> Result<MetaQuery, OptionRefusal> {
    let (export, rest) = string(data, "export name")?;
    let Some(head) = rest.get(..4) else {
        return Err(invalid("query count runs past the option"));
    };
    let count = be32(head);
    let mut rest = &rest[4..];
    let mut queries = Vec::new();
    for _ in 0..count {
        let (q, after) = string(rest, "query")?;
        queries.push(q);
        rest = after;
    }
    if !rest.is_empty() {
        return Err(invalid("bytes left over after the queries"));
    }
    Ok(MetaQuery { export, queries })
}

/// Encode a [`MetaQuery`] (for clients and tests).
pub fn encode_meta_query(q: &MetaQuery) -> Vec<u8> {
    let mut b = (q.export.len() as u32).to_be_bytes().to_vec();
    b.extend_from_slice(q.export.as_bytes());
    b.extend_from_slice(&(q.queries.len() as u32).to_be_bytes());
    for s in &q.queries {
        b.extend_from_slice(&(s.len() as u32).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    b
}

/// The data of an `NBD_REP_META_CONTEXT` reply: the context's id and name.
pub fn meta_context_entry(id: u32, name: &str) -> Vec<u8> {
    let mut b = id.to_be_bytes().to_vec();
    b.extend_from_slice(name.as_bytes());
    b
}

/// Size of an `OFFSET_HOLE` chunk: header, offset, length.
pub const OFFSET_HOLE_LEN: usize = STRUCTURED_HEADER_LEN + 12;

/// An `OFFSET_HOLE` chunk: `len` bytes of zeroes at `offset`, for the
/// read of `cookie`.
pub fn offset_hole(flags: u16, cookie: u64, offset: u64, len: u32) -> [u8; OFFSET_HOLE_LEN] {
    let mut b = [0u8; OFFSET_HOLE_LEN];
    b[..STRUCTURED_HEADER_LEN].copy_from_slice(&structured_header(
        flags,
        chunk::OFFSET_HOLE,
        cookie,
        12,
    ));
    b[STRUCTURED_HEADER_LEN..STRUCTURED_HEADER_LEN + 8].copy_from_slice(&offset.to_be_bytes());
    b[STRUCTURED_HEADER_LEN + 8..].copy_from_slice(&len.to_be_bytes());
    b
}

/// A `BLOCK_STATUS` chunk (header included) for `cookie`: the context id,
/// then each descriptor's length and flags.
pub fn block_status(flags: u16, cookie: u64, context: u32, descriptors: &[(u32, u32)]) -> Vec<u8> {
    let payload = 4 + 8 * descriptors.len();
    let mut b = Vec::with_capacity(STRUCTURED_HEADER_LEN + payload);
    b.extend_from_slice(&structured_header(
        flags,
        chunk::BLOCK_STATUS,
        cookie,
        payload as u32,
    ));
    b.extend_from_slice(&context.to_be_bytes());
    for (len, f) in descriptors {
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(&f.to_be_bytes());
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_round_trip_and_lies_are_refused() {
        let q = MetaQuery {
            export: "disk".into(),
            queries: vec![BASE_ALLOCATION.into(), "qemu:".into()],
        };
        let b = encode_meta_query(&q);
        assert_eq!(meta_query(&b), Ok(q.clone()));
        // Every cut of it is refused, never a panic.
        for n in 0..b.len() {
            assert_eq!(
                meta_query(&b[..n]).map_err(|r| r.reply),
                Err(rep::ERR_INVALID)
            );
        }
        let mut extra = b.clone();
        extra.push(0);
        assert!(meta_query(&extra).is_err());
        // A count that claims more queries than there are.
        let mut lie = encode_meta_query(&MetaQuery {
            export: String::new(),
            queries: vec![],
        });
        lie[7] = 200;
        assert!(meta_query(&lie).is_err());
        // Not UTF-8.
        let bad = [0, 0, 0, 1, 0xff, 0, 0, 0, 0];
        assert!(meta_query(&bad).is_err());
    }

    #[test]
    fn chunks_encode() {
        let h = offset_hole(chunk::DONE, 9, 4096, 512);
        assert_eq!(&h[4..6], &chunk::DONE.to_be_bytes());
        assert_eq!(&h[6..8], &chunk::OFFSET_HOLE.to_be_bytes());
        assert_eq!(&h[16..20], &12u32.to_be_bytes());
        assert_eq!(&h[20..28], &4096u64.to_be_bytes());
        assert_eq!(&h[28..], &512u32.to_be_bytes());
        let s = block_status(
            chunk::DONE,
            9,
            7,
            &[(4096, state::HOLE | state::ZERO), (512, 0)],
        );
        assert_eq!(s.len(), STRUCTURED_HEADER_LEN + 4 + 16);
        assert_eq!(&s[6..8], &chunk::BLOCK_STATUS.to_be_bytes());
        assert_eq!(&s[16..20], &20u32.to_be_bytes());
        assert_eq!(&s[20..24], &7u32.to_be_bytes());
        assert_eq!(&s[24..32], &[0, 0, 16, 0, 0, 0, 0, 3]);
        assert_eq!(meta_context_entry(1, "base:allocation")[..4], [0, 0, 0, 1]);
    }
}
