//! The built object against what the Rust side assumes of it: the event layout, where the
//! configuration lands, the refusals by field, and that every algorithm of the simulator has a
//! port taking every one of its parameters.

use serde_json::json;
use startlab_bpf::btf::Type;
use startlab_bpf::events::{Event, EVENT_BYTES};
use startlab_bpf::{ControllerSpec, Controllers};
use startlab_core::cc::bpf::SimulatorCatalogue;
use startlab_core::cc::registry::{algorithms, Role, WITHOUT_PORT};

fn object() -> &'static Controllers {
    Controllers::built()
        .expect("the eBPF object is built (clang and libbpf-dev are installed by make setup)")
}

fn spec(
    cc: &str,
    cc_params: serde_json::Value,
    startup: &str,
    startup_params: Option<serde_json::Value>,
) -> ControllerSpec {
    ControllerSpec {
        cc: cc.into(),
        cc_params,
        startup: startup.into(),
        startup_params,
        pacing: "none".into(),
        initial_ssthresh: None,
        initial_window: 10,
    }
}

/// Member `path` (dot-separated) of the `config` variable: its offset in .rodata and size.
fn config_member(c: &Controllers, path: &str) -> (usize, usize) {
    let (mut ty, mut at) = c.btf.variable(".rodata", "config").unwrap();
    for name in path.split('.') {
        let m = c
            .btf
            .members(ty)
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone();
        at += m.bit_offset / 8;
        ty = m.ty;
    }
    (at as usize, c.btf.size_of(ty).unwrap() as usize)
}

fn read(image: &[u8], (at, size): (usize, usize)) -> u64 {
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(&image[at..at + size]);
    u64::from_le_bytes(b)
}

#[test]
fn the_event_record_is_laid_out_as_the_decoder_reads_it() {
    let c = object();
    let Some(Type::Struct { size, members, .. }) = c.btf.named("event") else {
        panic!("no struct event")
    };
    assert_eq!(*size as usize, EVENT_BYTES);
    let offsets: Vec<(&str, u32)> = members
        .iter()
        .map(|m| (m.name.as_str(), m.bit_offset / 8))
        .collect();
    assert_eq!(
        offsets,
        [
            ("time_ns", 0),
            ("saddr", 8),
            ("daddr", 12),
            ("sport", 16),
            ("dport", 18),
            ("kind", 20),
            ("phase", 24),
            ("ssthresh", 28),
            ("cwnd_q16", 32),
            ("reason", 40)
        ]
    );
    // A record as the program writes it: 198.18.0.1:20000 -> 198.18.4.1:5001, cwnd 12.5.
    let mut b = vec![0u8; EVENT_BYTES];
    b[0..8].copy_from_slice(&7_000u64.to_le_bytes());
    b[8..12].copy_from_slice(&[198, 18, 0, 1]);
    b[12..16].copy_from_slice(&[198, 18, 4, 1]);
    b[16..18].copy_from_slice(&20000u16.to_le_bytes());
    b[18..20].copy_from_slice(&5001u16.to_le_bytes());
    b[20..24].copy_from_slice(&1u32.to_le_bytes());
    b[32..40].copy_from_slice(&(12 * 65536 + 32768u64).to_le_bytes());
    b[40..44].copy_from_slice(b"loss");
    let e = Event::decode(&b).unwrap();
    assert_eq!(
        (e.saddr.to_string(), e.daddr.to_string(), e.sport, e.dport),
        ("198.18.0.1".into(), "198.18.4.1".into(), 20000, 5001)
    );
    assert_eq!(
        (e.time_ns, e.kind, e.cwnd, e.reason.as_str()),
        (7000, 1, 12.5, "loss")
    );
    assert!(Event::decode(&b[..EVENT_BYTES - 1]).is_none());
}

#[test]
fn a_spec_is_written_where_the_program_reads_it() {
    let c = object();
    let mut s = spec(
        "newreno",
        json!({"abc_limit": 2, "beta": 0.7, "counting": "rfc5681"}),
        "slow-start",
        Some(json!({"abc_limit": 3})),
    );
    s.initial_ssthresh = Some(64);
    s.pacing = "initial-spreading".into();
    let image = c.configure(&s, &SimulatorCatalogue).unwrap();
    let enum_value = |e: &str, v: &str| c.btf.enum_value(e, &format!("{e}__{v}")).unwrap() as u64;
    assert_eq!(
        read(&image, config_member(c, "cc")),
        enum_value("startlab_config__cc", "newreno")
    );
    assert_eq!(
        read(&image, config_member(c, "startup")),
        enum_value("startlab_config__startup", "slow_start")
    );
    assert_eq!(
        read(&image, config_member(c, "pacing")),
        enum_value("startlab_config__pacing", "initial_spreading")
    );
    assert_eq!(read(&image, config_member(c, "initial_ssthresh")), 64);
    assert_eq!(read(&image, config_member(c, "initial_window")), 10);
    assert_eq!(read(&image, config_member(c, "newreno.abc_limit")), 2);
    // 0.7 in Q32.32: round(0.7 x 2^32).
    assert_eq!(
        read(&image, config_member(c, "newreno.beta")),
        3_006_477_107
    );
    assert_eq!(read(&image, config_member(c, "slow_start.abc_limit")), 3);
    // The other algorithms' members stay as compiled (zero).
    assert_eq!(read(&image, config_member(c, "reno.beta")), 0);
    // Nothing outside `config` changes.
    let (base, size) = {
        let (ty, at) = c.btf.variable(".rodata", "config").unwrap();
        (at as usize, c.btf.size_of(ty).unwrap() as usize)
    };
    assert_eq!(image.len(), c.rodata.len());
    assert_eq!(image[..base], c.rodata[..base]);
    assert_eq!(image[base + size..], c.rodata[base + size..]);
}

