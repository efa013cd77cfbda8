//! Controller fuzzing: every congestion control and every start-up algorithm driven through
//! random but causally possible sequences of hook calls — sends, ACKs with their RTT samples,
//! duplicate ACKs, fast recoveries, timeouts, undos, idle restarts, receiver-limited periods —
//! with the window invariants checked after every step (the way s2n-quic fuzzes its
//! controllers).
//!
//! The default suite runs a few thousand sequences per algorithm. The long run, a million
//! sequences per algorithm:
//! `STARTLAB_CC_FUZZ_SEQUENCES=1000000 cargo test --release -p startlab-core --test controller_fuzz -- --nocapture`.
//! A failure prints the algorithm, the seed and the steps, which replay exactly.

use startlab_core::cc::params::Allowed;
use startlab_core::cc::registry::{self, Params, Role};
use startlab_core::cc::testing::Driver;
use startlab_core::cc::CwndEvent;
use startlab_core::rng::Rng;
use startlab_core::Duration;

/// Steps per sequence.
const STEPS: usize = 40;

#[derive(Copy, Clone, Debug)]
enum Step {
    /// Send what the window allows.
    Send,
    /// Time passes (ms).
    Wait(u64),
    /// One ACK for this many of the oldest outstanding segments.
    Ack(u32),
    /// A duplicate ACK that delivers nothing.
    DupAck,
    FastRecovery,
    Timeout,
    /// The last reduction was spurious.
    Undo,
    /// The connection idles for this many ms, then transmission starts again.
    Idle(u64),
    /// The receiver's window: `Some(segments)`, or unlimited.
    Rwnd(Option<u32>),
}

fn draw(rng: &mut Rng) -> Step {
    let x = rng.uniform();
    let n = |rng: &mut Rng, top: f64| 1 + (rng.uniform() * top) as u32;
    match (x * 100.0) as u32 {
        0..=24 => Step::Send,
        25..=39 => Step::Wait((rng.uniform() * 300.0) as u64),
        40..=74 => Step::Ack(n(rng, 8.0)),
        75..=81 => Step::DupAck,
        82..=86 => Step::FastRecovery,
        87..=89 => Step::Timeout,
        90..=92 => Step::Undo,
        93..=95 => Step::Idle(500 + (rng.uniform() * 3000.0) as u64),
        _ => Step::Rwnd((rng.uniform() < 0.5).then(|| n(rng, 40.0))),
    }
}

fn apply(d: &mut Driver, step: Step) {
    match step {
        Step::Send => {
            d.send();
        }
        Step::Wait(ms) => d.advance(Duration::from_millis(ms)),
        Step::Ack(n) => {
            // An ACK comes at least a 1 ms RTT after what it acknowledges.
            d.advance(Duration::from_millis(1));
            d.ack(n);
        }
        Step::DupAck => d.cc.cwnd_event(&mut d.tcb, CwndEvent::DupAck, d.now),
        Step::FastRecovery => {
            if d.in_flight() > 0 {
                d.fast_recovery();
            }
        }
        Step::Timeout => {
            if d.in_flight() > 0 {
                d.timeout();
            }
        }
        Step::Undo => {
            // As the sender undoes (RFC 3522 / Linux tcp_undo_cwnd_reduction).
            d.tcb.cwnd = d.cc.undo_cwnd(&mut d.tcb);
        }
        Step::Idle(ms) => {
            d.advance(Duration::from_millis(ms));
            d.cc.cwnd_event(&mut d.tcb, CwndEvent::TxStart, d.now);
        }
        Step::Rwnd(w) => d.tcb.rwnd = w.unwrap_or(u32::MAX),
    }
}

fn broken(d: &Driver) -> Option<String> {
    let t = &d.tcb;
    if !(t.cwnd.is_finite() && t.cwnd >= 1.0) {
        return Some(format!("cwnd {}", t.cwnd));
    }
    // Written so that NaN fails too.
    if t.ssthresh.is_nan() || t.ssthresh < 2.0 {
        return Some(format!("ssthresh {}", t.ssthresh));
    }
    if t.pacing_rate.is_some_and(|r| r.bps() == 0) {
        return Some("a pacing rate of 0".into());
    }
    None
}

