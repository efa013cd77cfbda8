//! Scenarios, in stages:
//!
//! 1. **parsing** ([`parse`]: [`from_toml`], [`from_json`]) into the text model ([`model`]),
//!    where every field a user may leave out is optional;
//! 2. **filling and checking** ([`defaults`], [`check`]; per part [`topology`], [`flows`],
//!    [`measure`]) into a [`FilledScenario`]: every default in place, every value checked, every
//!    `BDP` in packets, in plain values; the network is built once on the way, with the run's
//!    seed, since the flows and the measurements are checked against it;
//! 3. **resolution** ([`resolve`]): a [`ResolvedScenario`] with nothing optional — hosts and
//!    links, each flow with its endpoints, TCP settings and controller factory, what to
//!    measure, and the filled document written back as text;
//! 4. **running** ([`build`]): the simulation of a resolved scenario.
//!
//! Every world runs a [`ResolvedScenario`]. Errors name the field as a dotted path
//! (`flows[0].cc`), the value, and what is allowed.

mod build;
pub mod check;
pub mod defaults;
pub mod filled;
pub mod flows;
pub mod guards;
pub mod measure;
pub mod model;
pub mod parse;
pub mod resolved;
pub mod schedule;
pub mod topology;
pub mod units;

pub use build::{build, run_json};
pub use filled::FilledScenario;
pub use flows::tcp_config;
pub use model::*;
pub use parse::{from_json, from_toml};
pub use resolved::{
    Bdp, Connection, Description, FlowDescription, FlowPlan, LinkDescription, ResolvedScenario,
    Traffic, UdpPlan,
};

use defaults::{document_tcp, DEFAULT_NAME, DEFAULT_SEED};
use std::fmt;

/// A problem with a scenario: where (a dotted path, empty for the whole document) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

fn err(path: impl Into<String>, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        path: path.into(),
        message: message.into(),
    }
}

/// Checks `s`, fills in every default, builds its network and returns it ready to run.
pub fn resolve(s: &Scenario) -> Result<ResolvedScenario, ScenarioError> {
    let name = s.name.clone().unwrap_or_else(|| DEFAULT_NAME.into());
    let seed = s.seed.unwrap_or(DEFAULT_SEED);
    let duration = s.duration.0;
    if duration.is_zero() {
        return Err(err("duration", "must be longer than 0s"));
    }
    let tcp = document_tcp(&s.tcp);
    check::tcp(&tcp, "tcp")?;
    let (topology, bdp) = topology::fill(&s.topology, &tcp)?;
    // Built once, with the run's seed: the flows are checked against it and the run uses it.
    let network = topology::build(&topology, seed);
    if s.flows.is_empty() {
        return Err(err("flows", "at least one flow is required"));
    }
    let flows = s
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| flows::fill(f, i, &topology, &tcp, duration, &network))
        .collect::<Result<Vec<_>, _>>()?;
    let measure = measure::fill(&s.measure, &topology, duration, &network)?;
    let filled = FilledScenario {
        name,
        seed,
        duration,
        topology,
        tcp,
        flows,
        measure,
    };
    check::run_size(&filled, &network)?;
    let mut resolved = ResolvedScenario {
        document: filled.document(),
        flows: filled
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| flows::plan(i, f))
            .collect(),
        measure: filled.measure.recorded.clone(),
        name: filled.name,
        seed,
        duration,
        network,
        bdp,
        warnings: Vec::new(),
    };
    resolved.warnings = guards::warnings(&resolved);
    Ok(resolved)
}
