//! Runs a scenario file with the Rust core alone and prints the per-flow and per-link summaries.
//!
//! `cargo run --release -p startlab-core --example run -- SCENARIO.toml`

fn main() {
    let path = std::env::args().nth(1).expect("usage: run SCENARIO.toml");
    let text = std::fs::read_to_string(&path).expect("readable file");
    let s = startlab_core::scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}"));
    let r = startlab_core::scenario::resolve(&s).unwrap_or_else(|e| panic!("{e}"));
    let report = startlab_core::scenario::build(r).run();
    let secs = |ns: Option<i64>| ns.map_or(f64::NAN, |t| t as f64 * 1e-9);
    for f in report.flows.rows() {
        println!(
            "flow {} {:<10} delivered {:>12} B goodput {:>8.2} Mbps retx {:>6} timeouts {:>3} recoveries {:>4} drops {:>6} ss-exit {:.3}s cwnd {:.1} ({}) done {}",
            f.flow, f.label, f.delivered_bytes, f.goodput_bps / 1e6, f.retransmissions, f.timeouts, f.fast_recoveries, f.drops.unwrap_or(0),
            secs(f.ss_exit_ns), f.ss_exit_cwnd.unwrap_or(f64::NAN), f.ss_exit_reason.as_deref().unwrap_or("-"), secs(f.completion_ns)
        );
    }
    for l in report.links.rows() {
        if let Some(alias) = &l.alias {
            println!(
                "link {:<12} {:<18} util {:.4} forwarded {:>9} drops {:>6} max queue {}",
                l.name, alias, l.utilization, l.forwarded_packets, l.drops, l.max_queue_packets
            );
        }
    }
    println!(
        "events {} packets {}",
        report.stats.events, report.stats.packets_forwarded
    );
    if std::env::var("TRACE").is_ok() {
        let fs = &report.flow_series;
        for i in (0..fs.len()).step_by(std::env::var("TRACE").unwrap().parse().unwrap_or(10)) {
            println!(
                "{:.3} f{} cwnd {:.2} ssth {:.1} inflight {} phase {} srtt {:.1}ms",
                fs.time_ns[i] as f64 * 1e-9,
                fs.flow[i],
                fs.cwnd[i],
                fs.ssthresh[i].unwrap_or(f64::INFINITY),
                fs.in_flight[i],
                fs.phase[i],
                fs.srtt_ns[i].map_or(f64::NAN, |t| t as f64 * 1e-6)
            );
        }
    }
}
