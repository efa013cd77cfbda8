//! Bad scenarios are refused with the field's path, the value and what is allowed.

use startlab_core::scenario;

const BASE: &str = r#"
duration = "10s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "40Mbps", delay = "40ms", queue = { kind = "droptail", limit = "1BDP" } }
[[flows]]
cc = "newreno"
"#;

fn error(text: &str) -> String {
    match scenario::from_toml(text).and_then(|s| scenario::resolve(&s)) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_base_is_valid_and_resolves_bdp_into_packets() {
    let s = scenario::resolve(&scenario::from_toml(BASE).unwrap())
        .unwrap()
        .document;
    // 40 Mbps x 2 x (1 + 40 + 1) ms = 420 000 B = 403.8 packets of 1040 B -> 404.
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["topology"]["bottleneck"]["queue"]["limit"], 404);
    assert_eq!(json["topology"]["bdp_rtt"], "84ms");
    assert_eq!(json["flows"][0]["src"], "s0");
    // The resolved scenario is itself valid and resolves to itself.
    let again = scenario::resolve(&s).unwrap().document;
    assert_eq!(again, s);
}

/// A pair or hop entry that sets only `delay` gets it in both directions; `reverse_delay` set on
/// the shared access or bottleneck still wins over it.
#[test]
fn a_pair_delay_applies_to_both_directions() {
    let text = BASE.replace(
        "[[flows]]",
        "access = { delay = \"0.5ms\" }\n[[topology.pair]]\nsender_access = { delay = \"20ms\" }\n[[flows]]",
    );
    let s = scenario::resolve(&scenario::from_toml(&text).unwrap())
        .unwrap()
        .document;
    let json = serde_json::to_value(&s).unwrap();
    let sender = &json["topology"]["pair"][0]["sender_access"];
    assert_eq!(
        (&sender["delay"], &sender["reverse_delay"]),
        (&"20ms".into(), &"20ms".into())
    );
    // 2 x (20 + 40 + 0.5) ms.
    assert_eq!(json["topology"]["bdp_rtt"], "121ms");

    let text = text.replace(
        "delay = \"0.5ms\"",
        "delay = \"0.5ms\", reverse_delay = \"2ms\"",
    );
    let s = scenario::resolve(&scenario::from_toml(&text).unwrap())
        .unwrap()
        .document;
    let json = serde_json::to_value(&s).unwrap();
    let sender = &json["topology"]["pair"][0]["sender_access"];
    assert_eq!(
        (&sender["delay"], &sender["reverse_delay"]),
        (&"20ms".into(), &"2ms".into())
    );

    let lot = r#"
duration = "10s"
[topology]
kind = "parking-lot"
hops = 2
bottleneck = { rate = "40Mbps", delay = "10ms" }
[[topology.hop]]
delay = "30ms"
[[flows]]
cc = "newreno"
src = "ls0"
dst = "lr0"
"#;
    let s = scenario::resolve(&scenario::from_toml(lot).unwrap())
        .unwrap()
        .document;
    let json = serde_json::to_value(&s).unwrap();
    let hops = &json["topology"]["hop"];
    assert_eq!(
        (&hops[0]["delay"], &hops[0]["reverse_delay"]),
        (&"30ms".into(), &"30ms".into())
    );
    assert_eq!(
        (&hops[1]["delay"], &hops[1]["reverse_delay"]),
        (&"10ms".into(), &"10ms".into())
    );
}

#[test]
fn unknown_field() {
    let e = error(&BASE.replace("rate = \"40Mbps\"", "rat = \"40Mbps\""));
    assert!(
        e.starts_with("topology.bottleneck.rat: unknown field `rat`"),
        "{e}"
    );
    assert!(e.contains("`rate`"), "{e}");
}

#[test]
fn negative_rate() {
    let e = error(&BASE.replace("\"40Mbps\"", "\"-5Mbps\""));
    assert!(
        e.starts_with("topology.bottleneck.rate: invalid rate \"-5Mbps\""),
        "{e}"
    );
    assert!(e.contains("Mbps"), "{e}");
}

