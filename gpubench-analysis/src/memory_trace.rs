//! The caching allocator's state at the peak of a stretch of calls, found by replaying
//! its trace of allocations and frees backwards from the state at the end (as
//! PyTorch's `torch.cuda._memory_viz` replays a snapshot's trace).
//!
//! Going back over an event undoes it: an allocation's block becomes free space of
//! its segment again, a free brings its block back (with where it was allocated, from
//! its allocation earlier in the trace), a segment reserved from the driver goes away
//! and a segment returned to it comes back. The peak is the first moment allocated
//! bytes were highest; the state there, with each segment's free pieces being what
//! its live blocks leave, is summarised as any other [`MemorySnapshot`].

use std::collections::BTreeMap;

use gpubench_record::memory_snapshot::{BlockView, MemorySnapshot, PeakMemory, SegmentView};

/// A segment of the end state, with its address.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TracedSegment {
    /// Its first byte's address.
    pub address: u64,
    /// Its size.
    pub bytes: u64,
    /// The stream it belongs to.
    pub stream: String,
    /// Its live blocks (free pieces are what they leave).
    pub live: Vec<TracedBlock>,
}

/// A live block, with its address.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TracedBlock {
    /// Its first byte's address.
    pub address: u64,
    /// Its size as the allocator rounded it.
    pub bytes: u64,
    /// The size the tensor asked for.
    pub requested_bytes: u64,
    /// Where it was allocated, innermost first, when history was recorded.
    pub allocated_at: Vec<String>,
}

/// What one trace event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceAction {
    /// A block was handed to a tensor.
    Alloc,
    /// A block was given back to the allocator (CUDA: `free_completed`).
    Free,
    /// A segment was reserved from the driver.
    SegmentAlloc,
    /// A segment was returned to the driver.
    SegmentFree,
}

/// One event of the allocator's trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEvent {
    /// What happened.
    pub action: TraceAction,
    /// The block's or segment's address.
    pub address: u64,
    /// The block's or segment's size.
    pub bytes: u64,
    /// The size the tensor asked for (allocations), else 0.
    pub requested_bytes: u64,
    /// The stream (segment events).
    pub stream: String,
    /// Where the block was allocated (allocations, with history).
    pub allocated_at: Vec<String>,
}

/// The end state of a stretch of calls and the events that led there from its start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllocatorTrace {
    /// The segments at the end, with their live blocks.
    pub segments: Vec<TracedSegment>,
    /// Every allocation, free and segment event of the stretch, oldest first.
    pub events: Vec<TraceEvent>,
    /// Whether the trace holds every event of the stretch (CUDA's trace is a ring
    /// that drops the oldest events once full).
    pub complete: bool,
    /// Whether blocks carry where they were allocated.
    pub history: bool,
    /// What the allocator may hold in all, when known.
    pub limit_bytes: Option<u64>,
}

/// The state at the first moment allocated bytes were highest, replayed back from
/// the end of `trace`; `calls` is how many calls the stretch made.
pub fn at_peak(trace: &AllocatorTrace, calls: u64) -> PeakMemory {
    let end_allocated: u64 = trace
        .segments
        .iter()
        .flat_map(|s| &s.live)
        .map(|b| b.bytes)
        .sum();
    // allocated[k]: bytes allocated before event k (k = events.len(): the end).
    let n = trace.events.len();
    let mut allocated = vec![0i128; n + 1];
    allocated[n] = i128::from(end_allocated);
    for k in (0..n).rev() {
        let e = &trace.events[k];
        allocated[k] = allocated[k + 1]
            + match e.action {
                TraceAction::Alloc => -i128::from(e.bytes),
                TraceAction::Free => i128::from(e.bytes),
                _ => 0,
            };
    }
    let peak_at = (0..=n)
        .max_by_key(|&k| (allocated[k], std::cmp::Reverse(k)))
        .unwrap_or(n);

    // Where each freed block was allocated, from its allocation earlier in the trace.
    let mut last_alloc: BTreeMap<u64, usize> = BTreeMap::new();
    let mut alloc_of_free: Vec<Option<usize>> = vec![None; n];
    for (k, e) in trace.events.iter().enumerate() {
        match e.action {
            TraceAction::Alloc => {
                last_alloc.insert(e.address, k);
            }
            TraceAction::Free => alloc_of_free[k] = last_alloc.remove(&e.address),
            _ => {}
        }
    }

    // The end state keyed by address, then every event after the peak undone.
    let mut segments: BTreeMap<u64, (u64, String)> = BTreeMap::new();
    let mut live: BTreeMap<u64, TracedBlock> = BTreeMap::new();
    for s in &trace.segments {
        segments.insert(s.address, (s.bytes, s.stream.clone()));
        for b in &s.live {
            live.insert(b.address, b.clone());
        }
    }
    for k in (peak_at..n).rev() {
        let e = &trace.events[k];
        match e.action {
            TraceAction::Alloc => {
                live.remove(&e.address);
            }
            TraceAction::Free => {
                let alloc = alloc_of_free[k].map(|a| &trace.events[a]);
                live.insert(
                    e.address,
                    TracedBlock {
                        address: e.address,
                        bytes: e.bytes,
                        requested_bytes: alloc.map_or(e.bytes, |a| a.requested_bytes),
                        allocated_at: alloc.map_or(Vec::new(), |a| a.allocated_at.clone()),
                    },
                );
            }
            TraceAction::SegmentAlloc => {
                segments.remove(&e.address);
            }
            TraceAction::SegmentFree => {
                segments.insert(e.address, (e.bytes, e.stream.clone()));
            }
        }
    }

    let views: Vec<SegmentView> = segments
        .iter()
        .map(|(&address, (bytes, stream))| {
            let end = address + bytes;
            let mut blocks = Vec::new();
            let mut at = address;
            for (_, b) in live.range(address..end) {
                if b.address > at {
                    blocks.push(free_piece(b.address - at));
                }
                blocks.push(BlockView {
                    bytes: b.bytes,
                    requested_bytes: b.requested_bytes,
                    live: true,
                    allocated_at: b.allocated_at.clone(),
                });
                at = b.address + b.bytes;
            }
            if end > at {
                blocks.push(free_piece(end - at));
            }
            SegmentView {
                bytes: *bytes,
                stream: stream.clone(),
                blocks,
            }
        })
        .collect();
    let mut snapshot = MemorySnapshot::from_segments(&views, trace.history);
    snapshot.limit_bytes = trace.limit_bytes;
    PeakMemory {
        calls,
        trace_events: n as u64,
        events_after_peak: (n - peak_at) as u64,
        trace_complete: trace.complete,
        snapshot,
    }
}

