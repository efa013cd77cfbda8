//! A namespace's TCP counters (`/proc/net/netstat`, what `nstat` shows), read from inside it.

use crate::sampler::Sampler;
use crate::series::{CounterReading, HystartCounts};
use crate::traffic::{enter, monotonic_ns, Host};
use std::collections::BTreeMap;
use std::io;

/// `/proc/net/netstat` as `"TcpExt.TCPHystartTrainDetect" -> value`: each group is a line of
/// names and a line of values with the same prefix.
pub fn parse_netstat(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        let [names, values] = pair else { continue };
        let (Some((group, names)), Some((group2, values))) =
            (names.split_once(':'), values.split_once(':'))
        else {
            continue;
        };
        if group != group2 {
            continue;
        }
        for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
            if let Ok(v) = value.parse() {
                out.insert(format!("{group}.{name}"), v);
            }
        }
    }
    out
}

/// The counters of `host`'s namespace (read by a thread that enters it).
pub fn netstat(host: &Host) -> io::Result<BTreeMap<String, u64>> {
    let host = host.clone();
    std::thread::spawn(move || -> io::Result<BTreeMap<String, u64>> {
        enter(&host)?;
        // thread-self: this thread's namespace, not the process's.
        let text = std::fs::read_to_string("/proc/thread-self/net/netstat")?;
        Ok(parse_netstat(&text))
    })
    .join()
    .unwrap_or_else(|_| Err(io::Error::other("the counter thread panicked")))
}

/// HyStart's detections between two readings of a namespace's counters.
pub fn hystart_between(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> HystartCounts {
    let (before, after) = (hystart_counts(before), hystart_counts(after));
    HystartCounts {
        train: after.train.saturating_sub(before.train),
        delay: after.delay.saturating_sub(before.delay),
    }
}

/// HyStart's counters in a map of `/proc/net/netstat`.
fn hystart_counts(m: &BTreeMap<String, u64>) -> HystartCounts {
    let get = |k: &str| m.get(k).copied().unwrap_or(0);
    HystartCounts {
        train: get("TcpExt.TCPHystartTrainDetect"),
        delay: get("TcpExt.TCPHystartDelayDetect"),
    }
}

/// Reads a namespace's HyStart counters every `period_ns` through the run: a namespace several
/// flows share counts all their detections together, and the readings around one flow's exit
/// tell its detector (`series::HystartEvidence::Readings`). A reading costs one read of
/// `/proc/thread-self/net/netstat` (tens of microseconds).
pub fn sample_hystart(host: &Host, period_ns: u64) -> Sampler<CounterReading> {
    Sampler::start(
        host,
        period_ns,
        || Ok(()),
        |_, readings| {
            let from_ns = monotonic_ns();
            // thread-self: the sampling thread's namespace, not the process's.
            let text = std::fs::read_to_string("/proc/thread-self/net/netstat")?;
            readings.push(CounterReading {
                from_ns,
                to_ns: monotonic_ns(),
                counts: hystart_counts(&parse_netstat(&text)),
            });
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netstat_groups_are_read_name_by_value() {
        let text = "TcpExt: SyncookiesSent TCPHystartTrainDetect TCPHystartDelayDetect\nTcpExt: 0 3 1\nIpExt: InNoRoutes\nIpExt: 7\n";
        let m = parse_netstat(text);
        assert_eq!(m["TcpExt.TCPHystartTrainDetect"], 3);
        assert_eq!(m["IpExt.InNoRoutes"], 7);
        let later =
            parse_netstat("TcpExt: TCPHystartTrainDetect TCPHystartDelayDetect\nTcpExt: 5 1\n");
        assert_eq!(
            hystart_between(&m, &later),
            HystartCounts { train: 2, delay: 0 }
        );
    }
}
