//! Every Rust model beside its eBPF port (crates/startlab-bpf/bpf), hook by hook: the model
//! drives a simulated connection, the port, run by the simulator's VM, is given the model's
//! state before every hook and compared after it (`cc::bpf::Shadow`). Three paths per
//! algorithm: slow start ending by loss on a deep buffer, random loss with a small buffer, and
//! a path whose 5 % random loss and 8-packet buffer against an initial window of 40 bring
//! retransmission timeouts (lost retransmissions).
//!
//! `STARTLAB_BPF_DIFF=1 cargo test -p startlab-core --test bpf_differential -- --nocapture`
//! prints the table.

use startlab_core::cc::bpf::{Differences, CWND_TOLERANCE};
use startlab_core::cc::registry::{self, Role};
use startlab_core::measure::Report;
use startlab_core::scenario::{self, Traffic};
use startlab_core::simulation::Simulation;
use std::sync::{Arc, Mutex};

/// (label, bottleneck, tcp extras)
const PATHS: &[(&str, &str, &str)] = &[
    (
        "deep",
        r#"{ rate = "50Mbps", delay = "20ms", queue = { kind = "droptail", limit = "2BDP" } }"#,
        "",
    ),
    (
        "lossy",
        r#"{ rate = "20Mbps", delay = "40ms", loss = 0.005, queue = { kind = "droptail", limit = "0.5BDP" } }"#,
        "",
    ),
    (
        "timeout",
        r#"{ rate = "10Mbps", delay = "30ms", loss = 0.05, queue = { kind = "droptail", limit = "8" } }"#,
        "initial_window = 40",
    ),
];

/// The parameters a port runs with where its model's defaults are not what the port implements:
/// BBRv3's port has only the loss signals mainline Linux gives a struct_ops program, SUSS's
/// only what a tcp_congestion_ops can do (no per-segment hook).
fn cc_params(cc: &str) -> &'static str {
    match cc {
        "bbr3" => r#"cc_params = { signals = "mainline" }"#,
        _ => "",
    }
}

fn startup_params(startup: &str) -> &'static str {
    match startup {
        "suss" => r#"startup_params = { hooks = "struct-ops" }"#,
        _ => "",
    }
}

/// The path's scenario; `tcp` prefixed with `linux:` runs it on `tcp.stack = "linux"`, else on
/// the ns-2 stack with Linux-like settings.
fn scenario(cc: &str, startup: &str, bottleneck: &str, tcp: &str) -> String {
    let flow = format!(
        "cc = \"{cc}\"\n{}\nstartup = \"{startup}\"\n{}\n",
        cc_params(cc),
        startup_params(startup)
    );
    scenario_of("6s", bottleneck, tcp, &[flow])
}

/// A dumbbell run for `duration` behind `bottleneck`, with `tcp` (`"linux:EXTRA"` for the
/// Linux stack, else the ns-2 stack with SACK and EXTRA) and one `[[flows]]` entry per item of
/// `flows` (each the entry's fields).
fn scenario_of(duration: &str, bottleneck: &str, tcp: &str, flows: &[String]) -> String {
    let tcp = match tcp.strip_prefix("linux:") {
        Some(extra) => format!("stack = \"linux\"\n{extra}"),
        None => format!(
            "mss = \"1448B\"\nheader = \"52B\"\nsack = true\nrecovery = \"sack\"\nhandshake = true\n{tcp}"
        ),
    };
    let flows: String = flows.iter().map(|f| format!("[[flows]]\n{f}\n")).collect();
    format!(
        r#"
duration = "{duration}"
seed = 7
[topology]
kind = "dumbbell"
pairs = 1
bottleneck = {bottleneck}
access = {{ rate = "1Gbps", delay = "0.5ms" }}
[tcp]
{tcp}
{flows}"#
    )
}

