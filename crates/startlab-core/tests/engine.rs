//! End-to-end behaviour of the engine, with expectations derived by hand.

use startlab_core::measure::{LinkSummary, Report};
use startlab_core::net::topology::{dumbbell, DumbbellSpec, Duplex};
use startlab_core::net::{Discipline, DropTail, Limit, LinkParams, Network, NodeKind};
use startlab_core::rng::Rng;
use startlab_core::scenario;
use startlab_core::simulation::{MeasureSpec, Simulation};
use startlab_core::traffic::{UdpPattern, UdpSource};
use startlab_core::{Duration, Rate, Time};

fn params(rate: Rate, delay: Duration, limit: u32) -> LinkParams {
    LinkParams {
        rate,
        delay,
        discipline: Discipline::DropTail(DropTail {
            limit: Limit::Packets(limit),
        }),
        loss: 0.0,
        variation: None,
    }
}

/// The links-table row of the link aliased `bottleneck`.
fn bottleneck(r: &Report) -> LinkSummary {
    r.links
        .rows()
        .into_iter()
        .find(|l| l.alias.as_deref() == Some("bottleneck"))
        .expect("a bottleneck")
}

fn run_toml(text: &str) -> Report {
    let s = scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    let r = scenario::resolve(&s).unwrap_or_else(|e| panic!("{e}"));
    scenario::build(r).run()
}

fn build_toml(text: &str) -> Simulation {
    let s = scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}"));
    scenario::build(scenario::resolve(&s).unwrap())
}

/// host a --(8 Mbps, 10 ms)--> router --(4 Mbps, 5 ms)--> host b; one 1000-byte datagram at t=0.
fn two_links(end: Time) -> Report {
    let mut net = Network::default();
    let a = net.add_node("a", NodeKind::Host);
    let r = net.add_node("r", NodeKind::Router);
    let b = net.add_node("b", NodeKind::Host);
    let p1 = params(Rate::from_mbps(8), Duration::from_millis(10), 10);
    let p2 = params(Rate::from_mbps(4), Duration::from_millis(5), 10);
    net.add_link(a, r, p1.clone(), p1, "", 1);
    net.add_link(r, b, p2.clone(), p2, "", 1);
    net.compute_routes();
    let mut sim = Simulation::new(
        net,
        end,
        1,
        MeasureSpec {
            interval: None,
            ..MeasureSpec::default()
        },
    );
    // 1000 bytes at 8 Mbps every 1 ms, stopped before the second.
    sim.add_udp_source("cbr", |id, rng: Rng| {
        UdpSource::new(
            id,
            a,
            b,
            Rate::from_mbps(8),
            1000,
            Time::ZERO,
            Time::from_nanos(1),
            UdpPattern::Cbr,
            rng,
        )
    });
    sim.run()
}

#[test]
fn one_packets_delay_over_two_links_is_serialization_plus_propagation_on_each() {
    // 1000 B at 8 Mbps = 1 ms, + 10 ms; at 4 Mbps = 2 ms, + 5 ms: arrives at 18 ms.
    let arrival = Time::from_nanos(18_000_000);
    let before = two_links(Time::from_nanos(17_999_999));
    assert_eq!(before.flows.row(0).delivered_bytes, 0);
    let at = two_links(arrival);
    assert_eq!(at.flows.row(0).delivered_bytes, 1000);
    assert_eq!(at.stats.packets_created, 1);
    assert_eq!(at.stats.packets_delivered, 1);
}

const SLOW_START: &str = r#"
duration = "1.1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Gbps", delay = "49ms", queue = { kind = "droptail", limit = 100000 } }
access = { rate = "10Gbps", delay = "500us" }
[tcp]
initial_window = 1
[[flows]]
cc = "newreno"
[measure]
interval = "10ms"
"#;

