//! A flow's controller as a type: which algorithm runs, resolved once when the scenario is
//! resolved, and the factory of one controller per connection.
//!
//! A scenario's `cc` names one of three things ([`Algorithm`]): a Rust model (`"cubic"`),
//! startlab's eBPF port of one (`"bpf:cubic"`), or a user's eBPF object (`{ bpf = "FILE.o" }`,
//! written `"bpf:FILE.o"`). The text is read here, once; every later stage (the simulator, the
//! kernel world) matches on the type.

use super::bpf::{self, BpfFactory, Differences, Shadow, PREFIX};
use super::registry::{BuildError, Model, Params};
use super::CongestionControl;
use std::sync::{Arc, Mutex};

/// What a flow's `cc` names, checked and ready to build.
#[derive(Clone, Debug)]
pub enum Algorithm {
    /// One of the simulator's Rust models, with its start-up algorithm.
    Model(Model),
    /// startlab's eBPF port of the Rust model `name` (`cc = "bpf:NAME"`), run by the
    /// simulator's VM.
    Port { model: Model, object: BpfFactory },
    /// A user's eBPF object (`cc = { bpf = "FILE.o" }`), loaded once.
    UserObject { path: String, object: BpfFactory },
}

/// A flow's controller, checked once when the scenario is resolved and built for every
/// connection of the flow.
#[derive(Clone, Debug)]
pub struct ControllerFactory {
    algorithm: Algorithm,
    /// `cc` as written back: the model's name, `bpf:NAME` or `bpf:FILE.o`.
    cc: String,
    startup: String,
    cc_params: Params,
    startup_params: Params,
    /// For a differential run: the port compared with the model, and the log (see `shadowed`).
    shadow: Option<(BpfFactory, Arc<Mutex<Differences>>)>,
}

/// `object` for one run: sharing the state of the run's registration with the same object and
/// data, or the first of them (added to `registered`).
fn register(object: &BpfFactory, registered: &mut Vec<BpfFactory>) -> BpfFactory {
    match registered.iter().find(|r| r.same_registration(object)) {
        Some(r) => object.sharing_with(r),
        None => {
            let fresh = object.for_run();
            registered.push(fresh.clone());
            fresh
        }
    }
}

impl ControllerFactory {
    /// The factory for one run: an eBPF object's connections share its globals and maps in
    /// the run, starting from the object's initial values, as in the kernel, where one
    /// registration serves every flow entry with the same object and data. `registered` holds
    /// the run's objects so far.
    /// A differential run's port is registered the same way, so that Careful Resume's saved
    /// state reaches the port of a later flow entry, as it reaches its model.
    pub fn for_run(&self, registered: &mut Vec<BpfFactory>) -> ControllerFactory {
        let mut f = self.clone();
        match &mut f.algorithm {
            Algorithm::Port { object, .. } | Algorithm::UserObject { object, .. } => {
                *object = register(object, registered);
            }
            Algorithm::Model(_) => {}
        }
        if let Some((port, _)) = &mut f.shadow {
            *port = register(port, registered);
        }
        f
    }

    /// A new controller for one connection.
    pub fn build(&self) -> Box<dyn CongestionControl> {
        match &self.algorithm {
            Algorithm::Port { object, .. } | Algorithm::UserObject { object, .. } => object.build(),
            Algorithm::Model(model) => match &self.shadow {
                Some((port, log)) => {
                    Box::new(Shadow::new(model.build(), port.controller(), log.clone()))
                }
                None => model.build(),
            },
        }
    }

    pub fn algorithm(&self) -> &Algorithm {
        &self.algorithm
    }

    pub fn cc(&self) -> &str {
        &self.cc
    }

    pub fn startup(&self) -> &str {
        &self.startup
    }

    /// The controller's parameters as given (with the stack's defaults).
    pub fn cc_params(&self) -> &Params {
        &self.cc_params
    }

    /// The start-up algorithm's parameters as given.
    pub fn startup_params(&self) -> &Params {
        &self.startup_params
    }

    /// Every parameter of the controller and of the start-up algorithm (`None` for the
    /// controller's own), with the values they run with, by name: what the kernel world hands
    /// to its eBPF controllers. A user's object has its parameters as given.
    pub fn resolved_params(&self) -> (serde_json::Value, Option<serde_json::Value>) {
        let resolved = match &self.algorithm {
            Algorithm::Model(model) | Algorithm::Port { model, .. } => model.resolved_params(),
            Algorithm::UserObject { .. } => {
                return (self.cc_params.clone().into_iter().collect(), None)
            }
        };
        // The parameters were checked when the model was.
        resolved.unwrap_or_default()
    }

    /// The loss recovery the controller uses by default (`recovery = "auto"` without SACK).
    pub fn default_recovery(&self) -> &'static str {
        match &self.algorithm {
            Algorithm::Model(model) | Algorithm::Port { model, .. } => model.default_recovery(),
            Algorithm::UserObject { path, .. } => super::registry::default_recovery(path),
        }
    }

    /// The same flow with every connection running the Rust model and startlab's eBPF port of
    /// it side by side (`cc::bpf::Shadow`): the model drives, the port is compared after every
    /// hook, and what was found accumulates in the returned log.
    pub fn shadowed(&self) -> Result<(ControllerFactory, Arc<Mutex<Differences>>), BuildError> {
        let port = match &self.algorithm {
            Algorithm::Model(model) => bpf::port_factory(model)?,
            _ => bpf::factory(
                &format!("{PREFIX}{}", self.cc),
                &self.cc_params,
                &self.startup,
                &self.startup_params,
            )?,
        };
        let log = Arc::new(Mutex::new(Differences::default()));
        let mut f = self.clone();
        f.shadow = Some((port, log.clone()));
        Ok((f, log))
    }

    /// Whether the controller is an eBPF object run by the simulator's VM (`cc = "bpf:…"`).
    pub fn is_bpf(&self) -> bool {
        !matches!(self.algorithm, Algorithm::Model(_))
    }
}

/// Checks a flow's algorithm specification and returns the factory of its controllers.
pub fn factory(
    cc: &str,
    cc_params: &Params,
    startup: &str,
    startup_params: &Params,
) -> Result<ControllerFactory, BuildError> {
    let algorithm = match cc.strip_prefix(PREFIX) {
        Some(target) if bpf::is_user_object(target) => Algorithm::UserObject {
            path: target.to_string(),
            object: bpf::factory(cc, cc_params, startup, startup_params)?,
        },
        Some(_) => {
            // The port's checks are the model's; the model is checked once.
            let model = bpf::port_model(cc, cc_params, startup, startup_params)?;
            let object = bpf::port_factory(&model)?;
            Algorithm::Port { model, object }
        }
        None => Algorithm::Model(Model::new(cc, cc_params, startup, startup_params)?),
    };
    Ok(ControllerFactory {
        algorithm,
        cc: cc.to_string(),
        cc_params: cc_params.clone(),
        startup: startup.to_string(),
        startup_params: startup_params.clone(),
        shadow: None,
    })
}
