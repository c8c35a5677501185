//! The server's memory budget ([`Budget`]): the bytes every connection on
//! every worker has reserved, against
//! [`ServerConfig::max_total_bytes`](crate::ServerConfig::max_total_bytes),
//! and the rule that admits a request.
//!
//! A request reserves what it will need *before* it is taken from the
//! connection's input: its data buffer (a read's reply or a write's
//! payload, at the size the buffer pool allocates) and its reply. A
//! connection whose next request does not fit is not read from until bytes
//! drain; its worker is woken when any worker releases bytes. Replies queued
//! for sending hold their cost until they are out; output that TLS holds
//! (encrypted, not yet written) holds its cost until it is written. The
//! handshake's replies, which are small and bounded per connection, and
//! TLS's records are counted as they are made ([`Budget::force`]; TLS is
//! given a connection's output a buffer's fill at a time while the budget
//! has room for it, else one record at a time).
//!
//! [`admits`] is the rule, pure: a connection may reserve `need` more bytes
//! if it holds nothing yet or stays within its own cap, and the total stays
//! within the cap, and a connection past its fair share (the total cap over
//! the connections) leaves a fair share free for the others. One exception
//! keeps a connection alone always moving: when nothing at all is reserved,
//! a request is admitted however big.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether a connection that holds `held` bytes may reserve `need` more,
/// when every connection together holds `total` of `cap`, a connection may
/// hold `conn_cap`, and `live` connections are open.
pub(crate) fn admits(total: u64, need: u64, held: u64, cap: u64, conn_cap: u64, live: u64) -> bool {
    if total == 0 {
        // Nothing held anywhere: whatever it is, it is let in, alone.
        return true;
    }
    let Some(after) = total.checked_add(need) else {
        return false;
    };
    let mine = held.saturating_add(need);
    let share = cap / live.max(1);
    (held == 0 || mine <= conn_cap)
        && after <= cap
        && (mine <= share || after.saturating_add(share) <= cap)
}

/// Bytes reserved by every connection, and who waits for some to drain.
pub(crate) struct Budget {
    reserved: AtomicU64,
    /// Workers (one bit each) with a connection that waits for bytes.
    waiters: AtomicU64,
    cap: u64,
    conn_cap: u64,
    /// Each worker's wake-up eventfd (copies of the hub's).
    wake: Vec<OwnedFd>,
}

impl Budget {
    /// A budget of `cap` bytes in all and `conn_cap` per connection, that
    /// wakes waiting workers through `wake` (one eventfd per worker, at
    /// most 64).
    pub(crate) fn new(cap: u64, conn_cap: u64, wake: Vec<OwnedFd>) -> Budget {
        Budget {
            reserved: AtomicU64::new(0),
            waiters: AtomicU64::new(0),
            cap,
            conn_cap,
            wake,
        }
    }

    /// Bytes reserved now.
    pub(crate) fn reserved(&self) -> u64 {
        self.reserved.load(Ordering::SeqCst)
    }

    /// Reserve `n` bytes if the total stays within the cap: whether they
    /// were.
    pub(crate) fn try_add(&self, n: u64) -> bool {
        self.reserved
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                now.checked_add(n).filter(|&after| after <= self.cap)
            })
            .is_ok()
    }

    /// Whether a connection holding `held` could reserve `need` now.
    pub(crate) fn would_admit(&self, need: u64, held: u64, live: u64) -> bool {
        admits(self.reserved(), need, held, self.cap, self.conn_cap, live)
    }

    /// Reserve `need` bytes for a connection holding `held`, if [`admits`]
    /// says so.
    pub(crate) fn try_reserve(&self, need: u64, held: u64, live: u64) -> bool {
        let mut now = self.reserved.load(Ordering::SeqCst);
        loop {
            if !admits(now, need, held, self.cap, self.conn_cap, live) {
                return false;
            }
            match self.reserved.compare_exchange_weak(
                now,
                now + need,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(seen) => now = seen,
            }
        }
    }

    /// Count `n` bytes already spent (small, bounded elsewhere).
    pub(crate) fn force(&self, n: u64) {
        self.reserved.fetch_add(n, Ordering::SeqCst);
    }

    /// Give back `n` bytes, and wake the workers waiting for bytes.
    pub(crate) fn release(&self, n: u64) {
        if n == 0 {
            return;
        }
        self.reserved.fetch_sub(n, Ordering::SeqCst);
        self.wake_waiters();
    }

    /// Wake the workers waiting for bytes, or for a range a write held.
    pub(crate) fn wake_waiters(&self) {
        if self.waiters.load(Ordering::SeqCst) != 0 {
            let mut who = self.waiters.swap(0, Ordering::SeqCst);
            while who != 0 {
                let w = who.trailing_zeros() as usize;
                who &= who - 1;
                if let Some(fd) = self.wake.get(w) {
                    let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
                }
            }
        }
    }

    /// Worker `w` has a connection waiting for bytes (or for a range): wake
    /// it at the next release. (Set before the last try, so a release in
    /// between is not missed.)
    pub(crate) fn wait(&self, w: usize) {
        if w < 64 {
            self.waiters.fetch_or(1 << w, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1 << 20;

    #[test]
    fn the_total_holds_whatever_the_connections_ask() {
        // 16 connections asking for 32 MiB each, 8 times, against 64 MiB.
        let (cap, conn_cap, live) = (64 * M, 64 * M, 16);
        let mut held = [0u64; 16];
        let mut total = 0;
        for _ in 0..8 {
            for h in held.iter_mut() {
                if admits(total, 32 * M, *h, cap, conn_cap, live) {
                    *h += 32 * M;
                    total += 32 * M;
                }
            }
        }
        assert!(total <= cap, "{total}");
        assert!(total > 0);
    }

    #[test]
    fn a_connection_alone_always_moves() {
        // However big its request, once nothing is held.
        assert!(admits(0, 512 * M, 0, 64 * M, 16 * M, 5));
        // Its own cap: one request is let in when it holds nothing.
        assert!(admits(M, 32 * M, 0, 64 * M, 16 * M, 2));
        assert!(!admits(M + 16 * M, 8 * M, 16 * M, 64 * M, 16 * M, 2));
    }

    #[test]
    fn one_past_its_share_leaves_a_share_free() {
        // 4 connections, 64 MiB: a share is 16 MiB.
        let (cap, conn_cap, live) = (64 * M, 64 * M, 4);
        // A greedy one holding 40 MiB may take 8 more only while 16 stay free.
        assert!(admits(40 * M, 8 * M, 40 * M, cap, conn_cap, live));
        assert!(!admits(48 * M, 8 * M, 48 * M, cap, conn_cap, live));
        // A newcomer within its share still gets in.
        assert!(admits(48 * M, 8 * M, 0, cap, conn_cap, live));
        assert!(!admits(u64::MAX - 1, 8, 0, cap, conn_cap, live));
    }
}
