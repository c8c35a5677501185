//! The NBD protocol's wire format, as the NetworkBlockDevice project's
//! `doc/proto.md` specifies it: constants, parsers for what clients send, and
//! encoders for what the server answers. Pure: no I/O, no state. Every
//! parser takes untrusted bytes and answers with a value or a [`ProtoError`];
//! none panics (a fuzz target and property tests hold it to that).
//!
//! Only the fixed newstyle handshake is spoken. All integers are big-endian.
//! Metadata contexts and block status have their own part, [`meta`].

use thiserror::Error;

pub mod meta;

pub use meta::MetaQuery;

/// `NBDMAGIC`: the first eight bytes the server sends.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: starts the newstyle greeting and every client option.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// Magic of an option reply.
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Magic of a structured reply chunk.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Server handshake flag: fixed newstyle.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
/// Server handshake flag: the client may ask to skip the 124 zero bytes.
pub const FLAG_NO_ZEROES: u16 = 2;
/// Client flag: fixed newstyle.
pub const CLIENT_FIXED_NEWSTYLE: u32 = 1;
/// Client flag: no zeroes after `NBD_OPT_EXPORT_NAME`'s reply.
pub const CLIENT_NO_ZEROES: u32 = 2;

/// Options a client sends during the handshake.
pub mod opt {
    /// Choose an export and start transmission (no reply on error: close).
    pub const EXPORT_NAME: u32 = 1;
    /// End the handshake.
    pub const ABORT: u32 = 2;
    /// List the exports.
    pub const LIST: u32 = 3;
    /// Upgrade to TLS.
    pub const STARTTLS: u32 = 5;
    /// Describe an export.
    pub const INFO: u32 = 6;
    /// Describe an export and start transmission.
    pub const GO: u32 = 7;
    /// Use structured replies.
    pub const STRUCTURED_REPLY: u32 = 8;
    /// List metadata contexts.
    pub const LIST_META_CONTEXT: u32 = 9;
    /// Select metadata contexts.
    pub const SET_META_CONTEXT: u32 = 10;
    /// Use 64-bit extended headers.
    pub const EXTENDED_HEADERS: u32 = 11;
}

/// Option reply types.
pub mod rep {
    /// Done.
    pub const ACK: u32 = 1;
    /// One export, in reply to `LIST`.
    pub const SERVER: u32 = 2;
    /// One piece of information, in reply to `INFO` or `GO`.
    pub const INFO: u32 = 3;
    /// One metadata context, in reply to `LIST_META_CONTEXT` or
    /// `SET_META_CONTEXT`.
    pub const META_CONTEXT: u32 = 4;
    /// The option is not supported.
    pub const ERR_UNSUP: u32 = 0x8000_0001;
    /// Forbidden by policy.
    pub const ERR_POLICY: u32 = 0x8000_0002;
    /// Malformed.
    pub const ERR_INVALID: u32 = 0x8000_0003;
    /// TLS is required: `STARTTLS` first.
    pub const ERR_TLS_REQD: u32 = 0x8000_0005;
    /// No such export.
    pub const ERR_UNKNOWN: u32 = 0x8000_0006;
    /// The server is shutting down.
    pub const ERR_SHUTDOWN: u32 = 0x8000_0007;
    /// The option's data is too big.
    pub const ERR_TOO_BIG: u32 = 0x8000_0009;
}

/// Information types in `INFO` and `GO`.
pub mod info {
    /// Size and transmission flags.
    pub const EXPORT: u16 = 0;
    /// The export's name.
    pub const NAME: u16 = 1;
    /// A description.
    pub const DESCRIPTION: u16 = 2;
    /// Minimum, preferred and maximum block sizes.
    pub const BLOCK_SIZE: u16 = 3;
}

