//! Files read while a run goes on, a line at a time: Mahimahi traces and CSV step files.
//!
//! A file is checked whole when the scenario is resolved ([`check_trace`], [`check_csv`]:
//! a malformed line is refused with its number), then streamed during the run, so memory does
//! not grow with its length. If it changes between the two and a line no longer parses, the
//! run treats the file as ending there.

use super::{Level, OPPORTUNITY_BYTES};
use crate::time::{Duration, Time};
use crate::units::Rate;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::marker::PhantomData;
use std::path::Path;

/// A problem with a line of a file (line 0: the file as a whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub line: u64,
    pub message: String,
}

impl TraceError {
    fn at(line: u64, message: impl Into<String>) -> Self {
        TraceError {
            line,
            message: message.into(),
        }
    }
}

/// One line of a file, read without keeping the file's text.
struct Lines {
    reader: Option<BufReader<File>>,
    buf: String,
    number: u64,
}

impl Lines {
    fn open(path: &Path) -> Result<Self, TraceError> {
        let f = File::open(path)
            .map_err(|e| TraceError::at(0, format!("cannot read {}: {e}", path.display())))?;
        Ok(Lines {
            reader: Some(BufReader::with_capacity(64 << 10, f)),
            buf: String::new(),
            number: 0,
        })
    }

    /// A reader that has nothing (a file that went away between the check and the run).
    fn none() -> Self {
        Lines {
            reader: None,
            buf: String::new(),
            number: 0,
        }
    }

    /// The next line (its number, its text without the end), or None at the end of the file.
    fn next(&mut self) -> Option<Result<(u64, &str), TraceError>> {
        let reader = self.reader.as_mut()?;
        self.buf.clear();
        self.number += 1;
        match reader.read_line(&mut self.buf) {
            Ok(0) => None,
            Ok(_) => Some(Ok((self.number, self.buf.trim_end_matches(['\n', '\r'])))),
            Err(e) => Some(Err(TraceError::at(
                self.number,
                format!("cannot read: {e}"),
            ))),
        }
    }

    fn rewind(&mut self) -> bool {
        self.number = 0;
        match self.reader.as_mut() {
            Some(r) => r.seek(SeekFrom::Start(0)).is_ok(),
            None => false,
        }
    }
}

/// One Mahimahi line: a millisecond timestamp, as `myatoi` reads it (digits only).
fn opportunity(line: &str, number: u64) -> Result<u64, TraceError> {
    let t = line.trim();
    if t.is_empty() {
        return Err(TraceError::at(
            number,
            "empty line (Mahimahi refuses it too)",
        ));
    }
    t.parse::<u64>().map_err(|_| {
        TraceError::at(
            number,
            format!("invalid timestamp {t:?}: expected a whole number of milliseconds"),
        )
    })
}

/// Checks a Mahimahi trace as mm-link's `LinkQueue` constructor does: one whole number of
/// milliseconds per line, never decreasing, at least one line, the last one above 0. Returns
/// the number of opportunities and the last timestamp (the period, in ms).
pub fn check_trace(path: &Path) -> Result<(u64, u64), TraceError> {
    let mut lines = Lines::open(path)?;
    let (mut count, mut last) = (0u64, None::<u64>);
    while let Some(line) = lines.next() {
        let (n, line) = line?;
        let ms = opportunity(line, n)?;
        if let Some(prev) = last {
            if ms < prev {
                return Err(TraceError::at(
                    n,
                    format!("timestamp {ms} is before the previous line's {prev}: timestamps never decrease"),
                ));
            }
        }
        if ms > u32::MAX as u64 {
            return Err(TraceError::at(
                n,
                format!("timestamp {ms} ms is beyond 49 days"),
            ));
        }
        last = Some(ms);
        count += 1;
    }
    match last {
        None => Err(TraceError::at(0, "no timestamps: a trace has one line per delivery opportunity")),
        Some(0) => Err(TraceError::at(
            0,
            "the trace lasts 0 ms: its last timestamp must be above 0 (it is the period it repeats with)",
        )),
        Some(last) => Ok((count, last)),
    }
}

/// A Mahimahi trace's delivery opportunities, in order, repeating.
#[derive(Debug)]
pub struct Opportunities {
    lines: LinesDebug,
    repeat: bool,
    /// Added to every timestamp: the periods already played.
    offset_ms: u64,
    /// The latest timestamp read in this pass (the period once the file ends).
    last_ms: u64,
    /// The next opportunity, not yet taken.
    head: Option<Time>,
    /// Opportunities in the trailing window, for the rate the tables show.
    recent: VecDeque<Time>,
}

/// `Lines` with a Debug that does not print the buffer.
struct LinesDebug(Lines);

impl std::fmt::Debug for LinesDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}", self.0.number)
    }
}

/// The window over which a trace's rate is shown in the tables.
pub const TRACE_RATE_WINDOW: Duration = Duration::from_millis(100);

impl Opportunities {
    pub fn open(path: &Path, repeat: bool) -> Self {
        let mut o = Opportunities {
            lines: LinesDebug(Lines::open(path).unwrap_or_else(|_| Lines::none())),
            repeat,
            offset_ms: 0,
            last_ms: 0,
            head: None,
            recent: VecDeque::new(),
        };
        o.head = o.read();
        o
    }