#[test]
fn slow_start_doubles_cwnd_every_rtt_without_loss() {
    // RTT = 2 x (0.5 + 49 + 0.5) ms = 100 ms; serialization at 10 Gbps is below a microsecond.
    // One segment per ACK: the window sent in round k is 2^k and all its ACKs arrive in round k+1.
    let r = run_toml(SLOW_START);
    let fs = &r.flow_series;
    for k in 0..10u32 {
        // Sample halfway through round k (t = k x 100 ms + 50 ms).
        let t = (k as i64) * 100_000_000 + 50_000_000;
        let i = fs.time_ns.iter().position(|&x| x == t).expect("sample");
        assert_eq!(fs.cwnd[i], 2f64.powi(k as i32), "round {k}");
        assert_eq!(fs.phase[i], 0);
    }
    assert_eq!(r.flows.row(0).retransmissions, 0);
    assert_eq!(r.flows.row(0).ss_exit_ns, None);
}

const ONE_FLOW: &str = r#"
duration = "5s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbps", delay = "20ms", queue = { kind = "droptail", limit = 1000 } }
access = { rate = "100Mbps", delay = "5ms" }
[tcp]
initial_window = 1
initial_ssthresh = 20
[[flows]]
cc = "newreno"
size = "200KB"
[measure]
interval = "event"
"#;

#[test]
fn newreno_recovers_from_one_loss_without_a_timeout() {
    let mut sim = build_toml(ONE_FLOW);
    let l = sim.network().find_link("bottleneck").unwrap();
    sim.network_mut().links[l as usize].lose_once(0, 30);
    let r = sim.run();
    let f = &r.flows.row(0);
    assert_eq!(f.delivered_bytes, 200_000);
    assert!(f.completion_ns.is_some_and(|c| c > 0));
    assert_eq!(f.timeouts, 0);
    assert_eq!(f.fast_recoveries, 1);
    assert_eq!(f.retransmissions, 1);
    assert_eq!(f.ss_exit_reason.as_deref(), Some("threshold"));
}

#[test]
fn newreno_recovers_from_several_losses_in_one_window_in_one_recovery() {
    // Three losses in one window: one fast retransmit, then one retransmission per partial ACK.
    let mut sim = build_toml(ONE_FLOW);
    let l = sim.network().find_link("bottleneck").unwrap() as usize;
    for seq in [30, 33, 36] {
        sim.network_mut().links[l].lose_once(0, seq);
    }
    let r = sim.run();
    let f = &r.flows.row(0);
    assert_eq!(f.delivered_bytes, 200_000);
    assert_eq!(
        (f.timeouts, f.fast_recoveries, f.retransmissions),
        (0, 1, 3)
    );
}

#[test]
fn newreno_recovers_from_many_losses_with_one_timeout() {
    // Losing a whole run of a window: partial ACKs repair one hole per RTT, the timer is only
    // restarted on the first partial ACK (RFC 6582 "Impatient"), so the retransmission timer
    // fires once, and go-back-N after it repairs the rest.
    let mut sim = build_toml(ONE_FLOW);
    let l = sim.network().find_link("bottleneck").unwrap() as usize;
    for seq in 30..45 {
        sim.network_mut().links[l].lose_once(0, seq);
    }
    let r = sim.run();
    let f = &r.flows.row(0);
    assert_eq!(f.delivered_bytes, 200_000);
    assert_eq!(f.timeouts, 1);
    // The first fast recovery, plus the spurious one RFC 6582 §4.2 describes: go-back-N resends
    // segments the receiver already holds, and their duplicate ACKs arrive above `recover`.
    assert_eq!(f.fast_recoveries, 2);
}

#[test]
fn reno_falls_back_to_a_timeout_or_repeated_recoveries_where_newreno_does_not() {
    let text = ONE_FLOW.replace("cc = \"newreno\"", "cc = \"reno\"");
    let mut sim = build_toml(&text);
    let l = sim.network().find_link("bottleneck").unwrap() as usize;
    for seq in [30, 33, 36] {
        sim.network_mut().links[l].lose_once(0, seq);
    }
    let r = sim.run();
    let f = &r.flows.row(0);
    assert_eq!(f.delivered_bytes, 200_000);
    // Reno leaves recovery on the first partial ACK: the other holes need more.
    assert!(f.timeouts + f.fast_recoveries >= 2, "{f:?}");
}

