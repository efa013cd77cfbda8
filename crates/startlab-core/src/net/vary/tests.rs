use super::*;
use std::io::Write;

fn ms(x: u64) -> Time {
    Time::from_nanos(x * 1_000_000)
}

fn us(x: u64) -> Time {
    Time::from_nanos(x * 1_000)
}

fn steps<T: Level>(s: &[(u64, T)], period_ms: Option<u64>) -> Schedule<T> {
    Schedule::Steps {
        steps: s
            .iter()
            .map(|&(at, v)| (Duration::from_millis(at), v))
            .collect::<Vec<_>>()
            .into(),
        period: period_ms.map(Duration::from_millis),
    }
}

/// A file with `text`, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("startlab-vary-{}-{name}", std::process::id()));
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .expect("a temporary file");
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn rng() -> Rng {
    Rng::stream(1, 1)
}

#[test]
fn steps_repeat_with_their_period() {
    let s = steps(&[(0, 10.0), (5, 20.0)], Some(8));
    let mut c = s.cursor(&rng());
    let at = |c: &mut Cursor<f64>, t| c.at(ms(t));
    assert_eq!(at(&mut c, 0), 10.0);
    assert_eq!(at(&mut c, 4), 10.0);
    assert_eq!(at(&mut c, 5), 20.0);
    assert_eq!(at(&mut c, 7), 20.0);
    // The second period: 10 from 8 ms, 20 from 13 ms.
    assert_eq!(at(&mut c, 8), 10.0);
    assert_eq!(at(&mut c, 12), 10.0);
    assert_eq!(at(&mut c, 13), 20.0);
    assert_eq!(c.segment(ms(14)), (20.0, Some(ms(16))));
}

#[test]
fn steps_without_a_period_keep_their_last_value() {
    let mut c = steps(&[(0, 1.0), (3, 2.0)], None).cursor(&rng());
    assert_eq!(c.segment(ms(1)), (1.0, Some(ms(3))));
    assert_eq!(c.segment(ms(1_000_000)), (2.0, None));
}

fn rates(s: &[(u64, u64)]) -> Schedule<Rate> {
    steps(
        &s.iter()
            .map(|&(at, mbps)| (at, Rate::from_mbps(mbps)))
            .collect::<Vec<_>>(),
        None,
    )
}

#[test]
fn a_packet_in_service_finishes_its_remaining_bits_at_the_new_rate() {
    // 1000 B at 8 Mbit/s take 1 ms. The rate doubles at 0.5 ms: 500 B are sent by then, the
    // other 500 B take 0.25 ms at 16 Mbit/s, so the packet ends at 0.75 ms.
    let s = Schedule::Steps {
        steps: vec![
            (Duration::ZERO, Rate::from_mbps(8)),
            (Duration::from_micros(500), Rate::from_mbps(16)),
        ]
        .into(),
        period: None,
    };
    let mut c = s.cursor(&rng());
    assert_eq!(fluid_finish(&mut c, Time::ZERO, 1000), us(750));
    // The next packet, all at 16 Mbit/s: 0.5 ms.
    assert_eq!(fluid_finish(&mut c, us(750), 1000), us(1250));
}

#[test]
fn an_outage_holds_the_packet_in_service() {
    // 8 Mbit/s, nothing from 0.5 ms to 2 ms, then 8 Mbit/s again: the second half of a 1 ms
    // packet is sent from 2 ms to 2.5 ms.
    let s = Schedule::Steps {
        steps: vec![
            (Duration::ZERO, Rate::from_mbps(8)),
            (Duration::from_micros(500), Rate::from_bps(0)),
            (Duration::from_millis(2), Rate::from_mbps(8)),
        ]
        .into(),
        period: None,
    };
    let mut c = s.cursor(&rng());
    assert_eq!(fluid_finish(&mut c, Time::ZERO, 1000), us(2500));
    // A rate that falls to 0 for ever never finishes.
    let mut dead = rates(&[(0, 8), (1, 0)]).cursor(&rng());
    assert_eq!(fluid_finish(&mut dead, us(500), 1000), Time::MAX);
}

#[test]
fn one_step_is_a_constant_link() {
    let r = Rate::from_bps(1_500_000);
    let mut c = Schedule::constant(r).cursor(&rng());
    assert_eq!(
        fluid_finish(&mut c, ms(3), 1000),
        ms(3) + r.transmit_time(1000)
    );
}

