//! What the caching allocator held at a moment (an out-of-memory failure): its live
//! blocks, what it reserved but left free, the request that failed, and the cause
//! read from them (live tensors or fragmentation).
//!
//! The rule for the cause (see [`MemorySnapshot::cause`]): the failure is
//! **fragmentation** when the memory the allocator had reserved but left free would
//! have held the failed request, yet no single free piece was as large as the
//! request: the memory was there, only cut into pieces. Otherwise the live blocks
//! plus the request exceeded what the device (or its cap) gives: **live memory**.
//! `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` is suggested for
//! fragmentation only; for live memory it would change nothing.

use serde::{Deserialize, Serialize};

use crate::units::format_bytes;

/// How many live blocks a snapshot keeps, largest first.
pub const LARGEST_BLOCKS_KEPT: usize = 16;

/// Frames of allocation history kept per block.
pub const FRAMES_KEPT: usize = 6;

/// The caching allocator's state at a moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySnapshot {
    /// Bytes of live (allocated) blocks.
    pub allocated_bytes: u64,
    /// Bytes of the segments reserved from the driver.
    pub reserved_bytes: u64,
    /// Segments reserved from the driver.
    pub segments: u64,
    /// Live blocks.
    pub live_blocks: u64,
    /// The largest block reserved but free: the largest request the cache could have
    /// served without asking the driver.
    pub largest_free_block_bytes: u64,
    /// The largest live blocks, largest first (at most [`LARGEST_BLOCKS_KEPT`]).
    pub largest_blocks: Vec<LiveBlock>,
    /// The request that failed, from the allocator or parsed from its message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_request_bytes: Option<u64>,
    /// What the allocator may hold in all: the device's memory, or the cap set on it
    /// (`GPUBENCH_MEMORY_FRACTION`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    /// Whether allocation history was recorded (`GPUBENCH_MEMORY_HISTORY`), so blocks
    /// say where they were allocated.
    #[serde(default)]
    pub history: bool,
}

/// The caching allocator's state at the peak of allocated bytes over a stretch of
/// calls (`--memory-peak-snapshot`): the stretch runs after the timed samples, as
/// the samples made their calls, with every allocation and free traced (and where
/// each block was allocated), so the samples ran without the tracing's cost. The
/// state is the end of the stretch with the events after its peak undone (see
/// `memory_trace`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeakMemory {
    /// Calls of the traced stretch.
    pub calls: u64,
    /// Allocator events the trace held.
    pub trace_events: u64,
    /// Events after the peak, undone from the state at the end to reach it.
    pub events_after_peak: u64,
    /// Whether the trace held every event of the stretch; when it did not (CUDA's
    /// trace keeps only its latest events), a higher peak may have come before it.
    pub trace_complete: bool,
    /// The state at the peak.
    pub snapshot: MemorySnapshot,
}

impl PeakMemory {
    /// Lines a person reads: how the state was found, the measured calls' own peak
    /// (`measured_peak_bytes`, from the allocator's statistics) where it differs, then
    /// the snapshot's own lines (without the failure's request and cause, which a peak
    /// has not).
    pub fn report_lines(&self, measured_peak_bytes: Option<u64>) -> Vec<String> {
        let mut lines = vec![format!(
            "at the peak of {} traced call{} after the samples ({} of {} allocator events undone from the end)",
            self.calls,
            if self.calls == 1 { "" } else { "s" },
            self.events_after_peak,
            self.trace_events,
        )];
        if let Some(measured) = measured_peak_bytes.filter(|&m| m != self.snapshot.allocated_bytes)
        {
            lines.push(format!(
                "the measured calls peaked at {} allocated (cold calls and warm-up included), the traced ones at {}",
                format_bytes(measured),
                format_bytes(self.snapshot.allocated_bytes)
            ));
        }
        if !self.trace_complete {
            lines.push(
                "the allocator's trace dropped its oldest events: an earlier, higher peak would not show"
                    .into(),
            );
        }
        lines.push(self.snapshot.totals_line());
        lines.extend(self.snapshot.blocks_lines());
        lines
    }
}

/// One live block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveBlock {
    /// Its size as the allocator rounded it.
    pub bytes: u64,
    /// The size the tensor asked for.
    pub requested_bytes: u64,
    /// The stream it was allocated on (`0x0`: the default stream).
    pub stream: String,
    /// Where it was allocated, innermost first, when history was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocated_at: Vec<String>,
}

/// Why an allocation failed, read from a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OomCause {
    /// Live blocks plus the request exceed what the allocator may hold.
    LiveMemory,
    /// The reserved-but-free memory would hold the request, but in no single piece.
    Fragmentation,
    /// The failed request is unknown, so the cause cannot be told.
    Unknown,
}

