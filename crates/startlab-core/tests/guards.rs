//! Guard rails: valid scenarios that probably do not mean what they say get warnings.

use startlab_core::scenario;

fn warnings(text: &str) -> Vec<String> {
    let s = scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    let r = scenario::resolve(&s).unwrap_or_else(|e| panic!("{e}"));
    r.warnings.iter().map(|w| w.to_string()).collect()
}

fn dumbbell(bottleneck: &str, extra: &str) -> String {
    format!(
        "duration = \"20s\"\n[topology]\nkind = \"dumbbell\"\nbottleneck = {{ {bottleneck} }}\n{extra}\n[[flows]]\ncc = \"newreno\"\n"
    )
}

#[test]
fn a_sensible_path_has_no_warning() {
    // 40 Mbps, RTT 84 ms: BDP 404 packets, reached in about log2(404 / 3) + 1 = 8 RTTs.
    let w = warnings(&dumbbell(
        "rate = \"40Mbps\", delay = \"40ms\", queue = { kind = \"droptail\", limit = \"1BDP\" }",
        "",
    ));
    assert!(w.is_empty(), "{w:?}");
}

#[test]
fn an_access_link_no_faster_than_the_bottleneck_is_reported() {
    // The default access links are 1 Gbps: as fast as this bottleneck.
    let w = warnings(&dumbbell("rate = \"1Gbps\", delay = \"10ms\"", ""));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("flows[0]: the access link s0->left (1000 Mbit/s) is not faster than the bottleneck left->right (1000 Mbit/s)"),
        "{w:?}"
    );
}

#[test]
fn a_tiny_buffer_a_short_run_a_small_window_and_an_endless_slow_start_are_reported() {
    let text = dumbbell(
        "rate = \"100Mbps\", delay = \"100ms\", queue = { kind = \"droptail\", limit = 2 }",
        "[tcp]\nreceive_window = 100",
    )
    .replace("duration = \"20s\"", "duration = \"0.5s\"");
    let w = warnings(&text);
    // RTT 2 x (1 + 100 + 1) ms = 204 ms; BDP = 100 Mbps x 204 ms / 1040 B = 2452 packets.
    assert!(
        w.iter()
            .any(|m| m.starts_with("topology: the buffer of left->right holds 2 packet(s)")),
        "{w:?}"
    );
    assert!(w.iter().any(|m| m.starts_with("flows[0].tcp.receive_window: 100 segments is below the path's bandwidth-delay product (2452 packets)")), "{w:?}");
    assert!(
        w.iter()
            .any(|m| m.starts_with("flows[0]: slow start needs about")),
        "{w:?}"
    );
    assert!(
        w.iter().any(|m| m
            .starts_with("duration: 500ms is shorter than 4 RTTs of the longest path (204.0 ms)")),
        "{w:?}"
    );
}