    /// Reads the next opportunity from the file, wrapping round at its end.
    fn read(&mut self) -> Option<Time> {
        for _ in 0..2 {
            match self.lines.0.next() {
                Some(Ok((n, line))) => {
                    let ms = opportunity(line, n).ok()?;
                    self.last_ms = self.last_ms.max(ms);
                    return Some(Time::from_nanos((self.offset_ms + ms) * 1_000_000));
                }
                Some(Err(_)) => return None,
                None => {
                    // `use_a_delivery_opportunity`: the schedule wraps, shifted by its last
                    // timestamp; a trace of one pass (`--once`) ends.
                    if !self.repeat || self.last_ms == 0 || !self.lines.0.rewind() {
                        return None;
                    }
                    self.offset_ms += self.last_ms;
                    self.last_ms = 0;
                }
            }
        }
        None
    }

    /// The first opportunity not yet taken that comes after `t`, burning (skipping) those at
    /// or before it, which found the queue empty.
    pub fn next_after(&mut self, t: Time) -> Option<Time> {
        while let Some(h) = self.head {
            if h > t {
                return Some(h);
            }
            self.take();
        }
        None
    }

    /// Takes the head opportunity.
    pub fn take(&mut self) {
        self.head = self.read();
    }

    /// Takes every opportunity at or before `t`; returns how many.
    pub fn count_through(&mut self, t: Time) -> u64 {
        let mut n = 0;
        while self.head.is_some_and(|h| h <= t) {
            self.take();
            n += 1;
        }
        n
    }

    /// The rate of the opportunities in the window that ends at `t` (`t` never decreases).
    pub fn rate_around(&mut self, t: Time) -> Rate {
        while let Some(h) = self.head.filter(|&h| h <= t) {
            self.recent.push_back(h);
            self.take();
        }
        let from = Time::from_nanos(t.as_nanos().saturating_sub(TRACE_RATE_WINDOW.as_nanos()));
        while self.recent.front().is_some_and(|&r| r <= from) {
            self.recent.pop_front();
        }
        let bits = self.recent.len() as u64 * OPPORTUNITY_BYTES as u64 * 8;
        Rate::from_bps(bits * 1_000_000_000 / TRACE_RATE_WINDOW.as_nanos())
    }
}

/// One CSV step line, `TIME,VALUE` (`1.5s,40Mbps`); `#` starts a comment line.
fn csv_step<T: Level>(line: &str, number: u64) -> Result<Option<(Duration, T)>, TraceError> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let Some((time, value)) = t.split_once(',') else {
        return Err(TraceError::at(
            number,
            format!("{t:?}: expected TIME,VALUE (e.g. 1.5s,40Mbps)"),
        ));
    };
    let at = crate::scenario::units::parse_duration(time.trim())
        .map_err(|e| TraceError::at(number, format!("time: {e}")))?;
    let v = T::parse(value.trim()).map_err(|e| TraceError::at(number, format!("value: {e}")))?;
    Ok(Some((at, v)))
}

/// Checks a CSV step file: the first step at 0, times strictly increasing, every value valid
/// and within `range` (which says what is wrong, as a scenario's own value is refused), and, with
/// a period, every time below it. Returns the number of steps and the first value.
pub fn check_csv<T: Level>(
    path: &Path,
    period: Option<Duration>,
    range: impl Fn(T) -> Result<(), String>,
) -> Result<(u64, T), TraceError> {
    let mut lines = Lines::open(path)?;
    let (mut count, mut last, mut first) = (0u64, None::<Duration>, None::<T>);
    while let Some(line) = lines.next() {
        let (n, line) = line?;
        let Some((at, value)) = csv_step::<T>(line, n)? else {
            continue;
        };
        range(value).map_err(|e| TraceError::at(n, format!("value: {e}")))?;
        first.get_or_insert(value);
        match last {
            None if !at.is_zero() => {
                return Err(TraceError::at(
                    n,
                    format!("the first step is at {at}: it must be at 0s"),
                ))
            }
            Some(prev) if at <= prev => {
                return Err(TraceError::at(
                    n,
                    format!(
                    "time {at} is not after the previous step's {prev}: times strictly increase"
                ),
                ))
            }
            _ => {}
        }
        if let Some(p) = period {
            if at >= p {
                return Err(TraceError::at(
                    n,
                    format!("time {at} is not before the period {p}"),
                ));
            }
        }
        last = Some(at);
        count += 1;
    }
    match first {
        Some(first) => Ok((count, first)),
        None => Err(TraceError::at(0, "no steps: expected lines of TIME,VALUE")),
    }
}

/// A CSV step file's steps, streamed, repeating every `period` if given.
pub(super) struct CsvSteps<T> {
    lines: Lines,
    period: Option<Duration>,
    offset: Duration,
    _value: PhantomData<T>,
}

impl<T> std::fmt::Debug for CsvSteps<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CsvSteps(line {}, offset {})",
            self.lines.number, self.offset
        )
    }
}

impl<T: Level> CsvSteps<T> {
    pub fn open(path: &Path, period: Option<Duration>) -> Self {
        CsvSteps {
            lines: Lines::open(path).unwrap_or_else(|_| Lines::none()),
            period,
            offset: Duration::ZERO,
            _value: PhantomData,
        }
    }

    pub fn next(&mut self) -> Option<(Time, T)> {
        let mut rewound = false;
        loop {
            match self.lines.next() {
                Some(Ok((n, line))) => match csv_step::<T>(line, n) {
                    Ok(Some((at, v))) => return Some((Time::ZERO + self.offset + at, v)),
                    Ok(None) => continue,
                    Err(_) => return None,
                },
                Some(Err(_)) => return None,
                None => {
                    let period = self.period?;
                    if rewound || !self.lines.rewind() {
                        return None;
                    }
                    rewound = true;
                    self.offset += period;
                }
            }
        }
    }
}
