//! elevator's verify format: every kind round-trips, and every fault the
//! format is meant to catch is caught and named.

use elevator_fio::verify::{
    BLOCK_ALIGN, BlockFormat, HEADER_LEN, MAGIC, SpecError, VerifyError, VerifyKind, VerifySpec,
    check, fill,
};

const KINDS: [VerifyKind; 16] = VerifyKind::ALL;

fn spec(kind: VerifyKind, interval: Option<usize>) -> VerifySpec {
    VerifySpec {
        kind,
        pattern: (kind == VerifyKind::Pattern).then(|| b"\xde\xad\xbe\xef\x01".to_vec()),
        seed: 0x5eed,
        interval,
        format: BlockFormat::Elevator,
        dump: None,
    }
}

fn filled(spec: &VerifySpec, len: usize, offset: u64, generation: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    fill(spec, &mut buf, offset, generation).expect("spec fits the buffer");
    buf
}

#[test]
fn every_kind_round_trips_with_and_without_interval() {
    for kind in KINDS {
        for len in [512, 4096, 128 * 1024] {
            for interval in [None, Some(512), Some(4096)] {
                if interval.is_some_and(|i| len % i != 0) {
                    continue;
                }
                let s = spec(kind, interval);
                let buf = filled(&s, len, 1 << 20, 3);
                assert_eq!(
                    check(&s, &buf, 1 << 20, 3),
                    Ok(()),
                    "{kind} len {len} interval {interval:?}"
                );
                assert_eq!(&buf[..8], &MAGIC);
            }
        }
    }
}

#[test]
fn payloads_differ_by_offset_generation_and_seed_and_pattern_repeats() {
    let s = spec(VerifyKind::Crc32c, None);
    let a = filled(&s, 4096, 0, 1);
    assert_eq!(a, filled(&s, 4096, 0, 1), "deterministic");
    assert_ne!(a[HEADER_LEN..], filled(&s, 4096, 4096, 1)[HEADER_LEN..]);
    assert_ne!(a[HEADER_LEN..], filled(&s, 4096, 0, 2)[HEADER_LEN..]);
    let other_seed = VerifySpec { seed: 1, ..s };
    assert_ne!(
        a[HEADER_LEN..],
        filled(&other_seed, 4096, 0, 1)[HEADER_LEN..]
    );

    let p = spec(VerifyKind::Pattern, None);
    let b = filled(&p, 4096, 0, 1);
    let pattern = b"\xde\xad\xbe\xef\x01";
    for (i, &byte) in b.iter().enumerate().skip(HEADER_LEN) {
        assert_eq!(byte, pattern[i % pattern.len()], "byte {i}");
    }
}

#[test]
fn crc32c_catches_a_flipped_bit_in_every_byte_of_a_4k_block() {
    let s = spec(VerifyKind::Crc32c, None);
    let good = filled(&s, 4096, 8192, 7);
    let mut buf = good.clone();
    for pos in 0..buf.len() {
        // Every bit of the header, one bit (turning) of each payload byte.
        let bits: &[u8] = if pos < HEADER_LEN {
            &[0, 1, 2, 3, 4, 5, 6, 7]
        } else {
            &[0]
        };
        for &bit in bits {
            let bit = (bit + pos as u8) % 8;
            buf[pos] ^= 1 << bit;
            let e = check(&s, &buf, 8192, 7).expect_err("flip must be caught");
            assert_eq!(e.offset(), Some(8192), "{e}");
            if pos < 8 {
                assert!(matches!(e, VerifyError::BadMagic { .. }), "byte {pos}: {e}");
            } else if pos < HEADER_LEN {
                assert!(
                    matches!(e, VerifyError::HeaderCorrupt { .. }),
                    "byte {pos}: {e}"
                );
            } else {
                assert!(
                    matches!(
                        e,
                        VerifyError::DigestMismatch {
                            kind: VerifyKind::Crc32c,
                            ..
                        }
                    ),
                    "byte {pos}: {e}"
                );
            }
            buf[pos] ^= 1 << bit;
        }
    }
    assert_eq!(buf, good);
}

