use super::*;

fn sample() -> Vec<u8> {
    let header = LogHeader {
        has_data: true,
        capacity: 1024,
        block_size: 512,
    };
    let mut w = Writer::new(Vec::new(), header).unwrap();
    let data = vec![7u8; 1024];
    w.append(Kind::Write, FLAG_DATA, 8, 2, 10, &[&data[..512], &data[512..]])
        .unwrap();
    w.append(Kind::Flush, 0, 0, 0, 20, &[]).unwrap();
    w.mark("fsynced a", 30).unwrap();
    w.append(Kind::Discard, 0, 100, 8, 40, &[]).unwrap();
    w.into_inner().unwrap()
}

fn read_all(bytes: &[u8]) -> (Vec<(Kind, u64, Vec<u8>)>, Option<WriteLogError>) {
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
    let ends = [ends[0], ends[1], ends[1] + 48, ends[1] + 96 + 9, ends[1] + 144 + 9];
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
            assert!(err.to_string().contains(&format!("record {}", recs.len())), "{err}");
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