#[test]
fn what_the_object_cannot_run_is_refused_by_field() {
    let c = object();
    let reno = json!({"abc_limit": 0, "beta": 0.5, "counting": "rfc5681"});
    let e = c
        .configure(
            &spec(
                "newreno",
                json!({"abc_limit": 0, "beta": 0.5, "counting": "rfc5681", "gain": 2}),
                "default",
                None,
            ),
            &SimulatorCatalogue,
        )
        .unwrap_err();
    assert_eq!(e.field, "cc_params.gain");
    // BBRv3's port has mainline Linux's signals only: v3's are refused by field.
    let bbr3 = |signals: &str| {
        let mut p = serde_json::Map::new();
        for a in algorithms().iter().filter(|a| a.name == "bbr3") {
            for q in &a.params {
                p.insert(
                    q.name.to_string(),
                    serde_json::from_str(&q.default).unwrap(),
                );
            }
        }
        p.insert("signals".into(), signals.into());
        c.configure(
            &spec("bbr3", p.into(), "default", None),
            &SimulatorCatalogue,
        )
    };
    assert!(bbr3("mainline").is_ok());
    let e = bbr3("v3").unwrap_err();
    assert_eq!(e.field, "cc_params.signals");
    assert!(e.message.contains("\"v3\""), "{e}");
    let e = c
        .configure(
            &spec(
                "newreno",
                json!({"abc_limit": 1.5, "beta": 0.5, "counting": "rfc5681"}),
                "default",
                None,
            ),
            &SimulatorCatalogue,
        )
        .unwrap_err();
    assert_eq!(e.field, "cc_params.abc_limit");
    assert!(e.message.contains("1.5"), "{e}");
    let e = c
        .configure(
            &spec(
                "newreno",
                json!({"abc_limit": 0, "beta": "half", "counting": "rfc5681"}),
                "default",
                None,
            ),
            &SimulatorCatalogue,
        )
        .unwrap_err();
    assert_eq!(e.field, "cc_params.beta");
    let e = c
        .configure(
            &spec("no-such-cc", reno.clone(), "default", None),
            &SimulatorCatalogue,
        )
        .unwrap_err();
    assert_eq!(e.field, "cc");
    assert!(
        e.message.contains("\"no-such-cc\" has no eBPF port") && e.message.contains("\"newreno\""),
        "{e}"
    );
    let e = c
        .configure(
            &spec("newreno", reno.clone(), "no-such-startup", Some(json!({}))),
            &SimulatorCatalogue,
        )
        .unwrap_err();
    assert_eq!(e.field, "startup");
    let mut s = spec("newreno", reno, "default", None);
    s.pacing = "fq".into();
    assert_eq!(
        c.configure(&s, &SimulatorCatalogue).unwrap_err().field,
        "tcp.pacing"
    );
}

/// Every congestion control and start-up algorithm of the simulator has a port, which takes
/// every one of its parameters at their defaults, but those `registry::WITHOUT_PORT` names.
#[test]
fn every_algorithm_of_the_simulator_has_a_port_taking_all_its_parameters() {
    let c = object();
    let reno = json!({"abc_limit": 0, "beta": 0.5, "counting": "rfc5681"});
    let mut missing = Vec::new();
    for a in algorithms() {
        let mut defaults: serde_json::Map<String, serde_json::Value> = a
            .params
            .iter()
            .map(|p| {
                (
                    p.name.to_string(),
                    serde_json::from_str(&p.default).unwrap(),
                )
            })
            .collect();
        // BBRv3's port has mainline Linux's signals only (cc::bbr3::Signals).
        if a.name == "bbr3" {
            defaults.insert("signals".into(), "mainline".into());
        }
        // SUSS's port has what a tcp_congestion_ops can do only (cc::suss::Hooks).
        if a.name == "suss" {
            defaults.insert("hooks".into(), "struct-ops".into());
        }
        let s = match a.role {
            Role::Cc => spec(a.name, defaults.into(), "default", None),
            Role::Startup => spec("newreno", reno.clone(), a.name, Some(defaults.into())),
            _ => continue,
        };
        let listed = WITHOUT_PORT.iter().any(|(name, _)| *name == a.name);
        match c.configure(&s, &SimulatorCatalogue) {
            Err(e) if !listed => missing.push(format!("{} ({e})", a.name)),
            Ok(_) if listed => missing.push(format!("{}: has a port, yet is listed", a.name)),
            _ => {}
        }
    }
    assert!(
        missing.is_empty(),
        "without a working port: {}",
        missing.join("; ")
    );
}
