//! `startlab-bench`: wall time, events per second, packets per second and peak memory of the
//! simulator on the reference scenarios, each run in its own process so its peak memory is its
//! own.
//!
//! Usage: `startlab-bench [NAME…]` (all by default); `startlab-bench --one NAME` runs one scenario
//! in this process and prints one line of JSON; `startlab-bench --file PATH` does the same for a
//! scenario file (the scaling and memory measurements of docs/performance.md use it);
//! `startlab-bench --aqm-replay --queue '{ kind = "codel" }' --rate BITS_PER_S --in A.csv --out
//! D.csv` replays a packet arrival sequence into one queue (`net::replay`) for the validation of
//! the AQMs against ns-3 (`bench/ns3/aqm_replay.py`).

use startlab_core::scenario;
use std::process::Command;
use std::time::Instant;

const SCENARIOS: &[(&str, &str, &str)] = &[
    (
        "a",
        "1 NewReno flow, 100 Mbps, 100 ms, buffer BDP, 60 s",
        include_str!("../scenarios/a-newreno-100mbps.toml"),
    ),
    (
        "b",
        "10 flows, 1 Gbps, 100 ms, buffer BDP, 60 s",
        include_str!("../scenarios/b-10-flows-1gbps.toml"),
    ),
    (
        "c",
        "100 flows, 1 Gbps, 50 ms, buffer BDP, 30 s",
        include_str!("../scenarios/c-100-flows-1gbps.toml"),
    ),
    (
        "d",
        "NewReno, 40 Mbps, 100 ms, ssthresh 32, 20 s (Wang et al. 2004)",
        include_str!("../scenarios/d-newreno-40mbps-seed000.toml"),
    ),
    (
        "e",
        "1 BBR flow (Linux stack), 100 Mbps, 100 ms, buffer BDP, 60 s",
        include_str!("../scenarios/e-bbr-100mbps.toml"),
    ),
    (
        "f",
        "1 BBRv3 flow (Linux stack), 100 Mbps, 100 ms, buffer BDP, 60 s",
        include_str!("../scenarios/f-bbr3-100mbps.toml"),
    ),
];

/// The scenarios of the ns-3 comparison (`make bench-ns3`, bench/ns3/): (a)-(d) with the settings
/// both simulators share. Run only by name (`--one ns3-a`), not by default.
const NS3_SCENARIOS: &[(&str, &str, &str)] = &[
    (
        "ns3-a",
        "1 NewReno flow, 100 Mbps, 100 ms, buffer BDP, 60 s",
        include_str!("../scenarios/ns3-a-newreno-100mbps.toml"),
    ),
    (
        "ns3-b",
        "10 CUBIC flows, 1 Gbps, 100 ms, buffer BDP, 60 s",
        include_str!("../scenarios/ns3-b-10-cubic-1gbps.toml"),
    ),
    (
        "ns3-c",
        "100 NewReno flows, 1 Gbps, 50 ms, buffer BDP, 30 s",
        include_str!("../scenarios/ns3-c-100-newreno-1gbps.toml"),
    ),
    (
        "ns3-d",
        "Wang et al. 2004 Table 1: NewReno, 40 Mbps, 100 ms, ssthresh 32, 20 s",
        include_str!("../scenarios/ns3-d-seed000-table1.toml"),
    ),
    (
        "ns3-e",
        "1 BBR flow, 100 Mbps, 100 ms, buffer BDP, 60 s",
        include_str!("../scenarios/ns3-e-bbr-100mbps.toml"),
    ),
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

/// Time this thread has spent on a CPU, seconds (Linux `/proc/thread-self/schedstat`, first
/// field, in ns): unlike the wall time, not inflated when the machine is busy.
fn cpu_time_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(f64::NAN, |ns| ns as f64 * 1e-9)
}

/// `NAME+bpf` is scenario NAME with every controller replaced by startlab's eBPF port of it,
/// run by the simulator's VM (`cc = "X"` becomes `cc = "bpf:X"`).
const BPF_SUFFIX: &str = "+bpf";

/// `NAME+linux` is scenario NAME with its `[tcp]` table replaced by `stack = "linux"`: the same
/// network and traffic on the simulator's Linux TCP (RACK-TLP, PRR, Linux's receiver).
const LINUX_SUFFIX: &str = "+linux";

/// The scenarios on which the Linux stack is timed against the ns-2 stack.
const LINUX_SCENARIOS: &[&str] = &["a", "b", "d"];

