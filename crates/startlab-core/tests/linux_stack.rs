//! `tcp.stack = "linux"` end to end: the settings it resolves to, determinism, and the
//! behaviour after a heavy-loss slow-start exit that RACK and PRR exist for.

use startlab_core::measure::Report;
use startlab_core::scenario;

/// CUBIC (Linux's constants, no HyStart) on 50 Mbit/s, 40 ms, a 4-BDP DropTail buffer: slow
/// start overshoots into about 500 drops.
const PATH: &str = r#"
duration = "4s"
[topology]
kind = "dumbbell"
access = { rate = "10Gbps", delay = "0s" }
bottleneck = { rate = "50Mbps", delay = "20ms", queue = { kind = "droptail", limit = "4BDP" } }
[tcp]
stack = "linux"
[[flows]]
cc = "cubic"
cc_params = { constants = "linux" }
"#;

fn run(text: &str) -> Report {
    let s = scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    scenario::build(scenario::resolve(&s).unwrap_or_else(|e| panic!("{e}"))).run()
}

#[test]
fn the_linux_stack_fills_in_linuxs_defaults() {
    let s = scenario::from_toml(PATH).unwrap();
    let r = scenario::resolve(&s).unwrap();
    let text = toml::to_string(&r.document).unwrap();
    for line in [
        "stack = \"linux\"",
        "mss = \"1448B\"",
        "header = \"52B\"",
        "initial_window = 10",
        "recovery = \"prr\"",
        "loss_detection = \"rack-tlp\"",
        "ack_policy = \"linux\"",
        "rto = \"linux\"",
        "clock_granularity = \"4ms\"",
        "dsack = true",
        "frto = true",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
}

/// `tcp.hz` is the kernel's CONFIG_HZ: under the Linux stack it sets the jiffy of the RTO clock
/// and CUBIC's clock with it, for the document or for one flow; an explicit granularity stays.
#[test]
fn hz_sets_the_jiffy_of_the_rto_clock_and_cubics_clock() {
    use startlab_core::scenario::Traffic;
    use startlab_core::time::Duration;
    // The flow's clock granularity, and CUBIC's hz.
    let flow = |text: &str| {
        let s = scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
        let r = scenario::resolve(&s).unwrap_or_else(|e| panic!("{e}"));
        let Traffic::Tcp {
            tcp, controller, ..
        } = &r.flows[0].traffic
        else {
            panic!("a TCP flow")
        };
        let (cc_params, _) = controller.resolved_params();
        (tcp.clock_granularity, cc_params["hz"].as_u64().unwrap())
    };
    let ms = Duration::from_millis;
    assert_eq!(flow(PATH), (ms(4), 250));
    let doc_1000 = PATH.replace("stack = \"linux\"", "stack = \"linux\"\nhz = 1000");
    assert_eq!(flow(&doc_1000), (ms(1), 1000));
    let flow_100 = PATH.replace(
        "cc_params = { constants = \"linux\" }",
        "cc_params = { constants = \"linux\" }\ntcp = { hz = 100 }",
    );
    assert_eq!(flow(&flow_100), (ms(10), 100));
    // HZ 300: a jiffy of 3.333 ms, whole nanoseconds.
    let doc_300 = PATH.replace("stack = \"linux\"", "stack = \"linux\"\nhz = 300");
    assert_eq!(flow(&doc_300), (Duration::from_nanos(3_333_333), 300));
    // What the scenario says stays.
    let given = PATH.replace(
        "stack = \"linux\"",
        "stack = \"linux\"\nhz = 1000\nclock_granularity = \"2ms\"",
    );
    assert_eq!(flow(&given), (ms(2), 1000));
    let given = PATH.replace(
        "cc_params = { constants = \"linux\" }",
        "cc_params = { constants = \"linux\", hz = 0 }\ntcp = { hz = 100, clock_granularity = \"1ms\" }",
    );
    assert_eq!(flow(&given), (ms(1), 0));
}

#[test]
fn a_heavy_loss_exit_recovers_without_a_timeout_and_repeats_bit_for_bit() {
    let a = run(PATH);
    let b = run(PATH);
    let f = a.flows.row(0);
    assert_eq!(f.ss_exit_reason.as_deref(), Some("loss"));
    // Hundreds of segments are lost at the exit; RACK finds them and the lost
    // retransmissions, so the flow never waits for a retransmission timeout.
    assert!(f.retransmissions > 300, "{f:?}");
    assert_eq!(f.timeouts, 0, "{f:?}");
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    assert_eq!(
        format!("{:?}", a.flow_series),
        format!("{:?}", b.flow_series)
    );
}

#[test]
fn the_ns2_stack_still_times_out_on_the_same_path() {
    // The same path with the most Linux-like settings of the ns-2 stack: the lost
    // retransmissions go undetected and the flow times out (what the Linux stack fixes).
    let text = PATH.replace(
        "stack = \"linux\"",
        "mss = \"1448B\"\nheader = \"52B\"\ninitial_window = 10\nsack = true\nundo = true\ndelayed_ack = true\nhandshake = true",
    );
    let f = run(&text).flows.row(0);
    assert_eq!(f.ss_exit_reason.as_deref(), Some("loss"));
    assert!(f.timeouts >= 1, "{f:?}");
}

#[test]
fn a_receive_window_clamps_what_the_linux_receiver_offers() {
    // 50 segments on a 172-segment BDP: at most 50 × 1448 B per 40 ms RTT, 14.5 Mbit/s, and
    // never enough in flight to overflow the buffer.
    let text = PATH.replace(
        "stack = \"linux\"",
        "stack = \"linux\"\nreceive_window = 50",
    );
    let r = run(&text);
    let f = r.flows.row(0);
    assert_eq!(f.retransmissions, 0, "{f:?}");
    let mbps = f.goodput_bps / 1e6;
    assert!(mbps > 12.0 && mbps < 14.5, "{mbps}");
}

/// DCTCP on 100 Mbit/s, 50 ms behind CoDel marking with ECN: slow start overshoots, the echo
/// comes as the queue overflows, and whether a segment sent after the CWR began is lost decides
/// whether recovery ends in a second one. One segment at a time, every segment reaches the
/// bottleneck at the same point of its departures cycle, so that outcome turns on the access
/// delay to the microsecond. With Linux's GSO deferral (`tcp.tso_defer`) the sender transmits
/// in groups, as the kernel does, and recovers once (as the kernel does on this path) whatever
/// the access delay.
#[test]
fn with_gso_deferral_an_ecn_overshoot_ends_in_one_recovery_whatever_the_access_delay() {
    let path = |access_delay: &str, tso_defer: bool| {
        format!(
            r#"
duration = "6s"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "100Mbps", delay = "50ms", queue = {{ kind = "codel", ecn = true }} }}
access = {{ rate = "1Gbps", delay = "{access_delay}" }}
[tcp]
stack = "linux"
tso_defer = {tso_defer}
[[flows]]
cc = "dctcp"
"#
        )
    };
    for delay in ["0.1ms", "0.11ms", "0.13ms", "0.16ms", "0.25ms"] {
        let r = run(&path(delay, true));
        let f = r.flows.row(0);
        assert_eq!(f.ss_exit_reason.as_deref(), Some("ecn"), "{delay}: {f:?}");
        assert_eq!(f.fast_recoveries, 1, "{delay}: {f:?}");
        assert_eq!(f.timeouts, 0, "{delay}: {f:?}");
    }
    // Deterministic, as everything else.
    let (a, b) = (run(&path("0.1ms", true)), run(&path("0.1ms", true)));
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
}

#[test]
fn gso_deferral_is_refused_on_the_ns2_stack() {
    let text = PATH.replace("stack = \"linux\"", "sack = true\ntso_defer = true");
    let e = scenario::from_toml(&text)
        .and_then(|s| scenario::resolve(&s))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tcp.tso_defer") && e.contains("stack = \"linux\""),
        "{e}"
    );
}