#[test]
fn negative_buffer() {
    let e = error(&BASE.replace("\"1BDP\"", "\"-1BDP\""));
    assert!(
        e.starts_with("topology.bottleneck.queue.limit: invalid queue limit \"-1BDP\""),
        "{e}"
    );
}

#[test]
fn unknown_algorithm() {
    let e = error(&BASE.replace("\"newreno\"", "\"warp\""));
    assert!(
        e.starts_with("flows[0].cc: unknown congestion control \"warp\"; available:"),
        "{e}"
    );
}

#[test]
fn malformed_toml() {
    let e = error("duration = \"10s\"\n[topology\nkind = 1");
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn fields_that_do_not_belong_to_the_kind() {
    let e = error(&BASE.replace("cc = \"newreno\"", "cc = \"newreno\"\nrate = \"1Mbps\""));
    assert_eq!(e, "flows[0].rate: not a field of kind = \"tcp\"");
    let e = error(&BASE.replace("kind = \"dumbbell\"", "kind = \"dumbbell\"\nhops = 3"));
    assert_eq!(e, "topology.hops: not a field of kind = \"dumbbell\"");
}

#[test]
fn missing_and_out_of_range_values() {
    let e = error(&BASE.replace("[[flows]]\ncc = \"newreno\"", "[[flows]]\nkind = \"cbr\""));
    assert!(e.starts_with("flows[0].rate: required"), "{e}");
    let e = error(&BASE.replace("delay = \"40ms\",", "delay = \"40ms\", loss = 1.5,"));
    assert!(
        e.starts_with("topology.bottleneck.loss: invalid probability 1.5"),
        "{e}"
    );
    let e = error(&BASE.replace("cc = \"newreno\"", "cc = \"newreno\"\npair = 3"));
    assert!(e.starts_with("flows[0].pair: invalid pair 3"), "{e}");
    let e = error(&BASE.replace("cc = \"newreno\"", "cc = \"newreno\"\nstart = \"11s\""));
    assert!(
        e.starts_with("flows[0].start: 11s is not before the end"),
        "{e}"
    );
    let e = error(&BASE.replace(
        "cc = \"newreno\"",
        "cc = \"newreno\"\ncc_params = { beta = 0.5, gamma = 2 }",
    ));
    assert!(
        e.starts_with("flows[0].cc_params: unknown field `gamma`"),
        "{e}"
    );
    let e = error(&(BASE.to_string() + "[measure]\nlinks = [\"nowhere\"]\n"));
    assert!(
        e.starts_with("measure.links[0]: unknown link \"nowhere\""),
        "{e}"
    );
    let e = error(&BASE.replace("duration = \"10s\"", ""));
    assert!(e.contains("missing field `duration`"), "{e}");
    let e = error(&BASE.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[[flows]]\ncc = \"newreno\"\ntcp = { recovery = \"sack\" }",
    ));
    assert!(
        e.starts_with("flows[0].tcp.recovery: \"sack\" and \"prr\" recovery need sack = true"),
        "{e}"
    );
    // The Linux stack's pieces: a stack per flow, RACK outside Linux's recovery, a bad HZ.
    let e = error(&BASE.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[[flows]]\ncc = \"newreno\"\ntcp = { stack = \"linux\" }",
    ));
    assert!(
        e.starts_with("flows[0].tcp.stack: the stack is chosen for the whole scenario"),
        "{e}"
    );
    let e = error(&BASE.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[[flows]]\ncc = \"newreno\"\ntcp = { sack = true, loss_detection = \"rack\" }",
    ));
    assert!(
        e.starts_with("flows[0].tcp.loss_detection: RACK runs within Linux's recovery"),
        "{e}"
    );
    let e = error(&BASE.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[[flows]]\ncc = \"newreno\"\ntcp = { hz = 7 }",
    ));
    assert!(
        e.contains("tcp.hz: invalid timer frequency 7: expected 100 to 1000"),
        "{e}"
    );
    // D-SACK without SACK, F-RTO outside Linux's recovery.
    let e = error(&BASE.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[[flows]]\ncc = \"newreno\"\ntcp = { dsack = true }",
    ));
    assert!(
        e.starts_with("flows[0].tcp.dsack: a D-SACK block is a SACK option"),
        "{e}"
    );
    let e = error(&BASE.replace(
        "[[flows]]\ncc = \"newreno\"",
        "[[flows]]\ncc = \"newreno\"\ntcp = { sack = true, frto = true }",
    ));
    assert!(
        e.starts_with("flows[0].tcp.frto: F-RTO runs within Linux's recovery"),
        "{e}"
    );
    // Pacing ratios are the sysctls': whole percent, 1 to 1000 (Linux refuses 1001 %).
    for bad in ["11", "1.255", "0"] {
        let e = error(&BASE.replace(
            "[[flows]]\ncc = \"newreno\"",
            &format!("[tcp]\npacing_ss_ratio = {bad}\n[[flows]]\ncc = \"newreno\""),
        ));
        assert!(
            e.starts_with(&format!(
                "tcp.pacing_ss_ratio: invalid ratio {bad}: expected a whole number of percent"
            )),
            "{e}"
        );
    }
    let ok = BASE.replace(
        "[[flows]]",
        "[tcp]\npacing_ca_ratio = 10\npacing_ss_ratio = 2.55\n[[flows]]",
    );
    scenario::resolve(&scenario::from_toml(&ok).unwrap()).unwrap();
}

