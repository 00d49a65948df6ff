//! The measurement settings a user gives (`--warm-up-time`, `--min-samples`, …) and
//! their rules, in one place: `cargo gpubench` checks them before any benchmark
//! process starts, and a bench executable checks the same when run on its own.

use super::MeasurementConfig;

/// A measurement setting, by the flag (and environment variable) that gives it; the
/// same on `cargo gpubench` and on a bench executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasurementOption {
    /// `--warm-up-time`: the warm-up time bound of a process, seconds.
    WarmUpTime,
    /// `--measurement-time`: the measurement time bound, seconds.
    MeasurementTime,
    /// `--sample-time`: the target duration of one sample, seconds.
    SampleTime,
    /// `--min-samples`: the fewest samples of a process.
    MinSamples,
    /// `--max-samples`: the most samples of a process.
    MaxSamples,
    /// `--target-rel-ci`: the relative half-width at which a process stops.
    TargetRelCi,
    /// `--throttle-threshold`: the SM clock fraction below which a sample is
    /// throttled.
    ThrottleThreshold,
}

impl MeasurementOption {
    /// Its flag, e.g. `--warm-up-time`.
    pub fn flag(self) -> &'static str {
        match self {
            MeasurementOption::WarmUpTime => "--warm-up-time",
            MeasurementOption::MeasurementTime => "--measurement-time",
            MeasurementOption::SampleTime => "--sample-time",
            MeasurementOption::MinSamples => "--min-samples",
            MeasurementOption::MaxSamples => "--max-samples",
            MeasurementOption::TargetRelCi => "--target-rel-ci",
            MeasurementOption::ThrottleThreshold => "--throttle-threshold",
        }
    }

    /// Its environment variable, e.g. `GPUBENCH_WARM_UP_TIME`.
    pub fn env(self) -> &'static str {
        match self {
            MeasurementOption::WarmUpTime => "GPUBENCH_WARM_UP_TIME",
            MeasurementOption::MeasurementTime => "GPUBENCH_MEASUREMENT_TIME",
            MeasurementOption::SampleTime => "GPUBENCH_SAMPLE_TIME",
            MeasurementOption::MinSamples => "GPUBENCH_MIN_SAMPLES",
            MeasurementOption::MaxSamples => "GPUBENCH_MAX_SAMPLES",
            MeasurementOption::TargetRelCi => "GPUBENCH_TARGET_REL_CI",
            MeasurementOption::ThrottleThreshold => "GPUBENCH_THROTTLE_THRESHOLD",
        }
    }

    /// What a value must be, in words that follow "must be".
    pub fn rule(self) -> &'static str {
        match self {
            MeasurementOption::WarmUpTime
            | MeasurementOption::MeasurementTime
            | MeasurementOption::SampleTime => "a positive number of seconds",
            MeasurementOption::MinSamples | MeasurementOption::MaxSamples => {
                "at least 2 (an interval needs two samples)"
            }
            MeasurementOption::TargetRelCi => "a fraction strictly between 0 and 1",
            MeasurementOption::ThrottleThreshold => {
                "between 0 and 1 (0: only hardware, thermal and power-brake slowdowns)"
            }
        }
    }

    /// `value` when it follows [`MeasurementOption::rule`].
    pub fn check(self, value: f64) -> Result<f64, InvalidSetting> {
        let ok = match self {
            MeasurementOption::WarmUpTime
            | MeasurementOption::MeasurementTime
            | MeasurementOption::SampleTime => value.is_finite() && value > 0.0,
            MeasurementOption::MinSamples | MeasurementOption::MaxSamples => value >= 2.0,
            MeasurementOption::TargetRelCi => value > 0.0 && value < 1.0,
            MeasurementOption::ThrottleThreshold => (0.0..=1.0).contains(&value),
        };
        if ok {
            Ok(value)
        } else {
            Err(InvalidSetting::OutOfRange {
                option: self,
                value,
            })
        }
    }
}

/// A measurement setting that breaks its rule.
#[derive(Debug, Clone, PartialEq)]
pub enum InvalidSetting {
    /// One value outside what its option allows.
    OutOfRange {
        /// The option.
        option: MeasurementOption,
        /// The value given.
        value: f64,
    },
    /// The most samples is below the fewest (either may be the default).
    SampleBounds {
        /// The fewest samples.
        min: u32,
        /// The most samples.
        max: u32,
        /// Whether `--min-samples` was given (else it is the default).
        min_given: bool,
        /// Whether `--max-samples` was given.
        max_given: bool,
    },
}