/// Transmission flags (what the export supports).
pub mod tflag {
    /// Always set.
    pub const HAS_FLAGS: u16 = 1;
    /// Writes are refused.
    pub const READ_ONLY: u16 = 1 << 1;
    /// `FLUSH` is supported.
    pub const SEND_FLUSH: u16 = 1 << 2;
    /// The `FUA` flag is supported.
    pub const SEND_FUA: u16 = 1 << 3;
    /// The export has moving parts (a disk).
    pub const ROTATIONAL: u16 = 1 << 4;
    /// `TRIM` is supported.
    pub const SEND_TRIM: u16 = 1 << 5;
    /// `WRITE_ZEROES` is supported.
    pub const SEND_WRITE_ZEROES: u16 = 1 << 6;
    /// The `DF` flag is honoured on reads (structured replies only).
    pub const SEND_DF: u16 = 1 << 7;
    /// A flush on one connection covers writes completed on all of them.
    pub const CAN_MULTI_CONN: u16 = 1 << 8;
    /// `CACHE` is supported.
    pub const SEND_CACHE: u16 = 1 << 10;
}

/// Commands.
pub mod cmd {
    /// Read.
    pub const READ: u16 = 0;
    /// Write (a payload follows the request).
    pub const WRITE: u16 = 1;
    /// Disconnect.
    pub const DISC: u16 = 2;
    /// Flush.
    pub const FLUSH: u16 = 3;
    /// Trim (discard).
    pub const TRIM: u16 = 4;
    /// Prefetch.
    pub const CACHE: u16 = 5;
    /// Write zeroes.
    pub const WRITE_ZEROES: u16 = 6;
    /// Block status.
    pub const BLOCK_STATUS: u16 = 7;
}

/// Command flags.
pub mod cflag {
    /// Forced unit access.
    pub const FUA: u16 = 1;
    /// Write zeroes without punching a hole.
    pub const NO_HOLE: u16 = 1 << 1;
    /// Don't fragment a structured read reply.
    pub const DF: u16 = 1 << 2;
    /// Block status: one extent only.
    pub const REQ_ONE: u16 = 1 << 3;
    /// Fail a write-zeroes that would be slow.
    pub const FAST_ZERO: u16 = 1 << 4;
}

/// Error values in replies.
pub mod err {
    /// Not permitted (a write to a read-only export).
    pub const EPERM: u32 = 1;
    /// I/O error.
    pub const EIO: u32 = 5;
    /// Out of memory.
    pub const ENOMEM: u32 = 12;
    /// Invalid request.
    pub const EINVAL: u32 = 22;
    /// No space (a write past the end).
    pub const ENOSPC: u32 = 28;
    /// Value too large.
    pub const EOVERFLOW: u32 = 75;
    /// Not supported.
    pub const ENOTSUP: u32 = 95;
    /// The server is shutting down.
    pub const ESHUTDOWN: u32 = 108;
}

/// Structured reply chunk types and flags.
pub mod chunk {
    /// Flag: the last chunk of the reply.
    pub const DONE: u16 = 1;
    /// No payload.
    pub const NONE: u16 = 0;
    /// Data at an offset.
    pub const OFFSET_DATA: u16 = 1;
    /// Zeroes at an offset (a hole, in reply to a read).
    pub const OFFSET_HOLE: u16 = 2;
    /// Block status descriptors for one metadata context.
    pub const BLOCK_STATUS: u16 = 5;
    /// An error.
    pub const ERROR: u16 = 0x8001;
}

/// Size of the server's greeting.
pub const GREETING_LEN: usize = 18;
/// Size of an option header (`IHAVEOPT`, option, length).
pub const OPTION_HEADER_LEN: usize = 16;
/// Size of a transmission request.
pub const REQUEST_LEN: usize = 28;
/// Size of a simple reply header.
pub const SIMPLE_REPLY_LEN: usize = 16;
/// Size of a structured reply chunk header.
pub const STRUCTURED_HEADER_LEN: usize = 20;

/// What a client sent that breaks the protocol beyond a polite refusal: the
/// connection must close.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProtoError {
    /// A magic number is wrong.
    #[error("bad {what} magic {got:#x}")]
    Magic {
        /// Which magic.
        what: &'static str,
        /// What came.
        got: u64,
    },
    /// The client's flags ask for something this server does not do.
    #[error("client flags {0:#x}: only FIXED_NEWSTYLE and NO_ZEROES are known")]
    ClientFlags(u32),
    /// The client does not speak fixed newstyle.
    #[error("the client does not speak fixed newstyle (flags {0:#x})")]
    NotFixedNewstyle(u32),
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// The server's greeting: `NBDMAGIC`, `IHAVEOPT`, handshake flags.
pub fn greeting() -> [u8; GREETING_LEN] {
    let mut g = [0u8; GREETING_LEN];
    g[..8].copy_from_slice(&NBDMAGIC.to_be_bytes());
    g[8..16].copy_from_slice(&IHAVEOPT.to_be_bytes());
    g[16..].copy_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    g
}

