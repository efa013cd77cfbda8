//! The text model of what varies on a link: a value that is a constant or a schedule
//! (`rate = "40Mbps"` or `rate = { steps = [["0s", "40Mbps"], ["15s", "10Mbps"]] }`), and its
//! checking into a [`Variation`] (docs/variable-links.md is its reference).

use super::units::{DurationText, LevelRateText, RateText};
use super::{err, ScenarioError};
use crate::net::vary::{
    check_csv, check_trace, Capacity, GilbertElliott, Level, Reorder, Schedule, TraceError,
};
use crate::time::Duration;
use crate::units::Rate;
use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;

/// A constant written as usual, or a schedule written as a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Varies<C, S> {
    Fixed(C),
    Schedule(Box<ScheduleSpec<S>>),
}

pub type RateValue = Varies<RateText, LevelRateText>;
pub type DelayValue = Varies<DurationText, DurationText>;
pub type LossValue = Varies<f64, f64>;

impl<C: Copy, S> Varies<C, S> {
    /// The constant, if it is one.
    pub fn fixed(&self) -> Option<C> {
        match self {
            Varies::Fixed(c) => Some(*c),
            Varies::Schedule(_) => None,
        }
    }
}

impl<C, S> From<C> for Varies<C, S> {
    fn from(c: C) -> Self {
        Varies::Fixed(c)
    }
}

/// A schedule: exactly one of `steps`, `csv`, `walk` (any value), `trace` (a rate) or
/// `gilbert` (a loss).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "S: Deserialize<'de>"))]
pub struct ScheduleSpec<S> {
    /// `[[time, value], …]`: the value from each time on; the first at "0s".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<(DurationText, S)>>,
    /// A CSV file of `time,value` lines, streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<String>,
    /// `steps` or `csv` repeat every period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<DurationText>,
    /// A seeded random walk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk: Option<WalkSpec<S>>,
    /// A rate: a Mahimahi trace of delivery opportunities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// A trace repeats when it ends (Mahimahi's default; false is mm-link's `--once`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<bool>,
    /// A loss: the Gilbert–Elliott model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gilbert: Option<GilbertSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalkSpec<S> {
    pub start: S,
    pub min: S,
    pub max: S,
    /// The largest move per `every`.
    pub step: S,
    pub every: DurationText,
}

#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertSpec {
    /// P(Good → Bad) per packet.
    pub p: f64,
    /// P(Bad → Good) per packet.
    pub r: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_good: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_bad: Option<f64>,
}

#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReorderSpec {
    pub probability: f64,
    pub extra: DurationText,
}

impl<'de, C: Deserialize<'de>, S: Deserialize<'de>> Deserialize<'de> for Varies<C, S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<C, S>(PhantomData<(C, S)>);
        impl<'de, C: Deserialize<'de>, S: Deserialize<'de>> Visitor<'de> for V<C, S> {
            type Value = Varies<C, S>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value, or a schedule table ({ steps = … }, { csv = … }, { walk = … }, { trace = … }, { gilbert = … })")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                C::deserialize(v.into_deserializer()).map(Varies::Fixed)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                C::deserialize(v.into_deserializer()).map(Varies::Fixed)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                C::deserialize(v.into_deserializer()).map(Varies::Fixed)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                C::deserialize(v.into_deserializer()).map(Varies::Fixed)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                ScheduleSpec::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|s| Varies::Schedule(Box::new(s)))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<C: Serialize, S: Serialize> Serialize for Varies<C, S> {
    fn serialize<Z: Serializer>(&self, s: Z) -> Result<Z::Ok, Z::Error> {
        match self {
            Varies::Fixed(c) => c.serialize(s),
            Varies::Schedule(x) => x.serialize(s),
        }
    }
}

/// The shortest step, period or walk interval: finer ones would make a cursor do more work
/// than the packets it serves.
const FINEST: Duration = Duration::from_micros(100);
/// The fastest a schedule or trace may be (a Mahimahi trace's mean rate included).
const FASTEST_BPS: u64 = 10_000_000_000_000;

fn file_error(path: &str, field: &str, file: &str, e: TraceError) -> ScenarioError {
    if e.line == 0 {
        err(format!("{path}.{field}"), format!("{file}: {}", e.message))
    } else {
        err(
            format!("{path}.{field}"),
            format!("{file} line {}: {}", e.line, e.message),
        )
    }
}

/// What one kind of value needs from its schedule's checks.
trait Checked: Level {
    /// The value's range: `Err` says what is wrong and what is allowed.
    fn within_range(self) -> Result<(), String>;

    /// Checks one value; `what` is its field path.
    fn check(self, what: &str) -> Result<(), ScenarioError> {
        self.within_range().map_err(|e| err(what, e))
    }
}

impl Checked for Rate {
    fn within_range(self) -> Result<(), String> {
        if self.bps() > FASTEST_BPS {
            return Err(format!("invalid rate {self}: at most 10Tbps"));
        }
        Ok(())
    }
}

