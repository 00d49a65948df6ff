//! The GPU beside the samples on a benchmark page: SM clock, power draw and
//! temperature read after every sample, in time order, throttled and power-capped
//! samples marked; absent when the GPU was not read (the CPU, no NVML, older
//! records), where the page says why there is no power chart.

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

/// The board's power draw after every sample in time order, the power limit as a
/// dashed line, and the average power of the energy windows (measured after the
/// samples) as a solid one; power-capped samples as red rings. `Err` says in one
/// line why there is no chart: the CPU, or no sample with a power reading.
pub(super) fn power_plot(record: &RawRecord) -> Result<(Plot, String), String> {
    if record.fingerprint.device.on_cpu() {
        return Err("No power chart: the CPU device has no power reading.".into());
    }
    let r: Vec<(f64, bool)> = record
        .measurements()
        .flat_map(|m| &m.samples)
        .filter_map(|s| s.clock)
        .filter_map(|c| Some((c.power_w?, c.power_capped)))
        .collect();
    if r.is_empty() {
        return Err(
            "No power chart: no sample has a power reading (the GPU was not read, or the record is older than per-sample power)."
                .into(),
        );
    }
    let n = r.len();
    let limit = record
        .fingerprint
        .gpu
        .as_ref()
        .and_then(|g| g.power_limit_w)
        .or_else(|| {
            record
                .processes
                .iter()
                .filter_map(|p| p.telemetry.as_ref())
                .find_map(|t| t.start.power_limit_w)
        });
    let windows =
        gpubench_analysis::energy::EnergySummary::of(record.measurements()).map(|e| e.power_w);
    let all = r.iter().map(|x| x.0).chain(limit).chain(windows);
    let mut plot = Plot::new(
        Axis::index("sample (in time order, process after process)", n),
        Axis::linear(
            "board power (W)",
            charts::padded_range(all, 0.1, false),
            AxisFormat::Index,
        ),
    );
    if let Some(l) = limit {
        plot.rules.push(Rule {
            horizontal: true,
            at: l,
            color: palette::COLD,
            dashed: true,
            label: Some(format!("power limit ({l:.0} W)")),
        });
    }
    if let Some(w) = windows {
        plot.rules.push(Rule {
            horizontal: true,
            at: w,
            color: palette::DEVICE,
            dashed: false,
            label: Some(format!("energy windows' average ({w:.0} W)")),
        });
    }
    let points = |capped: bool| -> Vec<(f64, f64)> {
        r.iter()
            .enumerate()
            .filter(|(_, x)| x.1 == capped)
            .map(|(i, x)| (i as f64 + 1.0, x.0))
            .collect()
    };
    plot.series.push(Series {
        name: Some("power draw".into()),
        color: palette::NEW,
        points: points(false),
        kind: SeriesKind::Markers {
            size: 2,
            hollow: false,
        },
    });
    let capped = points(true);
    let k = capped.len();
    if !capped.is_empty() {
        plot.series.push(Series {
            name: Some("power-capped".into()),
            color: palette::COLD,
            points: capped,
            kind: SeriesKind::Markers {
                size: 4,
                hollow: true,
            },
        });
    }
    let mut caption = String::from(
        "The board's power draw read right after each sample, with the SM clock (NVML's figure, which averages over up to a second on recent boards), every sample of every process in time order. ",
    );
    if windows.is_some() {
        caption.push_str(
            "The solid line is the average power over the energy windows timed after the samples. ",
        );
    }
    caption.push_str(&match k {
        0 => "No sample ran power-capped.".to_string(),
        k => format!(
            "{k} of {n} samples ran power-capped (red rings): the power limit held the clock down, so their time is set by power."
        ),
    });
    Ok((plot, caption))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpubench_analysis::synthetic::GpuLikeSamples;
    use gpubench_record::measurement::SampleClock;
    use gpubench_record::telemetry::GpuState;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    /// Gives the first process's sample `i` the reading `clock(i)`.
    fn set_clocks(r: &mut RawRecord, clock: impl Fn(usize) -> SampleClock) {
        let m = r.processes[0].measurement.as_mut().unwrap();
        for (i, s) in m.samples.iter_mut().enumerate() {
            s.clock = Some(clock(i));
        }
    }

    #[test]
    fn clocks_and_temperatures_are_drawn_with_throttled_samples_marked() {
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let mut r = GpuLikeSamples::default().record("mm", "NVIDIA H200", 20, &mut rng);
        assert!(clock_plots(&r).is_none(), "no readings, no chart");
        r.fingerprint.gpu = Some(GpuState {
            max_sm_clock_mhz: Some(1980),
            ..GpuState::default()
        });
        set_clocks(&mut r, |i| SampleClock {
            sm_mhz: if i == 7 { 900 } else { 1980 },
            temperature_c: Some(40 + i as u32),
            throttled: i == 7,
            power_capped: false,
            power_w: None,
        });
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

    #[test]
    fn power_is_drawn_against_the_limit_with_capped_samples_marked() {
        let mut rng = Pcg64Mcg::seed_from_u64(6);
        let mut r = GpuLikeSamples::default().record("mm", "NVIDIA H200", 20, &mut rng);
        let why = power_plot(&r).unwrap_err();
        assert!(why.contains("no sample has a power reading"), "{why}");
        r.fingerprint.gpu = Some(GpuState {
            power_limit_w: Some(700.0),
            ..GpuState::default()
        });
        set_clocks(&mut r, |i| SampleClock {
            sm_mhz: 1707,
            temperature_c: None,
            throttled: false,
            power_capped: i >= 15,
            power_w: Some(if i >= 15 { 700.0 } else { 640.0 + i as f64 }),
        });
        let (plot, caption) = power_plot(&r).unwrap();
        assert_eq!(plot.series[0].points.len(), 15);
        assert_eq!(plot.series[1].points[0], (16.0, 700.0));
        assert_eq!(plot.rules[0].at, 700.0);
        assert!(
            caption.contains("5 of 20 samples ran power-capped"),
            "{caption}"
        );
        let svg = plot.to_svg().unwrap();
        assert!(svg.contains("board power (W)") && svg.contains("power limit (700 W)"));
        r.fingerprint.device.kind = "cpu".into();
        assert!(power_plot(&r).unwrap_err().contains("CPU"));
    }
}
