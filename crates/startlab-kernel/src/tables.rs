//! The kernel run's flows and flow series, in the simulator's tables (`measure::schema`), from
//! the plan, what each connection became and the trace.

use crate::diag::DiagReading;
use crate::plan::{Connection, Datagrams};
use crate::series::KernelExit;
use crate::series::{bbr_startup_exit, flow_samples, slow_start_exit, HystartEvidence};
use crate::trace::Records;
use crate::traffic::{TcpOutcome, UdpOutcome};
use startlab_bpf::events::{Event, KIND_EXIT, KIND_PHASE};
use startlab_core::cc::Phase;
use startlab_core::measure::recorder::udp_summary;
use startlab_core::measure::{FlowSeries, FlowSummary, Flows};
use startlab_core::net::Network;
use startlab_core::time::Time;

/// The hosts' names, the run's start on the monotonic clock, and for each connection its ports,
/// MSS and the HyStart counts of its namespace if it was alone there.
pub struct RunFacts<'a> {
    pub connections: &'a [Connection],
    pub outcomes: &'a [TcpOutcome],
    /// The sender's address and port of each connection: its trace records are those of this
    /// socket (another run's orphaned socket may have the same port, never the same address).
    pub senders: &'a [(std::net::Ipv4Addr, u16)],
    pub start_ns: u64,
    pub end_ns: u64,
    /// What tells each connection's HyStart detector.
    pub hystart: &'a [HystartEvidence<'a>],
    /// What startlab's eBPF controllers reported (every controller's, every connection's).
    pub bpf_events: &'a [Event],
    /// For each eBPF controller, the exit its user's global or map names
    /// (`cc_params.exit_reason_global`, `exit_reason_map`) as the run left it.
    pub program_exits: &'a [Option<String>],
    /// The sock_diag readings of the BBR connections, in time order.
    pub diag: &'a [DiagReading],
    /// The UDP sources and what became of them.
    pub datagrams: &'a [Datagrams],
    pub udp: &'a [UdpOutcome],
    /// For the hosts' names of the UDP rows.
    pub network: &'a Network,
}

/// The exit of a slow start a user's program ended itself: as its global or map names it
/// (`cc_params.exit_reason_global`, `exit_reason_map`), else after the program, as the
/// simulator names it.
fn own_exit(run: &RunFacts, c: &Connection, program: &str) -> String {
    c.bpf
        .and_then(|k| run.program_exits.get(k).cloned().flatten())
        .unwrap_or_else(|| program.to_string())
}

/// A socket dump's rates and BBR report as the series' columns (payload rates, as Linux
/// computes them).
fn model_columns(row: &mut startlab_core::measure::FlowSample, r: &DiagReading) {
    row.pacing_rate_bps = Some(r.pacing_rate as f64 * 8.0);
    row.delivery_rate_bps = Some(r.delivery_rate as f64 * 8.0);
    if let Some(b) = r.bbr {
        row.model_bw_bps = Some(b.bw_bytes_per_s as f64 * 8.0);
        row.model_min_rtt_ns = Some(b.min_rtt_us as i64 * 1000);
        row.pacing_gain = Some(b.pacing_gain as f64 / 256.0);
        row.cwnd_gain = Some(b.cwnd_gain as f64 / 256.0);
        row.model_state = b.mode().map(str::to_string);
    }
}

fn since(t: u64, start: u64) -> i64 {
    t.saturating_sub(start) as i64
}

