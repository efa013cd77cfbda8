//! Scenario fuzzing: random scenarios drawn across everything the scenario format allows — every
//! topology, traffic kind, algorithm, queue kind and TCP option — each run checked against the
//! invariants every run must keep.
//!
//! The default suite draws a few hundred cases; the long run is
//! `PROPTEST_CASES=10000 cargo test -p startlab-core --test scenario_fuzz every_drawn` (the test
//! profile keeps the debug assertions, such as the sender's window check).
//! When an algorithm, a TCP option, a traffic kind or a topology is added, teach [`scenario`] to
//! draw it (docs/contributing.md).

use proptest::prelude::*;
use startlab_core::cc::params::Allowed;
use startlab_core::cc::registry;
use startlab_core::measure::schema::Table;
use startlab_core::measure::Report;
use startlab_core::scenario;

const DURATION_S: f64 = 1.5;

fn one_of(items: Vec<&'static str>) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(items)
}

fn ccs() -> Vec<&'static str> {
    registry::algorithms()
        .into_iter()
        .filter(|a| a.role == registry::Role::Cc)
        .map(|a| a.name)
        .collect()
}

fn startups() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = registry::algorithms()
        .into_iter()
        .filter(|a| a.role == registry::Role::Startup)
        .map(|a| a.name)
        .collect();
    names.push(registry::DEFAULT_STARTUP);
    names
}

/// One parameter of algorithm `name` at a value inside its declared range (`pick` chooses the
/// parameter, `t` the place in the range), as `key = value`; `None` for an algorithm without
/// numeric parameters. Integers stay integers.
fn param_within(name: &str, pick: usize, t: f64) -> Option<String> {
    let info = registry::algorithms()
        .into_iter()
        .find(|a| a.name == name)?;
    let numeric: Vec<_> = info
        .params
        .iter()
        .filter(|p| matches!(p.range, Allowed::Range { .. }))
        .collect();
    let p = numeric.get(pick % numeric.len().max(1))?;
    let Allowed::Range { min, max, .. } = p.range else {
        return None;
    };
    // Strictly inside, so open bounds hold too.
    let x = min + (max - min) * (0.01 + 0.98 * t);
    let integer = !p.default.contains('.') && p.default.parse::<i64>().is_ok();
    Some(if integer {
        format!(
            "{} = {}",
            p.name,
            (x.round() as i64).clamp(min.ceil() as i64, max.floor() as i64)
        )
    } else {
        format!("{} = {x:e}", p.name)
    })
}

/// A queue: DropTail in packets, bytes or BDPs, RED, CoDel, FQ-CoDel or PIE.
fn queue() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..300).prop_map(|p| format!("{{ kind = \"droptail\", limit = {p} }}")),
        (2u32..300).prop_map(|k| format!("{{ kind = \"droptail\", limit = \"{k}KB\" }}")),
        (1u32..40).prop_map(|x| format!(
            "{{ kind = \"droptail\", limit = \"{}BDP\" }}",
            x as f64 / 10.0
        )),
        (4u32..200, 1u32..4, 1u32..50).prop_map(|(limit, min, max_p)| format!(
            "{{ kind = \"red\", limit = {limit}, min_th = {min}, max_th = {}, max_p = {}, gentle = {} }}",
            (min + 1).max(limit / 2),
            max_p as f64 / 100.0,
            max_p % 2 == 0
        )),
        (1u32..300, 1u32..20, 20u32..200, any::<bool>()).prop_map(|(limit, target, interval, ecn)| format!(
            "{{ kind = \"codel\", limit = {limit}, target = \"{target}ms\", interval = \"{interval}ms\", ecn = {ecn} }}"
        )),
        (1u32..300, 1u32..64, 256u32..3000, 1u32..70).prop_map(|(limit, flows, quantum, batch)| format!(
            "{{ kind = \"fq_codel\", limit = {limit}, flows = {flows}, quantum = {quantum}, drop_batch = {batch} }}"
        )),
        (1u32..300, 1u32..40, 1u32..40, 0u32..33, any::<bool>()).prop_map(|(limit, target, tupdate, alpha, ecn)| format!(
            "{{ kind = \"pie\", limit = {limit}, target = \"{target}ms\", tupdate = \"{tupdate}ms\", alpha = {alpha}, ecn = {ecn} }}"
        )),
    ]
}

