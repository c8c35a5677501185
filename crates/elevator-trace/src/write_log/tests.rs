use super::*;

fn sample() -> Vec<u8> {
    let header = LogHeader {
        has_data: true,
        capacity: 1024,
        block_size: 512,
    };
    let mut w = Writer::new(Vec::new(), header).unwrap();
    let data = vec![7u8; 1024];
    w.append(
        Kind::Write,
        FLAG_DATA,
        8,
        2,
        10,
        &[&data[..512], &data[512..]],
    )
    .unwrap();
    w.append(Kind::Flush, 0, 0, 0, 20, &[]).unwrap();
    w.mark("fsynced a", 30).unwrap();
    w.append(Kind::Discard, 0, 100, 8, 40, &[]).unwrap();
    w.into_inner().unwrap()
}

/// What a log read gave: each record's kind, sector and payload.
type Read = Vec<(Kind, u64, Vec<u8>)>;

fn read_all(bytes: &[u8]) -> (Read, Option<WriteLogError>) {
    let mut r = match Reader::new(bytes) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut out = Vec::new();
    loop {
        match r.next_record() {
            Ok(Some(rec)) => out.push((rec.head.kind, rec.head.sector, rec.payload.to_vec())),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

#[test]
fn round_trip() {
    let (recs, err) = read_all(&sample());
    assert!(err.is_none(), "{err:?}");
    assert_eq!(recs.len(), 4);
    assert_eq!(recs[0].0, Kind::Write);
    assert_eq!(recs[0].2, vec![7u8; 1024]);
    assert_eq!(recs[1].0, Kind::Flush);
    assert_eq!(recs[2].2, b"fsynced a");
    assert_eq!((recs[3].0, recs[3].1), (Kind::Discard, 100));
}

#[test]
fn truncation_names_the_record_and_keeps_the_prefix() {
    let bytes = sample();
    // Where each record ends.
    let ends = [HEADER_LEN, HEADER_LEN + 48 + 1024];
    let ends = [
        ends[0],
        ends[1],
        ends[1] + 48,
        ends[1] + 96 + 9,
        ends[1] + 144 + 9,
    ];
    assert_eq!(ends[4], bytes.len());
    for cut in HEADER_LEN..bytes.len() {
        let (recs, err) = read_all(&bytes[..cut]);
        let whole = recs.len();
        match err {
            None => assert_eq!(cut, ends[whole]),
            Some(WriteLogError::Truncated { record, .. }) => assert_eq!(record as usize, whole),
            Some(e) => panic!("cut at {cut}: {e}"),
        }
    }
}

#[test]
fn every_flipped_byte_is_caught() {
    let bytes = sample();
    for at in 0..bytes.len() {
        let mut b = bytes.clone();
        b[at] ^= 0x40;
        let (recs, err) = read_all(&b);
        let err = err.unwrap_or_else(|| panic!("flip at {at} went unnoticed"));
        if at >= HEADER_LEN {
            assert!(err.valid_bytes().is_some(), "{err}");
            assert!(recs.len() < 4);
            assert!(
                err.to_string().contains(&format!("record {}", recs.len())),
                "{err}"
            );
        }
    }
}

#[test]
fn not_a_log() {
    let Err(e) = Reader::new(&b"hello"[..]) else {
        panic!("read")
    };
    assert!(e.to_string().contains("not an elevator write log"), "{e}");
}

/// A sample log whose header is changed by `edit` (its checksum made
/// right again), and the record after it: what reading it says.
fn with_header(edit: impl Fn(&mut [u8; HEADER_LEN])) -> Result<usize, WriteLogError> {
    let mut bytes = sample();
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(&bytes[..HEADER_LEN]);
    edit(&mut h);
    let crc = crc32fast::hash(&h[0..60]);
    h[60..64].copy_from_slice(&crc.to_le_bytes());
    bytes[..HEADER_LEN].copy_from_slice(&h);
    let mut r = Reader::new(&bytes[..])?;
    let mut n = 0;
    while r.next_record()?.is_some() {
        n += 1;
    }
    Ok(n)
}

#[test]
fn header_fields_out_of_range_are_refused_by_name() {
    assert_eq!(with_header(|_| {}).unwrap(), 4);
    for (size, ok) in [
        (0u32, false),
        (1, false),
        (256, false),
        (513, false),
        (1 << 31, false),
        (u32::MAX, false),
        (512, true),
        (4096, true),
        (65536, true),
        (1 << 17, false),
    ] {
        let r = with_header(|h| h[24..28].copy_from_slice(&size.to_le_bytes()));
        match (r, ok) {
            (Ok(_), true) => {}
            (Err(e), false) => {
                let text = e.to_string();
                assert!(
                    text.contains(&format!("logical block size {size}")),
                    "{size}: {text}"
                );
            }
            (r, _) => panic!("block size {size}: {r:?}"),
        }
    }
    for at in 28..60 {
        let e = with_header(|h| h[at] = 1).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("reserved bytes 28..60 (byte {at} is 1)")),
            "{e}"
        );
    }
    let e = with_header(|h| h[12] = 0x81).unwrap_err();
    assert!(e.to_string().contains("flags 0x81"), "{e}");
    let e = with_header(|h| h[16..24].copy_from_slice(&(1u64 << 55).to_le_bytes())).unwrap_err();
    assert!(
        e.to_string().contains("capacity 36028797018963968 sectors"),
        "{e}"
    );
}

#[test]
fn record_reserved_bytes_and_flush_sectors_are_refused_by_name() {
    let good = sample();
    // The flush is the second record: at HEADER_LEN + 48 + 1024.
    let at = HEADER_LEN + 48 + 1024;
    for (byte, why) in [
        (6, "reserved bytes 6..8"),
        (7, "reserved bytes 6..8"),
        (40, "reserved bytes 40..44"),
        (43, "reserved bytes 40..44"),
        (16, "a flush names no sectors"),
        (24, "a flush names no sectors"),
    ] {
        let mut b = good.clone();
        b[at + byte] = 1;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&b[at..at + 44]);
        let sum = crc.finalize();
        b[at + 44..at + 48].copy_from_slice(&sum.to_le_bytes());
        let (recs, err) = read_all(&b);
        assert_eq!(recs.len(), 1);
        let err = err.expect("refused");
        assert!(
            err.to_string().starts_with("record 1 at byte 1136: "),
            "{err}"
        );
        assert!(err.to_string().contains(why), "{err}");
    }
}
