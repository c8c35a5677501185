//! Checking the device side of the tag protocol in tests: a [`TagLedger`]
//! that a wrapping test device keeps (every tag it reports was in flight,
//! once). The methods such a wrapper hands to its inner device unchanged
//! are `elevator_core::forward_device!`'s.

use std::collections::HashMap;

use elevator_core::DeviceIo;

/// The tags a device has in flight (with their bytes), and how many I/Os it
/// was given and reported.
#[derive(Debug, Default)]
pub struct TagLedger {
    in_flight: HashMap<u32, u64>,
    /// I/Os submitted.
    pub submitted: u64,
    /// I/Os reported complete.
    pub completed: u64,
    /// Tags submitted while in flight, or reported while not.
    pub twice: u64,
}

impl TagLedger {
    /// Note that `io` was submitted; `false` if its tag was in flight.
    pub fn submit(&mut self, io: &DeviceIo) -> bool {
        self.submitted += 1;
        let fresh = self.in_flight.insert(io.tag, io.bytes()).is_none();
        if !fresh {
            self.twice += 1;
        }
        fresh
    }

    /// Note that `tag` was reported complete: the bytes it was submitted
    /// with, or `None` if it was not in flight.
    pub fn complete(&mut self, tag: u32) -> Option<u64> {
        self.completed += 1;
        let bytes = self.in_flight.remove(&tag);
        if bytes.is_none() {
            self.twice += 1;
        }
        bytes
    }

    /// How many tags are in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}
