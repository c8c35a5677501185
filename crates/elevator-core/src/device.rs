//! The device trait: what sits under the queue, simulated or real.
//!
//! A device takes dispatched requests ([`DeviceIo`]) and reports each one's
//! end exactly once. Time is passed in, as everywhere in the core: a simulated
//! device computes when each I/O finishes on the virtual clock and says when
//! its next completion is due ([`Device::next_completion`]); a real device
//! (io_uring) reports what the kernel has finished by `now`.
//!
//! Protocol, which engines keep:
//! - at most [`Device::queue_depth`] I/Os are outstanding at once;
//! - calls come in non-decreasing time: before submitting at time `t`, the
//!   engine collects completions up to `t` with [`Device::complete`];
//! - every submitted I/O is reported once by `complete`, with its `tag`.
//!
//! A device that wraps another (faults, a write log) passes most calls on:
//! [`forward_device!`](crate::forward_device) writes those methods.

use crate::bio::{BioFlags, Nanos, Op, Sector};
use crate::limits::Limits;
use crate::queue::{DeviceShape, Outcome};

/// One I/O for the device: a dispatched request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceIo {
    /// The caller's handle, returned with the completion.
    pub tag: u32,
    /// Operation.
    pub op: Op,
    /// First sector.
    pub sector: Sector,
    /// Length in sectors (0 for a flush).
    pub sectors: u32,
    /// Flags that change what the device does (FUA, PREFLUSH).
    pub flags: BioFlags,
}

impl DeviceIo {
    /// Length in bytes.
    #[inline]
    pub fn bytes(&self) -> u64 {
        u64::from(self.sectors) << crate::bio::SECTOR_SHIFT
    }
}

/// Where a device's time went, for utilisation figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// I/Os completed.
    pub ios: u64,
    /// Nanoseconds with at least one I/O outstanding (Linux `io_ticks`).
    pub busy_ns: Nanos,
    /// Nanoseconds spent positioning (seek, rotation, head switch), if modelled.
    pub positioning_ns: Nanos,
    /// Nanoseconds spent moving data to or from the media, if modelled.
    pub transfer_ns: Nanos,
}

impl DeviceStats {
    /// Add another handle's figures (several hardware contexts on one
    /// device, or several devices, reported as one). Busy time adds up, so
    /// it can exceed the wall time when handles overlap.
    pub fn merge(&mut self, other: &DeviceStats) {
        self.ios += other.ios;
        self.busy_ns += other.busy_ns;
        self.positioning_ns += other.positioning_ns;
        self.transfer_ns += other.transfer_ns;
    }
}

/// Where the heads of a disk were at one moment: one point of a head-position
/// plot (cylinder against time).
///
/// A model records a sample when a media access begins (the first sector of a
/// request, a write-cache destage or a read-ahead comes under the head: the
/// seek and rotational wait are over) and when one ends on another cylinder
/// than it began. Times are the model's own virtual times, so samples come in
/// non-decreasing time order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadSample {
    /// When, on the device's clock (ns).
    pub time: Nanos,
    /// The cylinder under the heads (0 = outermost).
    pub cylinder: u32,
}

/// A block device under the queue.
pub trait Device {
    /// What it is, in a few words (model, size).
    fn describe(&self) -> String;

    /// Its limits: capacity, logical block size, largest request, chunk
    /// boundaries.
    fn limits(&self) -> Limits;

    /// How many I/Os it takes at once.
    fn queue_depth(&self) -> u32;

    /// Whether it has moving parts (Linux `rotational`): schedulers that idle
    /// use it for their defaults.
    fn rotational(&self) -> bool;

    /// What the device tells the queue about itself, to build one for it
    /// ([`Queue::for_device`](crate::Queue::for_device)): its limits, depth
    /// and whether it rotates.
    fn shape(&self) -> DeviceShape {
        DeviceShape {
            limits: self.limits(),
            queue_depth: self.queue_depth(),
            rotational: self.rotational(),
        }
    }

    /// Accept `io` at time `now`.
    fn submit(&mut self, io: DeviceIo, now: Nanos);

    /// When the next submitted I/O will complete, if one is outstanding and
    /// the device can tell (a simulated device always can; a real one
    /// answers `None`).
    fn next_completion(&self) -> Option<Nanos>;

    /// Report, in completion order, every I/O that has completed by `now`.
    fn complete(&mut self, now: Nanos, done: &mut dyn FnMut(u32, Outcome));

    /// I/Os submitted and not yet reported.
    fn outstanding(&self) -> u32;

    /// Accumulated figures.
    fn stats(&self) -> DeviceStats;

    /// Start recording where the heads go, keeping at most `cap` samples
    /// (later ones are dropped and counted by the model). Devices without
    /// heads, and real devices, ignore it (the default).
    fn record_heads(&mut self, cap: usize) {
        let _ = cap;
    }