impl OomCause {
    /// A short phrase for tables.
    pub fn label(self) -> &'static str {
        match self {
            OomCause::LiveMemory => "live memory",
            OomCause::Fragmentation => "fragmentation",
            OomCause::Unknown => "unknown (the failed request is not known)",
        }
    }
}

impl MemorySnapshot {
    /// Reserved bytes no live block uses.
    pub fn free_reserved_bytes(&self) -> u64 {
        self.reserved_bytes.saturating_sub(self.allocated_bytes)
    }

    /// The cause by the rule at the top of this module.
    pub fn cause(&self) -> OomCause {
        let Some(request) = self.failed_request_bytes else {
            return OomCause::Unknown;
        };
        if self.free_reserved_bytes() >= request && self.largest_free_block_bytes < request {
            OomCause::Fragmentation
        } else {
            OomCause::LiveMemory
        }
    }

    /// The share of allocated bytes the kept largest blocks account for.
    pub fn largest_blocks_share(&self) -> f64 {
        if self.allocated_bytes == 0 {
            return 0.0;
        }
        let kept: u64 = self.largest_blocks.iter().map(|b| b.bytes).sum();
        kept as f64 / self.allocated_bytes as f64
    }

    /// What to try, for the cause: only fragmentation has a setting that helps.
    pub fn suggestion(&self) -> Option<&'static str> {
        (self.cause() == OomCause::Fragmentation).then_some(
            "the free memory was cut into pieces: try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, \
             which lets the allocator grow a segment instead of reserving new ones",
        )
    }

    /// Lines a person reads (terminal, report): totals, cause, the largest blocks.
    pub fn report_lines(&self) -> Vec<String> {
        let mut lines = vec![self.totals_line()];
        lines.extend(self.failure_lines());
        lines.extend(self.blocks_lines());
        lines
    }

    /// What was allocated and reserved, in how many blocks and segments.
    fn totals_line(&self) -> String {
        format!(
            "{} allocated in {} live block{}, {} reserved in {} segment{} ({} reserved but free, largest free piece {})",
            format_bytes(self.allocated_bytes),
            self.live_blocks,
            if self.live_blocks == 1 { "" } else { "s" },
            format_bytes(self.reserved_bytes),
            self.segments,
            if self.segments == 1 { "" } else { "s" },
            format_bytes(self.free_reserved_bytes()),
            format_bytes(self.largest_free_block_bytes),
        )
    }

    /// The request that failed with the cause, and what to try for it.
    fn failure_lines(&self) -> Vec<String> {
        let request = self
            .failed_request_bytes
            .map_or("unknown".to_string(), format_bytes);
        let limit = self
            .limit_bytes
            .map_or(String::new(), |l| format!(", limit {}", format_bytes(l)));
        let mut lines = vec![format!(
            "failed request {request}{limit}; cause: {}",
            self.cause().label()
        )];
        if let Some(s) = self.suggestion() {
            lines.push(format!("suggestion: {s}"));
        }
        lines
    }

    /// The largest live blocks with where they were allocated, or how to record it.
    fn blocks_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if !self.largest_blocks.is_empty() {
            lines.push(format!(
                "largest live blocks ({} of them, {:.0}% of allocated):",
                self.largest_blocks.len(),
                100.0 * self.largest_blocks_share()
            ));
            for b in &self.largest_blocks {
                let at = b
                    .allocated_at
                    .first()
                    .map_or(String::new(), |f| format!("  at {f}"));
                lines.push(format!(
                    "  {:>11}  stream {}{at}",
                    format_bytes(b.bytes),
                    b.stream
                ));
                for f in b.allocated_at.iter().skip(1) {
                    lines.push(format!("               {f}"));
                }
            }
        }
        if !self.history {
            lines.push(
                "(set GPUBENCH_MEMORY_HISTORY=1 to record where each block was allocated)".into(),
            );
        }
        lines
    }

    /// Builds a snapshot from every segment's blocks (as the shim and the simulated
    /// device list them), keeping the largest live ones.
    pub fn from_segments(segments: &[SegmentView], history: bool) -> Self {
        let mut s = MemorySnapshot {
            segments: segments.len() as u64,
            history,
            ..MemorySnapshot::default()
        };
        let mut live: Vec<LiveBlock> = Vec::new();
        for seg in segments {
            s.reserved_bytes += seg.bytes;
            for b in &seg.blocks {
                if b.live {
                    s.allocated_bytes += b.bytes;
                    s.live_blocks += 1;
                    live.push(LiveBlock {
                        bytes: b.bytes,
                        requested_bytes: b.requested_bytes,
                        stream: seg.stream.clone(),
                        allocated_at: b.allocated_at.iter().take(FRAMES_KEPT).cloned().collect(),
                    });
                } else {
                    s.largest_free_block_bytes = s.largest_free_block_bytes.max(b.bytes);
                }
            }
        }
        live.sort_by_key(|b| std::cmp::Reverse(b.bytes));
        live.truncate(LARGEST_BLOCKS_KEPT);
        s.largest_blocks = live;
        s
    }
}