/// A link: rate, delay, optional asymmetry, random loss.
fn link() -> impl Strategy<Value = String> {
    (
        1u32..200,
        1u32..60,
        prop::option::of(1u32..200),
        prop::option::of(1u32..60),
        queue(),
        prop_oneof![3 => Just(0.0), 1 => 0.0..0.03f64],
        prop_oneof![3 => Just(0.0), 1 => 0.0..0.03f64],
    )
        .prop_map(|(rate, delay, rrate, rdelay, queue, loss, rloss)| {
            let mut s = format!(
                "rate = \"{rate}Mbps\", delay = \"{delay}ms\", queue = {queue}, loss = {loss}, reverse_loss = {rloss}"
            );
            if let Some(r) = rrate {
                s += &format!(", reverse_rate = \"{r}Mbps\"");
            }
            if let Some(d) = rdelay {
                s += &format!(", reverse_delay = \"{d}ms\"");
            }
            s
        })
}

/// TCP options of a flow (or of `[tcp]`).
fn tcp() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        one_of(vec!["none", "window", "linux", "initial-spreading"]),
        one_of(vec!["auto", "reno", "newreno", "sack"]),
        prop_oneof![Just("3".to_string()), (1u32..20).prop_map(|w| w.to_string()), (1u32..20).prop_map(|k| format!("\"{k}KB\""))],
        prop_oneof![Just("\"unlimited\"".to_string()), (2u32..500).prop_map(|s| s.to_string())],
        prop_oneof![Just("\"unlimited\"".to_string()), (4u32..2000).prop_map(|s| s.to_string())],
    )
        .prop_map(|(sack, delack, undo, handshake, pacing, recovery, iw, ssthresh, rwnd)| {
            // Initial Spreading needs the handshake's RTT; SACK recovery needs SACK.
            let handshake = handshake || pacing == "initial-spreading";
            let sack = sack || recovery == "sack";
            format!(
                "{{ sack = {sack}, delayed_ack = {delack}, undo = {undo}, handshake = {handshake}, pacing = \"{pacing}\", recovery = \"{recovery}\", initial_window = {iw}, initial_ssthresh = {ssthresh}, receive_window = {rwnd} }}"
            )
        })
}