#[test]
fn sack_recovery_repairs_several_holes_in_one_round() {
    let text = ONE_FLOW.replace(
        "initial_ssthresh = 20",
        "initial_ssthresh = 20\nsack = true",
    );
    let mut sim = build_toml(&text);
    let l = sim.network().find_link("bottleneck").unwrap() as usize;
    for seq in [30, 33, 36] {
        sim.network_mut().links[l].lose_once(0, seq);
    }
    let r = sim.run();
    let f = &r.flows.row(0);
    assert_eq!(f.delivered_bytes, 200_000);
    assert_eq!(
        (f.timeouts, f.fast_recoveries, f.retransmissions),
        (0, 1, 3)
    );
    // All three holes are retransmitted within the first round of recovery: the flow completes
    // sooner than NewReno, which needs one round per hole.
    let mut nr = build_toml(ONE_FLOW);
    for seq in [30, 33, 36] {
        nr.network_mut().links[l].lose_once(0, seq);
    }
    let nr = nr.run();
    assert!(
        f.completion_ns < nr.flows.row(0).completion_ns,
        "{:?} vs {:?}",
        f.completion_ns,
        nr.flows.row(0).completion_ns
    );
}

#[test]
fn the_retransmission_timer_backs_off() {
    // The receiver's access link loses everything after the first segment is lost twice...
    // simpler: a path whose forward link loses every packet. The sender times out at RTO, 2 RTO,
    // 4 RTO...: with the initial RTO of 1 s and no RTT sample, timeouts at 1, 3, 7, 15 s.
    let text = r#"
duration = "16s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbps", delay = "20ms", loss = 1.0 }
[[flows]]
cc = "newreno"
[measure]
interval = "event"
"#;
    assert_eq!(run_toml(text).flows.row(0).timeouts, 4);
    let shorter = text.replace("\"16s\"", "\"14.9s\"");
    assert_eq!(run_toml(&shorter).flows.row(0).timeouts, 3);
}

#[test]
fn same_scenario_and_seed_give_identical_reports_and_another_seed_does_not() {
    let text = r#"
duration = "3s"
seed = 7
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = { rate = "20Mbps", delay = "10ms", queue = { kind = "red", limit = 60, min_th = 5, max_th = 30 }, loss = 0.001 }
[[flows]]
pair = 0
[[flows]]
pair = 1
start = "0.3s"
tcp = { sack = true, delayed_ack = true }
[[flows]]
kind = "on-off"
pair = 1
rate = "5Mbps"
on_time = "100ms"
off_time = "200ms"
"#;
    let a = format!("{:?}", run_toml(text));
    let b = format!("{:?}", run_toml(text));
    assert_eq!(a, b);
    let c = format!("{:?}", run_toml(&text.replace("seed = 7", "seed = 8")));
    assert_ne!(a, c);
}

#[test]
fn a_cbr_flow_gets_its_rate_while_newreno_grows_one_segment_per_rtt() {
    let text = r#"
duration = "10s"
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = { rate = "40Mbps", delay = "40ms" }
[tcp]
initial_ssthresh = 32
[[flows]]
pair = 0
[[flows]]
kind = "cbr"
pair = 1
rate = "20Mbps"
start = "0.5s"
[measure]
window = [{ link = "bottleneck", from = "0s", to = "10s" }]
"#;
    let r = run_toml(text);
    let udp = &r.flows.row(1);
    // 20 Mbps for 9.5 s, 1000-byte datagrams, minus what the queue dropped.
    let sent = udp.sent_packets;
    assert_eq!(sent, 23_750);
    assert!(
        udp.goodput_bps > 18e6 && udp.goodput_bps <= 20e6,
        "{}",
        udp.goodput_bps
    );
    // With ssthresh 32 NewReno leaves slow start after about 5 RTTs, then adds one segment per
    // RTT (RFC 5681 eq. 3): from 0.5 s to 9.5 s, 9 s / 84.8 ms = 106 RTTs, about 106 segments.
    let fs = &r.flow_series;
    let at = |t: i64| fs.cwnd[fs.time_ns.iter().position(|&x| x == t).unwrap()];
    let per_rtt = (at(9_500_000_000) - at(500_000_000)) / (9.0 / 0.0848);
    assert!((per_rtt - 1.0).abs() < 0.03, "{per_rtt}");
    // The exact window and the whole-run utilization of the same span agree.
    assert!((r.windows.row(0).utilization - r.links.row(0).utilization).abs() < 1e-12);
}