/// Runs `text` with every TCP flow's model shadowed by its port: the report and each flow
/// entry's log of differences, in order.
fn run_shadowed(text: &str) -> Result<(Report, Vec<Differences>), String> {
    let mut s = scenario::resolve(&scenario::from_toml(text).unwrap()).unwrap();
    let mut logs: Vec<Arc<Mutex<Differences>>> = Vec::new();
    for f in &mut s.flows {
        if let Traffic::Tcp { controller, .. } = &mut f.traffic {
            let (shadowed, log) = controller
                .shadowed()
                .map_err(|e| format!("{}: {}", e.field, e.message))?;
            *controller = shadowed;
            logs.push(log);
        }
    }
    let report = Simulation::from_resolved(s).run();
    let logs = logs.iter().map(|l| l.lock().unwrap().clone()).collect();
    Ok((report, logs))
}

fn run(cc: &str, startup: &str, path: &(&str, &str, &str)) -> Result<(Differences, u64), String> {
    let (report, logs) = run_shadowed(&scenario(cc, startup, path.1, path.2))
        .map_err(|e| format!("{cc}/{startup}: {e}"))?;
    let timeouts = report.flows.timeouts.iter().sum();
    Ok((logs[0].clone(), timeouts))
}

/// Every algorithm with a port (`registry::WITHOUT_PORT` lists the others).
fn combinations() -> Vec<(String, String)> {
    let mut v = Vec::new();
    let ported = |name: &str| !registry::WITHOUT_PORT.iter().any(|(n, _)| *n == name);
    for a in registry::algorithms()
        .into_iter()
        .filter(|a| ported(a.name))
    {
        match a.role {
            Role::Cc => v.push((a.name.to_string(), registry::DEFAULT_STARTUP.to_string())),
            Role::Startup => v.push((
                registry::host_controller(a.name).to_string(),
                a.name.to_string(),
            )),
            _ => {}
        }
    }
    v
}