impl std::fmt::Display for InvalidSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let default = |given: bool| if given { "" } else { ", the default" };
        match self {
            InvalidSetting::OutOfRange { option, value } => write!(
                f,
                "{} ({}) must be {}, got {value}",
                option.flag(),
                option.env(),
                option.rule()
            ),
            InvalidSetting::SampleBounds {
                min,
                max,
                min_given,
                max_given,
            } => write!(
                f,
                "--max-samples ({max}{}) is below --min-samples ({min}{}): raise --max-samples or lower --min-samples",
                default(*max_given),
                default(*min_given)
            ),
        }
    }
}

impl std::error::Error for InvalidSetting {}

/// How to measure, as given on a command line: the one settings type that goes from
/// `cargo gpubench`'s options to every benchmark process (as the harness's flags,
/// [`MeasurementSettings::harness_args`]) and that the bench executable reads back
/// from them; each value `None` when not given, so the defaults of `--quick` (or of
/// a run) hold. [`MeasurementSettings::config`] builds the record's
/// [`MeasurementConfig`] from it, on both sides.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MeasurementSettings {
    /// `--quick`: the shorter defaults of [`MeasurementConfig::quick`].
    pub quick: bool,
    /// `--flush-l2`.
    pub flush_l2: bool,
    /// `--warm-up-time`, seconds.
    pub warm_up_time_s: Option<f64>,
    /// `--measurement-time`, seconds.
    pub measurement_time_s: Option<f64>,
    /// `--sample-time`, seconds.
    pub sample_time_s: Option<f64>,
    /// `--min-samples`.
    pub min_samples: Option<u32>,
    /// `--max-samples`.
    pub max_samples: Option<u32>,
    /// `--target-rel-ci`.
    pub target_rel_ci: Option<f64>,
    /// `--throttle-threshold`.
    pub throttle_threshold: Option<f64>,
}

impl MeasurementSettings {
    /// The defaults the given values go over: [`MeasurementConfig::quick`] with
    /// `--quick`, else [`MeasurementConfig::standard`].
    pub fn defaults(&self) -> MeasurementConfig {
        if self.quick {
            MeasurementConfig::quick()
        } else {
            MeasurementConfig::standard()
        }
    }

    /// The values given, by option.
    fn given(&self) -> [(MeasurementOption, Option<f64>); 7] {
        [
            (MeasurementOption::MeasurementTime, self.measurement_time_s),
            (MeasurementOption::WarmUpTime, self.warm_up_time_s),
            (MeasurementOption::SampleTime, self.sample_time_s),
            (
                MeasurementOption::MinSamples,
                self.min_samples.map(f64::from),
            ),
            (
                MeasurementOption::MaxSamples,
                self.max_samples.map(f64::from),
            ),
            (MeasurementOption::TargetRelCi, self.target_rel_ci),
            (
                MeasurementOption::ThrottleThreshold,
                self.throttle_threshold,
            ),
        ]
    }

    /// The record's config of these settings, unchecked (see
    /// [`MeasurementSettings::checked_config`]): the given values over
    /// [`MeasurementSettings::defaults`], one process, mode `bench`.
    pub fn config(&self) -> MeasurementConfig {
        let mut config = self.defaults();
        let set = |to: &mut f64, from: Option<f64>| {
            if let Some(v) = from {
                *to = v;
            }
        };
        set(&mut config.warmup_time_s, self.warm_up_time_s);
        set(&mut config.measurement_time_s, self.measurement_time_s);
        set(&mut config.sample_target_s, self.sample_time_s);
        set(&mut config.target_rel_ci, self.target_rel_ci);
        set(&mut config.throttle_threshold, self.throttle_threshold);
        if let Some(v) = self.min_samples {
            config.min_samples = v;
        }
        if let Some(v) = self.max_samples {
            config.max_samples = v;
        }
        config.flush_l2 = self.flush_l2;
        config
    }

    /// [`MeasurementSettings::config`], once each value given follows its option's
    /// rule and the sample bounds agree, the defaults counted (`--max-samples 8` is
    /// below the standard 10 fewest).
    pub fn checked_config(&self) -> Result<MeasurementConfig, InvalidSetting> {
        for (option, value) in self.given() {
            if let Some(v) = value {
                option.check(v)?;
            }
        }
        let config = self.config();
        if config.max_samples < config.min_samples {
            return Err(InvalidSetting::SampleBounds {
                min: config.min_samples,
                max: config.max_samples,
                min_given: self.min_samples.is_some(),
                max_given: self.max_samples.is_some(),
            });
        }
        Ok(config)
    }

