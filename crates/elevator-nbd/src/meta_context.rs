//! Metadata contexts in the handshake: `NBD_OPT_LIST_META_CONTEXT` and
//! `NBD_OPT_SET_META_CONTEXT`. The one context is `base:allocation`
//! (holes and zeroes, answered by `NBD_CMD_BLOCK_STATUS`); the selection
//! lives on the connection ([`Negotiated::meta_allocation`](crate::conn::Negotiated::meta_allocation)).
//!
//! As `doc/proto.md` has it: `SET` needs structured replies first
//! (`ERR_INVALID`); a query naming no context this server has selects
//! nothing, and the reply is then just `ACK`; `LIST` with no queries lists
//! every context; an export that does not exist is `ERR_UNKNOWN`; each
//! `SET` replaces the selection before it; and a selection made for one
//! export is dropped when the client goes on to another.

use crate::conn::Conn;
use crate::handshake::{find, reply};
use crate::proto::meta::{BASE_ALLOCATION, MetaQuery, meta_context_entry};
use crate::proto::{opt, rep};
use crate::shared::Shared;

/// The id this server gives `base:allocation` in replies.
pub(crate) const ALLOCATION_ID: u32 = 1;

/// Whether `LIST` query `q` takes in `base:allocation`: its full name, or
/// its namespace with no leaf.
fn lists_allocation(q: &str) -> bool {
    q == BASE_ALLOCATION || q == "base:"
}

/// Answer `LIST_META_CONTEXT` with `q`.
pub(crate) fn list(c: &mut Conn, shared: &Shared, q: &MetaQuery) {
    if find(shared, &q.export).is_none() {
        let msg = format!("no export named '{}'", q.export);
        reply(c, opt::LIST_META_CONTEXT, rep::ERR_UNKNOWN, msg.as_bytes());
        return;
    }
    if q.queries.is_empty() || q.queries.iter().any(|s| lists_allocation(s)) {
        // The id in a LIST reply is reserved: zero.
        let entry = meta_context_entry(0, BASE_ALLOCATION);
        reply(c, opt::LIST_META_CONTEXT, rep::META_CONTEXT, &entry);
    }
    reply(c, opt::LIST_META_CONTEXT, rep::ACK, &[]);
}

/// Answer `SET_META_CONTEXT` with `q`, replacing the selection.
pub(crate) fn set(c: &mut Conn, shared: &Shared, q: &MetaQuery) {
    c.negotiated.meta_allocation = None;
    c.negotiated.meta_export = None;
    if !c.negotiated.structured {
        let msg = b"SET_META_CONTEXT needs structured replies first";
        reply(c, opt::SET_META_CONTEXT, rep::ERR_INVALID, msg);
        return;
    }
    let Some(e) = find(shared, &q.export) else {
        let msg = format!("no export named '{}'", q.export);
        reply(c, opt::SET_META_CONTEXT, rep::ERR_UNKNOWN, msg.as_bytes());
        return;
    };
    c.negotiated.meta_export = Some(e);
    if q.queries.iter().any(|s| s == BASE_ALLOCATION) {
        c.negotiated.meta_allocation = Some(ALLOCATION_ID);
        let entry = meta_context_entry(ALLOCATION_ID, BASE_ALLOCATION);
        reply(c, opt::SET_META_CONTEXT, rep::META_CONTEXT, &entry);
    }
    reply(c, opt::SET_META_CONTEXT, rep::ACK, &[]);
}

/// The client chose export `e` for transmission: a selection made for
/// another export does not carry over.
pub(crate) fn export_chosen(c: &mut Conn, e: usize) {
    if c.negotiated.meta_export != Some(e) {
        c.negotiated.meta_allocation = None;
    }
}
