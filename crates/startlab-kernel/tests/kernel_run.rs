//! A scenario on Linux's TCP over the link emulator, end to end, in the simulator's tables.
//! Needs root: `make test-kernel`.

mod common;

use common::is_root;
use startlab_core::scenario;
use startlab_kernel::run::{run, RunOptions};

const SCENARIO: &str = r#"
name = "kernel-run-test"
duration = "2s"
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = { rate = "20Mbps", delay = "10ms", queue = { kind = "droptail", limit = "0.5BDP" } }
access = { rate = "1Gbps", delay = "0.5ms" }
[tcp]
mss = "1448B"
header = "52B"
sack = true
recovery = "sack"
[[flows]]
pair = 0
cc = "newreno"
[[flows]]
pair = 1
kind = "cbr"
rate = "2Mbps"
start = "0.5s"
stop = "1.5s"
[measure]
interval = "10ms"
[[measure.window]]
link = "bottleneck"
from = "0.5s"
to = "2s"
"#;

fn namespaces() -> Vec<String> {
    std::fs::read_dir("/var/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("startlab-{}-", std::process::id())))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[ignore = "kernel: needs root, network namespaces, TUN and tracefs"]
fn kernel_a_scenario_runs_over_the_emulator_into_the_simulators_tables() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let s = scenario::resolve(&scenario::from_toml(SCENARIO).unwrap()).unwrap();
    let out = run(&s, &RunOptions::default()).unwrap();
    let r = &out.report;
    assert!(namespaces().is_empty(), "left behind: {:?}", namespaces());
    // Reno into half a BDP: slow start ends by a loss, which the emulator's queue caused.
    assert_eq!(r.flows.len(), 2);
    let tcp = r.flows.row(0);
    assert_eq!(tcp.ss_exit_reason.as_deref(), Some("loss"), "{tcp:?}");
    assert!(tcp.retransmissions > 0 && tcp.goodput_bps > 10e6, "{tcp:?}");
    let b = r
        .links
        .name
        .iter()
        .position(|n| n == "left->right")
        .unwrap();
    let limit = r.links.limit_packets[b].unwrap() as u32;
    assert!(r.links.drops[b] > 0);
    assert!(
        r.links.max_queue_packets[b] <= limit,
        "the queue never exceeds its limit"
    );
    assert!(r.links.utilization[b] > 0.5 && r.links.utilization[b] <= 1.0);
    // The CBR source sent its 1 s at 2 Mbit/s of 1000-byte packets: 250 packets.
    let cbr = r.flows.row(1);
    assert_eq!((cbr.kind.as_str(), cbr.sent_packets), ("cbr", 250));
    assert!(
        cbr.delivered_bytes <= 250_000 && cbr.delivered_bytes > 200_000,
        "{cbr:?}"
    );
    // Packet conservation at the emulator.
    let st = &r.stats;
    assert_eq!(
        st.packets_created,
        st.packets_delivered + st.packets_dropped + st.packets_in_network
    );
    // The window over the bottleneck, and the flow series from the kernel's own state.
    assert_eq!(r.windows.utilization.len(), 1);
    assert!(r.flow_series.time_ns.len() > 100);
    assert!(r.queue_series.time_ns.len() > 100);
    // The emulator's own accuracy is reported.
    let e = &out.facts.emulator;
    assert!(e.packets > 1000 && e.lateness_p50_ns < 1_000_000, "{e:?}");
    assert_eq!(out.facts.trace_overruns, 0);
}
