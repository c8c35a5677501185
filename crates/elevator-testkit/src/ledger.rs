//! Checking the device side of the tag protocol in tests: a [`TagLedger`]
//! that a wrapping test device keeps (every tag it reports was in flight,
//! once), and [`pass_through_device!`](crate::pass_through_device), the
//! `Device` methods such a wrapper hands to its inner device unchanged.

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

/// Inside an `impl Device for Wrapper`, the methods named (`describe`,
/// `limits`, `queue_depth`, `rotational`, `next_completion`, `outstanding`,
/// `stats`, `record_heads`, `take_heads`) passed to the field `inner`
/// unchanged: `pass_through_device!(inner: describe, limits, stats);`.
#[macro_export]
macro_rules! pass_through_device {
    ($inner:ident: $($method:ident),+ $(,)?) => {
        $( $crate::pass_through_device!(@one $inner $method); )+
    };
    (@one $inner:ident describe) => {
        fn describe(&self) -> String { self.$inner.describe() }
    };
    (@one $inner:ident limits) => {
        fn limits(&self) -> $crate::__core::Limits { self.$inner.limits() }
    };
    (@one $inner:ident queue_depth) => {
        fn queue_depth(&self) -> u32 { self.$inner.queue_depth() }
    };
    (@one $inner:ident rotational) => {
        fn rotational(&self) -> bool { self.$inner.rotational() }
    };
    (@one $inner:ident next_completion) => {
        fn next_completion(&self) -> Option<$crate::__core::Nanos> {
            self.$inner.next_completion()
        }
    };
    (@one $inner:ident outstanding) => {
        fn outstanding(&self) -> u32 { self.$inner.outstanding() }
    };
    (@one $inner:ident stats) => {
        fn stats(&self) -> $crate::__core::DeviceStats { self.$inner.stats() }
    };
    (@one $inner:ident record_heads) => {
        fn record_heads(&mut self, cap: usize) { self.$inner.record_heads(cap) }
    };
    (@one $inner:ident take_heads) => {
        fn take_heads(&mut self, out: &mut Vec<$crate::__core::HeadSample>) -> u64 {
            self.$inner.take_heads(out)
        }
    };
}