/// What a flow sends (without its endpoints).
fn traffic() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (one_of(ccs()), one_of(startups()), tcp(), 1u32..3, 0u32..500,
              prop_oneof![Just("\"unlimited\"".to_string()), (1u32..400).prop_map(|k| format!("\"{k}KB\""))],
              prop::option::of(600u32..1400),
              prop::option::of((any::<usize>(), 0.0..1.0f64)),
              prop::option::of((any::<usize>(), 0.0..1.0f64)))
            .prop_map(|(cc, startup, tcp, count, start, size, stop, cc_param, startup_param)| {
                // BBR's Startup is its own: no start-up algorithm replaces it.
                let startup = if registry::startup_replaceable(cc) { startup } else { registry::DEFAULT_STARTUP };
                // A start-up algorithm that is part of one controller runs on it (SUSS on
                // CUBIC), and one that paces its own segments on a sender that does not.
                let cc = match registry::startup_controllers(startup) {
                    Some(ccs) if !ccs.contains(&cc) => ccs[0],
                    _ => cc,
                };
                let tcp = if registry::UNPACED_SENDER_ONLY.contains(&startup) {
                    tcp.replace(&format!("pacing = \"{}\"", tcp.split("pacing = \"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("none")), "pacing = \"none\"")
                } else {
                    tcp
                };
                let mut s = format!("kind = \"tcp\"\ncc = \"{cc}\"\nstartup = \"{startup}\"\ntcp = {tcp}\ncount = {count}\nstagger = \"50ms\"\nstart = \"{start}ms\"\nsize = {size}\n");
                // A parameter of the controller or of the start-up algorithm, within its range.
                if let Some(kv) = cc_param.and_then(|(i, t)| param_within(cc, i, t)) {
                    s += &format!("cc_params = {{ {kv} }}\n");
                }
                if startup != registry::DEFAULT_STARTUP {
                    if let Some(kv) = startup_param.and_then(|(i, t)| param_within(startup, i, t)) {
                        s += &format!("startup_params = {{ {kv} }}\n");
                    }
                }
                if let Some(stop) = stop {
                    s += &format!("stop = \"{stop}ms\"\n");
                }
                s
            }),
        1 => (one_of(ccs()), 20u32..500, one_of(vec![
                "{ distribution = \"fixed\", value = \"20KB\" }",
                "{ distribution = \"exponential\", mean = \"30KB\" }",
                "{ distribution = \"pareto\", mean = \"30KB\", shape = 1.5 }",
                "{ distribution = \"lognormal-pareto\", mu = 9.0, sigma = 1.0, tail_fraction = 0.1, tail_shape = 1.2, tail_min = \"50KB\" }",
            ]))
            .prop_map(|(cc, mean, size)| format!("kind = \"tcp-arrivals\"\ncc = \"{cc}\"\nmean_interarrival = \"{mean}ms\"\nsize = {size}\n")),
        1 => (1u32..30, 100u32..1400).prop_map(|(rate, bytes)| format!("kind = \"cbr\"\nrate = \"{rate}Mbps\"\npacket_size = \"{bytes}B\"\nstart = \"100ms\"\n")),
        1 => (1u32..30, one_of(vec!["constant", "exponential", "pareto"]))
            .prop_map(|(rate, d)| {
                let shape = if d == "pareto" { "shape = 1.5\n" } else { "" };
                format!("kind = \"on-off\"\nrate = \"{rate}Mbps\"\non_time = \"50ms\"\noff_time = \"80ms\"\ndistribution = \"{d}\"\n{shape}")
            }),
    ]
}

/// A whole scenario.
fn scenario() -> impl Strategy<Value = String> {
    let topology = prop_oneof![
        (1u32..4, link(), prop::option::of(1u32..20), one_of(vec!["dumbbell", "parallel"])).prop_map(
            |(pairs, bottleneck, pair_delay, kind)| {
                let mut s = format!("[topology]\nkind = \"{kind}\"\npairs = {pairs}\nbottleneck = {{ {bottleneck} }}\naccess = {{ rate = \"1Gbps\", delay = \"1ms\" }}\n");
                if let Some(d) = pair_delay {
                    s += &format!("[[topology.pair]]\nsender_access = {{ delay = \"{d}ms\" }}\n");
                }
                (s, pairs, 0u32)
            }
        ),
        (1u32..4, link(), 1u32..3, 0u32..3).prop_map(|(hops, bottleneck, long, cross)| {
            (format!("[topology]\nkind = \"parking-lot\"\nhops = {hops}\nlong_pairs = {long}\ncross_pairs = {cross}\nbottleneck = {{ {bottleneck} }}\naccess = {{ rate = \"1Gbps\", delay = \"1ms\" }}\n"), long, hops * 100 + cross)
        }),
    ];
    (
        topology,
        prop::collection::vec((traffic(), 0u32..16), 1..5),
        prop_oneof![Just("\"event\""), Just("\"10ms\"")],
        0u64..(i64::MAX as u64),
        tcp(),
    )
        .prop_map(|((topo, pairs, lot), flows, interval, seed, default_tcp)| {
            let mut s = format!("duration = \"{DURATION_S}s\"\nseed = {seed}\n{topo}[tcp]\n");
            // `[tcp]` takes the same options as a flow's `tcp`, as keys.
            for kv in default_tcp
                .trim_matches(|c| c == '{' || c == '}')
                .split(", ")
            {
                s += kv.trim();
                s += "\n";
            }
            s += &format!("[measure]\ninterval = {interval}\n");
            for (traffic, pick) in flows {
                s += "[[flows]]\n";
                if lot == 0 {
                    s += &format!("pair = {}\n", pick % pairs);
                } else {
                    // Parking lot: a long pair, or a cross pair of some hop.
                    let (hops, cross) = (lot / 100, lot % 100);
                    if cross == 0 || pick % 2 == 0 {
                        let p = pick % pairs;
                        s += &format!("src = \"ls{p}\"\ndst = \"lr{p}\"\n");
                    } else {
                        let h = pick % hops;
                        let c = pick % cross;
                        s += &format!("src = \"cs{h}_{c}\"\ndst = \"cr{h}_{c}\"\n");
                    }
                }
                s += &traffic;
            }
            s
        })
}

