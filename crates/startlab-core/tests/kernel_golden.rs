//! `tcp.stack = "linux"` against traces recorded on the real kernel (Linux 6.18 over the link
//! emulator, `tests/kernel_golden/*.kernel.csv`; each scenario file says how it was recorded).
//! The simulator is deterministic and the kernel is not, so the comparison has tolerances, the
//! targets of docs/kernel.md: the slow-start exit within 10 % in time and cwnd with the same
//! reason, retransmissions within 25 %, the same number of timeouts, delivered bytes within 2 %;
//! and the cwnd trajectory, sample by sample every 10 ms, within 10 % (or 2 segments) on at
//! least 90 % of the samples up to a trace's horizon.
//!
//! The horizon: once a flow is in congestion avoidance after a loss, which packet the next
//! overflow drops depends on sub-packet timing, and the two worlds become two different
//! realisations of the same dynamics. In `cubic-overshoot` the kernel lost one retransmission
//! more at 1.45 s (its cwnd held at 820 for 200 ms while snd_nxt - snd_una rose to 1611), which
//! delayed its next loss from 1.94 s to 2.15 s; the trajectory is compared up to 1.3 s (the
//! overshoot and the first two recoveries) and the rest by the totals.

use startlab_core::scenario;
use std::collections::HashMap;
use std::path::Path;

struct Trace {
    header: HashMap<String, String>,
    /// (time ms, cwnd)
    cwnd: Vec<(f64, f64)>,
}

fn read_trace(path: &Path) -> Trace {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut header = HashMap::new();
    let mut cwnd = Vec::new();
    for line in text.lines() {
        if let Some(kv) = line.strip_prefix("# ") {
            if let Some((k, v)) = kv.split_once(" = ") {
                header.insert(k.to_string(), v.to_string());
            }
        } else if let Some((t, rest)) = line.split_once(',') {
            if let (Ok(t), Some(Ok(c))) = (
                t.parse::<f64>(),
                rest.split(',').next().map(str::parse::<f64>),
            ) {
                cwnd.push((t, c));
            }
        }
    }
    Trace { header, cwnd }
}

fn within(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * b.abs()
}

fn compare(name: &str, horizon_ms: f64) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel_golden");
    let kernel = read_trace(&dir.join(format!("{name}.kernel.csv")));
    let text = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
    let s = scenario::from_toml(&text).unwrap();
    let r = scenario::build(scenario::resolve(&s).unwrap()).run();
    let f = r.flows.row(0);
    let k = |key: &str| kernel.header[key].clone();
    let kf = |key: &str| k(key).parse::<f64>().unwrap();

    let mut misses = Vec::new();
    let exit_s = f.ss_exit_ns.unwrap_or(0) as f64;
    if f.ss_exit_reason.as_deref() != Some(k("ss_exit_reason").as_str()) {
        misses.push(format!(
            "exit reason {:?} vs {}",
            f.ss_exit_reason,
            k("ss_exit_reason")
        ));
    }
    if !within(exit_s, kf("ss_exit_ns"), 0.10) {
        misses.push(format!("exit time {exit_s} ns vs {}", k("ss_exit_ns")));
    }
    if !within(f.ss_exit_cwnd.unwrap_or(0.0), kf("ss_exit_cwnd"), 0.10) {
        misses.push(format!(
            "exit cwnd {:?} vs {}",
            f.ss_exit_cwnd,
            k("ss_exit_cwnd")
        ));
    }
    if !within(f.retransmissions as f64, kf("retransmissions"), 0.25) {
        misses.push(format!(
            "retransmissions {} vs {}",
            f.retransmissions,
            k("retransmissions")
        ));
    }
    if f.timeouts as f64 != kf("timeouts") {
        misses.push(format!("timeouts {} vs {}", f.timeouts, k("timeouts")));
    }
    if !within(f.delivered_bytes as f64, kf("delivered_bytes"), 0.02) {
        misses.push(format!(
            "delivered {} vs {}",
            f.delivered_bytes,
            k("delivered_bytes")
        ));
    }

    // The trajectory: each kernel sample against the simulator's sample at the same instant.
    let sim: HashMap<i64, f64> = r
        .flow_series
        .time_ns
        .iter()
        .zip(&r.flow_series.flow)
        .zip(&r.flow_series.cwnd)
        .filter(|((_, &flow), _)| flow == 0)
        .map(|((&t, _), &c)| ((t as f64 / 1e6).round() as i64, c))
        .collect();
    let mut compared = 0;
    let mut close = 0;
    for &(t, kc) in kernel.cwnd.iter().filter(|(t, _)| *t <= horizon_ms) {
        let Some(&sc) = sim.get(&(t.round() as i64)) else {
            continue;
        };
        compared += 1;
        if (sc - kc).abs() <= (0.10 * kc).max(2.0) {
            close += 1;
        }
    }
    let in_horizon = kernel.cwnd.iter().filter(|(t, _)| *t <= horizon_ms).count();
    assert!(
        compared >= in_horizon * 9 / 10 && compared > 50,
        "{name}: only {compared} of {in_horizon} samples matched in time"
    );
    if (close as f64) < 0.9 * compared as f64 {
        misses.push(format!("cwnd within 10 % on {close} of {compared} samples"));
    }
    assert!(
        misses.is_empty(),
        "{name} against the kernel: {}",
        misses.join("; ")
    );
}

#[test]
fn a_cubic_overshoot_and_its_recovery_follow_the_kernel() {
    compare("cubic-overshoot", 1300.0);
}

#[test]
fn a_hystart_exit_and_congestion_avoidance_follow_the_kernel() {
    compare("hystart-train", f64::INFINITY);
}