/// The flow series of every connection and its flows-table row.
pub fn tables(run: &RunFacts<'_>, records: &Records) -> (FlowSeries, Flows) {
    let mut series = FlowSeries::default();
    let mut rows: Vec<FlowSummary> = Vec::new();
    let end = Time::from_nanos(run.end_ns.saturating_sub(run.start_ns));
    for (d, o) in run.datagrams.iter().zip(run.udp) {
        // Per-flow drops of a UDP source: what was sent and never received.
        let lost = o
            .source
            .sent_packets
            .saturating_sub(o.source.delivered_packets);
        rows.push(udp_summary(
            d.flow,
            &d.label,
            &o.source,
            lost,
            run.network,
            end,
        ));
    }
    for (i, (c, o)) in run.connections.iter().zip(run.outcomes).enumerate() {
        let (addr, port) = run.senders[i];
        let addr = addr.to_string();
        let probes: Vec<_> = records
            .probes
            .iter()
            // Its port, from when it opened: nothing of an earlier connection on the port.
            .filter(|p| p.sport == port && p.src == addr && p.time_ns >= o.opened_ns)
            .cloned()
            .collect();
        let states: Vec<_> = records
            .cong_states
            .iter()
            .filter(|s| s.sport == port && s.src == addr && s.time_ns >= o.opened_ns)
            .cloned()
            .collect();
        // An eBPF controller's own reports, for a connection that ran one.
        let events: Vec<&Event> = run
            .bpf_events
            .iter()
            .filter(|e| {
                c.reports
                    && e.sport == port
                    && e.saddr.to_string() == addr
                    && e.time_ns >= o.opened_ns
            })
            .collect();
        let phases: Vec<(u64, u8)> = events
            .iter()
            .filter(|e| e.kind == KIND_PHASE)
            .map(|e| (e.time_ns, e.phase as u8))
            .collect();
        let exit = if c.reports {
            events
                .iter()
                .find(|e| e.kind == KIND_EXIT)
                .map(|e| KernelExit {
                    time_ns: e.time_ns,
                    cwnd: e.cwnd,
                    reason: e.reason.clone(),
                })
        } else if c.cc == "bbr" {
            bbr_startup_exit(&probes)
        } else if let (Some(program), true) = (&c.program, c.owns_cwnd) {
            let name = own_exit(run, c, program);
            // A user's program with cong_control ends its start-up when it sets ssthresh (a
            // loss does not end it, as the simulator has it): the first finite ssthresh, named
            // after the program.
            bbr_startup_exit(&probes).map(|mut e| {
                e.reason = name;
                e
            })
        } else {
            slow_start_exit(&probes, &states, run.hystart[i], c.ecn).map(|mut e| {
                // Without a loss, a user's program lowered ssthresh itself: its own exit, named
                // after it as the simulator names it.
                if let (Some(program), true) = (&c.program, e.reason.starts_with("hystart")) {
                    e.reason = own_exit(run, c, program);
                }
                e
            })
        };
        let startup_end = exit.as_ref().map_or(u64::MAX, |e| e.time_ns);
        let diag: Vec<&DiagReading> = run
            .diag
            .iter()
            .filter(|r| r.sport == port && r.saddr == run.senders[i].0 && r.time_ns >= o.opened_ns)
            .collect();
        for mut row in flow_samples(
            c.flow,
            &probes,
            &states,
            run.start_ns,
            o.info.snd_mss.max(1),
        ) {
            if c.reports {
                // The phase the controller last reported at or before the record.
                let t = row.time_ns as u64 + run.start_ns;
                if let Some(&(_, p)) = phases.iter().rev().find(|(at, _)| *at <= t) {
                    row.phase = p;
                }
            }
            // BBR's model from the last socket dump at or before the record (every 10 ms).
            let t = row.time_ns as u64 + run.start_ns;
            let k = diag.partition_point(|r| r.time_ns <= t);
            if let Some(r) = k.checked_sub(1).map(|k| diag[k]) {
                model_columns(&mut row, r);
            }
            if c.cc == "bbr"
                && row.phase == Phase::SlowStart as u8
                && row.time_ns as u64 + run.start_ns > startup_end
            {
                // BBR's ssthresh is not its phase: Startup until its exit, then its other
                // modes (ProbeRTT's cwnd of 4 is below ssthresh, and is not slow start).
                row.phase = Phase::CongestionAvoidance as u8;
            }
            series.push(row);
        }
        let opened = o.opened_ns.max(run.start_ns);
        // Goodput as the simulator counts it: bytes the receiver got over the time from the
        // start to the completion, or to the end of the run (or the close).
        let stop = o
            .completed_ns
            .unwrap_or_else(|| run.end_ns.min(run.start_ns + c.stop.as_nanos()));
        let span = stop.saturating_sub(opened) as f64 * 1e-9;
        // Loss recoveries: entries into Recovery from the trace of congestion states.
        let recoveries = states
            .windows(2)
            .filter(|w| w[1].state == 3 && w[0].state != 3)
            .count()
            + states.first().is_some_and(|s| s.state == 3) as usize;
        rows.push(FlowSummary {
            flow: c.flow,
            label: c.label.clone(),
            kind: "tcp".into(),
            cc: Some(c.scenario_cc.clone()),
            startup: Some(c.startup.clone()),
            src: c.src.clone(),
            dst: c.dst.clone(),
            start_ns: since(opened, run.start_ns),
            size_bytes: c.bytes.map(|b| b as i64),
            delivered_bytes: o.received_bytes,
            goodput_bps: if span > 0.0 {
                o.received_bytes as f64 * 8.0 / span
            } else {
                0.0
            },
            sent_packets: o.info.data_segs_out as u64,
            retransmissions: o.info.total_retrans as u64,
            timeouts: o.info.total_rto as u64,
            fast_recoveries: recoveries as u64,
            // Linux counts undone reductions only per namespace (TcpExt.TCPFullUndo, …).
            undos: None,
            // Per-flow drops are the link emulator's to count.
            drops: None,
            ss_exit_ns: exit.as_ref().map(|e| since(e.time_ns, opened)),
            ss_exit_cwnd: exit.as_ref().map(|e| e.cwnd),
            ss_exit_reason: exit.map(|e| e.reason),
            congestion_losses: None,
            noncongestion_losses: None,
            completion_ns: o.completed_ns.map(|t| since(t, opened)),
            min_rtt_ns: (o.info.min_rtt > 0).then_some(o.info.min_rtt as i64 * 1000),
            // tcp_info counts neither the CE marks a receiver saw nor the sender's ECN reductions.
            ce_marks: None,
            ecn_reductions: None,
        });
    }
    rows.sort_by_key(|r| r.flow);
    let mut flows = Flows::default();
    for r in rows {
        flows.push(r);
    }
    (series, flows)
}
