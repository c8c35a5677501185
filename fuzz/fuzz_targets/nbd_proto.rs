//! Every parser in `elevator_nbd::proto` on arbitrary bytes: none may panic,
//! and what they accept must be consistent with the bytes (requests
//! re-encode to themselves, an `INFO`/`GO` accounts for every byte of its
//! data, as does a metadata context query, refusals are error replies).
//!
//! Run: `cargo +nightly fuzz run nbd_proto` (from the repository root).

#![no_main]

use elevator_nbd::proto::{
    self, ClientOption, OPTION_HEADER_LEN, OptionHeader, REQUEST_LEN, opt, rep,
};
use libfuzzer_sys::fuzz_target;

/// Every option number the server knows of, and some it does not.
const OPTIONS: [u32; 13] = [
    opt::EXPORT_NAME,
    opt::ABORT,
    opt::LIST,
    4,
    opt::STARTTLS,
    opt::INFO,
    opt::GO,
    opt::STRUCTURED_REPLY,
    opt::LIST_META_CONTEXT,
    opt::SET_META_CONTEXT,
    opt::EXTENDED_HEADERS,
    0,
    u32::MAX,
];

fn check_option(option: u32, data: &[u8]) {
    let h = OptionHeader {
        option,
        len: data.len() as u32,
    };
    match proto::client_option(h, data) {
        Ok(ClientOption::ExportName(name)) => {
            assert_eq!(option, opt::EXPORT_NAME);
            assert_eq!(name.as_bytes(), data);
        }
        Ok(ClientOption::Abort) => assert_eq!(option, opt::ABORT),
        Ok(ClientOption::List) => assert!(option == opt::LIST && data.is_empty()),
        Ok(ClientOption::StructuredReply) => {
            assert!(option == opt::STRUCTURED_REPLY && data.is_empty())
        }
        Ok(ClientOption::Info { go, name, requests }) => {
            assert!(option == opt::INFO || option == opt::GO);
            assert_eq!(go, option == opt::GO);
            // Re-encoding gives back exactly the data.
            let mut again = (name.len() as u32).to_be_bytes().to_vec();
            again.extend_from_slice(name.as_bytes());
            again.extend_from_slice(&(requests.len() as u16).to_be_bytes());
            for r in &requests {
                again.extend_from_slice(&r.to_be_bytes());
            }
            assert_eq!(again, data);
        }
        Ok(ClientOption::ListMetaContext(q)) | Ok(ClientOption::SetMetaContext(q)) => {
            assert!(option == opt::LIST_META_CONTEXT || option == opt::SET_META_CONTEXT);
            // Re-encoding gives back exactly the data.
            assert_eq!(proto::meta::encode_meta_query(&q), data);
        }
        Ok(ClientOption::Unsupported(o)) => {
            assert_eq!(o, option);
            assert!(
                ![
                    opt::EXPORT_NAME,
                    opt::ABORT,
                    opt::LIST,
                    opt::INFO,
                    opt::GO,
                    opt::STRUCTURED_REPLY,
                    opt::LIST_META_CONTEXT,
                    opt::SET_META_CONTEXT,
                ]
                .contains(&o),
                "a known option parsed as unsupported"
            );
        }
        Err(refusal) => {
            assert!(
                refusal.reply & 0x8000_0000 != 0,
                "a refusal is an error reply"
            );
            assert_eq!(refusal.reply, rep::ERR_INVALID);
            assert!(!refusal.message.is_empty());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // The client's flags.
    if let Some(f) = data.get(..4) {
        let f: [u8; 4] = f.try_into().unwrap();
        if let Ok(no_zeroes) = proto::client_flags(f) {
            let v = u32::from_be_bytes(f);
            assert!(v & proto::CLIENT_FIXED_NEWSTYLE != 0);
            assert_eq!(no_zeroes, v & proto::CLIENT_NO_ZEROES != 0);
        }
    }

    // An option header, then the option it announces with what follows
    // (cut to the announced length, as the server reads it).
    if let Some(h) = data.get(..OPTION_HEADER_LEN) {
        let h: &[u8; OPTION_HEADER_LEN] = h.try_into().unwrap();
        if let Ok(header) = proto::option_header(h) {
            assert_eq!(&h[..8], &proto::IHAVEOPT.to_be_bytes());
            let rest = &data[OPTION_HEADER_LEN..];
            let body = &rest[..rest.len().min(header.len as usize)];
            check_option(header.option, body);
        }
    }

    // The whole input as the data of every option.
    for option in OPTIONS {
        check_option(option, data);
    }
    // And as the data of an option numbered by its first bytes.
    if let Some(o) = data.get(..4) {
        check_option(u32::from_be_bytes(o.try_into().unwrap()), &data[4..]);
    }

    // Requests, at every offset a stream might be cut at.
    for start in 0..data.len().min(8) {
        if let Some(r) = data.get(start..start + REQUEST_LEN) {
            let r: &[u8; REQUEST_LEN] = r.try_into().unwrap();
            if let Ok(req) = proto::request(r) {
                assert_eq!(
                    &proto::encode_request(&req),
                    r,
                    "a request re-encodes to its bytes"
                );
                // The reply encoders take anything the request holds.
                let _ = proto::simple_reply(u32::from(req.flags), req.cookie);
                let _ = proto::structured_header(req.flags, req.kind, req.cookie, req.len);
                let _ = proto::meta::offset_hole(req.flags, req.cookie, req.offset, req.len);
                let _ = proto::meta::block_status(
                    req.flags,
                    req.cookie,
                    req.len,
                    &[(req.len, u32::from(req.kind))],
                );
            }
        }
    }
});