    /// The bench executable's flags for these settings, the values given only (the
    /// harness has the same defaults): `--quick`, `--flush-l2`, then each option
    /// under its own name.
    pub fn harness_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.quick {
            args.push("--quick".to_string());
        }
        if self.flush_l2 {
            args.push("--flush-l2".to_string());
        }
        for (option, value) in self.given() {
            if let Some(v) = value {
                args.push(option.flag().to_string());
                args.push(format!("{v}"));
            }
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_bounds_that_cross_are_refused_defaults_counted() {
        let both = MeasurementSettings {
            min_samples: Some(50),
            max_samples: Some(10),
            ..Default::default()
        };
        assert_eq!(
            both.checked_config()
                .unwrap_err()
                .to_string(),
            "--max-samples (10) is below --min-samples (50): raise --max-samples or lower --min-samples"
        );
        let max_only = MeasurementSettings {
            max_samples: Some(8),
            ..Default::default()
        };
        assert_eq!(
            max_only
                .checked_config()
                .unwrap_err()
                .to_string(),
            "--max-samples (8) is below --min-samples (10, the default): raise --max-samples or lower --min-samples"
        );
        // --quick's fewest is 5.
        let quick = MeasurementSettings {
            quick: true,
            ..max_only
        };
        let c = quick.checked_config().unwrap();
        assert_eq!((c.min_samples, c.max_samples), (5, 8));
    }

    #[test]
    fn each_value_follows_its_rule_and_the_message_names_flag_and_variable() {
        let bad = [
            MeasurementSettings {
                warm_up_time_s: Some(0.0),
                ..Default::default()
            },
            MeasurementSettings {
                sample_time_s: Some(f64::NAN),
                ..Default::default()
            },
            MeasurementSettings {
                min_samples: Some(1),
                ..Default::default()
            },
            MeasurementSettings {
                target_rel_ci: Some(1.0),
                ..Default::default()
            },
            MeasurementSettings {
                throttle_threshold: Some(1.5),
                ..Default::default()
            },
        ];
        let messages: Vec<String> = bad
            .iter()
            .map(|s| s.checked_config().unwrap_err().to_string())
            .collect();
        assert_eq!(
            messages,
            [
                "--warm-up-time (GPUBENCH_WARM_UP_TIME) must be a positive number of seconds, got 0",
                "--sample-time (GPUBENCH_SAMPLE_TIME) must be a positive number of seconds, got NaN",
                "--min-samples (GPUBENCH_MIN_SAMPLES) must be at least 2 (an interval needs two samples), got 1",
                "--target-rel-ci (GPUBENCH_TARGET_REL_CI) must be a fraction strictly between 0 and 1, got 1",
                "--throttle-threshold (GPUBENCH_THROTTLE_THRESHOLD) must be between 0 and 1 (0: only hardware, thermal and power-brake slowdowns), got 1.5",
            ]
        );
        let good = MeasurementSettings {
            warm_up_time_s: Some(0.5),
            measurement_time_s: Some(2.0),
            sample_time_s: Some(0.002),
            min_samples: Some(2),
            max_samples: Some(2),
            target_rel_ci: Some(0.05),
            throttle_threshold: Some(0.0),
            ..Default::default()
        };
        let c = good.checked_config().unwrap();
        assert_eq!(
            (
                c.warmup_time_s,
                c.measurement_time_s,
                c.sample_target_s,
                c.min_samples,
                c.max_samples,
                c.target_rel_ci,
                c.throttle_threshold
            ),
            (0.5, 2.0, 0.002, 2, 2, 0.05, 0.0)
        );
        assert_eq!(
            MeasurementSettings::default().checked_config().unwrap(),
            MeasurementConfig::standard()
        );
        assert_eq!(
            good.harness_args(),
            [
                "--measurement-time",
                "2",
                "--warm-up-time",
                "0.5",
                "--sample-time",
                "0.002",
                "--min-samples",
                "2",
                "--max-samples",
                "2",
                "--target-rel-ci",
                "0.05",
                "--throttle-threshold",
                "0"
            ]
        );
    }
}