fn run(text: &str) -> Report {
    let s = scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let r = scenario::resolve(&s)
        .unwrap_or_else(|e| panic!("a valid scenario was refused: {e}\n{text}"));
    scenario::build(r).run()
}

/// Whether a refusal is of a combination of parameters (each within its own range): the only
/// refusal a drawn scenario may meet.
fn refused_combination(text: &str) -> bool {
    match scenario::from_toml(text).and_then(|s| scenario::resolve(&s)) {
        Err(e) => e.path.contains("_params") && !e.message.starts_with("invalid value"),
        Ok(_) => false,
    }
}

fn check(r: &Report) -> Result<(), TestCaseError> {
    let duration_ns = (DURATION_S * 1e9) as i64;
    // Capacity and queue limits on every link.
    for l in r.links.rows() {
        let capacity = l.rate_bps * DURATION_S / 8.0;
        prop_assert!(
            l.forwarded_bytes as f64 <= capacity + 65_535.0,
            "{} over capacity: {} > {capacity}",
            l.name,
            l.forwarded_bytes
        );
        prop_assert!(
            l.utilization <= 1.0 + 1e-9,
            "{}: utilization {}",
            l.name,
            l.utilization
        );
        if let Some(limit) = l.limit_packets {
            prop_assert!(
                l.max_queue_packets as i64 <= limit,
                "{}: queue {} > limit {limit}",
                l.name,
                l.max_queue_packets
            );
        }
    }
    for i in 0..r.queue_series.len() {
        let l = r.links.row(r.queue_series.link[i] as usize);
        if let Some(limit) = l.limit_packets {
            prop_assert!(r.queue_series.queue_packets[i] as i64 <= limit);
        }
    }
    // Packet conservation.
    let s = &r.stats;
    prop_assert_eq!(
        s.packets_created,
        s.packets_delivered + s.packets_dropped + s.packets_in_network
    );
    let dropped: u64 = r.links.drops.iter().chain(&r.links.losses).sum();
    prop_assert_eq!(dropped, s.packets_dropped);
    // Windows: cwnd >= 1 segment, ssthresh >= 2 segments.
    let fs = &r.flow_series;
    for i in 0..fs.len() {
        prop_assert!(
            fs.cwnd[i] >= 1.0,
            "flow {} cwnd {} at {}",
            fs.flow[i],
            fs.cwnd[i],
            fs.time_ns[i]
        );
        if let Some(ss) = fs.ssthresh[i] {
            prop_assert!(
                ss >= 2.0,
                "flow {} ssthresh {ss} at {}",
                fs.flow[i],
                fs.time_ns[i]
            );
        }
    }
    // No NaN or infinity in any table.
    for (def, data) in r
        .flow_series
        .columns()
        .into_iter()
        .chain(r.queue_series.columns())
        .chain(r.flows.columns())
        .chain(r.links.columns())
        .chain(r.windows.columns())
    {
        prop_assert!(data.all_finite(), "a NaN or infinity in {}", def.name);
    }
    // The slow-start exit: after the flow's start, before the end of the run.
    for f in r.flows.rows() {
        if let Some(t) = f.ss_exit_ns {
            prop_assert!(
                t >= 0 && f.start_ns + t <= duration_ns,
                "flow {} exits at {t}",
                f.flow
            );
            prop_assert!(f.ss_exit_cwnd.is_some() && f.ss_exit_reason.is_some());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, max_global_rejects: 1_000_000, ..ProptestConfig::default() })]

    #[test]
    fn every_drawn_scenario_runs_and_keeps_the_invariants(text in scenario()) {
        prop_assume!(!refused_combination(&text));
        let r = run(&text);
        check(&r).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        // Determinism.
        prop_assert!(r == run(&text), "a second run differs\n{text}");
    }
}