impl Checked for Duration {
    fn within_range(self) -> Result<(), String> {
        if self > Duration::from_secs(3600) {
            return Err(format!("invalid delay {self}: at most 1h"));
        }
        Ok(())
    }
}

impl Checked for f64 {
    fn within_range(self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self) {
            return Err(format!("invalid probability {self}: expected 0 to 1"));
        }
        Ok(())
    }
}

/// The parts of a schedule table that apply to any value: `steps`, `csv` (with `period`) or
/// `walk`. `unwrap` turns a written value into its level.
fn schedule<S: Clone, T: Checked>(
    spec: &ScheduleSpec<S>,
    path: &str,
    unwrap: impl Fn(&S) -> T,
) -> Result<Schedule<T>, ScenarioError> {
    let given = [
        spec.steps.is_some(),
        spec.csv.is_some(),
        spec.walk.is_some(),
    ]
    .iter()
    .filter(|&&b| b)
    .count();
    if given != 1 {
        return Err(err(
            path,
            "a schedule has exactly one of steps, csv and walk (a rate may be a trace, a loss a gilbert model)",
        ));
    }
    let period = spec.period.map(|p| p.0);
    if let Some(p) = period {
        if p < FINEST {
            return Err(err(
                format!("{path}.period"),
                format!("invalid period {p}: at least {FINEST}"),
            ));
        }
        if spec.walk.is_some() {
            return Err(err(
                format!("{path}.period"),
                "a walk does not repeat: period is for steps and csv",
            ));
        }
    }
    if let Some(steps) = &spec.steps {
        if steps.is_empty() {
            return Err(err(
                format!("{path}.steps"),
                "at least one step, the first at \"0s\"",
            ));
        }
        if steps.len() > 1_000_000 {
            return Err(err(
                format!("{path}.steps"),
                "at most 1000000 steps: use a csv file",
            ));
        }
        let mut out = Vec::with_capacity(steps.len());
        for (i, (at, v)) in steps.iter().enumerate() {
            let here = format!("{path}.steps[{i}]");
            let (at, v) = (at.0, unwrap(v));
            v.check(&here)?;
            match out.last() {
                None if !at.is_zero() => {
                    return Err(err(
                        here,
                        format!("the first step is at {at}: it must be at \"0s\""),
                    ))
                }
                Some(&(prev, _)) if at < prev + FINEST => {
                    return Err(err(
                        here,
                        format!(
                            "time {at} must be at least {FINEST} after the previous step's {prev}"
                        ),
                    ))
                }
                _ => {}
            }
            if let Some(p) = period {
                if at >= p {
                    return Err(err(here, format!("time {at} is not before the period {p}")));
                }
            }
            out.push((at, v));
        }
        return Ok(Schedule::Steps {
            steps: Arc::from(out),
            period,
        });
    }
    if let Some(file) = &spec.csv {
        let (_, first) = check_csv::<T>(std::path::Path::new(file), period, T::within_range)
            .map_err(|e| file_error(path, "csv", file, e))?;
        return Ok(Schedule::Csv {
            path: Arc::new(PathBuf::from(file)),
            period,
            first,
        });
    }
    let w = spec.walk.as_ref().expect("one of three");
    let here = format!("{path}.walk");
    let (start, min, max, step) = (
        unwrap(&w.start),
        unwrap(&w.min),
        unwrap(&w.max),
        unwrap(&w.step),
    );
    for (field, v) in [("start", start), ("min", min), ("max", max), ("step", step)] {
        v.check(&format!("{here}.{field}"))?;
    }
    if !(min.to_f64() <= start.to_f64() && start.to_f64() <= max.to_f64()) {
        return Err(err(
            here,
            format!("expected min <= start <= max, got {min:?}, {start:?}, {max:?}"),
        ));
    }
    if !(step.to_f64() > 0.0 && step.to_f64() <= max.to_f64() - min.to_f64()) {
        return Err(err(
            format!("{here}.step"),
            "expected a step above 0 and at most max - min",
        ));
    }
    if w.every.0 < FINEST {
        return Err(err(
            format!("{here}.every"),
            format!("invalid interval {}: at least {FINEST}", w.every.0),
        ));
    }
    Ok(Schedule::Walk {
        start,
        min,
        max,
        step,
        every: w.every.0,
    })
}

/// Fields only some values have, refused elsewhere: the first of `fields` (given?, name) that
/// is given, with `why`.
fn refuse(fields: &[(bool, &str)], path: &str, why: &str) -> Result<(), ScenarioError> {
    match fields.iter().find(|(given, _)| *given) {
        Some((_, field)) => Err(err(format!("{path}.{field}"), why.to_string())),
        None => Ok(()),
    }
}