/// The controllers Linux has, BBRv3, whose port runs on mainline Linux, and SUSS, part of the
/// authors' tcp_cubic.c, under `tcp.stack = "linux"` (Linux's counting for Reno, Linux's
/// HyStart, RACK-TLP and PRR around them), on the same three paths.
#[test]
fn under_the_linux_stack_the_ports_follow_their_models() {
    let print = std::env::var_os("STARTLAB_BPF_DIFF").is_some();
    let mut failures = Vec::new();
    for (cc, startup) in [
        ("newreno", "default"),
        ("cubic", "default"),
        ("cubic", "hystart"),
        ("cubic", "suss"),
        ("bbr", "default"),
        ("bbr3", "default"),
    ] {
        for path in PATHS {
            let tcp = format!("linux:{}", path.2);
            let (d, timeouts) = match run(cc, startup, &(path.0, path.1, tcp.as_str())) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            if print {
                println!(
                    "linux {cc:>7} {startup:>8} {:>7}: {timeouts} timeouts, {:>7} hooks {:>6} ACKs, max cwnd gap {:.2e}, ssthresh gap {}, misses {}, exits model {:?} port {:?}",
                    path.0, d.hooks, d.acks, d.max_cwnd_gap, d.max_ssthresh_gap, d.misses, d.model_exit, d.port_exit
                );
            }
            let what = format!("linux stack: {cc}/{startup} on {}", path.0);
            if let Some(e) = &d.error {
                failures.push(format!("{what}: the port failed: {e}"));
            } else if d.acks == 0 {
                failures.push(format!("{what}: no ACK reached the controllers"));
            } else if d.misses > 0 {
                failures.push(format!(
                    "{what}: {} hooks apart; first: {}",
                    d.misses,
                    d.first_miss.clone().unwrap_or_default()
                ));
            } else if d.max_ssthresh_gap > 1.0 {
                failures.push(format!("{what}: ssthresh apart by {}", d.max_ssthresh_gap));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_port_follows_its_model_after_every_hook() {
    let print = std::env::var_os("STARTLAB_BPF_DIFF").is_some();
    let mut failures = Vec::new();
    let mut timeouts_seen = 0;
    // STARTLAB_BPF_DIFF_ONLY=NAME runs the algorithms whose cc or startup is NAME.
    let only = std::env::var("STARTLAB_BPF_DIFF_ONLY").ok();
    for (cc, startup) in combinations() {
        if only.as_ref().is_some_and(|o| *o != cc && *o != startup) {
            continue;
        }
        for path in PATHS {
            let (d, timeouts) = match run(&cc, &startup, path) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            timeouts_seen += timeouts;
            if print {
                println!(
                    "{cc:>13} {startup:>10} {:>7}: {timeouts} timeouts, {:>7} hooks {:>6} ACKs, max cwnd gap {:.2e} ({:.2e} rel), ssthresh gap {}, misses {}, fractional {}, exits model {:?} port {:?}{}",
                    path.0, d.hooks, d.acks, d.max_cwnd_gap, d.max_cwnd_gap_relative, d.max_ssthresh_gap, d.misses, d.fractional_ssthresh_starts, d.model_exit, d.port_exit,
                    d.error.as_deref().map(|e| format!(" ERROR {e}")).unwrap_or_default()
                );
            }
            let what = format!("{cc}/{startup} on {}", path.0);
            if path.0 == "timeout" && timeouts == 0 {
                failures.push(format!("{what}: no retransmission timeout"));
            }
            if let Some(e) = &d.error {
                failures.push(format!("{what}: the port failed: {e}"));
                continue;
            }
            if d.acks == 0 {
                failures.push(format!("{what}: no ACK reached the controllers"));
            }
            if d.misses > 0 {
                failures.push(format!("{what}: {} hooks with cwnd apart by more than {CWND_TOLERANCE} of the window; first: {}", d.misses, d.first_miss.clone().unwrap_or_default()));
            }
            if d.max_ssthresh_gap > 1.0 {
                failures.push(format!("{what}: ssthresh apart by {}", d.max_ssthresh_gap));
            }
            // The same exit: the same reason, within one ACK (three hooks: pkts_acked,
            // in_ack_event, cong_avoid) and one segment (the ports' ssthresh is whole segments,
            // so an exit at a fractional ssthresh of the model comes at the whole one below it).
            match (&d.model_exit, &d.port_exit) {
                (Some(m), Some(p))
                    if m.0.abs_diff(p.0) <= 3
                        && m.2 == p.2
                        && (m.1 - p.1).abs() <= 1.0 + CWND_TOLERANCE * m.1 => {}
                (None, None) => {}
                (m, p) => failures.push(format!(
                    "{what}: start-up exits differ: model {m:?}, port {p:?}"
                )),
            }
        }
    }
    assert!(
        only.is_some() || timeouts_seen > 0,
        "no path produced a retransmission timeout; {}",
        failures.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// DCTCP's port behind CoDel with ECN, where its alpha and its reduction for each echo decide:
/// on both stacks, the port follows the model after every hook, and the path did mark and the
/// flow did reduce for echoes (so the comparison covered them).
#[test]
fn dctcps_port_follows_its_model_behind_an_ecn_codel() {
    let bottleneck =
        r#"{ rate = "50Mbps", delay = "20ms", queue = { kind = "codel", ecn = true } }"#;
    for tcp in ["", "linux:"] {
        let (report, logs) = run_shadowed(&scenario("dctcp", "default", bottleneck, tcp)).unwrap();
        let d = logs[0].clone();
        let what = if tcp.is_empty() {
            "ns-2 stack"
        } else {
            "linux stack"
        };
        assert!(d.error.is_none(), "{what}: {:?}", d.error);
        assert!(d.acks > 1000, "{what}: {} ACKs", d.acks);
        assert_eq!(d.misses, 0, "{what}: first miss {:?}", d.first_miss);
        assert!(
            d.max_ssthresh_gap <= 1.0,
            "{what}: ssthresh gap {}",
            d.max_ssthresh_gap
        );
        assert_eq!(
            d.model_exit.as_ref().map(|e| e.2.clone()),
            d.port_exit.as_ref().map(|e| e.2.clone())
        );
        let reductions: u64 = report.flows.ecn_reductions.iter().flatten().sum();
        assert!(
            reductions >= 5,
            "{what}: {reductions} reductions for an echo"
        );
    }
}

/// Careful Resume across connections, where the model's saved state comes from the host's path
/// cache and the port's from its own map (`cr_paths`, written by release, read by init): on
/// both stacks, connections of 4 MB at 0, 5 and 20 s on one path (flow entries of their own, so that each has
/// its log; with the same parameters they share one registration, hence one map), the port
/// follows the model after every hook of every connection.
/// - A steady path: the first connection saves its window; the second jumps to half of it
///   (a step of more than 10 segments in one hook, where slow start takes at most 2) and validates it.
/// - The rate falls from 50 to 3 Mbit/s as the second connection opens: its jump overflows
///   the queue, Safe Retreat deletes the saved state, and the third does not jump.
#[test]
fn careful_resumes_port_follows_its_model_across_connections() {
    let steady =
        r#"{ rate = "50Mbps", delay = "20ms", queue = { kind = "droptail", limit = "1BDP" } }"#;
    let falling = r#"{ rate = { steps = [["0s", "50Mbps"], ["5s", "3Mbps"]] }, delay = "20ms", queue = { kind = "droptail", limit = "20" } }"#;
    for stack in ["ns-2", "linux"] {
        // The Linux receiver's window would hold the jump back (docs/algorithms/
        // careful-resume.md): the ns-2 receiver's, unlimited, is used on both stacks.
        let tcp = match stack {
            "linux" => "linux:ack_policy = \"rfc5681\"\ndelayed_ack = true",
            _ => "",
        };
        for (path, count) in [(steady, 2), (falling, 3)] {
            let flows: Vec<String> = [0, 5, 20][..count]
                .iter()
                .map(|start| {
                    format!("cc = \"newreno\"\nstartup = \"careful-resume\"\nsize = \"4MB\"\nstart = \"{start}s\"")
                })
                .collect();
            let (report, d) = run_shadowed(&scenario_of("35s", path, tcp, &flows)).unwrap();
            let what = format!("{stack} stack, {count} connections");
            for (i, d) in d.iter().enumerate().rev() {
                if std::env::var_os("STARTLAB_BPF_DIFF").is_some() {
                    println!("{what}, connection {i}: {} hooks, {} ACKs, largest step {:.1}, misses {} {:?}, exits model {:?} port {:?}", d.hooks, d.acks, d.max_cwnd_step, d.misses, d.first_miss, d.model_exit, d.port_exit);
                }
                assert!(d.error.is_none(), "{what}, connection {i}: {:?}", d.error);
                assert!(d.acks > 100, "{what}, connection {i}: {} ACKs", d.acks);
                assert_eq!(d.misses, 0, "{what}, connection {i}: {:?}", d.first_miss);
                assert!(
                    d.max_ssthresh_gap <= 1.0,
                    "{what}, connection {i}: ssthresh"
                );
            }
            let steps: Vec<f64> = d.iter().map(|d| d.max_cwnd_step).collect();
            assert!(
                steps[0] < 10.0,
                "{what}: the first connection jumped: {steps:?}"
            );
            assert!(
                steps[1] > 10.0,
                "{what}: the second did not jump: {steps:?}"
            );
            if count == 3 {
                assert!(
                    report.flows.retransmissions[1] > 0,
                    "{what}: the second connection's jump lost nothing"
                );
                assert!(steps[2] < 10.0, "{what}: the third jumped: {steps:?}");
            }
        }
    }
}