#[test]
fn the_offered_capacity_integrates_the_schedule() {
    // 8 Mbit/s for 1 ms (1000 B), 16 Mbit/s after (2000 B per ms).
    let s = rates(&[(0, 8), (1, 16)]);
    let mut c = s.cursor(&rng());
    let mut i = Integral {
        at: Time::ZERO,
        bits_ns: 0,
    };
    assert_eq!(i.advance(&mut c, us(500)), 500.0);
    assert_eq!(i.advance(&mut c, ms(3)), 5000.0);
}

#[test]
fn a_walk_stays_within_its_bounds_and_repeats_with_its_seed() {
    let w: Schedule<f64> = Schedule::Walk {
        start: 5.0,
        min: 0.0,
        max: 10.0,
        step: 4.0,
        every: Duration::from_millis(1),
    };
    let values = |seed| {
        let mut c = w.cursor(&Rng::stream(seed, 0));
        (0..2000).map(|t| c.at(ms(t))).collect::<Vec<_>>()
    };
    let a = values(1);
    assert_eq!(a, values(1));
    assert_ne!(a, values(2));
    assert!(a.iter().all(|&x| (0.0..=10.0).contains(&x)));
    assert_eq!(a[0], 5.0);
    // It moves every step, by at most `step`.
    assert!(a.windows(2).all(|p| (p[1] - p[0]).abs() <= 4.0 + 1e-12));
    assert!(a.windows(2).filter(|p| p[0] != p[1]).count() > 1900);
    // Over 2000 steps it visits both ends of its range.
    assert!(a.iter().any(|&x| x < 1.0) && a.iter().any(|&x| x > 9.0));
}

/// A Mahimahi-served packet: (first opportunity used, the one that completes it).
fn serve(v: &mut Varying, ready: Time, bytes: u32) -> (Time, Time) {
    v.serve(ready, Time::ZERO, bytes, Rate::from_mbps(1))
}

fn trace(text: &str, name: &str, repeat: bool) -> (TempFile, Varying) {
    let f = TempFile::new(name, text);
    let v = Variation {
        capacity: Some(Capacity::Trace {
            path: Arc::new(f.0.clone()),
            repeat,
        }),
        ..Variation::default()
    };
    let varying = Varying::new(&v, rng());
    (f, varying)
}

#[test]
fn a_trace_serves_packets_as_mahimahi_does() {
    // Two opportunities at 1 ms, one at 3 ms; the trace repeats every 3 ms (so the next ones
    // are at 4, 4 and 6 ms).
    let (_f, mut v) = trace("1\n1\n3\n", "mm", true);
    // Queued at 0: the first opportunity at 1 ms carries its 1500 bytes; 4 are left.
    assert_eq!(serve(&mut v, Time::ZERO, 1500), (ms(1), ms(1)));
    // Queued at 0.5 ms, before the opportunity: the 4 bytes left, then 1496 of the second
    // opportunity at 1 ms.
    assert_eq!(serve(&mut v, us(500), 1500), (ms(1), ms(1)));
    // Arriving in the millisecond of an opportunity, it cannot use it (Mahimahi burns it
    // before enqueueing): the one at 3 ms.
    assert_eq!(serve(&mut v, ms(1), 100), (ms(3), ms(3)));
    // A packet larger than what is left spans opportunities: 1404 bytes left at 3 ms, then
    // the first of the repeated trace at 4 ms.
    assert_eq!(serve(&mut v, us(2_900), 1500), (ms(3), ms(4)));
    // Arriving at 5 ms after an idle spell: the second opportunity at 4 ms went unused;
    // the next is at 6 ms.
    assert_eq!(serve(&mut v, ms(5), 1000), (ms(6), ms(6)));
}

#[test]
fn a_trace_played_once_ends() {
    let (_f, mut v) = trace("2\n", "once", false);
    assert_eq!(serve(&mut v, Time::ZERO, 1000), (ms(2), ms(2)));
    assert_eq!(serve(&mut v, ms(1), 1000).1, Time::MAX);
}

#[test]
fn a_trace_of_one_opportunity_per_millisecond_delivers_one_packet_per_millisecond() {
    // 12.032 Mbit/s: a queue that never empties sends one 1504-byte packet per opportunity,
    // and the capacity offered is 1504 bytes per millisecond.
    let (_f, mut v) = trace("1\n", "each-ms", true);
    for k in 1..=1000u64 {
        assert_eq!(serve(&mut v, Time::ZERO, 1504), (ms(k), ms(k)));
    }
    assert_eq!(v.offered_bytes(ms(1000)), Some(1504.0 * 1000.0));
    assert_eq!(
        v.offered_bytes(ms(1000) + Duration::from_micros(999)),
        Some(1504.0 * 1000.0)
    );
    // Over the last 100 ms: 100 opportunities of 1504 B.
    assert_eq!(
        v.rate_at(ms(1000), Rate::from_bps(1)),
        Rate::from_bps(100 * 1504 * 8 * 10)
    );
}

