//! The option haggling of the fixed newstyle handshake: `EXPORT_NAME`,
//! `GO`, `INFO`, `LIST`, `ABORT`, `STRUCTURED_REPLY` and `STARTTLS` (with
//! the gate that refuses the others until TLS when it is required, in
//! [`crate::tls`]), and the metadata context options (answered by
//! [`meta_context`](crate::meta_context)); every other option is answered
//! `NBD_REP_ERR_UNSUP` and the handshake goes on.

use crate::conn::{Conn, Phase};
use crate::meta_context;
use crate::proto::{self, ClientOption, OptionHeader, info, opt, rep, tflag};
use crate::shared::Shared;
use crate::tls::{self, TlsGate};

/// The export a client asks for by `name`: the one of that name, or for the
/// empty name the first export.
pub(crate) fn find(shared: &Shared, name: &str) -> Option<usize> {
    shared
        .exports
        .iter()
        .position(|e| e.name == name)
        .or_else(|| name.is_empty().then_some(0))
}

/// An export's transmission flags as this client sees them: with structured
/// replies, reads honour DF (a read's reply is always one chunk).
fn flags(c: &Conn, export_flags: u16) -> u16 {
    if c.negotiated.structured {
        export_flags | tflag::SEND_DF
    } else {
        export_flags
    }
}

/// Queue an option reply.
pub(crate) fn reply(c: &mut Conn, option: u32, kind: u32, data: &[u8]) {
    let mut out = Vec::with_capacity(20 + data.len());
    proto::option_reply(&mut out, option, kind, data);
    c.send_bytes(out);
}

/// An option whose data was too big to read: refused, the handshake goes on.
pub(crate) fn too_big(c: &mut Conn, h: OptionHeader) {
    if h.option == opt::EXPORT_NAME {
        // EXPORT_NAME has no error reply: the client expects size and flags.
        c.fail("EXPORT_NAME with a name too long");
        return;
    }
    reply(c, h.option, rep::ERR_TOO_BIG, b"option data too long");
}

/// Answer option `h` with `data`.
pub(crate) fn option(c: &mut Conn, shared: &Shared, h: OptionHeader, data: &[u8]) {
    if shared.stopping {
        reply(c, h.option, rep::ERR_SHUTDOWN, b"server shutting down");
        return;
    }
    match tls::gate(c, shared.cfg.tls.as_ref(), h, data) {
        TlsGate::Pass => {}
        TlsGate::Handled => return,
    }
    let parsed = match proto::client_option(h, data) {
        Ok(o) => o,
        Err(refusal) if h.option == opt::EXPORT_NAME => {
            c.fail(&format!("EXPORT_NAME: {}", refusal.message));
            return;
        }
        Err(refusal) => {
            reply(c, h.option, refusal.reply, refusal.message.as_bytes());
            return;
        }
    };
    match parsed {
        ClientOption::ExportName(name) => match find(shared, &name) {
            Some(e) => {
                let ex = &shared.exports[e];
                let mut out = Vec::new();
                proto::export_name_reply(
                    &mut out,
                    ex.size,
                    flags(c, ex.flags),
                    c.negotiated.no_zeroes,
                );
                c.send_bytes(out);
                c.negotiated.export_name = Some(ex.name.clone());
                c.phase = Phase::Transmission(e);
                meta_context::export_chosen(c, e);
            }
            // The protocol has no way to refuse EXPORT_NAME but to hang up.
            None => c.fail(&format!("asked for export '{name}', which does not exist")),
        },
        ClientOption::Abort => {
            // Acknowledged, then closed once the ACK is out.
            reply(c, h.option, rep::ACK, &[]);
            c.closing = Some("client aborted the handshake".into());
        }
        ClientOption::List => {
            for e in shared.exports.iter() {
                reply(c, h.option, rep::SERVER, &proto::server_entry(&e.name));
            }
            reply(c, h.option, rep::ACK, &[]);
        }
        ClientOption::Info { go, name, requests } => {
            let Some(e) = find(shared, &name) else {
                let msg = format!("no export named '{name}'");
                reply(c, h.option, rep::ERR_UNKNOWN, msg.as_bytes());
                return;
            };
            let ex = &shared.exports[e];
            reply(
                c,
                h.option,
                rep::INFO,
                &proto::info_export(ex.size, flags(c, ex.flags)),
            );
            if requests.contains(&info::NAME) {
                reply(
                    c,
                    h.option,
                    rep::INFO,
                    &proto::info_text(info::NAME, &ex.name),
                );
            }
            if requests.contains(&info::DESCRIPTION) {
                reply(
                    c,
                    h.option,
                    rep::INFO,
                    &proto::info_text(info::DESCRIPTION, &ex.description),
                );
            }
            // Sent whether asked for or not: clients must keep to the
            // device's block size and the request cap.
            // Preferred: the device's alignment (smaller requests are
            // read-modify-writes).
            let min = ex.min_block;
            let preferred = ex.align.max(4096);
            reply(
                c,
                h.option,
                rep::INFO,
                &proto::info_block_size(min, preferred, shared.cfg.max_request),
            );
            reply(c, h.option, rep::ACK, &[]);
            if go {
                c.negotiated.export_name = Some(ex.name.clone());
                c.phase = Phase::Transmission(e);
                meta_context::export_chosen(c, e);
            }
        }
        ClientOption::StructuredReply => {
            c.negotiated.structured = true;
            reply(c, h.option, rep::ACK, &[]);
        }
        ClientOption::ListMetaContext(q) => meta_context::list(c, shared, &q),
        ClientOption::SetMetaContext(q) => meta_context::set(c, shared, &q),
        ClientOption::Unsupported(o) => {
            let msg = format!("option {o} is not supported");
            reply(c, h.option, rep::ERR_UNSUP, msg.as_bytes());
        }
    }
}
