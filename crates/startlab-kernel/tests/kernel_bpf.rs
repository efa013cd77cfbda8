//! startlab's eBPF controllers in the kernel: every congestion control and start-up algorithm
//! of the object registered, run on a real transfer through the testbed, its hooks seen running
//! (its events came back) and its slow-start exit reported with a reason; nothing left
//! registered afterwards. Needs root: `make test-kernel`.

mod common;

use common::is_root;
use common::run_waiting as run;
use startlab_core::scenario;
use startlab_kernel::run::RunOptions;

/// A transfer of `duration` on a dumbbell with `bottleneck`, Linux-like TCP (IW 10, SACK, a
/// handshake), `tcp` added to the [tcp] table and `flow` to the flow.
fn scenario(bottleneck: &str, tcp: &str, flow: &str, duration: &str) -> String {
    format!(
        r#"
name = "kernel-bpf-test"
duration = "{duration}"
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = {bottleneck}
access = {{ rate = "1Gbps", delay = "0.1ms" }}
[tcp]
mss = "1448B"
header = "52B"
sack = true
recovery = "sack"
initial_window = 10
handshake = true
{tcp}
[[flows]]
{flow}
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

/// Every algorithm, on a path where the simulator's model and the kernel end slow start the
/// same way (found with `startlab compare`; docs/kernel.md has the comparisons): the kernel
/// runs startlab's port (registered, chosen by the socket), the port's hooks ran (its events
/// came back), its exit reason is the simulator's, and nothing stays registered.
const CASES: &[(&str, &str, &str, &str)] = &[
    // (flow, bottleneck, tcp, duration)
    ("cc = \"newreno\"\ncc_params = { beta = 0.5 }", FIFTY, "initial_ssthresh = 64", "2s"),
    ("cc = \"reno\"\ncc_params = { beta = 0.5 }", FIFTY, "initial_ssthresh = 64", "2s"),
    ("cc = \"bic\"", FIFTY, "initial_ssthresh = 64", "2s"),
    ("cc = \"blast\"", FIFTY, "initial_ssthresh = 64", "2s"),
    ("cc = \"hstcp\"", r#"{ rate = "400Mbps", delay = "50ms", queue = { kind = "droptail", limit = "0.5BDP" } }"#, "initial_ssthresh = 500", "2s"),
    ("cc = \"vegas\"", TEN, "", "3s"),
    ("cc = \"gallop-vegas\"", TEN, "", "3s"),
    ("cc = \"newreno\"\nstartup = \"vegas-ss\"", TEN, "", "3s"),
    ("cc = \"newreno\"\nstartup = \"slow-start\"", FIFTY, "initial_ssthresh = 64", "2s"),
    ("cc = \"cubic\"\ncc_params = { k_rule = \"pseudo-code\" }", FIFTY, "delayed_ack = false", "2s"),
    ("cc = \"cubic\"\nstartup = \"hystart\"", FIFTY, "delayed_ack = false", "2s"),
    ("cc = \"cubic\"\ncc_params = { k_rule = \"pseudo-code\" }\nstartup = \"hystart\"\nstartup_params = { variant = \"linux\" }", FIFTY, "delayed_ack = false", "2s"),
    ("cc = \"westwood\"", QUARTER, "", "2s"),
    ("cc = \"westwood\"\nstartup = \"astart\"", QUARTER, "initial_ssthresh = 16", "6s"),
    ("cc = \"newreno\"\nstartup = \"hoe\"", r#"{ rate = "2Mbps", delay = "20ms", queue = { kind = "droptail", limit = "1BDP" } }"#, "", "2s"),
    ("cc = \"newreno\"\nstartup = \"pstart\"", TWENTY, "initial_ssthresh = 200", "2s"),
    ("cc = \"newreno\"\nstartup = \"lss\"", TWENTY, "initial_ssthresh = 200", "2s"),
    ("cc = \"newreno\"\nstartup = \"search\"", TWENTY, "initial_ssthresh = 200", "2s"),
    ("cc = \"cubic\"\nstartup = \"hystart++\"", r#"{ rate = "50Mbps", delay = "20ms", queue = { kind = "droptail", limit = "16BDP" } }"#, "delayed_ack = false", "3s"),
];

/// 50 Mbit/s, RTT 40 ms, a buffer of one BDP.
const FIFTY: &str =
    r#"{ rate = "50Mbps", delay = "20ms", queue = { kind = "droptail", limit = "1BDP" } }"#;
/// 50 Mbit/s, RTT 40 ms, a buffer of a quarter BDP.
const QUARTER: &str =
    r#"{ rate = "50Mbps", delay = "20ms", queue = { kind = "droptail", limit = "0.25BDP" } }"#;
/// 20 Mbit/s, RTT 100 ms, a buffer of two BDPs.
const TWENTY: &str =
    r#"{ rate = "20Mbps", delay = "50ms", queue = { kind = "droptail", limit = "2BDP" } }"#;
/// 10 Mbit/s, RTT 98 ms, a buffer of one BDP.
const TEN: &str =
    r#"{ rate = "10Mbps", delay = "49ms", queue = { kind = "droptail", limit = "1BDP" } }"#;

#[test]
#[ignore = "kernel: needs root, network namespaces, TUN and tracefs"]
fn kernel_bpf_every_port_runs_in_the_kernel_and_reports_its_exit() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let mut failures = Vec::new();
    for (flow, bottleneck, tcp, duration) in CASES {
        let text = scenario(bottleneck, tcp, flow, duration);
        let parsed = scenario::from_toml(&text).unwrap();
        let simulated = startlab_core::simulation::Simulation::from_resolved(
            scenario::resolve(&parsed).unwrap(),
        )
        .run();
        let s = scenario::resolve(&parsed).unwrap();
        let want = simulated.flows.ss_exit_reason[0].clone();
        // The kernel is not deterministic: a delay-based detector near its threshold may end
        // slow start by its other rule in one run (Gallop-Vegas's gallop-beta for gallop-gamma,
        // once in four runs on 2026-11-28). A case whose exit differs runs once more; it
        // passes if that run agrees, and both are printed.
        let mut attempts = Vec::new();
        let out = loop {
            let out = match run(&s, &RunOptions::default()) {
                Ok(o) => o,
                Err(e) => break Err(e),
            };
            let got = out.report.flows.ss_exit_reason[0].clone();
            let late = out.facts.emulator.late_1ms_packets;
            attempts.push(format!("{got:?} ({late} packets 1 ms late)"));
            if got == want || attempts.len() == 2 {
                break Ok(out);
            }
        };
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{flow}: {e}"));
                continue;
            }
        };
        let got = out.report.flows.ss_exit_reason[0].clone();
        let cc = &out.facts.connections[0].cc;
        let events = out.facts.bpf_controllers.first().map_or(0, |b| b.events);
        eprintln!(
            "{}: kernel {} (cc {cc}, {events} events), simulator {want:?}",
            flow.replace('\n', " "),
            attempts.join(", then ")
        );
        if !cc.starts_with("startlab_") || events == 0 || got.is_none() || got != want {
            failures.push(format!(
                "{}: kernel {} via {cc} with {events} events, simulator {want:?}",
                flow.replace('\n', " "),
                attempts.join(", then ")
            ));
        }
        assert!(
            registered().is_empty(),
            "left registered: {:?}",
            registered()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
tcp = { initial_ssthresh = 20, mss = "1000B" }
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
    let ccs: Vec<&str> = out
        .facts
        .connections
        .iter()
        .map(|c| c.cc.as_str())
        .collect();
    assert_eq!(ccs, ["startlab_0", "startlab_1"]);
    // Each connection sent segments of its scenario's size (TCP_MAXSEG).
    let mss: Vec<u32> = out.facts.connections.iter().map(|c| c.mss).collect();
    assert_eq!(mss, [1000, 1448]);
    assert_eq!(out.facts.bpf_controllers.len(), 2);
    let f = &out.report.flows;
    // Each left slow start at its own ssthresh ("threshold", cwnd = the scenario's ssthresh).
    for (i, ssthresh) in [(0, 20.0), (1, 40.0)] {
        assert_eq!(
            f.ss_exit_reason[i].as_deref(),
            Some("threshold"),
            "flow {i}"
        );
        assert_eq!(f.ss_exit_cwnd[i], Some(ssthresh), "flow {i}");
    }
    // The phase series carries the controllers' reports: slow start, then congestion
    // avoidance.
    let phases: Vec<u8> = out.report.flow_series.phase.clone();
    assert!(phases.contains(&0) && phases.contains(&1), "{phases:?}");
    assert!(
        registered().is_empty(),
        "left registered: {:?}",
        registered()
    );
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

/// A user's controller (examples/bpf/aimd.bpf.c), compiled as docs/bpf.md says, runs in the
/// kernel from the same scenario the simulator runs, with its parameters: after the first loss
/// ssthresh is `decrease_percent` of cwnd.
#[test]
#[ignore = "kernel: needs root, network namespaces, TUN and tracefs"]
fn kernel_bpf_a_users_controller_runs_with_its_parameters() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("startlab-kernel-aimd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let object = dir.join("aimd.bpf.o");
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bpf/aimd.bpf.c");
    let ok = std::process::Command::new("clang")
        .args([
            "-g",
            "-O2",
            "-target",
            "bpf",
            "-D__TARGET_ARCH_x86",
            "-I/usr/include/bpf",
            "-c",
        ])
        .arg(&source)
        .arg("-o")
        .arg(&object)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let flow = format!(
        "cc = {{ bpf = \"{}\" }}\ncc_params = {{ decrease_percent = 70 }}",
        object.display()
    );
    let text = scenario(FIFTY, "", &flow, "3s");
    let s = scenario::resolve(&scenario::from_toml(&text).unwrap()).unwrap();
    let out = run(&s, &RunOptions::default()).unwrap();
    assert_eq!(out.facts.connections[0].cc, "startlab_0");
    assert!(registered().is_empty());
    let series = &out.report.flow_series;
    // Slow start ends by a loss; tcp_probe's ssthresh is the raw one during the recovery that
    // follows it.
    let f = &out.report.flows;
    assert_eq!(f.ss_exit_reason[0].as_deref(), Some("loss"));
    let cwnd = f.ss_exit_cwnd[0].unwrap();
    let ssthresh = series.ssthresh.iter().find_map(|s| *s).expect("a loss");
    eprintln!("cwnd {cwnd} before the loss, ssthresh {ssthresh} after");
    assert!(
        (ssthresh - 0.7 * cwnd).abs() <= 0.03 * cwnd + 2.0,
        "cwnd {cwnd}, ssthresh {ssthresh}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