#[test]
fn other_digests_and_pattern_catch_flipped_bits() {
    for kind in [
        VerifyKind::Md5,
        VerifyKind::Sha256,
        VerifyKind::Xxhash,
        VerifyKind::Pattern,
    ] {
        let s = spec(kind, Some(1024));
        let mut buf = filled(&s, 4096, 0, 1);
        for pos in (0..buf.len()).step_by(7) {
            let bit = pos % 8;
            buf[pos] ^= 1 << bit;
            let e = check(&s, &buf, 0, 1).expect_err("flip must be caught");
            let interval = (pos / 1024 * 1024) as u64;
            assert_eq!(e.offset(), Some(interval), "{kind} byte {pos}: {e}");
            let in_block = pos % 1024;
            if in_block >= HEADER_LEN {
                match (kind, &e) {
                    (VerifyKind::Pattern, VerifyError::PatternMismatch { at, .. }) => {
                        assert_eq!(*at, in_block, "{e}")
                    }
                    (VerifyKind::Pattern, _) => panic!("pattern byte {pos}: {e}"),
                    (_, VerifyError::DigestMismatch { .. }) => {}
                    _ => panic!("{kind} byte {pos}: {e}"),
                }
            }
            buf[pos] ^= 1 << bit;
        }
        assert_eq!(check(&s, &buf, 0, 1), Ok(()));
    }
}

/// fio's other checksums (issue 29): a flipped bit anywhere in the payload
/// is a digest mismatch naming the kind, in the interval it hit.
#[test]
fn fios_other_checksums_catch_flipped_bits() {
    for kind in VerifyKind::ALL.into_iter().skip(6) {
        let s = spec(kind, Some(1024));
        let mut buf = filled(&s, 4096, 0, 1);
        assert_eq!(check(&s, &buf, 0, 1), Ok(()), "{kind}");
        for pos in (HEADER_LEN..buf.len()).step_by(13) {
            let bit = pos % 8;
            buf[pos] ^= 1 << bit;
            let e = check(&s, &buf, 0, 1).expect_err("flip must be caught");
            let interval = (pos / 1024 * 1024) as u64;
            assert_eq!(e.offset(), Some(interval), "{kind} byte {pos}: {e}");
            if pos % 1024 >= HEADER_LEN {
                match &e {
                    VerifyError::DigestMismatch { kind: k, .. } if *k == kind => {}
                    _ => panic!("{kind} byte {pos}: {e}"),
                }
            }
            buf[pos] ^= 1 << bit;
        }
    }
}

#[test]
fn meta_checks_the_header_but_not_the_payload() {
    let s = spec(VerifyKind::Meta, None);
    let mut buf = filled(&s, 4096, 0, 1);
    buf[HEADER_LEN + 100] ^= 0xFF;
    assert_eq!(check(&s, &buf, 0, 1), Ok(()));
    buf[20] ^= 1;
    assert!(matches!(
        check(&s, &buf, 0, 1),
        Err(VerifyError::HeaderCorrupt { .. })
    ));
}

#[test]
fn misdirected_block_names_the_offset_it_holds() {
    for kind in KINDS {
        let s = spec(kind, None);
        let buf = filled(&s, 4096, 4096 * 5, 2);
        let e = check(&s, &buf, 4096 * 9, 2).expect_err("misdirected");
        assert_eq!(
            e,
            VerifyError::WrongOffset {
                offset: 4096 * 9,
                length: 4096,
                found: 4096 * 5
            }
        );
        let msg = e.to_string();
        assert!(
            msg.contains("misdirected") && msg.contains("36864") && msg.contains("20480"),
            "{msg}"
        );
    }
}

#[test]
fn an_interval_out_of_place_is_caught_in_its_interval() {
    let s = spec(VerifyKind::Sha256, Some(512));
    let mut buf = filled(&s, 4096, 0, 1);
    let other = filled(&s, 512, 65536, 1);
    buf[1536..2048].copy_from_slice(&other);
    assert_eq!(
        check(&s, &buf, 0, 1),
        Err(VerifyError::WrongOffset {
            offset: 1536,
            length: 512,
            found: 65536
        })
    );
}

#[test]
fn older_and_newer_generations_are_caught() {
    for kind in KINDS {
        let s = spec(kind, None);
        let buf = filled(&s, 4096, 0, 4);
        let e = check(&s, &buf, 0, 5).expect_err("stale");
        assert_eq!(
            e,
            VerifyError::WrongGeneration {
                offset: 0,
                length: 4096,
                expected: 5,
                found: 4
            }
        );
        assert!(e.to_string().contains("stale data"), "{e}");
        let e = check(&s, &buf, 0, 3).expect_err("newer");
        assert!(e.to_string().contains("newer"), "{e}");
    }
}