#[test]
fn parking_lot_cross_traffic_shares_each_hop() {
    let text = r#"
duration = "5s"
[topology]
kind = "parking-lot"
hops = 2
long_pairs = 1
cross_pairs = 1
bottleneck = { rate = "10Mbps", delay = "10ms" }
[[flows]]
src = "ls0"
dst = "lr0"
[[flows]]
src = "cs0_0"
dst = "cr0_0"
[[flows]]
src = "cs1_0"
dst = "cr1_0"
"#;
    let r = run_toml(text);
    assert!(r.flows.rows().into_iter().all(|f| f.delivered_bytes > 0));
    let hop0 = r
        .links
        .rows()
        .into_iter()
        .find(|l| l.alias.as_deref() == Some("hop0"))
        .unwrap();
    let hop1 = r
        .links
        .rows()
        .into_iter()
        .find(|l| l.alias.as_deref() == Some("hop1"))
        .unwrap();
    assert!(hop0.utilization > 0.5 && hop1.utilization > 0.5);
}

#[test]
fn many_finite_flows_arrive_and_complete() {
    let text = r#"
duration = "20s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "50Mbps", delay = "10ms" }
[[flows]]
kind = "tcp-arrivals"
mean_interarrival = "100ms"
stop = "15s"
size = { distribution = "lognormal-pareto", mu = 9.357, sigma = 1.328, tail_fraction = 0.07, tail_shape = 1.1, tail_min = "133KB" }
"#;
    let r = run_toml(text);
    let n = r.flows.len();
    // Poisson with mean 150 arrivals in 15 s.
    assert!(n > 110 && n < 190, "{n}");
    let done = r
        .flows
        .rows()
        .into_iter()
        .filter(|f| f.completion_ns.is_some_and(|c| c > 0))
        .count();
    assert!(done as f64 > 0.9 * n as f64, "{done} of {n}");
    assert_eq!(
        r.stats.packets_created,
        r.stats.packets_delivered + r.stats.packets_dropped + r.stats.packets_in_network
    );
}

#[test]
fn handshake_gives_the_first_rtt_sample_before_data() {
    let text = r#"
duration = "1s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "100Mbps", delay = "40ms" }
access = { rate = "1Gbps", delay = "5ms" }
[tcp]
handshake = true
initial_window = 10
[[flows]]
size = "5000B"
[measure]
interval = "event"
"#;
    let r = run_toml(text);
    let fs = &r.flow_series;
    // The first row (the first ACK of data) already has an srtt from the SYN / SYN-ACK exchange:
    // 2 x (5 + 40 + 5) ms plus the serialization of two 40-byte packets on three links.
    assert!(
        fs.srtt_ns[0].is_some_and(|s| (100_000_000..100_100_000).contains(&s)),
        "{:?}",
        fs.srtt_ns[0]
    );
    // 5 segments sent at once after the handshake: the last ACK comes one more RTT later.
    let c = r.flows.row(0).completion_ns;
    assert!(
        c.is_some_and(|c| c > 200_000_000 && c < 201_000_000),
        "{c:?}"
    ); // The smallest RTT sample is the handshake's: 2 x 50 ms of propagation and a 40-byte
       // packet each way at 1 Gbps, 100 Mbps, 1 Gbps: 2 x (320 + 3200 + 320) ns.
    assert_eq!(r.flows.row(0).min_rtt_ns, Some(100_007_680));
}

#[test]
fn dumbbell_builder_is_usable_without_scenarios() {
    let d = Duplex {
        forward: params(Rate::from_mbps(10), Duration::from_millis(10), 50),
        reverse: params(Rate::from_mbps(10), Duration::from_millis(10), 50),
    };
    let net = dumbbell(
        &DumbbellSpec {
            bottleneck: d.clone(),
            sender_access: vec![d.clone()],
            receiver_access: vec![d],
        },
        1,
    );
    assert_eq!(net.nodes.len(), 4);
    assert_eq!(net.links.len(), 6);
}