/// The client's flags, checked: returns whether it asked for no zeroes.
pub fn client_flags(b: [u8; 4]) -> Result<bool, ProtoError> {
    let f = u32::from_be_bytes(b);
    if f & !(CLIENT_FIXED_NEWSTYLE | CLIENT_NO_ZEROES) != 0 {
        return Err(ProtoError::ClientFlags(f));
    }
    if f & CLIENT_FIXED_NEWSTYLE == 0 {
        return Err(ProtoError::NotFixedNewstyle(f));
    }
    Ok(f & CLIENT_NO_ZEROES != 0)
}

/// An option's header: which option, and how many bytes of data follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionHeader {
    /// The option.
    pub option: u32,
    /// Length of its data.
    pub len: u32,
}

/// Parse an option header.
pub fn option_header(b: &[u8; OPTION_HEADER_LEN]) -> Result<OptionHeader, ProtoError> {
    let magic = be64(b);
    if magic != IHAVEOPT {
        return Err(ProtoError::Magic {
            what: "option",
            got: magic,
        });
    }
    Ok(OptionHeader {
        option: be32(&b[8..]),
        len: be32(&b[12..]),
    })
}

/// An option, parsed from its header and data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientOption {
    /// `EXPORT_NAME`.
    ExportName(String),
    /// `ABORT`.
    Abort,
    /// `LIST`.
    List,
    /// `INFO` (`go: false`) or `GO`: the export's name and the information
    /// asked for.
    Info {
        /// Whether it is `GO`.
        go: bool,
        /// Export name.
        name: String,
        /// Information types requested.
        requests: Vec<u16>,
    },
    /// `STRUCTURED_REPLY`.
    StructuredReply,
    /// `LIST_META_CONTEXT`.
    ListMetaContext(MetaQuery),
    /// `SET_META_CONTEXT`.
    SetMetaContext(MetaQuery),
    /// Anything else: answered `ERR_UNSUP`.
    Unsupported(u32),
}

/// An option that is malformed: the reply error to send (the connection
/// goes on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionRefusal {
    /// The reply type (`rep::ERR_*`).
    pub reply: u32,
    /// A message for the client.
    pub message: String,
}

fn name(bytes: &[u8]) -> Result<String, OptionRefusal> {
    String::from_utf8(bytes.to_vec()).map_err(|_| OptionRefusal {
        reply: rep::ERR_INVALID,
        message: "export name is not UTF-8".into(),
    })
}

/// Parse option `h` with its `data`.
pub fn client_option(h: OptionHeader, data: &[u8]) -> Result<ClientOption, OptionRefusal> {
    let invalid = |message: &str| OptionRefusal {
        reply: rep::ERR_INVALID,
        message: message.to_string(),
    };
    let no_data = |o: ClientOption| {
        if data.is_empty() {
            Ok(o)
        } else {
            Err(invalid("this option takes no data"))
        }
    };
    match h.option {
        opt::EXPORT_NAME => Ok(ClientOption::ExportName(name(data)?)),
        opt::ABORT => Ok(ClientOption::Abort),
        opt::LIST => no_data(ClientOption::List),
        opt::STRUCTURED_REPLY => no_data(ClientOption::StructuredReply),
        opt::LIST_META_CONTEXT => Ok(ClientOption::ListMetaContext(meta::meta_query(data)?)),
        opt::SET_META_CONTEXT => Ok(ClientOption::SetMetaContext(meta::meta_query(data)?)),
        opt::INFO | opt::GO => {
            if data.len() < 6 {
                return Err(invalid("INFO/GO data is shorter than 6 bytes"));
            }
            let n = be32(data) as usize;
            if data.len() < 4 + n + 2 {
                return Err(invalid("export name length runs past the option"));
            }
            let export = name(&data[4..4 + n])?;
            let rest = &data[4 + n..];
            let count = usize::from(be16(rest));
            if rest.len() != 2 + 2 * count {
                return Err(invalid(
                    "information request count does not match the option's length",
                ));
            }
            let requests = rest[2..].chunks_exact(2).map(be16).collect();
            Ok(ClientOption::Info {
                go: h.option == opt::GO,
                name: export,
                requests,
            })
        }
        other => Ok(ClientOption::Unsupported(other)),
    }
}

