//! Every registered algorithm, run the same ways: a golden trace on a small dumbbell (a change of
//! behaviour is a reviewable diff), and properties under random scenarios and random
//! ACK / loss / timeout sequences.
//!
//! Regenerate the golden traces with `UPDATE_GOLDEN=1 cargo test -p startlab-core --test algorithms`.

use proptest::prelude::*;
use startlab_core::cc::registry::{self, Params, Role};
use startlab_core::cc::testing::Driver;
use startlab_core::scenario;
use startlab_core::Duration;
use std::fmt::Write;
use std::path::PathBuf;

/// (cc, startup) pairs: every controller with its own slow start, and every start-up algorithm
/// on NewReno, or on the controller it is part of (`registry::host_controller`: SUSS on CUBIC).
fn combinations() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for a in registry::algorithms() {
        match a.role {
            Role::Cc => v.push((a.name.to_string(), registry::DEFAULT_STARTUP.to_string())),
            Role::Startup => v.push((
                registry::host_controller(a.name).to_string(),
                a.name.to_string(),
            )),
            // The sender's pacing modes and initial window are drawn by the scenario fuzzer.
            Role::Pacing | Role::InitialWindow => {}
        }
    }
    v
}

/// A 20 Mbps / 40 ms dumbbell with a half-BDP buffer, a handshake, SACK and delayed ACKs, one
/// bulk flow from 0 s and a second from 3 s, random loss 1e-4: slow start, a loss, recovery,
/// congestion avoidance and competition in 8 s.
fn golden_scenario(cc: &str, startup: &str) -> String {
    format!(
        r#"
duration = "8s"
seed = 3
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = {{ rate = "20Mbps", delay = "18ms", queue = {{ kind = "droptail", limit = "0.5BDP" }}, loss = 0.0001 }}
access = {{ rate = "1Gbps", delay = "1ms" }}
[tcp]
handshake = true
sack = true
delayed_ack = true
initial_window = 2
[[flows]]
pair = 0
cc = "{cc}"
startup = "{startup}"
[[flows]]
pair = 1
cc = "{cc}"
startup = "{startup}"
start = "3s"
[measure]
interval = "100ms"
"#
    )
}

fn trace(cc: &str, startup: &str) -> String {
    let s = scenario::from_toml(&golden_scenario(cc, startup)).unwrap();
    let r = scenario::build(scenario::resolve(&s).unwrap()).run();
    let mut out = format!("# {cc} + {startup}: time_s flow cwnd ssthresh in_flight phase\n");
    let fs = &r.flow_series;
    for i in 0..fs.len() {
        writeln!(
            out,
            "{:.1} {} {:.3} {:.3} {} {}",
            fs.time_ns[i] as f64 * 1e-9,
            fs.flow[i],
            fs.cwnd[i],
            // Unlimited (null) prints as "inf", as the traces were first recorded.
            fs.ssthresh[i].unwrap_or(f64::INFINITY),
            fs.in_flight[i],
            fs.phase[i]
        )
        .unwrap();
    }
    for f in r.flows.rows() {
        writeln!(
            out,
            "flow {} delivered {} retransmissions {} timeouts {} recoveries {} ss_exit {} {:.3} {}",
            f.flow,
            f.delivered_bytes,
            f.retransmissions,
            f.timeouts,
            f.fast_recoveries,
            // "none" prints as -1, NaN and "", as the traces were first recorded.
            f.ss_exit_ns.unwrap_or(-1),
            f.ss_exit_cwnd.unwrap_or(f64::NAN),
            f.ss_exit_reason.as_deref().unwrap_or("")
        )
        .unwrap();
    }
    out
}