/// A direction's capacity, if its rate is a schedule; the rate at 0 (a trace's mean) for BDPs.
pub fn capacity(v: &RateValue, path: &str) -> Result<(Rate, Option<Capacity>), ScenarioError> {
    let spec = match v {
        Varies::Fixed(r) => return Ok((r.0, None)),
        Varies::Schedule(s) => s,
    };
    refuse(
        &[(spec.gilbert.is_some(), "gilbert")],
        path,
        "gilbert is a loss model, not a rate",
    )?;
    if let Some(file) = &spec.trace {
        refuse(
            &[
                (spec.steps.is_some(), "steps"),
                (spec.csv.is_some(), "csv"),
                (spec.walk.is_some(), "walk"),
                (spec.period.is_some(), "period"),
            ],
            path,
            "a trace is its own schedule: give trace alone (and repeat)",
        )?;
        let (count, last_ms) = check_trace(std::path::Path::new(file))
            .map_err(|e| file_error(path, "trace", file, e))?;
        let mean_bps = count as f64 * 1504.0 * 8.0 / (last_ms as f64 / 1e3);
        if mean_bps > FASTEST_BPS as f64 {
            return Err(err(
                format!("{path}.trace"),
                format!(
                    "{file}: {count} opportunities in {last_ms} ms is {:.3e} bit/s, above 10Tbps",
                    mean_bps
                ),
            ));
        }
        return Ok((
            Rate::from_bps(mean_bps.round() as u64),
            Some(Capacity::Trace {
                path: Arc::new(PathBuf::from(file)),
                repeat: spec.repeat.unwrap_or(true),
            }),
        ));
    }
    refuse(
        &[(spec.repeat.is_some(), "repeat")],
        path,
        "repeat is for a trace",
    )?;
    let s = schedule(spec, path, |r: &LevelRateText| r.0)?;
    if let Schedule::Steps {
        steps,
        period: Some(_),
    } = &s
    {
        if steps.iter().all(|(_, r)| r.bps() == 0) {
            return Err(err(
                format!("{path}.steps"),
                "every step is 0bps: the link would never send",
            ));
        }
    }
    let at_zero = s.initial();
    Ok((at_zero, Some(Capacity::Rate(s))))
}

/// A direction's delay schedule, if any; the delay at 0.
pub fn delay(
    v: &DelayValue,
    path: &str,
) -> Result<(Duration, Option<Schedule<Duration>>), ScenarioError> {
    let spec = match v {
        Varies::Fixed(d) => return Ok((d.0, None)),
        Varies::Schedule(s) => s,
    };
    refuse(
        &[
            (spec.trace.is_some(), "trace"),
            (spec.repeat.is_some(), "repeat"),
            (spec.gilbert.is_some(), "gilbert"),
        ],
        path,
        "not for a delay (steps, csv or walk)",
    )?;
    let s = schedule(spec, path, |d: &DurationText| d.0)?;
    Ok((s.initial(), Some(s)))
}

/// A direction's loss: its probability at 0, and a schedule or a Gilbert–Elliott model.
pub type Loss = (f64, Option<Schedule<f64>>, Option<GilbertElliott>);

/// Checks a direction's loss.
pub fn loss(v: &LossValue, path: &str) -> Result<Loss, ScenarioError> {
    let spec = match v {
        Varies::Fixed(p) => {
            super::check::probability(*p, path)?;
            return Ok((*p, None, None));
        }
        Varies::Schedule(s) => s,
    };
    refuse(
        &[
            (spec.trace.is_some(), "trace"),
            (spec.repeat.is_some(), "repeat"),
        ],
        path,
        "not for a loss (steps, csv, walk or gilbert)",
    )?;
    if let Some(g) = spec.gilbert {
        if spec.steps.is_some()
            || spec.csv.is_some()
            || spec.walk.is_some()
            || spec.period.is_some()
        {
            return Err(err(path, "gilbert is its own loss model: give it alone"));
        }
        let here = format!("{path}.gilbert");
        let model = GilbertElliott {
            p: g.p,
            r: g.r,
            loss_good: g.loss_good.unwrap_or(0.0),
            loss_bad: g.loss_bad.unwrap_or(1.0),
        };
        for (field, x) in [
            ("p", model.p),
            ("r", model.r),
            ("loss_good", model.loss_good),
            ("loss_bad", model.loss_bad),
        ] {
            super::check::probability(x, &format!("{here}.{field}"))?;
        }
        return Ok((0.0, None, Some(model)));
    }
    let s = schedule(spec, path, |p: &f64| *p)?;
    Ok((s.initial(), Some(s), None))
}

/// A direction's reordering, checked.
pub fn reorder(r: &ReorderSpec, path: &str) -> Result<Reorder, ScenarioError> {
    super::check::probability(r.probability, &format!("{path}.probability"))?;
    if r.extra.0.is_zero() || r.extra.0 > Duration::from_secs(60) {
        return Err(err(
            format!("{path}.extra"),
            format!(
                "invalid duration {}: expected more than 0s and at most 60s",
                r.extra.0
            ),
        ));
    }
    Ok(Reorder {
        probability: r.probability,
        extra: r.extra.0,
    })
}
