//! A namespace's TCP counters (`/proc/net/netstat`, what `nstat` shows), read from inside it.

use crate::series::HystartCounts;
use crate::traffic::{enter, Host};
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
    let delta = |k: &str| {
        after
            .get(k)
            .copied()
            .unwrap_or(0)
            .saturating_sub(before.get(k).copied().unwrap_or(0))
    };
    HystartCounts {
        train: delta("TcpExt.TCPHystartTrainDetect"),
        delay: delta("TcpExt.TCPHystartDelayDetect"),
    }
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