/// Runs `sequences` random sequences on a fresh controller each; the first broken invariant is
/// reported with the seed and the steps that led to it.
fn fuzz(cc: &str, startup: &str, sequences: u64) -> Result<(), String> {
    let none = Params::new();
    // The algorithm under test is the start-up algorithm if there is one, else the controller.
    let tested = if startup == registry::DEFAULT_STARTUP {
        cc
    } else {
        startup
    };
    let numeric: Vec<_> = registry::algorithms()
        .into_iter()
        .find(|a| a.name == tested)
        .map(|a| a.params)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| matches!(p.range, Allowed::Range { .. }))
        .collect();
    for seed in 0..sequences {
        let mut rng = Rng::stream(seed, 0);
        // Half of the sequences run with one parameter drawn inside its declared range.
        let mut params = Params::new();
        if !numeric.is_empty() && rng.uniform() < 0.5 {
            let p = &numeric[(rng.uniform() * numeric.len() as f64) as usize % numeric.len()];
            let Allowed::Range { min, max, .. } = p.range else {
                unreachable!()
            };
            let x = min + (max - min) * (0.01 + 0.98 * rng.uniform());
            let integer = !p.default.contains('.') && p.default.parse::<i64>().is_ok();
            let value = if integer {
                serde_json::json!((x.round() as i64).clamp(min.ceil() as i64, max.floor() as i64))
            } else {
                serde_json::json!(x)
            };
            params.insert(p.name.to_string(), value);
        }
        let (cc_params, startup_params) = if tested == cc {
            (&params, &none)
        } else {
            (&none, &params)
        };
        let controller = match registry::build(cc, cc_params, startup, startup_params) {
            Ok(c) => c,
            // A combination the algorithm refuses (each value is within its own range).
            Err(e) if !e.message.starts_with("invalid value") => continue,
            Err(e) => return Err(format!("{tested}: {params:?} refused: {}", e.message)),
        };
        // Start anywhere from one segment to a large window, with a finite or unlimited ssthresh.
        let cwnd = 1.0 + (rng.uniform() * 50.0).floor();
        let ssthresh = if rng.uniform() < 0.5 {
            f64::INFINITY
        } else {
            2.0 + (rng.uniform() * 100.0).floor()
        };
        let mut d = Driver::new(controller, cwnd, ssthresh);
        let mut steps = Vec::with_capacity(STEPS);
        for _ in 0..STEPS {
            let step = draw(&mut rng);
            steps.push(step);
            apply(&mut d, step);
            if let Some(what) = broken(&d) {
                return Err(format!(
                    "{cc} + {startup} {params:?}, seed {seed}, cwnd {cwnd}, ssthresh {ssthresh}: {what} after {steps:?}"
                ));
            }
        }
    }
    Ok(())
}

fn sequences() -> u64 {
    std::env::var("STARTLAB_CC_FUZZ_SEQUENCES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

#[test]
fn every_controller_keeps_its_window_sane_under_any_hook_sequence() {
    let n = sequences();
    let mut failures = Vec::new();
    for a in registry::algorithms() {
        let (cc, startup) = match a.role {
            Role::Cc => (a.name, registry::DEFAULT_STARTUP),
            // On Reno, or on the controller it is part of (SUSS on CUBIC).
            Role::Startup => (
                registry::startup_controllers(a.name).map_or("reno", |ccs| ccs[0]),
                a.name,
            ),
            #[allow(unreachable_patterns)]
            _ => continue,
        };
        let t0 = std::time::Instant::now();
        if let Err(e) = fuzz(cc, startup, n) {
            failures.push(e);
        }
        println!(
            "{cc} + {startup}: {n} sequences in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
