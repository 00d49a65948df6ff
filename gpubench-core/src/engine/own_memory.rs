//! A side's own device memory in a paired process (`cargo gpubench ab`), where base
//! and head share one libtorch and one caching allocator, whose statistics are the
//! process's.
//!
//! The driver runs one side at a time on one thread, so every allocation and free
//! in the process is made by the side that is **active**: from its `open` until it
//! calls the driver's `ready`, during each `warm_up` and `sample` the driver calls,
//! and from `ready`'s return to the end of its measurement. A side counts only its
//! active periods:
//!
//! * at the start of a period the other side is idle, so the bytes allocated then,
//!   less what this side held when its last period ended, are the other side's, and
//!   they stay so until the period ends; the allocator's peak is reset to what is
//!   held then;
//! * during the period, this side holds the bytes allocated less the other side's,
//!   and its peak is the allocator's peak (since the period started) less the other
//!   side's.
//!
//! Peak allocated and allocated bytes, and so growth per call, are then the side's
//! own. Reserved bytes cannot be split: a segment one side's freed blocks left
//! cached serves the other side's next allocation without reserving anything. So
//! the reserved figures (and the retries and out-of-memory errors) stay the
//! process's, the largest this side saw, and say so
//! ([`MemoryStats::reserved_shared`]).

use std::cell::Cell;
use std::rc::Rc;

use gpubench_record::measurement::MemoryStats;

use crate::device::DeviceBackend;

/// One side's account of its own memory.
pub(crate) struct OwnMemory {
    device: Rc<dyn DeviceBackend>,
    account: Cell<Account>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Account {
    /// Bytes this side held when its last period ended.
    resident: u64,
    /// This side's highest bytes held over its ended periods.
    peak: u64,
    /// The process's highest reserved bytes this side saw.
    process_peak_reserved: u64,
    /// While a period lasts, the other side's bytes: allocated at its start less
    /// `resident`.
    others: Option<u64>,
}

impl OwnMemory {
    /// The account of a side that holds nothing yet, active from now: call it when
    /// the side opens, before its benchmark allocates anything.
    pub(crate) fn begin(device: Rc<dyn DeviceBackend>) -> Self {
        let own = OwnMemory {
            device,
            account: Cell::new(Account::default()),
        };
        own.enter();
        own
    }

    /// Starts an active period (nothing when one is on).
    pub(crate) fn enter(&self) {
        let mut a = self.account.get();
        if a.others.is_some() {
            return;
        }
        // No statistics yet: CUDA starts its allocator lazily, with the process's first
        // tensor, so nothing is allocated by anyone and the other side holds nothing.
        // (The side opened first in a fresh process starts so; counting its set-up
        // as the other side's made its own figures miss its tensors on an H200.) On a
        // device without an allocator the account stays empty.
        let allocated = match self.device.memory() {
            Some(now) => {
                // The peak since the last reset, by either side, before this one
                // resets it.
                a.process_peak_reserved = a.process_peak_reserved.max(now.peak_reserved_bytes);
                self.device.reset_memory_peak();
                now.allocated_bytes
            }
            None => 0,
        };
        a.others = Some(allocated.saturating_sub(a.resident));
        self.account.set(a);
    }

    /// Ends an active period (nothing when none is on).
    pub(crate) fn leave(&self) {
        let mut a = self.account.get();
        let Some(others) = a.others.take() else {
            return;
        };
        if let Some(now) = self.device.memory() {
            a.resident = now.allocated_bytes.saturating_sub(others);
            a.peak = a.peak.max(now.peak_allocated_bytes.saturating_sub(others));
            a.process_peak_reserved = a.process_peak_reserved.max(now.peak_reserved_bytes);
        }
        self.account.set(a);
    }

    /// An active period that ends when the returned guard is dropped.
    pub(crate) fn active(&self) -> Active<'_> {
        self.enter();
        Active(self)
    }

    /// The side's allocator statistics: allocated bytes and their peak its own,
    /// reserved bytes the process's; `None` where the device has no allocator.
    pub(crate) fn stats(&self) -> Option<MemoryStats> {
        let now = self.device.memory()?;
        let a = self.account.get();
        let (allocated, peak) = match a.others {
            Some(others) => (
                now.allocated_bytes.saturating_sub(others),
                a.peak.max(now.peak_allocated_bytes.saturating_sub(others)),
            ),
            None => (a.resident, a.peak),
        };
        Some(MemoryStats {
            peak_allocated_bytes: peak,
            peak_reserved_bytes: a.process_peak_reserved.max(now.peak_reserved_bytes),
            allocated_bytes: allocated,
            reserved_bytes: now.reserved_bytes,
            alloc_retries: now.alloc_retries,
            num_ooms: now.num_ooms,
            reserved_shared: true,
        })
    }
}

/// An active period of [`OwnMemory`], ended on drop.
pub(crate) struct Active<'a>(&'a OwnMemory);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::SimulatedDevice;

    const MIB: u64 = 1 << 20;

    /// Two sides' accounts on one device, their periods alternating as a driver's.
    #[test]
    fn each_side_counts_only_what_its_own_periods_allocated() {
        let device = Rc::new(SimulatedDevice::new());
        let shared: Rc<dyn DeviceBackend> = device.clone();
        let a = OwnMemory::begin(Rc::clone(&shared));
        let weight = device.try_allocate(3 * MIB, "a").unwrap();
        a.leave();
        let b = OwnMemory::begin(Rc::clone(&shared));
        // b keeps 10 MiB and peaks at 30 MiB with a 20 MiB temporary.
        let _cache = device.try_allocate(10 * MIB, "b").unwrap();
        let tmp = device.try_allocate(20 * MIB, "b").unwrap();
        device.release(tmp);
        b.leave();
        {
            let _a = a.active();
            // a's own peak: its weight and a 5 MiB temporary, not b's 30 MiB.
            let tmp = device.try_allocate(5 * MIB, "a").unwrap();
            device.release(tmp);
        }
        let sa = a.stats().unwrap();
        assert_eq!(
            (sa.peak_allocated_bytes, sa.allocated_bytes),
            (8 * MIB, 3 * MIB)
        );
        assert!(sa.reserved_shared);
        let sb = b.stats().unwrap();
        assert_eq!(
            (sb.peak_allocated_bytes, sb.allocated_bytes),
            (30 * MIB, 10 * MIB)
        );
        // The process's reserved peak, both sides', is what each reports.
        assert_eq!(sa.peak_reserved_bytes, 33 * MIB);
        // a frees its weight in a period of its own; b's account does not move.
        a.enter();
        device.release(weight);
        assert_eq!(a.stats().unwrap().allocated_bytes, 0);
        a.leave();
        assert_eq!(b.stats().unwrap().allocated_bytes, 10 * MIB);
    }
}
