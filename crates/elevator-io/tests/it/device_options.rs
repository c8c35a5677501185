//! The device-spec options `elevator devices` lists are the ones the
//! parser takes: every option of [`FILE_OPTIONS`], [`MEM_OPTIONS`] and
//! [`FAULT_OPTIONS`] parses and changes the spec (so none is listed but
//! ignored), and the parser takes no name outside them (it looks each up
//! in its table first); a misspelt option gets the nearest name.

use elevator_io::DeviceSpec;
use elevator_io::fault::FAULT_OPTIONS;
use elevator_io::spec::{FILE_OPTIONS, MEM_OPTIONS};

/// A value of each option, as a user writes it.
fn example(name: &str) -> &'static str {
    match name {
        "queue_depth" => "8",
        "ro" => "1",
        "lbs" => "4096",
        "huge_pages" => "1",
        "copy" => "0",
        "host_reserve" => "1g",
        "fail_sectors" | "lse_sectors" => "8-16",
        "fail_seed" => "7",
        "spike_ms" | "timeout_ms" => "5",
        "vanish_at" => "2s",
        n if n.ends_with("_rate") => "0.1",
        other => panic!("option {other} has no example here: add one"),
    }
}

fn check_each(base: &str, table: &[(&str, &str, &str)]) {
    let plain = DeviceSpec::parse(base).unwrap_or_else(|e| panic!("{base}: {e}"));
    for (name, default, meaning) in table {
        assert!(
            !default.is_empty() && !meaning.is_empty(),
            "{name}: no default or meaning"
        );
        let spec = format!("{base},{name}={}", example(name));
        let parsed = DeviceSpec::parse(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_ne!(parsed, plain, "{spec}: parsed, but changed nothing");
    }
}

#[test]
fn every_listed_option_is_taken_and_changes_the_spec() {
    check_each("file:/var/tmp/elevator-spec-test", &FILE_OPTIONS);
    check_each("mem:1m", &MEM_OPTIONS);
    check_each("mem:1m", &FAULT_OPTIONS);
    check_each("file:/var/tmp/elevator-spec-test", &FAULT_OPTIONS);
}

#[test]
fn options_of_the_other_kind_or_misspelt_are_refused_with_the_list() {
    let e = DeviceSpec::parse("file:/x,lbs=4096")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown option 'lbs=4096'"), "{e}");
    assert!(e.contains("queue_depth, ro, fail_rate"), "{e}");
    let e = DeviceSpec::parse("mem:1g,queue_dept=8")
        .unwrap_err()
        .to_string();
    assert!(e.contains("(did you mean queue_depth?)"), "{e}");
    let e = DeviceSpec::parse("mem:1g,fail_rat=0.1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("(did you mean fail_rate?)"), "{e}");
}

#[test]
fn a_real_device_without_its_size_or_path_says_what_it_needs() {
    let e = DeviceSpec::parse("mem").unwrap_err().to_string();
    assert!(e.contains("mem needs a size: mem:SIZE, e.g. mem:1g"), "{e}");
    let e = DeviceSpec::parse("mem,queue_depth=4")
        .unwrap_err()
        .to_string();
    assert!(e.contains("mem needs a size"), "{e}");
    let e = DeviceSpec::parse("file").unwrap_err().to_string();
    assert!(e.contains("file needs a path: file:PATH"), "{e}");
    let e = DeviceSpec::parse("file:").unwrap_err().to_string();
    assert!(e.contains("file: needs a path"), "{e}");
}
