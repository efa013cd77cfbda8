//! `[measure]`: filled in, its links found in the network, its windows checked.

use super::defaults::DEFAULT_INTERVAL;
use super::filled::{FilledMeasure, FilledTopology, Shape};
use super::model::MeasureSpecText;
use super::units::Interval;
use super::{err, ScenarioError};
use crate::measure::recorder::MeasureSpec;
use crate::net::{LinkId, Network};
use crate::time::{Duration, Time};

/// Fills in `m`: by default every 10 ms, both series, the bottleneck links of `topology`.
pub fn fill(
    m: &MeasureSpecText,
    topology: &FilledTopology,
    duration: Duration,
    net: &Network,
) -> Result<FilledMeasure, ScenarioError> {
    let links = m.links.clone().unwrap_or_else(|| match &topology.shape {
        Shape::Dumbbell { .. } => vec!["bottleneck".into()],
        Shape::Parallel { pairs } => (0..pairs.len()).map(|i| format!("bottleneck{i}")).collect(),
        Shape::ParkingLot { hops, .. } => (0..hops.len()).map(|h| format!("hop{h}")).collect(),
    });
    let link = |name: &str| net.find_link(name).ok_or_else(|| unknown_link(name, net));
    let ids = links
        .iter()
        .enumerate()
        .map(|(i, name)| link(name).map_err(|e| err(format!("measure.links[{i}]"), e)))
        .collect::<Result<Vec<LinkId>, _>>()?;
    let mut windows = Vec::with_capacity(m.window.len());
    for (i, w) in m.window.iter().enumerate() {
        let at = |f: &str| format!("measure.window[{i}].{f}");
        let id = link(&w.link).map_err(|e| err(at("link"), e))?;
        if w.from.0 >= w.to.0 {
            return Err(err(
                at("to"),
                format!("{} is not after from ({})", w.to.0, w.from.0),
            ));
        }
        if w.to.0 > duration {
            return Err(err(
                at("to"),
                format!("{} is after the end of the run ({})", w.to.0, duration),
            ));
        }
        windows.push((id, Time::ZERO + w.from.0, Time::ZERO + w.to.0));
    }
    let recorded = MeasureSpec {
        interval: match m.interval.unwrap_or(Interval::Every(DEFAULT_INTERVAL)) {
            Interval::Every(d) => Some(d),
            Interval::Event => None,
        },
        flow_series: m.flow_series.unwrap_or(true),
        queue_series: m.queue_series.unwrap_or(true),
        links: ids,
        windows,
    };
    Ok(FilledMeasure {
        links,
        window: m.window.clone(),
        recorded,
    })
}

fn unknown_link(name: &str, net: &Network) -> String {
    let mut names: Vec<&str> = net
        .link_aliases
        .iter()
        .filter(|a| !a.is_empty())
        .map(|a| a.as_str())
        .collect();
    names.extend(net.link_names.iter().take(6).map(|n| n.as_str()));
    format!(
        "unknown link \"{name}\"; links are named like {}, …",
        names.join(", ")
    )
}
