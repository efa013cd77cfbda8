//! Kernel TCP connections between two namespaces, traced: the outcomes, the series and the
//! slow-start exit come from the real kernel. Needs root: `cargo test -p startlab-kernel --
//! --ignored kernel`.

mod common;

use common::{is_root, Pair};
use startlab_kernel::counters::netstat;
use startlab_kernel::plan::Connection;
use startlab_kernel::series::{flow_samples, slow_start_exit, HystartEvidence};
use startlab_kernel::tables::{tables, RunFacts};
use startlab_kernel::trace::{Tracefs, Tracer};
use startlab_kernel::traffic::{monotonic_ns, run_tcp, TcpJob};

#[test]
#[ignore = "kernel: needs root, network namespaces and tracefs"]
fn kernel_connections_run_at_their_times_and_are_traced() {
    if !is_root() {
        eprintln!("skipped: not root");
        return;
    }
    let pair = Pair::new("traffic");
    let fs = Tracefs::ensure().expect("tracefs");
    let base = 46_000 + (std::process::id() % 500) as u16 * 2;
    let mut tracer = Tracer::start(&fs.root, "traffic-test", &[base, base + 1], 8192).unwrap();
    let t0 = monotonic_ns() + 100_000_000;
    let job = |flow: u32, start_ms: u64, bytes: Option<u64>| TcpJob {
        flow,
        src: pair.host(0),
        dst: pair.host(1),
        src_port: base + flow as u16,
        dst_port: 5201 + flow as u16,
        cc: if flow == 0 { "cubic" } else { "reno" }.into(),
        receiver_cc: None,
        start_ns: t0 + start_ms * 1_000_000,
        stop_ns: t0 + 1_000_000_000,
        bytes,
        requests: None,
        paced: false,
        spread: None,
        maxseg: 1460,
        slow_start_after_idle: true,
        graceful_close: false,
    };
    // A finite flow at once; an unlimited one from 200 ms to the stop at 1 s.
    let jobs = [job(0, 0, Some(2_000_000)), job(1, 200, None)];
    let counters_before = netstat(&pair.host(0)).unwrap();
    let outcomes = run_tcp(&jobs);
    let counters_after = netstat(&pair.host(0)).unwrap();
    // The namespace's own counters moved (and the root namespace's are not these).
    let sent = |m: &std::collections::BTreeMap<String, u64>| m["TcpExt.TCPOrigDataSent"];
    assert!(sent(&counters_after) > sent(&counters_before) + 1000);
    let records = tracer.records().unwrap();
    assert_eq!(tracer.overruns().unwrap(), 0, "events were lost");
    drop(tracer);
    for o in &outcomes {
        assert!(o.error.is_none(), "{o:?}");
    }
    let (finite, bulk) = (&outcomes[0], &outcomes[1]);
    assert_eq!(finite.received_bytes, 2_000_000);
    let done = finite.completed_ns.expect("the finite flow completes");
    assert!(done > finite.connected_ns && done < t0 + 1_000_000_000);
    assert_eq!(finite.info.bytes_acked, 2_000_001);
    // The bulk flow opened at its start time (within scheduling noise) and sent until stopped.
    assert!(
        bulk.opened_ns >= t0 + 200_000_000 && bulk.opened_ns < t0 + 250_000_000,
        "{}",
        bulk.opened_ns as i64 - t0 as i64
    );
    assert!(bulk.completed_ns.is_none());
    assert!(bulk.received_bytes > 10_000_000, "{}", bulk.received_bytes);
    // The traced series of the finite flow: its sender's port, relative to t0.
    let probes: Vec<_> = records
        .probes
        .iter()
        .filter(|p| p.sport == base)
        .cloned()
        .collect();
    let states: Vec<_> = records
        .cong_states
        .iter()
        .filter(|s| s.sport == base)
        .cloned()
        .collect();
    let rows = flow_samples(0, &probes, &states, t0, finite.info.snd_mss);
    assert!(rows.len() > 20, "{} rows", rows.len());
    assert!(rows.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    // A record shows the state before its ACK is processed: the last one misses what the last
    // ACK acknowledged. Acknowledged bytes only grow, up to the flow's size.
    assert!(rows
        .windows(2)
        .all(|w| w[0].delivered_bytes <= w[1].delivered_bytes));
    let last = rows.last().unwrap().delivered_bytes;
    assert!(last > 500_000 && last <= 2_000_000, "{last}");
    // The same run in the simulator's tables.
    let connections: Vec<Connection> = jobs
        .iter()
        .map(|j| Connection {
            flow: j.flow,
            entry: j.flow as usize,
            label: format!("flow{}", j.flow),
            src: "h0".into(),
            dst: "h1".into(),
            cc: j.cc.clone(),
            scenario_cc: j.cc.clone(),
            startup: "default".into(),
            start: startlab_core::Duration::from_nanos(j.start_ns - t0),
            stop: startlab_core::Duration::from_nanos(j.stop_ns - t0),
            bytes: j.bytes,
            requests: None,
            paced: false,
            spread: None,
            bpf: None,
            reports: false,
            program: None,
            owns_cwnd: false,
            ecn: false,
            receiver_cc: None,
        })
        .collect();
    let run = RunFacts {
        connections: &connections,
        outcomes: &outcomes,
        senders: &[(pair.host(0).addr, base), (pair.host(0).addr, base + 1)],
        start_ns: t0,
        end_ns: t0 + 1_000_000_000,
        hystart: &[HystartEvidence::None, HystartEvidence::None],
        bpf_events: &[],
        program_exits: &[],
        diag: &[],
        datagrams: &[],
        udp: &[],
        network: &startlab_core::net::Network::default(),
    };
    let (series, flows) = tables(&run, &records);
    assert_eq!(flows.len(), 2);
    assert!(series.len() > rows.len());
    let f = flows.row(0);
    assert_eq!(
        (f.delivered_bytes, f.size_bytes, f.retransmissions),
        (2_000_000, Some(2_000_000), 0)
    );
    assert!(
        f.completion_ns.is_some_and(|c| c > 0 && c < 1_000_000_000),
        "{f:?}"
    );
    assert!(f.min_rtt_ns.is_some_and(|r| r > 0) && f.goodput_bps > 0.0);
    assert!(flows.row(1).start_ns >= 200_000_000 && flows.row(1).completion_ns.is_none());
    assert_eq!(f.drops, None, "drops are the emulator's to count");
    // Over a veth without loss or delay, nothing ends slow start of a 2 MB flow except, perhaps,
    // HyStart: if it ended, the reason is one the simulator also knows.
    if let Some(e) = slow_start_exit(&probes, &states, HystartEvidence::None, false) {
        assert!(
            e.reason.starts_with("hystart") || e.reason == "loss",
            "{e:?}"
        );
    }
}