fn free_piece(bytes: u64) -> BlockView {
    BlockView {
        bytes,
        requested_bytes: 0,
        live: false,
        allocated_at: Vec::new(),
    }
}

/// The shim's traced snapshot text: the end state, then the events. One line each:
/// `S\t<address>\t<bytes>\t<stream>` a segment, `B\t<address>\t<bytes>\t<requested>`
/// a live block of it, `E\t<action>\t<address>\t<bytes>\t<stream>` an event
/// (`alloc`, `free`, `segment_alloc`, `segment_free`), `F\t<frame>` a frame of the
/// block or allocation before, `T\t<complete 0|1>` whether the trace is whole.
pub fn parse_shim_trace(text: &str) -> Result<AllocatorTrace, String> {
    let mut trace = AllocatorTrace {
        complete: true,
        ..AllocatorTrace::default()
    };
    // Whether the last `B`/`E` line was an event, so `F` lines go to it.
    let mut last_was_event = false;
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let bad = || {
            format!(
                "line {} of the allocator trace is malformed: {line:?}",
                n + 1
            )
        };
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        match f.as_slice() {
            ["S", address, bytes, stream] => trace.segments.push(TracedSegment {
                address: num(address)?,
                bytes: num(bytes)?,
                stream: (*stream).to_string(),
                live: Vec::new(),
            }),
            ["B", address, bytes, requested] => {
                let seg = trace.segments.last_mut().ok_or_else(bad)?;
                seg.live.push(TracedBlock {
                    address: num(address)?,
                    bytes: num(bytes)?,
                    requested_bytes: num(requested)?,
                    allocated_at: Vec::new(),
                });
                last_was_event = false;
            }
            ["E", action, address, bytes, stream] => {
                let action = match *action {
                    "alloc" => TraceAction::Alloc,
                    "free" => TraceAction::Free,
                    "segment_alloc" => TraceAction::SegmentAlloc,
                    "segment_free" => TraceAction::SegmentFree,
                    _ => return Err(bad()),
                };
                let bytes = num(bytes)?;
                trace.events.push(TraceEvent {
                    action,
                    address: num(address)?,
                    bytes,
                    requested_bytes: if action == TraceAction::Alloc {
                        bytes
                    } else {
                        0
                    },
                    stream: (*stream).to_string(),
                    allocated_at: Vec::new(),
                });
                last_was_event = true;
            }
            ["F", frame] => {
                let frames = if last_was_event {
                    trace.events.last_mut().map(|e| &mut e.allocated_at)
                } else {
                    trace
                        .segments
                        .last_mut()
                        .and_then(|s| s.live.last_mut())
                        .map(|b| &mut b.allocated_at)
                };
                frames.ok_or_else(bad)?.push((*frame).to_string());
                trace.history = true;
            }
            ["T", complete] => trace.complete = *complete == "1",
            [""] => {}
            _ => return Err(bad()),
        }
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alloc(address: u64, bytes: u64, at: &str) -> TraceEvent {
        TraceEvent {
            action: TraceAction::Alloc,
            address,
            bytes,
            requested_bytes: bytes,
            stream: "0x0".into(),
            allocated_at: vec![at.to_string()],
        }
    }

    fn event(action: TraceAction, address: u64, bytes: u64) -> TraceEvent {
        TraceEvent {
            action,
            address,
            bytes,
            requested_bytes: 0,
            stream: "0x0".into(),
            allocated_at: Vec::new(),
        }
    }

    /// A 1000-byte weight lives throughout; each call allocates a 300-byte
    /// activation and a 200-byte temporary, frees the temporary, then the activation.
    /// At the end only the weight is live; the peak held all three.
    #[test]
    fn the_peak_is_found_behind_the_end_state_and_names_what_was_freed_after_it() {
        use TraceAction::*;
        let trace = AllocatorTrace {
            segments: vec![TracedSegment {
                address: 0,
                bytes: 2048,
                stream: "0x0".into(),
                live: vec![TracedBlock {
                    address: 0,
                    bytes: 1000,
                    requested_bytes: 1000,
                    allocated_at: vec!["setup".into()],
                }],
            }],
            events: vec![
                alloc(1000, 300, "forward"),
                alloc(1300, 200, "temp"),
                event(Free, 1300, 200),
                event(Free, 1000, 300),
                alloc(1000, 300, "forward"),
                event(Free, 1000, 300),
            ],
            complete: true,
            history: true,
            limit_bytes: Some(4096),
        };
        let peak = at_peak(&trace, 2);
        let s = &peak.snapshot;
        assert_eq!(s.allocated_bytes, 1500);
        assert_eq!(s.live_blocks, 3);
        // Events 2.. came after the first moment of the peak.
        assert_eq!(peak.events_after_peak, 4);
        assert_eq!(s.reserved_bytes, 2048);
        assert_eq!(s.largest_free_block_bytes, 2048 - 1500);
        let at: Vec<&str> = s
            .largest_blocks
            .iter()
            .map(|b| b.allocated_at[0].as_str())
            .collect();
        assert_eq!(at, ["setup", "forward", "temp"]);
        assert_eq!(s.limit_bytes, Some(4096));
        assert!(peak.trace_complete);
    }

    #[test]
    fn segments_reserved_and_returned_after_the_peak_are_undone() {
        use TraceAction::*;
        // A big 4096-byte block in a segment of its own, freed and its segment
        // returned; a new small segment reserved afterwards.
        let trace = AllocatorTrace {
            segments: vec![TracedSegment {
                address: 10_000,
                bytes: 512,
                stream: "0x7f".into(),
                live: vec![TracedBlock {
                    address: 10_000,
                    bytes: 512,
                    requested_bytes: 500,
                    allocated_at: Vec::new(),
                }],
            }],
            events: vec![
                event(SegmentAlloc, 0, 4096),
                alloc(0, 4096, "big"),
                event(Free, 0, 4096),
                event(SegmentFree, 0, 4096),
                event(SegmentAlloc, 10_000, 512),
                alloc(10_000, 512, "small"),
            ],
            complete: true,
            history: true,
            limit_bytes: None,
        };
        let s = at_peak(&trace, 1).snapshot;
        assert_eq!(
            (s.allocated_bytes, s.reserved_bytes, s.segments),
            (4096, 4096, 1)
        );
        assert_eq!(s.largest_blocks[0].allocated_at, vec!["big"]);
        // Without events the end state is the peak.
        let end = at_peak(
            &AllocatorTrace {
                events: Vec::new(),
                ..trace
            },
            1,
        );
        assert_eq!(
            (end.snapshot.allocated_bytes, end.events_after_peak),
            (512, 0)
        );
    }

    #[test]
    fn the_shim_trace_text_parses() {
        let text = "S\t0\t2048\t0x0\nB\t0\t1024\t1000\nF\tsetup\n\
                    E\talloc\t1024\t512\t0x0\nF\tforward\nF\tmain\nE\tfree\t1024\t512\t0x0\nT\t0\n";
        let t = parse_shim_trace(text).unwrap();
        assert_eq!(t.segments[0].live[0].allocated_at, vec!["setup"]);
        assert_eq!(t.events.len(), 2);
        assert_eq!(t.events[0].allocated_at, vec!["forward", "main"]);
        assert_eq!(t.events[1].action, TraceAction::Free);
        assert!(!t.complete && t.history);
        let peak = at_peak(&t, 1);
        assert_eq!(peak.snapshot.allocated_bytes, 1536);
        assert!(parse_shim_trace("E\tmalloc\t0\t1\t0x0\n")
            .unwrap_err()
            .contains("line 1"));
        assert!(parse_shim_trace("F\tx\n").is_err());
    }
}