/// One segment as an allocator lists it, before it is summarised.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SegmentView {
    /// Its size.
    pub bytes: u64,
    /// The stream it belongs to.
    pub stream: String,
    /// Its blocks in address order.
    pub blocks: Vec<BlockView>,
}

/// One block of a [`SegmentView`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockView {
    /// Its size.
    pub bytes: u64,
    /// The size asked for (0 for a free block).
    pub requested_bytes: u64,
    /// Whether a tensor holds it.
    pub live: bool,
    /// Where it was allocated, innermost first.
    pub allocated_at: Vec<String>,
}

/// The shim's snapshot text as segments. One line per segment or block:
/// `S\t<bytes>\t<stream>` starts a segment, `B\t<bytes>\t<requested>\t<live 0|1>`
/// adds a block to it, `F\t<frame>` adds a frame to the last block.
pub fn parse_shim_snapshot(text: &str) -> Result<Vec<SegmentView>, String> {
    let mut segments: Vec<SegmentView> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        let bad = || {
            format!(
                "line {} of the allocator snapshot is malformed: {line:?}",
                n + 1
            )
        };
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        match f.as_slice() {
            ["S", bytes, stream] => segments.push(SegmentView {
                bytes: num(bytes)?,
                stream: (*stream).to_string(),
                blocks: Vec::new(),
            }),
            ["B", bytes, requested, live] => {
                let seg = segments.last_mut().ok_or_else(bad)?;
                seg.blocks.push(BlockView {
                    bytes: num(bytes)?,
                    requested_bytes: num(requested)?,
                    live: *live == "1",
                    allocated_at: Vec::new(),
                });
            }
            ["F", frame] => {
                let block = segments
                    .last_mut()
                    .and_then(|s| s.blocks.last_mut())
                    .ok_or_else(bad)?;
                block.allocated_at.push((*frame).to_string());
            }
            [""] => {}
            _ => return Err(bad()),
        }
    }
    Ok(segments)
}

/// The request an out-of-memory message names: CUDA's caching allocator writes
/// `Tried to allocate 2.00 GiB`; the simulated device writes the same.
pub fn parse_failed_request(message: &str) -> Option<u64> {
    let rest = &message[message.find("Tried to allocate ")? + "Tried to allocate ".len()..];
    let mut words = rest.split_whitespace();
    let value = words.next()?;
    parse_size(value, words.next()?)
}

/// The cap an out-of-memory message names when a memory fraction is set: CUDA's
/// allocator writes `... 6.99 GiB allowed; ...` (with `setMemoryFraction`).
pub fn parse_allowed_limit(message: &str) -> Option<u64> {
    let before = &message[..message.find(" allowed;")?];
    let mut words = before.split_whitespace().rev();
    let unit = words.next()?;
    parse_size(words.next()?, unit)
}