fn sallantin_topology(pacing: &str, size: &str, duration: &str) -> String {
    format!(
        r#"
duration = "{duration}"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "10Mbps", delay = "50ms", queue = {{ kind = "droptail", limit = 1000 }} }}
access = {{ rate = "40Mbps", delay = "5ms" }}
[tcp]
handshake = true
initial_window = 10
pacing = "{pacing}"
[[flows]]
cc = "newreno"
size = "{size}"
"#
    )
}

#[test]
fn initial_spreading_matches_the_closed_form_of_the_uncongested_case() {
    // Sallantin et al. 2013 §III.C.1: the whole IW of n segments is acknowledged after RTT + (n - 1) T2
    // without spreading and RTT + (n - 1) RTT / n with it, T2 being the bottleneck's time per
    // packet: the difference is (n - 1)(RTT / n - T2).
    let burst = run_toml(&sallantin_topology("none", "10000B", "2s"))
        .flows
        .row(0)
        .completion_ns
        .unwrap() as f64;
    let spread = run_toml(&sallantin_topology("initial-spreading", "10000B", "2s"))
        .flows
        .row(0)
        .completion_ns
        .unwrap() as f64;
    // The handshake RTT: 2 x 60 ms of propagation plus a 40-byte packet on 40, 10 and 40 Mbps
    // links each way: 120 ms + 2 x (8 + 32 + 8) us = 120.096 ms.
    let rtt = 120.096e6;
    let t2 = 1040.0 * 8.0 / 10e6 * 1e9;
    let expected = 9.0 * (rtt / 10.0 - t2);
    assert!(
        ((spread - burst) - expected).abs() < 0.05e6,
        "difference {} ns, expected {expected}",
        spread - burst
    );
}

#[test]
fn initial_spreading_spaces_only_the_first_window() {
    // With spreading, the first RTT never queues at the bottleneck (a packet every 12 ms, each
    // served in 0.83 ms); from the second RTT on, ACK clocking sends pairs again.
    let text = sallantin_topology("initial-spreading", "200KB", "1s")
        .replace("[[flows]]", "[measure]\ninterval = \"event\"\n[[flows]]");
    let r = run_toml(&text);
    let qs = &r.queue_series;
    // The last spread segment leaves at 120 + 9 x 12 ms and reaches the bottleneck by 234 ms; the
    // first ACK of data returns at about 241 ms and its two segments reach the bottleneck at 246 ms.
    let first_rtt_end = 240_000_000;
    let max_first = (0..qs.len())
        .filter(|&i| qs.time_ns[i] < first_rtt_end)
        .map(|i| qs.queue_packets[i])
        .max()
        .unwrap();
    assert_eq!(max_first, 0);
    let max_later = (0..qs.len())
        .filter(|&i| qs.time_ns[i] >= first_rtt_end)
        .map(|i| qs.queue_packets[i])
        .max()
        .unwrap();
    assert!(max_later >= 1);
    // The row recorded at the SYN-ACK shows the spreading rate, IW x 1040 B per handshake RTT;
    // from the first ACK of data on there is no pacing.
    let p = &r.flow_series.pacing_rate_bps;
    assert!(
        (p[0].unwrap() - 10.0 * 1040.0 * 8.0 / 0.120096).abs() < 1.0,
        "{:?}",
        p[0]
    );
    assert!(p[1..].iter().all(|x| x.is_none()));
}

#[test]
fn window_pacing_keeps_slow_start_from_building_a_queue() {
    let burst = run_toml(&sallantin_topology("none", "300KB", "3s"));
    let paced = run_toml(&sallantin_topology("window", "300KB", "3s"));
    let linux = run_toml(&sallantin_topology("linux", "300KB", "3s"));
    let q = |r: &Report| bottleneck(r).max_queue_packets;
    // Unpaced slow start sends two segments per ACK: the queue grows to about half the window.
    assert!(q(&burst) > 40, "{}", q(&burst));
    // Pacing at cwnd / srtt spreads each window over the RTT: the queue stays small until the
    // window approaches the BDP (about 144 packets here).
    assert!(
        q(&paced) < q(&burst) / 4,
        "paced {} vs burst {}",
        q(&paced),
        q(&burst)
    );
    // Linux paces slow start at twice cwnd / srtt: in between.
    assert!(
        q(&linux) <= q(&burst) && q(&linux) >= q(&paced),
        "linux {}",
        q(&linux)
    );
    for r in [&burst, &paced, &linux] {
        assert_eq!(r.flows.row(0).delivered_bytes, 300_000);
    }
}

