//! Quantities written as text in scenario files: `"40Mbps"`, `"100ms"`, `"1000B"`, `"0.25BDP"`.
//!
//! Each type parses from text (and, where the unit is implicit, from a bare number) and prints
//! back to the same text form, so a resolved scenario reads like the file it came from.

use crate::time::Duration;
use crate::units::Rate;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Splits `"12.5Mbps"` into (12.5, "Mbps"). Leading/trailing spaces and a space before the unit
/// are allowed.
fn split(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == '-'
                || c == '+'
                // An exponent in any of the forms Rust, Python and C print: e8, e+08, E-3.
                || ((c == 'e' || c == 'E')
                    && i > 0
                    && t[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')))
        })
        .map_or(t.len(), |(i, _)| i);
    let number: f64 = t[..end].parse().ok()?;
    number.is_finite().then_some((number, t[end..].trim()))
}

pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let err = || {
        format!("invalid rate \"{text}\": expected a positive number followed by bps, kbps, Mbps or Gbps (e.g. \"40Mbps\")")
    };
    let (x, unit) = split(text).ok_or_else(err)?;
    let scale = match unit {
        "bps" => 1.0,
        "kbps" | "Kbps" => 1e3,
        "Mbps" => 1e6,
        "Gbps" => 1e9,
        _ => return Err(err()),
    };
    let bps = (x * scale).round();
    if !(1.0..=1e13).contains(&bps) {
        return Err(err());
    }
    Ok(Rate::from_bps(bps as u64))
}

/// A rate in a schedule, where 0 (an outage) is allowed: `"0bps"`, `"0Mbps"` or `"40Mbps"`.
pub fn parse_rate_or_zero(text: &str) -> Result<Rate, String> {
    match split(text) {
        Some((0.0, "bps" | "kbps" | "Kbps" | "Mbps" | "Gbps")) => Ok(Rate::from_bps(0)),
        _ => parse_rate(text).map_err(|_| {
            format!("invalid rate \"{text}\": expected 0 or a positive number followed by bps, kbps, Mbps or Gbps (e.g. \"40Mbps\")")
        }),
    }
}

pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let err = || {
        format!("invalid duration \"{text}\": expected a non-negative number followed by s, ms, us, ns or min (e.g. \"100ms\")")
    };
    let (x, unit) = split(text).ok_or_else(err)?;
    let scale = match unit {
        "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        "min" => 60e9,
        _ => return Err(err()),
    };
    let ns = (x * scale).round();
    if !(0.0..=1e18).contains(&ns) {
        return Err(err());
    }
    Ok(Duration::from_nanos(ns as u64))
}

/// A size in bytes (> 0).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let err = || {
        format!("invalid size \"{text}\": expected a positive number followed by B, KB, MB, GB, KiB, MiB or GiB (e.g. \"1000B\", \"64KB\")")
    };
    let (x, unit) = split(text).ok_or_else(err)?;
    let scale = match unit {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(err()),
    };
    let b = (x * scale).round();
    if !(1.0..=1e15).contains(&b) {
        return Err(err());
    }
    Ok(b as u64)
}

fn fmt_size(bytes: u64) -> String {
    format!("{bytes}B")
}

/// How a value prints back: as text with its unit, or as a bare count.
enum Printed {
    Text(String),
    Count(u64),
}

impl From<String> for Printed {
    fn from(t: String) -> Self {
        Printed::Text(t)
    }
}

/// Deserializes from text, or from a number where `from_number` accepts one.
struct TextVisitor<T> {
    expecting: &'static str,
    from_text: fn(&str) -> Result<T, String>,
    from_number: Option<fn(f64) -> Result<T, String>>,
}

impl<'de, T> Visitor<'de> for TextVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.from_text)(v).map_err(E::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        match self.from_number {
            Some(f) => f(v).map_err(E::custom),
            None => Err(E::custom(format!(
                "expected {}, found the number {v}",
                self.expecting
            ))),
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.visit_f64(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_f64(v as f64)
    }
}

macro_rules! text_type {
    ($name:ident, $inner:ty, $expecting:expr, $parse:expr, $number:expr, $print:expr) => {
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(TextVisitor {
                    expecting: $expecting,
                    from_text: $parse,
                    from_number: $number,
                })
            }
        }
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let print: fn(&$name) -> Printed = $print;
                match print(self) {
                    Printed::Text(t) => s.serialize_str(&t),
                    Printed::Count(n) => s.serialize_u64(n),
                }
            }
        }
    };
}

/// A rate written as text.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RateText(pub Rate);
text_type!(
    RateText,
    Rate,
    "a rate such as \"40Mbps\"",
    |t| parse_rate(t).map(RateText),
    None,
    |r| r.0.to_string().into()
);

/// A duration written as text.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct DurationText(pub Duration);
text_type!(
    DurationText,
    Duration,
    "a duration such as \"100ms\"",
    |t| parse_duration(t).map(DurationText),
    None,
    |d| d.0.to_string().into()
);