#[test]
fn golden_traces() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for (cc, startup) in combinations() {
        let name = if startup == registry::DEFAULT_STARTUP {
            cc.clone()
        } else {
            format!("{cc}+{startup}")
        };
        let path = dir.join(format!("{name}.txt"));
        let got = trace(&cc, &startup);
        if update {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(want) if want == got => {}
            Ok(_) => mismatches.push(format!("{name}: trace differs from {}", path.display())),
            Err(_) => mismatches.push(format!("{name}: no golden trace at {}", path.display())),
        }
    }
    assert!(
        mismatches.is_empty(),
        "{}\n(rerun with UPDATE_GOLDEN=1 to accept)",
        mismatches.join("\n")
    );
}

#[derive(Debug, Clone)]
enum Op {
    Round(u32),
    Ack(u32),
    Advance(u32),
    Send,
    FastRecovery,
    Timeout,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (5u32..400).prop_map(Op::Round),
        4 => (1u32..4).prop_map(Op::Ack),
        2 => (1u32..200).prop_map(Op::Advance),
        2 => Just(Op::Send),
        1 => Just(Op::FastRecovery),
        1 => Just(Op::Timeout),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Under any sequence of ACKs, losses and timeouts, every algorithm keeps cwnd at one segment
    /// or more and finite, and ssthresh positive.
    #[test]
    fn windows_stay_sane_under_random_ack_and_loss_sequences(
        ops in prop::collection::vec(op(), 1..80),
        iw in 1u32..20,
        ssthresh in prop_oneof![Just(f64::INFINITY), 2.0..500.0f64],
    ) {
        for (cc, startup) in combinations() {
            let c = registry::build(&cc, &Params::new(), &startup, &Params::new()).unwrap();
            let mut d = Driver::new(c, iw as f64, ssthresh);
            // A receiver window keeps loss-free runs from growing without bound.
            d.tcb.rwnd = 500;
            for op in &ops {
                match *op {
                    Op::Round(ms) => { d.round(Duration::from_millis(ms as u64)); }
                    Op::Ack(n) => d.ack(n),
                    Op::Advance(ms) => d.advance(Duration::from_millis(ms as u64)),
                    Op::Send => { d.send(); }
                    Op::FastRecovery => { d.send(); d.fast_recovery(); }
                    Op::Timeout => d.timeout(),
                }
                let t = &d.tcb;
                prop_assert!(t.cwnd >= 1.0 && t.cwnd.is_finite(), "{cc}+{startup}: cwnd {} after {:?}", t.cwnd, op);
                prop_assert!(t.ssthresh > 0.0, "{cc}+{startup}: ssthresh {} after {:?}", t.ssthresh, op);
            }
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// In the network, under random paths and losses, no algorithm lets cwnd fall below one
    /// segment, and the sender's window check (asserted on every transmission) holds.
    #[test]
    fn every_algorithm_runs_on_random_paths(
        rate in 1u32..200, delay in 1u32..100, buffer in 2u32..300, loss in prop_oneof![Just(0.0), 0.0..0.01f64],
        sack in any::<bool>(), delayed in any::<bool>(), seed in 0u64..1000,
    ) {
        for (cc, startup) in combinations() {
            let text = format!(
                "duration = \"3s\"\nseed = {seed}\n[topology]\nkind = \"dumbbell\"\n\
                 bottleneck = {{ rate = \"{rate}Mbps\", delay = \"{delay}ms\", queue = {{ kind = \"droptail\", limit = {buffer} }}, loss = {loss} }}\n\
                 [tcp]\nsack = {sack}\ndelayed_ack = {delayed}\n[[flows]]\ncc = \"{cc}\"\nstartup = \"{startup}\"\n[measure]\ninterval = \"event\"\n"
            );
            let s = scenario::from_toml(&text).unwrap();
            let r = scenario::build(scenario::resolve(&s).unwrap()).run();
            prop_assert!(r.flow_series.cwnd.iter().all(|&c| c >= 1.0 && c.is_finite()), "{cc}+{startup}");
            prop_assert!(r.flows.row(0).delivered_bytes > 0, "{cc}+{startup} delivered nothing");
        }
    }
}