#[test]
fn malformed_traces_are_refused_with_their_line() {
    let cases = [
        ("1\n2\nx\n", 3, "invalid timestamp"),
        ("1\n\n2\n", 2, "empty line"),
        ("5\n3\n", 2, "never decrease"),
        ("", 0, "no timestamps"),
        ("0\n0\n", 0, "lasts 0 ms"),
    ];
    for (i, (text, line, what)) in cases.into_iter().enumerate() {
        let f = TempFile::new(&format!("bad{i}"), text);
        let e = check_trace(&f.0).expect_err(text);
        assert_eq!(e.line, line, "{text:?}: {e:?}");
        assert!(e.message.contains(what), "{text:?}: {e:?}");
    }
    let f = TempFile::new("good", "0\n1\n1\n7\n");
    assert_eq!(check_trace(&f.0), Ok((4, 7)));
}

#[test]
fn csv_steps_are_streamed_and_checked() {
    let f = TempFile::new("csv", "# time,rate\n0s,10Mbps\n1.5s,0bps\n2s,20Mbps\n");
    assert_eq!(
        check_csv::<Rate>(&f.0, Some(Duration::from_secs(3)), |_| Ok(())),
        Ok((3, Rate::from_mbps(10)))
    );
    let s: Schedule<Rate> = Schedule::Csv {
        path: Arc::new(f.0.clone()),
        period: Some(Duration::from_secs(3)),
        first: Rate::from_mbps(10),
    };
    let mut c = s.cursor(&rng());
    assert_eq!(c.segment(ms(1000)), (Rate::from_mbps(10), Some(ms(1500))));
    assert_eq!(c.at(ms(1600)), Rate::from_bps(0));
    assert_eq!(c.segment(ms(2500)), (Rate::from_mbps(20), Some(ms(3000))));
    assert_eq!(c.at(ms(3000)), Rate::from_mbps(10));
    assert_eq!(c.at(ms(4600)), Rate::from_bps(0));
    for (text, line) in [
        ("0s,10Mbps\n1s\n", 2),
        ("0s,10Mbps\n1s,fast\n", 2),
        ("1s,10Mbps\n", 1),
        ("0s,1Mbps\n2s,1Mbps\n1s,1Mbps\n", 3),
        ("0s,1Mbps\n4s,1Mbps\n", 2), // not before the period
    ] {
        let f = TempFile::new("csvbad", text);
        let e = check_csv::<Rate>(&f.0, Some(Duration::from_secs(3)), |_| Ok(())).expect_err(text);
        assert_eq!(e.line, line, "{text:?}: {e:?}");
    }
    // A value outside the field's range is refused at its line, with the range's own words.
    let f = TempFile::new("csvrange", "0s,10Mbps\n1s,20Mbps\n2s,90Mbps\n");
    let at_most_50 = |r: Rate| {
        (r <= Rate::from_mbps(50))
            .then_some(())
            .ok_or_else(|| format!("invalid rate {r}: at most 50Mbps"))
    };
    let e = check_csv::<Rate>(&f.0, None, at_most_50).expect_err("90 Mbit/s");
    assert_eq!(e.line, 3);
    assert_eq!(e.message, "value: invalid rate 90Mbps: at most 50Mbps");
}

#[test]
fn gilbert_elliott_loses_in_bursts_at_its_mean_rate() {
    // p = 0.01, r = 0.25, everything lost in Bad and nothing in Good: π_B = 0.01 / 0.26,
    // and bursts last 1 / r = 4 packets on average.
    let g = GilbertElliott {
        p: 0.01,
        r: 0.25,
        loss_good: 0.0,
        loss_bad: 1.0,
    };
    let mut rng = Rng::stream(7, 7);
    let mut bad = false;
    let n = 2_000_000;
    let (mut lost, mut bursts, mut prev) = (0u64, 0u64, false);
    for _ in 0..n {
        let l = g.step(&mut bad, &mut rng);
        lost += l as u64;
        bursts += (l && !prev) as u64;
        prev = l;
    }
    let rate = lost as f64 / n as f64;
    assert!((rate / g.mean_loss() - 1.0).abs() < 0.03, "{rate}");
    let mean_burst = lost as f64 / bursts as f64;
    assert!((mean_burst / 4.0 - 1.0).abs() < 0.03, "{mean_burst}");
}