#[test]
fn json_errors_carry_no_position_in_the_json_text() {
    let e =
        scenario::from_json(r#"{"duration": "10s", "topology": {"kind": "ring"}, "flows": []}"#)
            .unwrap_err();
    assert_eq!(e.path, "topology.kind");
    assert!(!e.message.contains(" at line "), "{}", e.message);
    assert!(
        e.message.contains("unknown variant `ring`"),
        "{}",
        e.message
    );
}

#[test]
fn a_flow_between_two_pairs_of_parallel_paths_is_refused() {
    // Each pair of kind = "parallel" has a path of its own: s0 reaches r0 only.
    let text = BASE.replace("kind = \"dumbbell\"", "kind = \"parallel\"\npairs = 2")
        + "src = \"s0\"\ndst = \"r1\"\n";
    let e = error(&text);
    assert!(
        e.starts_with("flows[0].dst: no path from \"s0\" to \"r1\""),
        "{e}"
    );
}

#[test]
fn the_resolved_scenario_describes_links_hosts_and_rtts() {
    // Access links 1 ms each way: RTT = 2 x (1 + 40 + 1) ms = 84 ms; 40 Mbps x 84 ms = 420 000 B
    // = 403.85 packets of 1000 + 40 B. The second copy of the entry starts 1 s later.
    let text = BASE.to_string() + "count = 2\nstagger = \"1s\"\n";
    let r = scenario::resolve(&scenario::from_toml(&text).unwrap()).unwrap();
    let d = r.describe();
    assert_eq!(d.hosts, ["s0", "r0"]);
    assert_eq!(d.bdp.rtt, startlab_core::Duration::from_millis(84));
    assert!((d.bdp.packets - 420_000.0 / 1040.0).abs() < 1e-9);
    let labels: Vec<&str> = d.flows.iter().map(|f| f.label.as_str()).collect();
    assert_eq!(labels, ["newreno#0", "newreno#1"]);
    assert!(d
        .flows
        .iter()
        .all(|f| f.rtt == startlab_core::Duration::from_millis(84)));
    let bottleneck: Vec<_> = d
        .links
        .iter()
        .filter(|l| l.alias.as_deref() == Some("bottleneck"))
        .collect();
    assert_eq!(bottleneck.len(), 1);
    assert_eq!(
        bottleneck[0].delay,
        startlab_core::Duration::from_millis(40)
    );
    assert_eq!(d.sampled_links, [bottleneck[0].link]);
    match &r.flows[0].traffic {
        scenario::Traffic::Tcp { connections, .. } => {
            assert_eq!(connections.len(), 2);
            assert_eq!(
                connections[1].start,
                startlab_core::Time::from_nanos(1_000_000_000)
            );
        }
        other => panic!("not TCP: {other:?}"),
    }
}

#[test]
fn runs_that_would_not_fit_in_memory_are_refused_with_the_estimate() {
    let lot = |extra: &str| {
        format!(
            "duration = \"2s\"\n[topology]\nkind = \"parking-lot\"\nhops = 2\n{extra}\nbottleneck = {{ rate = \"10Mbps\", delay = \"10ms\" }}\n[[flows]]\nsrc = \"ls0\"\ndst = \"lr0\"\n"
        )
    };
    let e = error(&lot("cross_pairs = 1000000"));
    assert!(
        e.starts_with("topology.cross_pairs: invalid value 1000000: expected 0 to 10000"),
        "{e}"
    );
    // 2 x 5000 x 2 + 2 x 1 + 3 = 20005 nodes.
    let e = error(&lot("cross_pairs = 5000"));
    assert!(e.contains("make 20005 nodes; at most 20002"), "{e}");
    // Every nanosecond for 2 s: 2e9 samples of one flow and one link.
    let e = error(&(BASE.to_string() + "[measure]\ninterval = \"1ns\"\n"));
    assert!(
        e.starts_with("measure.interval: 1ns over 10s would record about"),
        "{e}"
    );
    assert!(e.contains("GiB"), "{e}");
    let e = error(&BASE.replace(
        "cc = \"newreno\"",
        "kind = \"tcp-arrivals\"\nmean_interarrival = \"1ns\"\nsize = { distribution = \"fixed\", value = \"10KB\" }",
    ));
    assert!(
        e.starts_with("flows[0].mean_interarrival: 1ns over 10 s is about 1.000e10 connections"),
        "{e}"
    );
}

#[test]
fn too_many_nodes_are_refused_naming_the_pairs_that_bring_them() {
    let lot = |pairs: &str| {
        format!(
            "duration = \"2s\"\n[topology]\nkind = \"parking-lot\"\nhops = 2\n{pairs}\nbottleneck = {{ rate = \"10Mbps\", delay = \"10ms\" }}\n[[flows]]\nsrc = \"ls0\"\ndst = \"lr0\"\n"
        )
    };
    // 2 x 10000 long-pair hosts + 2 x 1 x 2 cross-pair hosts + 3 routers = 20007 nodes.
    let e = error(&lot("long_pairs = 10000"));
    assert!(
        e.starts_with("topology.long_pairs: 10000 long pairs and 1 cross pairs on each of 2 hops make 20007 nodes; at most 20002 are allowed"),
        "{e}"
    );
    // 2 x 1 + 2 x 5000 x 2 + 3 = 20005: the cross pairs.
    let e = error(&lot("cross_pairs = 5000"));
    assert!(
        e.starts_with("topology.cross_pairs: 1 long pairs and 5000 cross pairs"),
        "{e}"
    );
}

/// One flow over s0 -> left (`access`) -> right (`bottleneck`) -> r0, recorded on every event.
fn event_level(duration: &str, bottleneck: &str, access: &str, extra: &str) -> String {
    format!(
        "duration = \"{duration}\"\n[topology]\nkind = \"dumbbell\"\nbottleneck = {{ rate = \"{bottleneck}\", delay = \"10ms\" }}\naccess = {{ rate = \"{access}\", delay = \"1ms\" }}\n{extra}\n[[flows]]\ncc = \"newreno\"\n[measure]\ninterval = \"event\"\n"
    )
}

#[test]
fn event_level_series_that_would_not_fit_in_memory_are_refused_with_the_estimate() {
    // 1 Gbps access, 1040-byte segments, 1000 s: the access link carries at most
    // 1e9 x 1000 / 8320 = 1.2019e8 segments, hence as many ACK rows (the tightest link of the
    // flow, 10 Gbps and the 40-byte ACKs being looser) and as many packets offered to the
    // bottleneck, plus the SYN and the short last segment of the connection in each:
    // 2 x (1.2019e8 + 2) rows, of 72 + 44 bytes: 13.0 GiB.
    let e = error(&event_level("1000s", "10Gbps", "1Gbps", ""));
    assert!(
        e.starts_with("measure.interval: \"event\" over 1000s could record up to about 2.404e8 rows (13.0 GiB); at most 4 GiB of series are allowed"),
        "{e}"
    );
    // 1000-byte packets on an 8 Gbps access: 1e6 per second each way. 37 s record
    // (3.7e7 + 2) x 116 bytes = 4.292e9 <= 4 GiB = 4.295e9; 37.1 s, 4.304e9, is too much,
    // unless the flow series is off: 3.71e7 x 44 bytes.
    let tcp = "[tcp]\nmss = \"960B\"\nheader = \"40B\"";
    let ok = |text: &str| scenario::resolve(&scenario::from_toml(text).unwrap()).map(|_| ());
    assert_eq!(ok(&event_level("37s", "10Gbps", "8Gbps", tcp)), Ok(()));
    let e = error(&event_level("37.1s", "10Gbps", "8Gbps", tcp));
    assert!(e.contains("about 7.420e7 rows (4.0 GiB)"), "{e}");
    let no_flow_series = event_level("37.1s", "10Gbps", "8Gbps", tcp).replace(
        "interval = \"event\"",
        "interval = \"event\"\nflow_series = false",
    );
    assert_eq!(ok(&no_flow_series), Ok(()));
    // Every shipped scenario that records events is far below: 1 Gbps access for 10 s.
    assert_eq!(ok(&event_level("10s", "100Mbps", "1Gbps", "")), Ok(()));
}

#[test]
fn udp_sources_that_would_send_too_many_packets_are_refused_naming_the_rate() {
    let cbr = |rate: &str, size: &str| {
        BASE.to_string()
            + &format!("[[flows]]\nkind = \"cbr\"\nrate = \"{rate}\"\npacket_size = \"{size}\"\n")
    };
    // 1 byte at 10000 Gbps: one packet per nanosecond (the finest time step), 1e10 in 10 s.
    let e = error(&cbr("10000Gbps", "1B"));
    assert!(
        e.starts_with("flows[1].rate: 10000Gbps in 1B packets (one every 1ns) over 10s is about 1.000e10 packets; at most 1e7 are allowed"),
        "{e}"
    );
    // 8 Gbps in 1000-byte packets: one every 1 us, 1e7 in 10 s, allowed; in 999-byte packets one
    // every 999 ns, 1.001e7.
    let ok = |text: &str| scenario::resolve(&scenario::from_toml(text).unwrap()).map(|_| ());
    assert_eq!(ok(&cbr("8Gbps", "1000B")), Ok(()));
    let e = error(&cbr("8Gbps", "999B"));
    assert!(e.starts_with("flows[1].rate: 8Gbps in 999B packets (one every 999ns) over 10s is about 1.001e7 packets"), "{e}");
    // Copies count together.
    let e = error(&cbr("8Gbps", "1000B").replace("packet_size", "count = 2\npacket_size"));
    assert!(
        e.contains("over 10s for each of 2 sources is about 2.000e7 packets"),
        "{e}"
    );
}

/// BBR's and BBRv3's Startup are part of their model: no slow start replaces them; BBRv3's
/// parameters are range-checked by name, with its own combination rules.
#[test]
fn bbr3s_startup_and_parameters_are_checked_by_field() {
    for cc in ["bbr", "bbr3"] {
        let e = error(&BASE.replace(
            "cc = \"newreno\"",
            &format!("cc = \"{cc}\"\nstartup = \"hystart\""),
        ));
        assert!(e.contains("flows[0].startup"), "{e}");
        assert!(e.contains("no slow start can replace it"), "{e}");
    }
    let e = error(&BASE.replace(
        "cc = \"newreno\"",
        "cc = \"bbr3\"\ncc_params = { loss_thresh = 0.0 }",
    ));
    assert!(e.contains("flows[0].cc_params.loss_thresh"), "{e}");
    let e = error(&BASE.replace(
        "cc = \"newreno\"",
        "cc = \"bbr3\"\ncc_params = { signals = \"v2\" }",
    ));
    assert!(e.contains("flows[0].cc_params.signals"), "{e}");
    assert!(e.contains("mainline"), "{e}");
}