/// A rate in a schedule written as text, where 0 (an outage) is allowed.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LevelRateText(pub Rate);
text_type!(
    LevelRateText,
    Rate,
    "a rate such as \"40Mbps\" or \"0bps\"",
    |t| parse_rate_or_zero(t).map(LevelRateText),
    None,
    |r| if r.0.bps() == 0 {
        "0bps".to_string().into()
    } else {
        r.0.to_string().into()
    }
);

/// A size in bytes written as text.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SizeText(pub u64);
text_type!(
    SizeText,
    u64,
    "a size such as \"1000B\"",
    |t| parse_size(t).map(SizeText),
    None,
    |s| fmt_size(s.0).into()
);

/// A queue limit.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum QueueLimit {
    Packets(u32),
    /// A multiple of the bandwidth-delay product (resolved into packets).
    Bdp(f64),
    Bytes(u64),
}

fn limit_error(text: &str) -> String {
    format!("invalid queue limit \"{text}\": expected a positive number of packets (100 or \"100p\"), of bandwidth-delay products (\"0.5BDP\") or a size (\"150KB\")")
}

fn packets_from_number(x: f64) -> Result<u32, String> {
    if x >= 1.0 && x.fract() == 0.0 && x <= u32::MAX as f64 {
        Ok(x as u32)
    } else {
        Err(format!(
            "invalid number of packets {x}: expected a whole number of at least 1"
        ))
    }
}

fn parse_limit(text: &str) -> Result<QueueLimit, String> {
    let (x, unit) = split(text).ok_or_else(|| limit_error(text))?;
    match unit {
        "BDP" if x > 0.0 => Ok(QueueLimit::Bdp(x)),
        "p" | "pkts" | "packets" | "" => packets_from_number(x)
            .map(QueueLimit::Packets)
            .map_err(|_| limit_error(text)),
        _ => parse_size(text)
            .map(QueueLimit::Bytes)
            .map_err(|_| limit_error(text)),
    }
}

text_type!(
    QueueLimit,
    QueueLimit,
    "a queue limit such as 100, \"1BDP\" or \"150KB\"",
    parse_limit,
    Some(|x| packets_from_number(x).map(QueueLimit::Packets)),
    |l| match *l {
        QueueLimit::Packets(p) => Printed::Count(p as u64),
        QueueLimit::Bdp(x) => format!("{x}BDP").into(),
        QueueLimit::Bytes(b) => fmt_size(b).into(),
    }
);

/// A window: a number of segments, a size, or an initial window defined by an RFC.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Window {
    Segments(u32),
    Bytes(u64),
    /// RFC 3390 §1: min(4 MSS, max(2 MSS, 4380 bytes)) — 3 segments of 1460 bytes.
    Rfc3390,
    /// RFC 6928 §2: min(10 MSS, max(2 MSS, 14600 bytes)) — 10 segments of 1460 bytes.
    Rfc6928,
}

impl Window {
    /// In whole segments, rounding a size up.
    pub fn segments(self, mss: u32) -> u32 {
        let mss64 = mss as u64;
        let rfc = |cap: u64, bytes: u64| ((cap * mss64).min((2 * mss64).max(bytes)) / mss64) as u32;
        match self {
            Window::Segments(n) => n,
            Window::Bytes(b) => b.div_ceil(mss64).min(u32::MAX as u64) as u32,
            Window::Rfc3390 => rfc(4, 4380),
            Window::Rfc6928 => rfc(10, 14600),
        }
    }
}

text_type!(
    Window,
    Window,
    "a number of segments, a size such as \"64KB\", \"rfc3390\" or \"rfc6928\"",
    |t| {
        match (t.trim(), split(t)) {
        ("rfc3390", _) => Ok(Window::Rfc3390),
        ("rfc6928", _) => Ok(Window::Rfc6928),
        (_, Some((x, ""))) => packets_from_number(x).map(Window::Segments),
        _ => parse_size(t).map(Window::Bytes).map_err(|_| {
            format!("invalid window \"{t}\": expected a number of segments, a size such as \"64KB\", \"rfc3390\" or \"rfc6928\"")
        }),
    }
    },
    Some(|x| packets_from_number(x).map(Window::Segments)),
    |w| match *w {
        Window::Segments(n) => Printed::Count(n as u64),
        Window::Bytes(b) => fmt_size(b).into(),
        Window::Rfc3390 => "rfc3390".to_string().into(),
        Window::Rfc6928 => "rfc6928".to_string().into(),
    }
);

/// A threshold or a window that may be unlimited.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Limitable {
    Unlimited,
    Is(Window),
}