#[test]
fn astart_start_up_lasts_through_its_mini_linear_phases_until_a_loss() {
    // Wang et al. 2004 setup: 40 Mbps, 100 ms, initial ssthresh 32, buffer = BDP. NewReno leaves
    // slow start at ssthresh 32; Astart keeps raising ssthresh, and its start-up only ends with
    // the first fast retransmit (here: none in 20 s with a BDP buffer).
    let text = |startup: &str| {
        format!(
            r#"
duration = "20s"
[topology]
kind = "dumbbell"
bottleneck = {{ rate = "40Mbps", delay = "49ms", queue = {{ kind = "droptail", limit = "1BDP" }} }}
access = {{ rate = "10Gbps", delay = "0.5ms" }}
[tcp]
mss = "960B"
initial_ssthresh = 32
[[flows]]
cc = "newreno"
startup = "{startup}"
"#
        )
    };
    let newreno = &run_toml(&text("default")).flows.row(0);
    assert_eq!(newreno.ss_exit_reason.as_deref(), Some("threshold"));
    assert_eq!(newreno.ss_exit_cwnd, Some(32.0));
    let astart = &run_toml(&text("astart")).flows.row(0);
    assert_eq!(astart.ss_exit_ns, None, "{astart:?}");
    assert!(astart.goodput_bps > 3.0 * newreno.goodput_bps);
}

#[test]
fn a_stopped_connection_sends_nothing_more_and_its_goodput_counts_its_lifetime() {
    // Two bulk NewReno connections on one 10 Mbps bottleneck; the first is closed at 3 s, the
    // second opens at 2 s and runs to the end (10 s).
    let text = r#"
duration = "10s"
[topology]
kind = "dumbbell"
pairs = 2
bottleneck = { rate = "10Mbps", delay = "20ms" }
[[flows]]
pair = 0
stop = "3s"
[[flows]]
pair = 1
start = "2s"
"#;
    let r = run_toml(text);
    let (a, b) = (&r.flows.row(0), &r.flows.row(1));
    // Goodput over the lifetime [0 s, 3 s]; what arrived after the stop is not counted.
    let expected = a.delivered_bytes as f64 * 8.0 / 3.0;
    assert!(
        (a.goodput_bps - expected).abs() < 1e-6,
        "{} {expected}",
        a.goodput_bps
    );
    assert!(
        a.goodput_bps > 1e6 && a.goodput_bps < 10e6,
        "{}",
        a.goodput_bps
    );
    assert_eq!(a.completion_ns, None);
    // Nothing is sampled after the stop, and the delivered bytes do not move after it.
    let fs = &r.flow_series;
    let last_a = (0..fs.time_ns.len()).rfind(|&i| fs.flow[i] == 0).unwrap();
    assert_eq!(fs.time_ns[last_a], 3_000_000_000);
    assert!(fs.delivered_bytes[last_a] <= a.delivered_bytes);
    // The second connection goes on: it delivers more after the stop than before.
    let at_3s = (0..fs.time_ns.len())
        .find(|&i| fs.flow[i] == 1 && fs.time_ns[i] == 3_000_000_000)
        .unwrap();
    assert!(
        b.delivered_bytes > 2 * fs.delivered_bytes[at_3s],
        "{}",
        b.delivered_bytes
    );
    // Its slow-start exit is counted from its own start (2 s), as its completion time would be.
    assert!(
        b.ss_exit_ns.is_some_and(|t| t > 0 && t < 2_000_000_000),
        "{:?}",
        b.ss_exit_ns
    );
    assert_eq!(
        r.stats.packets_created,
        r.stats.packets_delivered + r.stats.packets_dropped + r.stats.packets_in_network
    );
}

