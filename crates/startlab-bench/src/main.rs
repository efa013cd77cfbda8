//! `startlab-bench`: wall time, events per second, packets per second and peak memory of the
//! simulator on the reference scenarios, each run in its own process so its peak memory is its
//! own.
//!
//! Usage: `startlab-bench [NAME…]` (all by default); `startlab-bench --one NAME` runs one scenario
//! in this process and prints one line of JSON.

use startlab_core::scenario;
use std::process::Command;
use std::time::Instant;

const SCENARIOS: &[(&str, &str, &str)] = &[
    ("a", "1 NewReno flow, 100 Mbps, 100 ms, buffer BDP, 60 s", include_str!("../scenarios/a-newreno-100mbps.toml")),
    ("b", "10 flows, 1 Gbps, 100 ms, buffer BDP, 60 s", include_str!("../scenarios/b-10-flows-1gbps.toml")),
    ("c", "100 flows, 1 Gbps, 50 ms, buffer BDP, 30 s", include_str!("../scenarios/c-100-flows-1gbps.toml")),
];

/// Peak resident memory of this process, KiB (Linux `VmHWM`).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn run_one(name: &str) {
    let (_, _, text) = SCENARIOS.iter().find(|s| s.0 == name).unwrap_or_else(|| panic!("no scenario {name}"));
    let s = scenario::from_toml(text).expect("valid scenario");
    let resolved = scenario::resolve(&s).expect("valid scenario");
    let sim = scenario::build(&resolved).expect("builds");
    let t0 = Instant::now();
    let report = sim.run();
    let wall = t0.elapsed().as_secs_f64();
    let delivered: u64 = report.flows.iter().map(|f| f.delivered_bytes).sum();
    let bottleneck = report.links.iter().find(|l| l.alias == "bottleneck").expect("bottleneck");
    println!(
        "{{\"wall_s\":{wall},\"events\":{},\"packets\":{},\"peak_kib\":{},\"utilization\":{},\"delivered_bytes\":{delivered},\"drops\":{}}}",
        report.stats.events,
        report.stats.packets_forwarded,
        peak_rss_kib(),
        bottleneck.utilization,
        bottleneck.drops
    );
}

fn field(json: &str, key: &str) -> f64 {
    let pat = format!("\"{key}\":");
    let start = json.find(&pat).map(|i| i + pat.len()).unwrap_or(0);
    json[start..].split([',', '}']).next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--one") {
        run_one(&args[1]);
        return;
    }
    let chosen: Vec<&(&str, &str, &str)> =
        SCENARIOS.iter().filter(|s| args.is_empty() || args.iter().any(|a| a == s.0)).collect();
    let exe = std::env::current_exe().expect("own path");
    println!(
        "{:<3} {:<52} {:>8} {:>10} {:>12} {:>12} {:>9} {:>6} {:>6}",
        "", "scenario", "wall s", "events", "events/s", "packets/s", "peak MiB", "util", "drops"
    );
    for (name, what, _) in chosen {
        let out = Command::new(&exe).args(["--one", name]).output().expect("runs");
        let line = String::from_utf8_lossy(&out.stdout);
        let wall = field(&line, "wall_s");
        let events = field(&line, "events");
        let packets = field(&line, "packets");
        println!(
            "{:<3} {:<52} {:>8.3} {:>10.0} {:>12.0} {:>12.0} {:>9.1} {:>6.3} {:>6.0}",
            name,
            what,
            wall,
            events,
            events / wall,
            packets / wall,
            field(&line, "peak_kib") / 1024.0,
            field(&line, "utilization"),
            field(&line, "drops")
        );
    }
}
