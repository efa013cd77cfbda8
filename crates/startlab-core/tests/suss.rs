//! SUSS on simulated paths (cc::suss; docs/algorithms/suss.md): the four-fold rounds on a long
//! path, none on a short one, the same exit whether the extra segments are released per
//! segment sent (the authors' kernel) or at the decision (the eBPF port's way), and the
//! scenarios it refuses.

use startlab_core::scenario;

/// One CUBIC flow on a 50 Mbit/s dumbbell (1500-byte packets: 240 µs each at the bottleneck)
/// with a deep buffer, IW 10, an ACK per segment, no handshake (data leaves at 0).
fn scenario_text(delay_ms: f64, startup: &str, params: &str, tcp_extra: &str) -> String {
    format!(
        r#"
duration = "3s"
seed = 1
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = {{ rate = "50Mbps", delay = "{delay_ms}ms", queue = {{ kind = "droptail", limit = "4BDP" }} }}
access = {{ rate = "1Gbps", delay = "1ms" }}
[tcp]
mss = "1448B"
header = "52B"
initial_window = 10
sack = true
recovery = "sack"
delayed_ack = false
{tcp_extra}
[[flows]]
cc = "cubic"
startup = "{startup}"
startup_params = {{ {params} }}
[measure]
interval = "5ms"
"#
    )
}

struct Run {
    /// cwnd at the given times (ms).
    cwnd_at: Vec<f64>,
    exit_ns: Option<i64>,
    exit_cwnd: Option<f64>,
    exit_reason: Option<String>,
    delivered: u64,
}

fn run(delay_ms: f64, startup: &str, params: &str, times_ms: &[u64]) -> Run {
    let s = scenario::from_toml(&scenario_text(delay_ms, startup, params, "")).unwrap();
    let r = scenario::build(scenario::resolve(&s).unwrap()).run();
    let fs = &r.flow_series;
    let cwnd_at = times_ms
        .iter()
        .map(|&t| {
            let i = fs
                .time_ns
                .iter()
                .rposition(|&x| x <= (t * 1_000_000) as i64)
                .expect("a sample");
            fs.cwnd[i]
        })
        .collect();
    let f = r.flows.row(0);
    Run {
        cwnd_at,
        exit_ns: f.ss_exit_ns,
        exit_cwnd: f.ss_exit_cwnd,
        exit_reason: f.ss_exit_reason.clone(),
        delivered: f.delivered_bytes,
    }
}

/// minRTT 100 ms (2 x (1 + 48 + 1) ms): each round's ACKs arrive from 100 ms x (r - 1). The
/// IW's train (9 x 240 µs) and the next (19 x 240 µs) are short: round 2 ends at 40 (not 20),
/// round 3 at 160 (not 40); round 4 predicts a train of 153.6 ms > 100 ms and doubles to 320
/// (the numbers of cc::suss's driver test). HyStart alone doubles every round and leaves slow
/// start two rounds later; SUSS's exit (its ACK-train cap) comes at the same window, about
/// 200 ms earlier.
#[test]
fn on_a_long_path_rounds_grow_four_fold_until_the_prediction_says_no() {
    let times = [195, 295, 395, 495];
    for hooks in ["kernel", "struct-ops"] {
        let suss = run(48.0, "suss", &format!("hooks = \"{hooks}\""), &times);
        assert_eq!(suss.cwnd_at[..3], [40.0, 160.0, 320.0], "{hooks}");
        assert_eq!(suss.exit_reason.as_deref(), Some("suss-train"), "{hooks}");
        let hystart = run(48.0, "hystart", "variant = \"linux\"", &times);
        assert_eq!(hystart.cwnd_at, [20.0, 40.0, 80.0, 160.0]);
        assert_eq!(hystart.exit_reason.as_deref(), Some("hystart-train"));
        let (s, h) = (suss.exit_ns.unwrap(), hystart.exit_ns.unwrap());
        assert!(
            h - s > 150_000_000 && h - s < 250_000_000,
            "{hooks}: exits at {s} and {h} ns"
        );
        let (sc, hc) = (suss.exit_cwnd.unwrap(), hystart.exit_cwnd.unwrap());
        assert!(
            (sc - hc).abs() <= 0.05 * hc,
            "{hooks}: exit cwnd {sc}, {hc}"
        );
        assert!(suss.delivered > hystart.delivered, "{hooks}");
    }
}

/// minRTT 8 ms (<= 10 ms): SUSS turns itself off at the IW's train and runs as CUBIC with
/// Linux's HyStart, sample for sample.
#[test]
fn on_a_short_path_it_is_cubic_with_linuxs_hystart() {
    let times: Vec<u64> = (1..=60).map(|i| 5 * i).collect();
    let suss = run(2.0, "suss", "", &times);
    let hystart = run(2.0, "hystart", "variant = \"linux\"", &times);
    assert_eq!(suss.cwnd_at, hystart.cwnd_at);
    assert_eq!(suss.exit_ns, hystart.exit_ns);
    assert_eq!(suss.exit_reason, hystart.exit_reason);
}

fn refused(text: &str) -> (String, String) {
    let s = scenario::from_toml(text).unwrap();
    let e = scenario::resolve(&s).unwrap_err();
    (e.path.clone(), e.message.clone())
}

#[test]
fn suss_needs_cubic_and_an_unpaced_sender() {
    let text = scenario_text(48.0, "suss", "", "").replace("cc = \"cubic\"", "cc = \"newreno\"");
    let (field, message) = refused(&text);
    assert_eq!(field, "flows[0].startup");
    assert!(message.contains("runs on \"cubic\" only"), "{message}");
    let text = scenario_text(48.0, "suss", "", "pacing = \"linux\"");
    let (field, message) = refused(&text);
    assert_eq!(field, "flows[0].tcp.pacing");
    assert!(message.contains("tcp.pacing must be \"none\""), "{message}");
}

/// `cc = "bpf:cubic"` runs SUSS's eBPF port in the simulator's VM: it has `hooks =
/// "struct-ops"` only, which it takes by default, and leaves slow start where the model with
/// those hooks does; the authors' per-segment release is refused, naming the parameter.
#[test]
fn the_port_runs_as_the_struct_ops_model() {
    let times = [195, 295, 395];
    let model = run(48.0, "suss", "hooks = \"struct-ops\"", &times);
    let text = scenario_text(48.0, "suss", "", "").replace("cc = \"cubic\"", "cc = \"bpf:cubic\"");
    let s = scenario::from_toml(&text).unwrap();
    let r = scenario::build(scenario::resolve(&s).unwrap()).run();
    let f = r.flows.row(0);
    assert_eq!(f.ss_exit_reason, model.exit_reason);
    assert_eq!(f.ss_exit_ns, model.exit_ns);
    // The port's window is whole segments (CUBIC's growth on the exit ACK is a fraction).
    assert!((f.ss_exit_cwnd.unwrap() - model.exit_cwnd.unwrap()).abs() < 1.0);
    let (field, message) = refused(&text.replace(
        "startup_params = {  }",
        "startup_params = { hooks = \"kernel\" }",
    ));
    assert_eq!(field, "flows[0].startup_params.hooks");
    assert!(message.contains("\"kernel\" has no eBPF port"), "{message}");
}
