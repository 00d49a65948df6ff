//! What a record's processes add up to for the statistics: what its time rests on
//! ([`Bound`]), the least width of its interval, and its kernel table merged over the
//! processes that profiled it. The record itself is [`gpubench_record::record`].

use gpubench_record::kernels::KernelStat;
use gpubench_record::measurement::Flag;
use gpubench_record::record::RawRecord;

use crate::kernels::merge_tables;
use crate::processes::{Bound, RUN_FLOOR_HOST};

/// The figures of a [`RawRecord`] that rest on the statistics' rules.
pub trait RecordAnalysis {
    /// The kernels, copies and memsets of one call, merged over the processes that
    /// profiled them (the first process of a benchmark does); empty when none did.
    fn kernel_table(&self) -> Vec<KernelStat>;

    /// Whether the benchmark's time rests on the device or on the host's dispatch
    /// speed: device-bound when most measured processes were flagged so; on the CPU
    /// device, the routine's own work ([`Bound::Cpu`]).
    fn bound(&self) -> Bound;

    /// The least relative half-width of its interval over processes: its bound's
    /// ([`Bound::run_floor`]), and on the CPU device, when a process was contended,
    /// the host's ([`RUN_FLOOR_HOST`]): its time then holds a wait for a core that
    /// moves with the other work from run to run.
    fn run_floor(&self) -> f64;
}

impl RecordAnalysis for RawRecord {
    fn kernel_table(&self) -> Vec<KernelStat> {
        let tables: Vec<&[KernelStat]> = self
            .measurements()
            .filter_map(|m| m.kernel.as_ref())
            .map(|k| k.kernels.as_slice())
            .filter(|t| !t.is_empty())
            .collect();
        merge_tables(&tables)
    }

    fn bound(&self) -> Bound {
        if self.fingerprint.device.on_cpu() {
            return Bound::Cpu;
        }
        let n = self.measurements().count();
        let device = self
            .measurements()
            .filter(|m| m.flags.contains(&Flag::DeviceBound))
            .count();
        if n > 0 && 2 * device > n {
            Bound::Device
        } else {
            Bound::Host
        }
    }

    fn run_floor(&self) -> f64 {
        match self.bound() {
            Bound::Cpu if self.contended() => RUN_FLOOR_HOST,
            bound => bound.run_floor(),
        }
    }
}