#[test]
fn zeros_are_a_bad_magic() {
    for kind in KINDS {
        let s = spec(kind, Some(512));
        let e = check(&s, &[0u8; 4096], 4096, 1).expect_err("never written");
        assert_eq!(
            e,
            VerifyError::BadMagic {
                offset: 4096,
                length: 512,
                found: [0; 8]
            }
        );
        let msg = e.to_string();
        assert!(
            msg.contains("bad magic") && msg.contains("offset 4096, length 512"),
            "{msg}"
        );
    }
}

#[test]
fn kind_length_and_seed_of_the_writer_are_checked() {
    let crc = spec(VerifyKind::Crc32c, None);
    let buf = filled(&crc, 4096, 0, 1);
    let e = check(&spec(VerifyKind::Md5, None), &buf, 0, 1).expect_err("kind");
    assert!(matches!(e, VerifyError::WrongKind { found: 1, .. }), "{e}");
    assert!(e.to_string().contains("verify=crc32c"), "{e}");

    let e = check(&spec(VerifyKind::Crc32c, Some(2048)), &buf, 0, 1).expect_err("interval");
    assert_eq!(
        e,
        VerifyError::WrongLength {
            offset: 0,
            length: 2048,
            found: 4096
        }
    );

    let other = VerifySpec {
        seed: 99,
        ..crc.clone()
    };
    let e = check(&other, &buf, 0, 1).expect_err("seed");
    assert!(
        matches!(
            e,
            VerifyError::WrongSeed {
                found: 0x5eed,
                expected: 99,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn mismatch_messages_show_what_differs() {
    let s = spec(VerifyKind::Crc32c, None);
    let mut buf = filled(&s, 4096, 4096, 1);
    buf[1000] ^= 4;
    let msg = check(&s, &buf, 4096, 1).expect_err("digest").to_string();
    assert!(
        msg.starts_with("verify: crc32c mismatch at offset 4096, length 4096: header holds 0x"),
        "{msg}"
    );
    assert!(msg.contains("data gives 0x"), "{msg}");

    let s = spec(VerifyKind::Md5, None);
    let mut buf = filled(&s, 4096, 0, 1);
    buf[4095] ^= 1;
    let msg = check(&s, &buf, 0, 1).expect_err("md5").to_string();
    let hexes: Vec<&str> = msg
        .split_whitespace()
        .filter(|w| {
            w.len() >= 32
                && w.trim_end_matches(',')
                    .chars()
                    .all(|c| c.is_ascii_hexdigit())
        })
        .collect();
    assert_eq!(hexes.len(), 2, "{msg}");

    let s = spec(VerifyKind::Pattern, None);
    let mut buf = filled(&s, 4096, 8192, 1);
    buf[100] = 0x42;
    let e = check(&s, &buf, 8192, 1).expect_err("pattern");
    assert_eq!(
        e,
        VerifyError::PatternMismatch {
            offset: 8192,
            length: 4096,
            at: 100,
            expected: 0xde,
            found: 0x42
        }
    );
    assert!(e.to_string().contains("device byte 8292"), "{e}");
}

#[test]
fn pattern_mismatch_is_the_first_differing_byte_for_any_pattern_length() {
    for plen in [1, 2, 3, 7, 8, 79, 80, 81, 512, 600, 5000] {
        let pattern: Vec<u8> = (0..plen).map(|i| (i * 37 + 11) as u8).collect();
        let s = VerifySpec {
            pattern: Some(pattern.clone()),
            ..VerifySpec::new(VerifyKind::Pattern, 1)
        };
        let good = filled(&s, 4096, 0, 0);
        assert_eq!(check(&s, &good, 0, 0), Ok(()), "plen {plen}");
        for pos in [HEADER_LEN, HEADER_LEN + 1, 1000, 2047, 4095] {
            let mut buf = good.clone();
            buf[pos] = !buf[pos];
            let later = pos + (4096 - pos) / 2;
            if later > pos {
                buf[later] ^= 0x10; // a later fault too: the first is reported
            }
            match check(&s, &buf, 0, 0) {
                Err(VerifyError::PatternMismatch {
                    at,
                    expected,
                    found,
                    ..
                }) => {
                    assert_eq!(at, pos, "plen {plen}");
                    assert_eq!(expected, pattern[pos % plen]);
                    assert_eq!(found, !pattern[pos % plen]);
                }
                other => panic!("plen {plen} pos {pos}: {other:?}"),
            }
        }
    }
}

#[test]
fn specs_that_do_not_fit_are_refused() {
    let s = spec(VerifyKind::Crc32c, None);
    let mut small = [0u8; 511];
    assert_eq!(
        fill(&s, &mut small, 0, 0),
        Err(SpecError::BadLength { len: 511 })
    );
    assert_eq!(
        check(&s, &[], 0, 0),
        Err(VerifyError::Spec(SpecError::BadLength { len: 0 }))
    );
    let mut buf = vec![0u8; 4096];
    let s = spec(VerifyKind::Crc32c, Some(1000));
    assert_eq!(
        fill(&s, &mut buf, 0, 0),
        Err(SpecError::BadInterval { interval: 1000 })
    );
    let s = spec(VerifyKind::Crc32c, Some(1536));
    assert_eq!(
        fill(&s, &mut buf, 0, 0),
        Err(SpecError::IntervalDoesNotDivide {
            interval: 1536,
            len: 4096
        })
    );
    for pattern in [None, Some(Vec::new())] {
        let s = VerifySpec {
            pattern,
            ..VerifySpec::new(VerifyKind::Pattern, 0)
        };
        assert_eq!(fill(&s, &mut buf, 0, 0), Err(SpecError::NoPattern));
    }
    assert_eq!(spec(VerifyKind::Md5, Some(512)).interval_len(4096), Ok(512));
    assert_eq!(BLOCK_ALIGN, 512);
}

#[test]
fn parse_accepts_fio_names_and_refuses_the_rest_by_name() {
    let ok = [
        ("crc32c", VerifyKind::Crc32c),
        ("crc32c-intel", VerifyKind::Crc32c),
        ("md5", VerifyKind::Md5),
        ("sha256", VerifyKind::Sha256),
        ("xxhash", VerifyKind::Xxhash),
        ("pattern", VerifyKind::Pattern),
        ("meta", VerifyKind::Meta),
        ("MD5", VerifyKind::Md5),
    ];
    for (name, kind) in ok {
        assert_eq!(VerifyKind::parse(name), Ok(kind), "{name}");
        assert_eq!(VerifyKind::parse_option(name), Ok(Some(kind)), "{name}");
    }
    for kind in KINDS {
        assert_eq!(VerifyKind::parse(kind.name()), Ok(kind));
        assert_eq!(kind.to_string(), kind.name());
    }
    for off in ["null", "0"] {
        assert_eq!(VerifyKind::parse_option(off), Ok(None));
        let e = VerifyKind::parse(off).expect_err("no kind");
        assert!(e.contains("turns verification off"), "{e}");
    }
    // fio's other methods (issue 29): every one accepted but pattern_no_hdr,
    // refused by name with why.
    for (name, kind) in [
        ("crc64", VerifyKind::Crc64),
        ("crc32", VerifyKind::Crc32),
        ("crc16", VerifyKind::Crc16),
        ("crc7", VerifyKind::Crc7),
        ("sha1", VerifyKind::Sha1),
        ("sha512", VerifyKind::Sha512),
        ("sha3-224", VerifyKind::Sha3_224),
        ("sha3-256", VerifyKind::Sha3_256),
        ("sha3-384", VerifyKind::Sha3_384),
        ("SHA3-512", VerifyKind::Sha3_512),
    ] {
        assert_eq!(VerifyKind::parse(name), Ok(kind), "{name}");
    }
    let e = VerifyKind::parse("pattern_no_hdr").expect_err("pattern_no_hdr");
    assert!(
        e.starts_with(
            "verify=pattern_no_hdr is not implemented: elevator's blocks always carry a header"
        ),
        "{e}"
    );
    for name in ["sha224", "sha384"] {
        let e = VerifyKind::parse(name).expect_err(name);
        assert!(
            e.contains("unknown verify method") && e.contains("sha3-224"),
            "{e}"
        );
    }
    for name in ["", "md6", "crc32c-foo"] {
        let e = VerifyKind::parse_option(name).expect_err(name);
        assert!(
            e.contains("unknown verify method") && e.contains("crc32c-intel"),
            "{e}"
        );
    }
}