/// Append an option reply.
pub fn option_reply(out: &mut Vec<u8>, option: u32, reply: u32, data: &[u8]) {
    out.extend_from_slice(&OPTION_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

/// The data of `INFO_EXPORT`.
pub fn info_export(size: u64, flags: u16) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[..2].copy_from_slice(&info::EXPORT.to_be_bytes());
    b[2..10].copy_from_slice(&size.to_be_bytes());
    b[10..].copy_from_slice(&flags.to_be_bytes());
    b
}

/// The data of `INFO_BLOCK_SIZE`.
pub fn info_block_size(min: u32, preferred: u32, max: u32) -> [u8; 14] {
    let mut b = [0u8; 14];
    b[..2].copy_from_slice(&info::BLOCK_SIZE.to_be_bytes());
    b[2..6].copy_from_slice(&min.to_be_bytes());
    b[6..10].copy_from_slice(&preferred.to_be_bytes());
    b[10..].copy_from_slice(&max.to_be_bytes());
    b
}

/// The data of `INFO_NAME` or `INFO_DESCRIPTION`.
pub fn info_text(kind: u16, text: &str) -> Vec<u8> {
    let mut b = kind.to_be_bytes().to_vec();
    b.extend_from_slice(text.as_bytes());
    b
}

/// The data of a `SERVER` reply to `LIST`.
pub fn server_entry(name: &str) -> Vec<u8> {
    let mut b = (name.len() as u32).to_be_bytes().to_vec();
    b.extend_from_slice(name.as_bytes());
    b
}

/// The reply to `EXPORT_NAME`: size, flags, and 124 zeroes unless the
/// client asked for none.
pub fn export_name_reply(out: &mut Vec<u8>, size: u64, flags: u16, no_zeroes: bool) {
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    if !no_zeroes {
        out.extend_from_slice(&[0u8; 124]);
    }
}

/// A transmission request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Command flags.
    pub flags: u16,
    /// The command.
    pub kind: u16,
    /// The client's cookie (handle), echoed in the reply.
    pub cookie: u64,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

impl Request {
    /// Command `kind` with `cookie`, for `len` bytes at `offset`, without
    /// flags: what a reply needs of its request, rebuilt when what the
    /// server ran for it completes.
    pub fn unflagged(kind: u16, cookie: u64, offset: u64, len: u32) -> Request {
        Request {
            flags: 0,
            kind,
            cookie,
            offset,
            len,
        }
    }
}

/// Parse a transmission request.
pub fn request(b: &[u8; REQUEST_LEN]) -> Result<Request, ProtoError> {
    let magic = be32(b);
    if magic != REQUEST_MAGIC {
        return Err(ProtoError::Magic {
            what: "request",
            got: u64::from(magic),
        });
    }
    Ok(Request {
        flags: be16(&b[4..]),
        kind: be16(&b[6..]),
        cookie: be64(&b[8..]),
        offset: be64(&b[16..]),
        len: be32(&b[24..]),
    })
}

/// Encode a request (for clients and tests).
pub fn encode_request(r: &Request) -> [u8; REQUEST_LEN] {
    let mut b = [0u8; REQUEST_LEN];
    b[..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&r.flags.to_be_bytes());
    b[6..8].copy_from_slice(&r.kind.to_be_bytes());
    b[8..16].copy_from_slice(&r.cookie.to_be_bytes());
    b[16..24].copy_from_slice(&r.offset.to_be_bytes());
    b[24..].copy_from_slice(&r.len.to_be_bytes());
    b
}

/// A simple reply header.
pub fn simple_reply(error: u32, cookie: u64) -> [u8; SIMPLE_REPLY_LEN] {
    let mut b = [0u8; SIMPLE_REPLY_LEN];
    b[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..].copy_from_slice(&cookie.to_be_bytes());
    b
}

/// A structured reply chunk header, for `len` bytes of payload.
pub fn structured_header(
    flags: u16,
    kind: u16,
    cookie: u64,
    len: u32,
) -> [u8; STRUCTURED_HEADER_LEN] {
    let mut b = [0u8; STRUCTURED_HEADER_LEN];
    b[..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&flags.to_be_bytes());
    b[6..8].copy_from_slice(&kind.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b[16..].copy_from_slice(&len.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header(option: u32, len: u32) -> [u8; OPTION_HEADER_LEN] {
        let mut b = [0u8; OPTION_HEADER_LEN];
        b[..8].copy_from_slice(&IHAVEOPT.to_be_bytes());
        b[8..12].copy_from_slice(&option.to_be_bytes());
        b[12..].copy_from_slice(&len.to_be_bytes());
        b
    }

    #[test]
    fn greeting_and_client_flags() {
        let g = greeting();
        assert_eq!(&g[..8], b"NBDMAGIC");
        assert_eq!(&g[8..16], b"IHAVEOPT");
        assert_eq!(client_flags([0, 0, 0, 3]), Ok(true));
        assert_eq!(client_flags([0, 0, 0, 1]), Ok(false));
        assert!(client_flags([0, 0, 0, 0]).is_err());
        assert!(client_flags([0, 0, 1, 1]).is_err());
    }

    #[test]
    fn options_parse() {
        let h = option_header(&header(opt::GO, 12)).expect("header");
        let mut data = 4u32.to_be_bytes().to_vec();
        data.extend_from_slice(b"disk");
        data.extend_from_slice(&1u16.to_be_bytes());
        data.extend_from_slice(&info::BLOCK_SIZE.to_be_bytes());
        assert_eq!(
            client_option(h, &data),
            Ok(ClientOption::Info {
                go: true,
                name: "disk".into(),
                requests: vec![info::BLOCK_SIZE]
            })
        );
        // A name that runs past the data, and a request count that lies.
        let mut bad = 40u32.to_be_bytes().to_vec();
        bad.extend_from_slice(b"disk\0\0");
        assert_eq!(
            client_option(h, &bad).map_err(|r| r.reply),
            Err(rep::ERR_INVALID)
        );
        let mut lie = data.clone();
        lie[9] = 7;
        assert_eq!(
            client_option(h, &lie).map_err(|r| r.reply),
            Err(rep::ERR_INVALID)
        );
        let list = option_header(&header(opt::LIST, 0)).expect("header");
        assert_eq!(client_option(list, &[]), Ok(ClientOption::List));
        assert!(client_option(list, &[1]).is_err());
        let ext = option_header(&header(opt::EXTENDED_HEADERS, 0)).expect("header");
        assert_eq!(client_option(ext, &[]), Ok(ClientOption::Unsupported(11)));
        let mut wrong = header(opt::LIST, 0);
        wrong[0] = 0;
        assert!(option_header(&wrong).is_err());
    }

    #[test]
    fn requests_round_trip_and_bad_magic_fails() {
        let r = Request {
            flags: cflag::FUA,
            kind: cmd::WRITE,
            cookie: 0xDEAD_BEEF,
            offset: 1 << 40,
            len: 4096,
        };
        assert_eq!(request(&encode_request(&r)), Ok(r));
        let mut b = encode_request(&r);
        b[0] ^= 1;
        assert!(matches!(request(&b), Err(ProtoError::Magic { .. })));
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), option in any::<u32>()) {
            let mut h = [0u8; OPTION_HEADER_LEN];
            let mut r = [0u8; REQUEST_LEN];
            for (i, b) in bytes.iter().take(OPTION_HEADER_LEN).enumerate() { h[i] = *b; }
            for (i, b) in bytes.iter().take(REQUEST_LEN).enumerate() { r[i] = *b; }
            let _ = option_header(&h);
            let _ = request(&r);
            let _ = client_flags([bytes.first().copied().unwrap_or(0), 0, 0, 1]);
            let _ = client_option(OptionHeader { option, len: bytes.len() as u32 }, &bytes);
            for o in [
                opt::INFO, opt::GO, opt::EXPORT_NAME, opt::LIST, opt::STRUCTURED_REPLY,
                opt::LIST_META_CONTEXT, opt::SET_META_CONTEXT, opt::EXTENDED_HEADERS,
            ] {
                let _ = client_option(OptionHeader { option: o, len: bytes.len() as u32 }, &bytes);
            }
            let _ = meta::meta_query(&bytes);
        }
    }
}