/// A size as the allocator's messages write it, `2.00` and `GiB` (the unit may end
/// in the sentence's punctuation).
fn parse_size(value: &str, unit: &str) -> Option<u64> {
    let value: f64 = value.parse().ok()?;
    let unit = unit.trim_end_matches(['.', ',', ';', ')']);
    let scale = match unit {
        "bytes" | "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((value * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(bytes: u64, live: bool) -> BlockView {
        BlockView {
            bytes,
            requested_bytes: if live { bytes } else { 0 },
            live,
            allocated_at: Vec::new(),
        }
    }

    #[test]
    fn cuda_messages_give_the_request_and_the_cap() {
        let m = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of \
                 139.81 GiB of which 120.0 GiB is free. 8.00 GiB allowed; Of the allocated memory \
                 7.50 GiB is allocated by PyTorch";
        assert_eq!(parse_failed_request(m), Some(2 << 30));
        assert_eq!(
            parse_failed_request("Tried to allocate 512 bytes."),
            Some(512)
        );
        assert_eq!(
            parse_failed_request("Tried to allocate 20.00 MiB (GPU 0"),
            Some(20 << 20)
        );
        assert_eq!(parse_failed_request("CUDA error: out of memory"), None);
        assert_eq!(parse_allowed_limit(m), Some(8 << 30));
        assert_eq!(parse_allowed_limit("Tried to allocate 2.00 GiB"), None);
    }

    #[test]
    fn live_tensors_and_fragmentation_are_told_apart() {
        // Live: 7 GiB live in one 7 GiB segment, 2 GiB asked of an 8 GiB limit.
        let live = MemorySnapshot {
            failed_request_bytes: Some(2 << 30),
            ..MemorySnapshot::from_segments(
                &[SegmentView {
                    bytes: 7 << 30,
                    stream: "0x0".into(),
                    blocks: vec![block(4 << 30, true), block(3 << 30, true)],
                }],
                false,
            )
        };
        assert_eq!(live.cause(), OomCause::LiveMemory);
        assert!(live.suggestion().is_none());
        assert_eq!(live.largest_blocks_share(), 1.0);
        // Fragmented: 4 GiB free in 1 GiB holes, 2 GiB asked.
        let mut blocks = Vec::new();
        for _ in 0..4 {
            blocks.push(block(1 << 30, true));
            blocks.push(block(1 << 30, false));
        }
        let frag = MemorySnapshot {
            failed_request_bytes: Some(2 << 30),
            ..MemorySnapshot::from_segments(
                &[SegmentView {
                    bytes: 8 << 30,
                    stream: "0x0".into(),
                    blocks,
                }],
                false,
            )
        };
        assert_eq!(frag.free_reserved_bytes(), 4 << 30);
        assert_eq!(frag.largest_free_block_bytes, 1 << 30);
        assert_eq!(frag.cause(), OomCause::Fragmentation);
        assert!(frag.suggestion().unwrap().contains("expandable_segments"));
        assert!(frag
            .report_lines()
            .iter()
            .any(|l| l.contains("fragmentation")));
        // Without the request nothing is claimed.
        let unknown = MemorySnapshot {
            failed_request_bytes: None,
            ..frag.clone()
        };
        assert_eq!(unknown.cause(), OomCause::Unknown);
        assert!(unknown.suggestion().is_none());
    }

    #[test]
    fn a_peak_reports_the_snapshot_without_a_failure() {
        let mut blocks = vec![block(1 << 30, true), block(1 << 30, false)];
        blocks[0].allocated_at = vec!["mlp::forward".into(), "main".into()];
        let snapshot = MemorySnapshot {
            failed_request_bytes: Some(2 << 30),
            ..MemorySnapshot::from_segments(
                &[SegmentView {
                    bytes: 2 << 30,
                    stream: "0x0".into(),
                    blocks,
                }],
                true,
            )
        };
        let peak = PeakMemory {
            calls: 3,
            trace_events: 40,
            events_after_peak: 7,
            trace_complete: true,
            snapshot: snapshot.clone(),
        };
        let mut expected = snapshot.report_lines();
        assert!(expected[1].starts_with("failed request"));
        expected.retain(|l| !l.starts_with("failed request") && !l.starts_with("suggestion"));
        assert_eq!(peak.report_lines(None)[1..], expected[..]);
    }

    #[test]
    fn the_shim_text_parses_and_keeps_the_largest_blocks_with_frames() {
        let text = "S\t4194304\t0x0\nB\t1048576\t1000000\t1\nF\tmlp::forward\nF\tmain\n\
                    B\t3145728\t0\t0\nS\t20971520\t0x7f01\nB\t20971520\t20971520\t1\n";
        let segs = parse_shim_snapshot(text).unwrap();
        let s = MemorySnapshot::from_segments(&segs, true);
        assert_eq!(s.segments, 2);
        assert_eq!(s.reserved_bytes, 4194304 + 20971520);
        assert_eq!(s.allocated_bytes, 1048576 + 20971520);
        assert_eq!(s.largest_free_block_bytes, 3145728);
        assert_eq!(s.largest_blocks[0].stream, "0x7f01");
        assert_eq!(
            s.largest_blocks[1].allocated_at,
            vec!["mlp::forward", "main"]
        );
        assert!(parse_shim_snapshot("B\t1\t1\t1\n").is_err());
        assert!(parse_shim_snapshot("S\tx\t0\n")
            .unwrap_err()
            .contains("line 1"));
    }

    #[test]
    fn old_records_without_the_new_fields_load() {
        let s: MemorySnapshot = serde_json::from_str(
            r#"{"allocated_bytes":1,"reserved_bytes":2,"segments":1,"live_blocks":1,
                "largest_free_block_bytes":1,"largest_blocks":[]}"#,
        )
        .unwrap();
        assert!(!s.history);
        assert_eq!(s.failed_request_bytes, None);
    }
}
