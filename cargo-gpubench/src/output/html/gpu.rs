//! The GPU beside the samples on a benchmark page: SM clock and temperature read
//! after every sample, in time order, throttled samples marked; absent when the GPU
//! was not read (the CPU, no NVML, older records).

use gpubench_record::record::RawRecord;

use super::charts::{self, palette, Axis, AxisFormat, Plot, Rule, Series, SeriesKind};

/// One reading per sample of every measured process, in time order: (SM clock MHz,
/// temperature °C, throttled).
fn readings(record: &RawRecord) -> Vec<(f64, Option<f64>, bool)> {
    record
        .measurements()
        .flat_map(|m| &m.samples)
        .filter_map(|s| s.clock)
        .map(|c| {
            (
                f64::from(c.sm_mhz),
                c.temperature_c.map(f64::from),
                c.throttled,
            )
        })
        .collect()
}

/// The plot of the SM clock (with the throttle line when the default clock is known)
/// and, under it, the temperature; `None` when no sample has a reading.
pub(super) fn clock_plots(record: &RawRecord) -> Option<(Plot, Option<Plot>, String)> {
    let r = readings(record);
    if r.is_empty() {
        return None;
    }
    let n = r.len();
    let x = || Axis::index("sample (in time order, process after process)", n);
    let reference = record
        .fingerprint
        .gpu
        .as_ref()
        .and_then(|g| g.reference_sm_clock_mhz())
        .map(f64::from);
    let limit = reference.map(|c| c * gpubench_record::telemetry::THROTTLE_CLOCK_FRACTION);
    let clocks = r.iter().map(|x| x.0).chain(reference).chain(limit);
    let mut clock = Plot::new(
        x(),
        Axis::linear(
            "SM clock (MHz)",
            charts::padded_range(clocks, 0.1, false),
            AxisFormat::Index,
        ),
    );
    if let Some(l) = limit {
        clock.rules.push(Rule {
            horizontal: true,
            at: l,
            color: palette::COLD,
            dashed: true,
            label: Some("throttled below".into()),
        });
    }
    let kept: Vec<(f64, f64)> = r
        .iter()
        .enumerate()
        .filter(|(_, x)| !x.2)
        .map(|(i, x)| (i as f64 + 1.0, x.0))
        .collect();
    let throttled: Vec<(f64, f64)> = r
        .iter()
        .enumerate()
        .filter(|(_, x)| x.2)
        .map(|(i, x)| (i as f64 + 1.0, x.0))
        .collect();
    clock.series.push(Series {
        name: Some("SM clock".into()),
        color: palette::NEW,
        points: kept,
        kind: SeriesKind::Markers {
            size: 2,
            hollow: false,
        },
    });
    let left_out = throttled.len();
    if !throttled.is_empty() {
        clock.series.push(Series {
            name: Some("throttled (left out)".into()),
            color: palette::COLD,
            points: throttled,
            kind: SeriesKind::Markers {
                size: 4,
                hollow: true,
            },
        });
    }
    let temps: Vec<(f64, f64)> = r
        .iter()
        .enumerate()
        .filter_map(|(i, x)| Some((i as f64 + 1.0, x.1?)))
        .collect();
    let temperature = (!temps.is_empty()).then(|| {
        let mut p = Plot::new(
            x(),
            Axis::linear(
                "GPU temperature (°C)",
                charts::padded_range(temps.iter().map(|t| t.1), 0.2, false),
                AxisFormat::Index,
            ),
        );
        p.series.push(Series {
            name: None,
            color: palette::HOST,
            points: temps,
            kind: SeriesKind::Line,
        });
        p
    });
    let mut caption = String::from(
        "The SM clock read right after each sample (never inside one), every sample of every process in time order. ",
    );
    if let Some(l) = limit {
        caption.push_str(&format!(
            "A sample below the dashed line ({l:.0} MHz, 75% of the GPU's default clock), or taken during a hardware, thermal or power-brake slowdown, is throttled and left out of the figures. "
        ));
    }
    caption.push_str(&match left_out {
        0 => "No sample throttled.".to_string(),
        k => format!("{k} of {n} samples throttled (red rings)."),
    });
    Some((clock, temperature, caption))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpubench_analysis::synthetic::GpuLikeSamples;
    use gpubench_record::measurement::SampleClock;
    use gpubench_record::telemetry::GpuState;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    #[test]
    fn clocks_and_temperatures_are_drawn_with_throttled_samples_marked() {
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let mut r = GpuLikeSamples::default().record("mm", "NVIDIA H200", 20, &mut rng);
        assert!(clock_plots(&r).is_none(), "no readings, no chart");
        r.fingerprint.gpu = Some(GpuState {
            max_sm_clock_mhz: Some(1980),
            ..GpuState::default()
        });
        for (i, s) in r.processes[0]
            .measurement
            .as_mut()
            .unwrap()
            .samples
            .iter_mut()
            .enumerate()
        {
            s.clock = Some(SampleClock {
                sm_mhz: if i == 7 { 900 } else { 1980 },
                temperature_c: Some(40 + i as u32),
                throttled: i == 7,
                power_capped: false,
            });
        }
        let (clock, temperature, caption) = clock_plots(&r).unwrap();
        assert_eq!(clock.series.len(), 2);
        assert_eq!(clock.series[1].points, vec![(8.0, 900.0)]);
        assert!(caption.contains("1 of 20 samples throttled"), "{caption}");
        assert!(caption.contains("1485 MHz"), "{caption}");
        let svg = clock.to_svg().unwrap();
        assert!(svg.contains("SM clock (MHz)"), "{svg}");
        assert!(temperature
            .unwrap()
            .to_svg()
            .unwrap()
            .contains("temperature"));
    }
}