// ----- parsers --------------------------------------------------------------------------------

use startlab_core::scenario::units::{parse_duration, parse_rate, parse_size};

/// The example scenarios, to mutate.
fn examples() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut texts = Vec::new();
    for dir in [root.clone(), root.join("papers")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                texts.push(std::fs::read_to_string(path).unwrap());
            }
        }
    }
    texts.sort();
    texts
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn any_text_is_a_quantity_or_a_refusal_that_quotes_it(text in "\\PC{0,24}") {
        for result in [parse_rate(&text).err(), parse_duration(&text).err(), parse_size(&text).err()].into_iter().flatten() {
            prop_assert!(result.contains(&format!("\"{text}\"")), "{result}");
        }
    }

    #[test]
    fn floats_as_rust_writes_them_round_trip(x in 1e-6f64..1e6) {
        for text in [format!("{x}"), format!("{x:e}"), format!("{x:E}")] {
            let d = parse_duration(&format!("{text}s")).unwrap();
            prop_assert!((d.as_secs_f64() - x).abs() <= 1e-9 + x * 1e-12, "{text}: {d}");
            let r = parse_rate(&format!("{text}Mbps")).unwrap();
            prop_assert!((r.bps_f64() - (x * 1e6).round().max(0.0)).abs() <= 1.0, "{text}: {}", r.bps_f64());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// An example with one line deleted, duplicated or with a value replaced: refused with the
    /// field named, or accepted — never a panic.
    #[test]
    fn mutated_examples_are_refused_or_accepted(pick in any::<prop::sample::Index>(), line in any::<prop::sample::Index>(), what in 0u8..4, value in prop_oneof![Just("0".to_string()), Just("-1".to_string()), Just("1e300".to_string()), Just("\"\"".to_string()), Just("\"1e+03Mbps\"".to_string()), Just("nan".to_string()), Just("[]".to_string()), Just("{}".to_string())]) {
        let texts = examples();
        let text = pick.get(&texts);
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let i = line.index(lines.len());
        match what {
            0 => { lines.remove(i); }
            1 => { let l = lines[i].clone(); lines.insert(i, l); }
            _ => {
                if let Some(eq) = lines[i].find(" = ") {
                    lines[i] = format!("{} = {value}", &lines[i][..eq]);
                }
            }
        }
        let mutated = lines.join("\n");
        // A document that does not parse may be refused as a whole; every later check names
        // its field (as the `scenario_toml` fuzz target asserts).
        match scenario::from_toml(&mutated) {
            Err(e) => prop_assert!(!e.message.is_empty()),
            Ok(s) => if let Err(e) = scenario::resolve(&s) {
                prop_assert!(!e.message.is_empty() && !e.path.is_empty(), "{e}\n{mutated}");
            }
        }
    }
}
