//! startlab's eBPF controllers in the kernel: every congestion control and start-up algorithm
//! of the object registered, run on a real transfer through the testbed, its hooks seen running
//! (its events came back) and its slow-start exit reported with a reason; nothing left
//! registered afterwards. Needs root: `make test-kernel`.

mod common;

use common::is_root;
use startlab_core::scenario;
use common::run_waiting as run;
use startlab_kernel::run::RunOptions;

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

/// Two flows of one run with different parameters: two controllers registered side by side,
/// each connection on its own, each with its own initial ssthresh honoured.
#[test]
#[ignore = "kernel: needs root, network namespaces, TUN and tracefs"]
fn kernel_bpf_two_flows_with_different_parameters_run_at_once() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let text = r#"
name = "kernel-bpf-two"
duration = "2s"
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = { rate = "50Mbps", delay = "20ms", queue = { kind = "droptail", limit = "1BDP" } }
access = { rate = "1Gbps", delay = "0.1ms" }
[tcp]
mss = "1448B"
header = "52B"
sack = true
recovery = "sack"
[[flows]]
pair = 0
cc = "newreno"
tcp = { initial_ssthresh = 20 }
[[flows]]
pair = 1
cc = "newreno"
cc_params = { beta = 0.7 }
tcp = { initial_ssthresh = 40 }
[measure]
interval = "10ms"
"#;
    let s = scenario::resolve(&scenario::from_toml(text).unwrap()).unwrap();
    let out = run(&s, &RunOptions::default()).unwrap();
    let ccs: Vec<&str> = out.facts.connections.iter().map(|c| c.cc.as_str()).collect();
    assert_eq!(ccs, ["startlab_0", "startlab_1"]);
    assert_eq!(out.facts.bpf_controllers.len(), 2);
    let f = &out.report.flows;
    // Each left slow start at its own ssthresh ("threshold", cwnd = the scenario's ssthresh).
    for (i, ssthresh) in [(0, 20.0), (1, 40.0)] {
        assert_eq!(f.ss_exit_reason[i].as_deref(), Some("threshold"), "flow {i}");
        assert_eq!(f.ss_exit_cwnd[i], Some(ssthresh), "flow {i}");
    }
    // The phase series carries the controllers' reports: slow start, then congestion
    // avoidance.
    let phases: Vec<u8> = out.report.flow_series.phase.clone();
    assert!(phases.contains(&0) && phases.contains(&1), "{phases:?}");
    assert!(registered().is_empty(), "left registered: {:?}", registered());
}

/// Initial Spreading paces the initial window over the handshake's RTT, then stops pacing: the
/// 10-segment burst that queues at a bottleneck 100 times slower than the access link without
/// it does not queue with it.
#[test]
#[ignore = "kernel: needs root, network namespaces, TUN and tracefs"]
fn kernel_bpf_initial_spreading_spreads_the_initial_window() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let first_rtt_queue = |pacing: &str| -> u32 {
        let text = format!(
            r#"
name = "kernel-bpf-spreading"
duration = "1s"
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = {{ rate = "10Mbps", delay = "50ms", queue = {{ kind = "droptail", limit = "1BDP" }} }}
access = {{ rate = "1Gbps", delay = "0.1ms" }}
[tcp]
mss = "1448B"
header = "52B"
sack = true
recovery = "sack"
initial_window = 10
handshake = true
pacing = "{pacing}"
[[flows]]
cc = "newreno"
cc_params = {{ beta = 0.5 }}
[measure]
interval = "1ms"
"#
        );
        let s = scenario::resolve(&scenario::from_toml(&text).unwrap()).unwrap();
        let out = run(&s, &RunOptions::default()).unwrap();
        let q = &out.report.queue_series;
        // The handshake takes one RTT (about 100 ms); the initial window leaves in the next.
        (0..q.time_ns.len())
            .filter(|&i| q.time_ns[i] < 200_000_000)
            .map(|i| q.queue_packets[i])
            .max()
            .unwrap()
    };
    let burst = first_rtt_queue("none");
    let spread = first_rtt_queue("initial-spreading");
    assert!(burst >= 7, "an unpaced initial window queues: {burst}");
    assert!(spread <= 1, "a spread one does not: {spread}");
}