    /// Move the head samples recorded so far to the end of `out`, in time
    /// order, and return how many were dropped (the cap reached) since the
    /// last call. The cap bounds all the samples of a recording, taken or
    /// not.
    /// The default records nothing.
    fn take_heads(&mut self, out: &mut Vec<HeadSample>) -> u64 {
        let _ = out;
        0
    }
}

/// Writes [`Device`] methods that pass the call on, unchanged, to a field
/// of the device (a wrapper's inner device), so that a wrapper writes out
/// only the methods it changes:
///
/// ```
/// # use elevator_core::{Device, DeviceIo, Nanos, Outcome};
/// struct Wrapper<D> { inner: D, seen: u64 }
/// impl<D: Device> Device for Wrapper<D> {
///     elevator_core::forward_device!(inner: describe, limits, queue_depth, rotational,
///         next_completion, complete, outstanding, stats, record_heads, take_heads);
///     fn submit(&mut self, io: DeviceIo, now: Nanos) {
///         self.seen += 1;
///         self.inner.submit(io, now)
///     }
/// }
/// ```
///
/// Each name is one of the trait's methods; the field only needs methods of
/// those names and signatures (it may be a device, or a ring with the same
/// calls).
#[macro_export]
macro_rules! forward_device {
    ($inner:ident: $($method:ident),+ $(,)?) => {
        $($crate::forward_device!(@one $inner $method);)+
    };
    (@one $i:ident describe) => {
        $crate::forward_method!($i: fn describe(&self) -> ::std::string::String);
    };
    (@one $i:ident limits) => {
        $crate::forward_method!($i: fn limits(&self) -> $crate::Limits);
    };
    (@one $i:ident queue_depth) => {
        $crate::forward_method!($i: fn queue_depth(&self) -> u32);
    };
    (@one $i:ident rotational) => {
        $crate::forward_method!($i: fn rotational(&self) -> bool);
    };
    (@one $i:ident submit) => {
        $crate::forward_method!($i: fn submit(&mut self, io: $crate::DeviceIo, now: $crate::Nanos));
    };
    (@one $i:ident next_completion) => {
        $crate::forward_method!($i: fn next_completion(&self) -> ::std::option::Option<$crate::Nanos>);
    };
    (@one $i:ident complete) => {
        $crate::forward_method!($i: fn complete(
            &mut self,
            now: $crate::Nanos,
            done: &mut dyn FnMut(u32, $crate::Outcome),
        ));
    };
    (@one $i:ident outstanding) => {
        $crate::forward_method!($i: fn outstanding(&self) -> u32);
    };
    (@one $i:ident stats) => {
        $crate::forward_method!($i: fn stats(&self) -> $crate::DeviceStats);
    };
    (@one $i:ident record_heads) => {
        $crate::forward_method!($i: fn record_heads(&mut self, cap: usize));
    };
    (@one $i:ident take_heads) => {
        $crate::forward_method!($i: fn take_heads(
            &mut self,
            out: &mut ::std::vec::Vec<$crate::HeadSample>,
        ) -> u64);
    };
}

/// Writes the [`Device`] methods that read a device's shape off its own
/// fields: `limits` and `queue_depth` from fields of those names, and
/// `rotational` from a field of that name or, given `rotational: false`
/// (or `true`), a constant for a device that never (or always) has moving
/// parts.
#[macro_export]
macro_rules! device_shape_fields {
    () => {
        $crate::device_shape_fields!(@sizes);
        #[inline]
        fn rotational(&self) -> bool {
            self.rotational
        }
    };
    (rotational: $rotational:literal) => {
        $crate::device_shape_fields!(@sizes);
        #[inline]
        fn rotational(&self) -> bool {
            $rotational
        }
    };
    (@sizes) => {
        #[inline]
        fn limits(&self) -> $crate::Limits {
            self.limits
        }
        #[inline]
        fn queue_depth(&self) -> u32 {
            self.queue_depth
        }
    };
}

/// One method that passes the call on to `self.$inner`, unchanged: the
/// building block of [`forward_device!`](crate::forward_device) and the
/// engines' macros like it.
#[doc(hidden)]
#[macro_export]
macro_rules! forward_method {
    ($i:ident: fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) $(-> $ret:ty)?) => {
        #[inline]
        fn $name(&self $(, $arg: $ty)*) $(-> $ret)? {
            self.$i.$name($($arg),*)
        }
    };
    ($i:ident: fn $name:ident(&mut self $(, $arg:ident: $ty:ty)* $(,)?) $(-> $ret:ty)?) => {
        #[inline]
        fn $name(&mut self $(, $arg: $ty)*) $(-> $ret)? {
            self.$i.$name($($arg),*)
        }
    };
}