#[test]
fn a_tcp_stop_must_follow_the_start() {
    let text = r#"
duration = "10s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbps", delay = "20ms" }
[[flows]]
start = "2s"
stop = "1s"
"#;
    let s = scenario::from_toml(text).unwrap();
    let e = scenario::resolve(&s).unwrap_err().to_string();
    assert!(
        e.contains("flows[0].stop") && e.contains("is not after the start"),
        "{e}"
    );
}

/// Flows are labelled whatever their kind: the entry's label, else its kind (TCP: the algorithm),
/// with `#k` on each copy of a `count` entry.
#[test]
fn udp_flows_are_labelled_like_tcp_flows() {
    let report = run_toml(
        r#"
duration = "0.2s"
[topology]
kind = "dumbbell"
bottleneck = { rate = "10Mbps", delay = "5ms" }
[[flows]]
cc = "newreno"
[[flows]]
kind = "cbr"
label = "video"
rate = "1Mbps"
count = 2
[[flows]]
kind = "on-off"
rate = "1Mbps"
on_time = "10ms"
off_time = "10ms"
"#,
    );
    let labels: Vec<&str> = report.flows.label.iter().map(String::as_str).collect();
    assert_eq!(labels, ["newreno", "video#0", "video#1", "on-off"]);
}

/// RFC 8257 §1: with a shallow marking threshold, DCTCP's reduction in proportion to the marks
/// keeps the link busier than RFC 3168's halving on every echo, without a loss.
#[test]
fn dctcp_behind_a_marking_threshold_keeps_the_link_busier_than_classic_ecn() {
    let run = |cc: &str| {
        run_toml(&format!(
            r#"
            duration = "10s"
            [topology]
            kind = "dumbbell"
            bottleneck = {{ rate = "100Mbps", delay = "5ms", queue = {{ kind = "codel", ce_threshold = "1ms", ecn = true }} }}
            [tcp]
            stack = "linux"
            ecn = true
            [[flows]]
            cc = "{cc}"
            "#
        ))
    };
    let (dctcp, reno) = (run("dctcp"), run("newreno"));
    let util = |r: &Report| bottleneck(r).utilization;
    for r in [&dctcp, &reno] {
        let b = bottleneck(r);
        assert_eq!(b.drops, 0);
        assert!(b.marks > 10, "{}", b.marks);
        assert_eq!(r.flows.ss_exit_reason[0].as_deref(), Some("ecn"));
    }
    assert!(
        util(&dctcp) > util(&reno) + 0.1,
        "dctcp {} newreno {}",
        util(&dctcp),
        util(&reno)
    );
}

/// The ns-2 stack: a loss in the window of a reduction for an ECN echo is fast-retransmitted
/// without a second reduction (ns-2 `dupack_action`'s CWND_ACTION_ECN branch, RFC 3168
/// §6.1.2), not left to the retransmission timer. CUBIC from an initial window of 1 overshoots
/// into CoDel with ECN: the first echo reduces the window, and packets of the burst sent before
/// it are then dropped (5 of them; before the fix, the sender waited for a timeout).
#[test]
fn ns2_a_loss_in_the_window_of_an_ecn_reduction_is_fast_retransmitted() {
    let r = run_toml(
        r#"
        duration = "2s"
        [topology]
        kind = "dumbbell"
        access = { rate = "1Gbps", delay = "1ms" }
        bottleneck = { rate = "100Mbps", delay = "8ms", queue = { kind = "codel", ecn = true } }
        [tcp]
        mss = "1460B"
        header = "42B"
        ack_size = "42B"
        handshake = true
        initial_window = 1
        sack = true
        delayed_ack = false
        min_rto = "200ms"
        ecn = true
        [[flows]]
        cc = "cubic"
        cc_params = { beta = 0.7 }
        "#,
    );
    let b = bottleneck(&r);
    assert!(b.drops > 0, "{b:?}");
    assert!(b.marks > 0, "{b:?}");
    assert_eq!(r.flows.ss_exit_reason[0].as_deref(), Some("ecn"));
    assert_eq!(r.flows.timeouts[0], 0);
    assert_eq!(r.flows.fast_recoveries[0], 1);
}