text_type!(
    Limitable,
    Limitable,
    "\"unlimited\", a number of segments or a size",
    |t| if t.trim() == "unlimited" {
        Ok(Limitable::Unlimited)
    } else {
        match split(t) {
            Some((x, "")) => packets_from_number(x).map(|n| Limitable::Is(Window::Segments(n))),
            _ => parse_size(t).map(|b| Limitable::Is(Window::Bytes(b))).map_err(|_| {
                format!("invalid value \"{t}\": expected \"unlimited\", a number of segments or a size such as \"64KB\"")
            }),
        }
    },
    Some(|x| packets_from_number(x).map(|n| Limitable::Is(Window::Segments(n)))),
    |l| match *l {
        Limitable::Unlimited => "unlimited".to_string().into(),
        Limitable::Is(Window::Segments(n)) => Printed::Count(n as u64),
        Limitable::Is(Window::Bytes(b)) => fmt_size(b).into(),
        // Not produced by parsing: thresholds take no RFC initial-window names.
        Limitable::Is(Window::Rfc3390) => "rfc3390".to_string().into(),
        Limitable::Is(Window::Rfc6928) => "rfc6928".to_string().into(),
    }
);

/// The sampling interval: a duration, or `"event"` for every event.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Interval {
    Every(Duration),
    Event,
}

text_type!(
    Interval,
    Interval,
    "a duration such as \"10ms\" or \"event\"",
    |t| if t.trim() == "event" {
        Ok(Interval::Event)
    } else {
        match parse_duration(t) {
            Ok(d) if !d.is_zero() => Ok(Interval::Every(d)),
            _ => Err(format!("invalid interval \"{t}\": expected a positive duration such as \"10ms\", or \"event\"")),
        }
    },
    None,
    |i| match *i {
        Interval::Every(d) => d.to_string().into(),
        Interval::Event => "event".to_string().into(),
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exponent_form_is_accepted() {
        // What Python's f"{x:g}", Rust's {:e} and C's %E write.
        for text in [
            "2.5e8bps",
            "2.5e+08bps",
            "2.5E+08bps",
            "2.5E8 bps",
            "250e+6bps",
        ] {
            assert_eq!(
                parse_rate(text).unwrap(),
                Rate::from_bps(250_000_000),
                "{text}"
            );
        }
        assert_eq!(parse_duration("1E-3s").unwrap(), Duration::from_millis(1));
        assert_eq!(parse_duration("1e-03s").unwrap(), Duration::from_millis(1));
        assert_eq!(parse_size("1.5e+03B").unwrap(), 1500);
        // An exponent needs digits after it.
        assert!(parse_rate("2.5e+bps").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("40Mbps").unwrap(), Rate::from_mbps(40));
        assert_eq!(parse_rate("1.5Mbps").unwrap().bps(), 1_500_000);
        assert_eq!(parse_rate(" 1 Gbps").unwrap().bps(), 1_000_000_000);
        assert!(parse_rate("-5Mbps").unwrap_err().contains("\"-5Mbps\""));
        assert!(parse_rate("0Mbps").is_err());
        assert!(parse_rate("40MBps").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100ms").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("10").is_err());
    }

    #[test]
    fn sizes_and_limits() {
        assert_eq!(parse_size("64KB").unwrap(), 64_000);
        assert_eq!(parse_size("64KiB").unwrap(), 65_536);
        assert_eq!(parse_size("1e3B").unwrap(), 1000);
        assert_eq!(parse_limit("0.25BDP").unwrap(), QueueLimit::Bdp(0.25));
        assert_eq!(parse_limit("100p").unwrap(), QueueLimit::Packets(100));
        assert_eq!(parse_limit("150KB").unwrap(), QueueLimit::Bytes(150_000));
        assert!(parse_limit("-1BDP").unwrap_err().contains("\"-1BDP\""));
        assert!(parse_limit("0").is_err());
    }

    #[test]
    fn rfc_initial_windows() {
        // RFC 3390: 4380 bytes -> 3 segments of 1460, 4 of 1000 (4 MSS cap), 2 of 2190+.
        assert_eq!(Window::Rfc3390.segments(1460), 3);
        assert_eq!(Window::Rfc3390.segments(1000), 4);
        assert_eq!(Window::Rfc3390.segments(3000), 2);
        // RFC 6928: 14600 bytes -> 10 segments of 1460, 10 of 1000 (cap), 2 of 9000.
        assert_eq!(Window::Rfc6928.segments(1460), 10);
        assert_eq!(Window::Rfc6928.segments(1000), 10);
        assert_eq!(Window::Rfc6928.segments(9000), 2);
        let w: Window = serde_json::from_str("\"rfc6928\"").unwrap();
        assert_eq!(serde_json::to_string(&w).unwrap(), "\"rfc6928\"");
    }

    #[test]
    fn values_print_back_as_they_parse() {
        let l: QueueLimit = serde_json::from_str("\"0.5BDP\"").unwrap();
        assert_eq!(serde_json::to_string(&l).unwrap(), "\"0.5BDP\"");
        let w: Limitable = serde_json::from_str("\"unlimited\"").unwrap();
        assert_eq!(w, Limitable::Unlimited);
        let w: Limitable = serde_json::from_str("32").unwrap();
        assert_eq!(serde_json::to_string(&w).unwrap(), "32");
        let r: RateText = serde_json::from_str("\"40Mbps\"").unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), "\"40Mbps\"");
        assert!(serde_json::from_str::<RateText>("40")
            .unwrap_err()
            .to_string()
            .contains("rate"));
    }
}
