//! The device-spec parsers on arbitrary text: a disk model's spec
//! (`hdd-7200,rpm=5400`, `raid0-8x-sas-10k,member=ssd-sata`) and a real
//! device's (`file:PATH,...`, `mem:SIZE,...`, which only parses: nothing is
//! opened). Neither may panic; a model spec that parses must validate or
//! refuse cleanly, and one that validates must build a model whose limits
//! can be read.
//!
//! Run: `cargo +nightly fuzz run device_spec` (from the repository root).

#![no_main]

use elevator_sim::device::ModelSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(spec) = ModelSpec::parse(&text) {
        let _ = spec.params();
        if spec.validate().is_ok() {
            if let Ok(model) = spec.build() {
                let _ = model.limits();
                let _ = model.describe();
            }
        }
    }
    let _ = elevator_io::DeviceSpec::parse(&text);
});