/// `text` with its `[tcp]` table's fields replaced by `stack = "linux"`.
fn on_linux_stack(text: &str) -> String {
    let mut out = String::new();
    let mut in_tcp = false;
    for line in text.lines() {
        let header = line.trim_start().starts_with('[');
        if header {
            in_tcp = line.trim() == "[tcp]";
        }
        if in_tcp && !header {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if in_tcp && header {
            out.push_str("stack = \"linux\"\n");
        }
    }
    out
}

fn run_one(name: &str) {
    if let Some(base) = name.strip_suffix(LINUX_SUFFIX) {
        let (_, _, text) = SCENARIOS
            .iter()
            .find(|s| s.0 == base)
            .unwrap_or_else(|| panic!("no scenario {name}"));
        return run_text(&on_linux_stack(text));
    }
    let base = name.strip_suffix(BPF_SUFFIX).unwrap_or(name);
    let (_, _, text) = SCENARIOS
        .iter()
        .chain(NS3_SCENARIOS)
        .find(|s| s.0 == base)
        .unwrap_or_else(|| panic!("no scenario {name}"));
    if name.ends_with(BPF_SUFFIX) {
        run_text(&text.replace("cc = \"", "cc = \"bpf:"));
    } else {
        run_text(text);
    }
}

/// The scenarios on which the eBPF ports are timed against the Rust models.
const BPF_SCENARIOS: &[&str] = &["a", "ns3-b", "d"];

/// Runs one scenario given as TOML text in this process and prints one line of JSON.
fn run_text(text: &str) {
    let s = scenario::from_toml(text).expect("valid scenario");
    let resolved = scenario::resolve(&s).expect("valid scenario");
    let sim = scenario::build(resolved);
    let t0 = Instant::now();
    let cpu0 = cpu_time_s();
    let report = sim.run();
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_time_s() - cpu0;
    let flows = &report.flows;
    let delivered: u64 = flows.delivered_bytes.iter().sum();
    let bottleneck = report
        .links
        .rows()
        .into_iter()
        .find(|l| l.alias.as_deref() == Some("bottleneck"))
        .expect("bottleneck");
    // Slow-start exit of flow 0 (-1: it never left slow start), and loss recovery of all flows.
    let first = flows.row(0);
    let ss_exit_s = first.ss_exit_ns.map_or(-1.0, |t| t as f64 * 1e-9);
    let ss_exit_cwnd = first.ss_exit_cwnd.unwrap_or(-1.0);
    let timeouts: u64 = flows.timeouts.iter().sum();
    let recoveries: u64 = flows.fast_recoveries.iter().sum();
    let retransmissions: u64 = flows.retransmissions.iter().sum();
    println!(
        "{{\"wall_s\":{wall},\"events\":{},\"packets\":{},\"peak_kib\":{},\"utilization\":{},\"delivered_bytes\":{delivered},\"drops\":{},\
         \"ss_exit_s\":{ss_exit_s},\"ss_exit_cwnd\":{ss_exit_cwnd},\"ss_exit_reason\":\"{}\",\"queue_limit\":{},\
         \"timeouts\":{timeouts},\"recoveries\":{recoveries},\"retransmissions\":{retransmissions},\"cpu_s\":{cpu}}}",
        report.stats.events,
        report.stats.packets_forwarded,
        peak_rss_kib(),
        bottleneck.utilization,
        bottleneck.drops,
        first.ss_exit_reason.as_deref().unwrap_or(""),
        bottleneck.limit_packets.unwrap_or(-1)
    );
}

fn field(json: &str, key: &str) -> f64 {
    let pat = format!("\"{key}\":");
    let start = json.find(&pat).map(|i| i + pat.len()).unwrap_or(0);
    json[start..]
        .split([',', '}'])
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// `--aqm-replay`: arrivals `id,time_ns,bytes,flow,ecn` in, decisions `id,outcome,time_ns` out.
fn aqm_replay(args: &[String]) -> Result<(), String> {
    use startlab_core::net::replay::{replay, ReplayArrival};
    use startlab_core::net::Ecn;
    use startlab_core::time::Time;
    use startlab_core::units::Rate;
    let value = |name: &str| -> Result<&str, String> {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(String::as_str)
            .ok_or_else(|| format!("missing {name}"))
    };
    let rate: u64 = value("--rate")?
        .parse()
        .map_err(|e| format!("--rate: {e}"))?;
    if rate == 0 {
        return Err(format!("--rate {rate}: expected at least 1 bit/s"));
    }
    let rate = Rate::from_bps(rate);
    let seed = match value("--seed") {
        Ok(s) => s.parse().map_err(|e| format!("--seed: {e}"))?,
        Err(_) => 1,
    };
    let discipline = scenario::topology::replay_discipline(value("--queue")?, rate, seed)
        .map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(value("--in")?).map_err(|e| format!("--in: {e}"))?;
    let mut arrivals = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let field = |i: usize| -> Result<u64, String> {
            f.get(i)
                .and_then(|x| x.trim().parse().ok())
                .ok_or_else(|| format!("line {}: expected id,time_ns,bytes,flow,ecn", n + 1))
        };
        if field(0)? != arrivals.len() as u64 {
            return Err(format!("line {}: ids must count from 0", n + 1));
        }
        let time = Time::from_nanos(field(1)?);
        if arrivals
            .last()
            .is_some_and(|a: &ReplayArrival| a.time > time)
        {
            return Err(format!("line {}: times must not decrease", n + 1));
        }
        arrivals.push(ReplayArrival {
            time,
            bytes: field(2)?.clamp(1, 65_535) as u32,
            flow: field(3)? as u32,
            ecn: Ecn::from_bits(field(4)? as u8),
        });
    }
    let decisions = replay(discipline, rate, &arrivals);
    let mut out = String::from("id,outcome,time_ns\n");
    for (i, d) in decisions.iter().enumerate() {
        out.push_str(&format!("{i},{},{}\n", d.outcome.name(), d.at.as_nanos()));
    }
    std::fs::write(value("--out")?, out).map_err(|e| format!("--out: {e}"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--aqm-replay") {
        if let Err(e) = aqm_replay(&args[1..]) {
            eprintln!("startlab-bench --aqm-replay: {e}");
            std::process::exit(2);
        }
        return;
    }
    if args.first().map(String::as_str) == Some("--one") {
        run_one(&args[1]);
        return;
    }
    if args.first().map(String::as_str) == Some("--file") {
        let text = std::fs::read_to_string(&args[1]).expect("readable scenario file");
        run_text(&text);
        return;
    }
    let chosen: Vec<&(&str, &str, &str)> = SCENARIOS
        .iter()
        .filter(|s| args.is_empty() || args.iter().any(|a| a == s.0))
        .collect();
    let exe = std::env::current_exe().expect("own path");
    println!(
        "{:<3} {:<52} {:>8} {:>10} {:>12} {:>12} {:>9} {:>6} {:>6}",
        "", "scenario", "wall s", "events", "events/s", "packets/s", "peak MiB", "util", "drops"
    );
    for (name, what, _) in chosen {
        let out = Command::new(&exe)
            .args(["--one", name])
            .output()
            .expect("runs");
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
    let section = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    if section("bpf") {
        bpf_section(&exe);
    }
    if section("linux") {
        linux_section(&exe);
    }
}

fn bpf_section(exe: &std::path::Path) {
    // The same scenarios with every controller's eBPF port run by the VM: CPU time against the
    // Rust model's, model and port alternating, three times each (the machine is noisy).
    println!();
    println!(
        "{:<8} {:>12} {:>12} {:>10} {:>14} {:>22} {:>18}",
        "eBPF",
        "model CPU s",
        "port CPU s",
        "port/model",
        "packets/CPU s",
        "exit s, cwnd: model",
        "port"
    );
    for name in BPF_SCENARIOS {
        let (mut model, mut port) = (f64::INFINITY, f64::INFINITY);
        let (mut model_line, mut port_line) = (String::new(), String::new());
        for _ in 0..3 {
            for (which, best, line) in [
                (name.to_string(), &mut model, &mut model_line),
                (format!("{name}{BPF_SUFFIX}"), &mut port, &mut port_line),
            ] {
                let out = Command::new(exe)
                    .args(["--one", &which])
                    .output()
                    .expect("runs");
                *line = String::from_utf8_lossy(&out.stdout).into_owned();
                *best = best.min(field(line, "cpu_s"));
            }
        }
        println!(
            "{:<8} {:>12.3} {:>12.3} {:>9.1}x {:>14.0} {:>14.6}, {:>5.0} {:>11.6}, {:>5.0}",
            name,
            model,
            port,
            port / model,
            field(&port_line, "packets") / port,
            field(&model_line, "ss_exit_s"),
            field(&model_line, "ss_exit_cwnd"),
            field(&port_line, "ss_exit_s"),
            field(&port_line, "ss_exit_cwnd"),
        );
    }
}

fn linux_section(exe: &std::path::Path) {
    // The Linux stack against the ns-2 stack on the same paths: CPU per packet forwarded (the
    // stacks send different packets: segment sizes, ACK policies), alternating, best of three.
    println!();
    println!(
        "{:<8} {:>14} {:>14} {:>12} {:>22} {:>18}",
        "linux", "ns-2 µs/pkt", "linux µs/pkt", "linux/ns-2", "exit s, cwnd: ns-2", "linux"
    );
    for name in LINUX_SCENARIOS {
        let (mut ns2, mut linux) = (f64::INFINITY, f64::INFINITY);
        let (mut ns2_line, mut linux_line) = (String::new(), String::new());
        for _ in 0..3 {
            for (which, best, line) in [
                (name.to_string(), &mut ns2, &mut ns2_line),
                (format!("{name}{LINUX_SUFFIX}"), &mut linux, &mut linux_line),
            ] {
                let out = Command::new(exe)
                    .args(["--one", &which])
                    .output()
                    .expect("runs");
                *line = String::from_utf8_lossy(&out.stdout).into_owned();
                *best = best.min(field(line, "cpu_s") / field(line, "packets") * 1e6);
            }
        }
        println!(
            "{:<8} {:>14.3} {:>14.3} {:>11.2}x {:>14.6}, {:>5.0} {:>11.6}, {:>5.0}",
            name,
            ns2,
            linux,
            linux / ns2,
            field(&ns2_line, "ss_exit_s"),
            field(&ns2_line, "ss_exit_cwnd"),
            field(&linux_line, "ss_exit_s"),
            field(&linux_line, "ss_exit_cwnd"),
        );
    }
}
