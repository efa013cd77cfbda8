//! eBPF congestion controls in the simulator: the same compiled object the kernel world loads,
//! run by the virtual machine of crate startlab-bpf, its hooks called where the simulator's
//! sender calls those of every controller (which are Linux's `tcp_congestion_ops` hooks,
//! mod.rs), with a `tcp_sock` filled from the sender's state before each call and what the
//! program may write read back after it.
//!
//! Two kinds: `cc = "bpf:NAME"` is startlab's own object (crates/startlab-bpf/bpf) configured
//! for the simulator's algorithm NAME (and `startup`), with the parameters of the Rust model;
//! `cc = { bpf = "FILE.o" }` is a user's object, each `cc_params` entry written into the
//! `.rodata` variable of the same name. docs/bpf.md says what the simulator provides.

pub mod derived;
mod modules;

use super::registry::{algorithms, BuildError, Model, Params, Role};
use super::{
    Ack, AckEvent, AckSample, CaState, CongestionControl, CwndEvent, ExitReason, Phase, Tcb,
};
use crate::time::Time;
use crate::units::Rate;
use serde_json::{Map, Value};
use startlab_bpf::config::{ExitPlace, ExitRecord};
use startlab_bpf::elf::Loaded;
use startlab_bpf::events::{Event, KIND_EXIT, KIND_PHASE};
use startlab_bpf::layout;
use startlab_bpf::vm::{
    region_base, Shared, SharedState, Vm, ACK_REGION, RATE_REGION, SOCK_REGION,
};
use startlab_bpf::{c_name, Catalogue, ConfigError, ControllerSpec, Controllers};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// The prefix of a scenario's `cc` that names an eBPF controller.
pub const PREFIX: &str = "bpf:";

/// The simulator's registry, as the eBPF configuration encoder needs it.
pub struct SimulatorCatalogue;

impl Catalogue for SimulatorCatalogue {
    fn unit(&self, cc: bool, algorithm: &str, param: &str) -> Option<String> {
        let role = if cc { Role::Cc } else { Role::Startup };
        algorithms()
            .into_iter()
            .find(|a| a.name == algorithm && a.role == role)?
            .params
            .into_iter()
            .find(|p| p.name == param)
            .map(|p| p.unit.to_string())
    }

    fn derived(
        &self,
        algorithm: &str,
        member: &str,
        params: &Map<String, Value>,
        bytes: usize,
    ) -> Result<Option<Vec<u8>>, String> {
        derived::member(algorithm, member, params, bytes)
    }

    fn simulator_name(&self, c: &str) -> String {
        algorithms()
            .into_iter()
            .map(|a| a.name)
            .find(|n| c_name(n) == c)
            .unwrap_or(c)
            .to_string()
    }
}

/// The `.rodata` image that configures startlab's object for `spec`, or why it cannot run it.
pub fn configure(spec: &ControllerSpec) -> Result<Vec<u8>, ConfigError> {
    let controllers = Controllers::built().map_err(|e| ConfigError {
        field: "cc".into(),
        message: e,
    })?;
    controllers.configure(spec, &SimulatorCatalogue)
}

/// A loaded object, shared by every connection that runs it (keyed by what was loaded: see
/// [`object_key`] for a user's).
///
/// Every caller gets the same `Arc` for a key, also when threads load it at once: flow entries
/// share a registration only if their objects are the same `Arc`
/// ([`BpfFactory::same_registration`]), so two copies would split one run's maps. The first
/// object stored wins; a copy parsed meanwhile by another thread is dropped.
fn load(key: &str, elf: &[u8], ops: Option<&str>) -> Result<Arc<Loaded>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Loaded>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(l) = cache.lock().unwrap().get(key) {
        return Ok(l.clone());
    }
    // Parsed without the lock, so that a large object does not hold up other loads.
    let parsed = Arc::new(Loaded::parse_ops(elf, ops)?);
    let mut cache = cache.lock().unwrap();
    Ok(cache.entry(key.to_string()).or_insert(parsed).clone())
}

/// The cache key of a user's object: its content (a 64-bit hash and the length), not its path,
/// so that a file rebuilt in place, even at the same length, is loaded again, and the same
/// object under two names is loaded once.
fn object_key(elf: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    elf.hash(&mut h);
    format!("content:{:016x}:{}", h.finish(), elf.len())
}

/// What a flow's eBPF controller is: the loaded object and its data sections as each
/// connection starts them.
#[derive(Clone)]
pub struct BpfFactory {
    loaded: Arc<Loaded>,
    data: Vec<Vec<u8>>,
    /// The programs specialised for `data` (startlab_bpf::vm::specialize).
    code: Arc<Vec<startlab_bpf::vm::Code>>,
    /// `bpf_jiffies64` ticks per second.
    hz: u64,
    /// A user's object as read from its file (`None` for startlab's own).
    user_elf: Option<Arc<Vec<u8>>>,
    /// The struct_ops variable loaded (`None`: the object's only one).
    struct_ops: Option<String>,
    /// The controller needs ECN: its struct_ops has `TCP_CONG_NEEDS_ECN`, or (startlab's own
    /// object, whose flags the kernel world sets per registration) its Rust model needs it.
    needs_ecn: bool,
    /// Where a user's program names its slow-start exit (`cc_params.exit_reason_global` or
    /// `exit_reason_map`).
    exit_record: Option<ExitRecord>,
    /// The global data and maps the connections built here share, as the kernel's sockets
    /// of one registered object do (fresh for each run: [`BpfFactory::for_run`]).
    shared: SharedState,
}

impl fmt::Debug for BpfFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BpfFactory({})", self.loaded.name)
    }
}

fn refuse(field: &str, message: impl Into<String>) -> BuildError {
    BuildError {
        field: field.into(),
        message: message.into(),
    }
}

/// Whether the target of `bpf:TARGET` is a user's object (a file) rather than a model's port.
pub fn is_user_object(target: &str) -> bool {
    let target = split_ops(target).0;
    target.ends_with(".o") || target.contains('/')
}

/// The factory of `cc` (`bpf:NAME` or `bpf:FILE.o`) with `startup` and the parameters.
pub fn factory(
    cc: &str,
    cc_params: &Params,
    startup: &str,
    startup_params: &Params,
) -> Result<BpfFactory, BuildError> {
    let target = cc.strip_prefix(PREFIX).unwrap_or(cc);
    if is_user_object(target) {
        return user_factory(target, cc_params, startup);
    }
    port_factory(&port_model(cc, cc_params, startup, startup_params)?)
}

/// The Rust model whose port `cc = "bpf:NAME"` runs, checked as the model is (a start-up
/// algorithm's port runs on a controller's).
pub fn port_model(
    cc: &str,
    cc_params: &Params,
    startup: &str,
    startup_params: &Params,
) -> Result<Model, BuildError> {
    let target = cc.strip_prefix(PREFIX).unwrap_or(cc);
    if algorithms()
        .iter()
        .any(|a| a.name == target && a.role == Role::Startup)
    {
        return Err(refuse(
            "cc",
            format!("\"{target}\" is a start-up algorithm: run its port on a controller's, e.g. cc = \"bpf:newreno\", startup = \"{target}\""),
        ));
    }
    let mut cc_params = cc_params.clone();
    port_defaults(target, &mut cc_params);
    let mut startup_params = startup_params.clone();
    port_startup_defaults(startup, &mut startup_params);
    Model::new(target, &cc_params, startup, &startup_params).map_err(|mut e| {
        if e.field == "cc" {
            e.message = format!("\"{cc}\": {}", e.message);
        }
        e
    })
}

/// What a port has only one value of where its model has a choice, given where the scenario
/// does not say: BBRv3's port sees what a struct_ops program sees on mainline Linux, so its
/// `signals` are `"mainline"` (another value is refused by the port's configuration, naming the
/// field).
pub fn port_defaults(cc: &str, cc_params: &mut Params) {
    if cc == "bbr3" {
        cc_params
            .entry("signals")
            .or_insert_with(|| "mainline".into());
    }
}

/// The same for start-up algorithms: SUSS's port has what a `tcp_congestion_ops` can do, so its
/// `hooks` are `"struct-ops"` (`"kernel"`, the authors' per-segment release, is refused by the
/// port's configuration, naming the field).
pub fn port_startup_defaults(startup: &str, startup_params: &mut Params) {
    if startup == "suss" {
        startup_params
            .entry("hooks")
            .or_insert_with(|| "struct-ops".into());
    }
}

/// Which `struct_ops` of startlab's object runs `model`: `startlab_model` (cong_control) for a
/// model-based controller, `startlab` (cong_avoid, with any start-up algorithm) otherwise.
pub fn own_struct_ops(model: &Model) -> &'static str {
    if model.build().has_cong_control() {
        "startlab_model"
    } else {
        "startlab"
    }
}

/// startlab's own object, configured for `model` with the values its parameters run with.
pub fn port_factory(model: &Model) -> Result<BpfFactory, BuildError> {
    let resolved = model.resolved_params()?;
    let spec = ControllerSpec {
        cc: model.cc_name().to_string(),
        cc_params: resolved.0,
        startup: model.startup_name().to_string(),
        startup_params: resolved.1,
        pacing: "none".into(),
        initial_ssthresh: None,
        initial_window: 0,
    };
    let controllers = Controllers::built().map_err(|e| refuse("cc", e))?;
    let rodata = controllers
        .configure(&spec, &SimulatorCatalogue)
        .map_err(|e| refuse(&e.field, e.message))?;
    let ops = own_struct_ops(model);
    let loaded = load(ops, controllers.elf, Some(ops)).map_err(|e| refuse("cc", e))?;
    let data: Vec<Vec<u8>> = loaded
        .data
        .iter()
        .map(|d| {
            if d.name == ".rodata" {
                rodata.clone()
            } else {
                d.bytes.clone()
            }
        })
        .collect();
    let code = Vm::specialized(&loaded, &data);
    Ok(BpfFactory {
        shared: Shared::new(&loaded, &data),
        loaded,
        data,
        code,
        hz: 1000,
        user_elf: None,
        struct_ops: Some(ops.to_string()),
        needs_ecn: model.build().needs_ecn(),
        exit_record: None,
    })
}

/// `FILE.o#NAME` as the file and the struct_ops variable NAME (`{ bpf = "FILE.o", ops = "NAME"
/// }`), or the file alone.
pub fn split_ops(target: &str) -> (&str, Option<&str>) {
    match target.rsplit_once('#') {
        Some((path, ops)) if !ops.is_empty() && !ops.contains('/') => (path, Some(ops)),
        _ => (target, None),
    }
}

/// The `cc_params` entries that name where a user's program writes why it ended its slow start
/// (`ExitRecord`): a global, or a map's value at key 0; not written into the object.
pub const EXIT_REASON_GLOBAL: &str = "exit_reason_global";
pub const EXIT_REASON_MAP: &str = "exit_reason_map";

/// A user's object: loaded from `path` (`FILE.o`, or `FILE.o#NAME` for its struct_ops NAME),
/// each parameter written into the `.rodata` variable of its name.
fn user_factory(target: &str, cc_params: &Params, startup: &str) -> Result<BpfFactory, BuildError> {
    let (path, ops) = split_ops(target);
    if startup != super::registry::DEFAULT_STARTUP {
        return Err(refuse("startup", "a user's eBPF object is a whole controller; its start-up is its own (leave startup out)"));
    }
    let elf = startlab_bpf::elf::read_object(path)
        .map_err(|e| refuse("cc", format!("{PREFIX}{path}: {e}")))?;
    let key = format!("{}#{}", object_key(&elf), ops.unwrap_or(""));
    let loaded = load(&key, &elf, ops).map_err(|e| refuse("cc", format!("{path}: {e}")))?;
    let mut data: Vec<Vec<u8>> = loaded.data.iter().map(|d| d.bytes.clone()).collect();
    let mut hz = 1000;
    let mut exit_record = None;
    if cc_params.contains_key(EXIT_REASON_GLOBAL) && cc_params.contains_key(EXIT_REASON_MAP) {
        return Err(refuse(
            &format!("cc_params.{EXIT_REASON_MAP}"),
            format!("{EXIT_REASON_GLOBAL} and {EXIT_REASON_MAP} both name the exit: keep one"),
        ));
    }
    for (name, value) in cc_params {
        if name == EXIT_REASON_GLOBAL || name == EXIT_REASON_MAP {
            let field = format!("cc_params.{name}");
            let record = match value.as_str() {
                Some(global) if name == EXIT_REASON_GLOBAL => {
                    ExitRecord::global(&loaded.btf, &loaded.data, global)
                }
                Some(map) => ExitRecord::in_map(&loaded.btf, &loaded.maps, map),
                None if name == EXIT_REASON_GLOBAL => {
                    Err(format!("{value}: the name of a global variable"))
                }
                None => Err(format!(
                    "{value}: the name of a map (MAP, or MAP.MEMBER for a member of its value)"
                )),
            };
            exit_record = Some(record.map_err(|e| refuse(&field, e))?);
            continue;
        }
        if name == "hz" {
            hz = value
                .as_u64()
                .filter(|h| (1..=10_000).contains(h))
                .ok_or_else(|| {
                    refuse(
                        "cc_params.hz",
                        format!("{value}: ticks per second, 1 to 10000"),
                    )
                })?;
            continue;
        }
        let (i, bytes) =
            startlab_bpf::config::encode_variable(&loaded.btf, &loaded.data, name, value)
                .map_err(|e| refuse(&format!("cc_params.{name}"), e))?;
        let (off, image) = bytes;
        data[i][off..off + image.len()].copy_from_slice(&image);
    }
    // `__kconfig` externs: CONFIG_HZ is the flow's jiffies rate, as bpf_jiffies64's.
    loaded.write_kconfig(&mut data, hz);
    let code = Vm::specialized(&loaded, &data);
    let needs_ecn = loaded.flags & startlab_bpf::elf::TCP_CONG_NEEDS_ECN != 0;
    Ok(BpfFactory {
        shared: Shared::new(&loaded, &data),
        loaded,
        data,
        code,
        hz,
        user_elf: Some(Arc::new(elf)),
        struct_ops: ops.map(str::to_string),
        needs_ecn,
        exit_record,
    })
}

/// A user's object as read from its file, and its data sections (but `.bss`) by name as each
/// connection starts them.
pub struct UserImage {
    pub elf: Arc<Vec<u8>>,
    pub sections: Vec<(String, Vec<u8>)>,
    /// The struct_ops variable to register (`None`: the object's only one).
    pub struct_ops: Option<String>,
}

impl BpfFactory {
    /// The same controller with its shared state as a run starts: every simulation's
    /// connections share their object's globals and maps among themselves, never with
    /// another run's.
    pub fn for_run(&self) -> BpfFactory {
        BpfFactory {
            shared: Shared::new(&self.loaded, &self.data),
            ..self.clone()
        }
    }

    /// Whether `other` is the same object with the same data, which the kernel world registers
    /// once for both (`KernelPlan::controllers`): their connections share its state.
    pub fn same_registration(&self, other: &BpfFactory) -> bool {
        Arc::ptr_eq(&self.loaded, &other.loaded)
            && self.data == other.data
            && self.hz == other.hz
            && self.struct_ops == other.struct_ops
    }

    /// This controller sharing `other`'s state (see [`BpfFactory::same_registration`]).
    pub fn sharing_with(&self, other: &BpfFactory) -> BpfFactory {
        BpfFactory {
            shared: other.shared.clone(),
            ..self.clone()
        }
    }

    pub fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(self.controller())
    }

    /// Whether the program sets cwnd itself on every ACK (it has `cong_control`).
    pub fn has_cong_control(&self) -> bool {
        self.loaded.hooks.contains_key("cong_control")
    }

    /// Where a user's program names its slow-start exit (`cc_params.exit_reason_global` or
    /// `exit_reason_map`), if the scenario says.
    pub fn exit_record(&self) -> Option<&ExitRecord> {
        self.exit_record.as_ref()
    }

    /// The controller's name (`.name` of its struct_ops).
    pub fn name(&self) -> &str {
        &self.loaded.name
    }

    /// A user's object as the kernel world loads it, with each `cc_params` entry written in;
    /// `None` for startlab's own object.
    pub fn user_image(&self) -> Option<UserImage> {
        let elf = self.user_elf.clone()?;
        let sections = self
            .loaded
            .data
            .iter()
            .zip(&self.data)
            // .bss starts zeroed, and libbpf fills .kconfig from the running kernel.
            .filter(|(d, _)| d.name != ".bss" && d.name != ".kconfig")
            .map(|(d, bytes)| (d.name.clone(), bytes.clone()))
            .collect();
        Some(UserImage {
            elf,
            sections,
            struct_ops: self.struct_ops.clone(),
        })
    }

    /// One connection's controller.
    pub fn controller(&self) -> BpfController {
        let mut vm = Vm::sharing(
            self.loaded.clone(),
            self.data.clone(),
            self.code.clone(),
            self.shared.clone(),
        );
        vm.hz = self.hz;
        // A program that calls the kernel modules' functions (cubictcp_*, bbr_*) gets the
        // simulator's models of those modules.
        if !self.loaded.module_kfuncs().is_empty() {
            let placeholder = Tcb::new(1, 1, 1.0, f64::INFINITY);
            vm.modules = Some(Box::new(modules::Modules::new(placeholder, self.hz as u32)));
        }
        let hooks = [
            "init",
            "ssthresh",
            "cong_avoid",
            "set_state",
            "cwnd_event",
            "pkts_acked",
            "undo_cwnd",
            "cong_control",
            "in_ack_event",
        ]
        .map(|h| self.loaded.hooks.get(h).copied());
        BpfController {
            exit_record: self.exit_record.clone(),
            needs_ecn: self.needs_ecn,
            sampled: false,
            vm,
            startup: true,
            failed: None,
            phase: None,
            hooks,
            filled: Filled::default(),
        }
    }
}

/// One connection's eBPF controller.
pub struct BpfController {
    vm: Vm,
    /// Whether the program still reports slow start (from its phase and exit events; while it
    /// reported none, cwnd < ssthresh).
    startup: bool,
    /// The first error of the program; it then does nothing more (the run's warnings say so).
    failed: Option<String>,
    phase: Option<u32>,
    /// The programs of init, ssthresh, cong_avoid, set_state, cwnd_event, pkts_acked,
    /// undo_cwnd, cong_control and in_ack_event, looked up once (they run on every ACK).
    hooks: [Option<usize>; 9],
    /// See [`BpfFactory::needs_ecn`].
    needs_ecn: bool,
    /// See [`BpfFactory::exit_record`].
    exit_record: Option<ExitRecord>,
    /// pkts_acked ran for the ACK being processed (else, for a duplicate ACK, in_ack_event runs
    /// it first with nothing acknowledged, as tcp_clean_rtx_queue does before tcp_in_ack_event).
    sampled: bool,
    /// What the socket image was given of the fields a program may write besides cwnd and
    /// ssthresh, to tell the program's writes from the sender's.
    filled: Filled,
}

/// See [`BpfController::filled`].
#[derive(Copy, Clone, Debug)]
struct Filled {
    /// `sk_pacing_rate` (payload bytes per second), and the sender's rate it was written for.
    pacing_rate: u64,
    published: Option<Rate>,
    app_limited: u64,
    /// The socket's addresses and ports are written (they never change).
    endpoints: bool,
    /// `sk_max_pacing_rate`, payload bytes per second: `u64::MAX` (`~0UL`, no cap) until the
    /// program sets it with bpf_setsockopt(SO_MAX_PACING_RATE); it stays with the socket.
    max_pacing_rate: u64,
    /// The socket is paced by Linux at its own rate under that cap: the program capped an
    /// unpaced socket's rate without setting one of its own, so `sk_pacing_status` is
    /// SK_PACING_NEEDED and `tcp_update_pacing_rate` keeps `sk_pacing_rate` at
    /// min(Linux's rate, cap) after every ACK, until the program sets a rate or the status back.
    linux_paced: bool,
}

impl Default for Filled {
    fn default() -> Self {
        Filled {
            pacing_rate: 0,
            published: None,
            app_limited: 0,
            endpoints: false,
            max_pacing_rate: u64::MAX,
            linux_paced: false,
        }
    }
}

impl fmt::Debug for BpfController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BpfController({})", self.vm.loaded.name)
    }
}

/// Linux's `enum tcp_ca_state`.
fn ca_state(s: CaState) -> u64 {
    match s {
        CaState::Open => 0,
        CaState::Disorder => 1,
        CaState::Cwr => 2,
        CaState::Recovery => 3,
        CaState::Loss => 4,
    }
}

/// Interned exit-reason names (the simulator's reasons are `&'static str`).
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock().unwrap();
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(name.to_string(), leaked);
    leaked
}

use super::INFINITE_SSTHRESH;

/// Linux's `enum sk_pacing`: SK_PACING_NEEDED, pacing by TCP itself.
const SK_PACING_NEEDED: u64 = 1;

/// ssthresh as `tcp_sock` keeps it (`TCP_INFINITE_SSTHRESH` for none), and back.
fn ssthresh_image(ssthresh: f64) -> u64 {
    super::ssthresh_segments(ssthresh)
}

fn ssthresh_of_image(v: u64) -> f64 {
    if v >= INFINITE_SSTHRESH {
        f64::INFINITY
    } else {
        v as f64
    }
}

/// Linux's `app_limited`: 0, or the delivered count that ends the bubble (never 0).
fn app_limited_image(app_limited: Option<u64>) -> u64 {
    app_limited.map_or(0, |x| (x & 0xffff_ffff).max(1))
}

/// The sender's pacing rate (wire bits per second) as `sk_pacing_rate`: payload bytes per
/// second, as Linux paces.
fn pacing_image(rate: Option<Rate>, tcb: &Tcb) -> u64 {
    rate.map_or(0, |r| super::sk_pacing_rate_of(r, tcb))
}

/// `sk_pacing_rate` (payload bytes per second) as the sender's rate: the sender spaces wire
/// bytes, so it is scaled by wire / payload bytes.
fn pacing_of_image(payload_bytes_per_s: u64, tcb: &Tcb) -> Rate {
    super::rate_of_sk_pacing_rate(payload_bytes_per_s, tcb)
}

impl BpfController {
    /// The sender's state into the socket image (tcp_sock fields as Linux keeps them: bytes
    /// for sequence numbers, microseconds for times, srtt x 8).
    fn fill(&mut self, tcb: &Tcb, now: Time) {
        let f = layout::sock();
        let mss = tcb.mss_bytes.max(1) as u64;
        let flight = tcb.flight_size() as u64;
        let cwnd = tcb.snd_cwnd();
        self.vm.now_ns = now.as_nanos();
        let hz = self.vm.hz;
        let sk = self.vm.sock();
        let put = layout::put;
        put(sk, f.snd_cwnd, cwnd.min(u32::MAX as u64));
        put(sk, f.snd_ssthresh, ssthresh_image(tcb.ssthresh));
        put(sk, f.snd_cwnd_clamp, u32::MAX as u64);
        put(sk, f.prior_cwnd, tcb.prior_cwnd.max(0.0) as u64);
        put(
            sk,
            f.prior_ssthresh,
            ssthresh_image(tcb.prior_ssthresh.max(0.0)),
        );
        put(sk, f.mss_cache, mss);
        put(
            sk,
            f.srtt_us,
            tcb.srtt.map_or(0, |d| d.as_nanos() / 1000 * 8),
        );
        put(
            sk,
            f.min_rtt_us,
            tcb.min_rtt.map_or(u32::MAX as u64, |d| d.as_nanos() / 1000),
        );
        // The socket's addresses and ports (sock_common keeps the addresses and the remote
        // port in network byte order, the local port in the host's).
        if !self.filled.endpoints {
            let be32 = |v: u32| u32::from_le_bytes(v.to_be_bytes()) as u64;
            let be16 = |v: u16| u16::from_le_bytes(v.to_be_bytes()) as u64;
            put(sk, f.skc_rcv_saddr, be32(Tcb::ipv4_of(tcb.node)));
            put(sk, f.skc_daddr, be32(Tcb::ipv4_of(tcb.peer)));
            put(sk, f.skc_num, Tcb::local_port(tcb.flow) as u64);
            put(sk, f.skc_dport, be16(Tcb::peer_port(tcb.flow)));
            // GSO_LEGACY_MAX_SIZE: a device's default GSO size, the kernel world's devices'.
            put(sk, f.sk_gso_max_size, 65_536);
            // include/net/tcp_states.h: TCP_ESTABLISHED (TCP_CLOSE in release, below).
            put(sk, f.skc_state, 1);
            // An IPv4 TCP socket: AF_INET, SOCK_STREAM, IPPROTO_TCP; inet_sock's own copies of
            // the local address and port (inet_sport in network byte order).
            put(sk, f.skc_family, 2);
            put(sk, f.sk_type, 1);
            put(sk, f.sk_protocol, 6);
            put(sk, f.inet_saddr, be32(Tcb::ipv4_of(tcb.node)));
            put(sk, f.inet_sport, be16(Tcb::local_port(tcb.flow)));
            // sock_init_data's sk_pacing_shift; a device's GSO_MAX_SEGS (sk_setup_caps).
            put(sk, f.sk_pacing_shift, 10);
            put(sk, f.sk_gso_max_segs, 65_535);
            // A full segment's IPv4 packet is the path's MTU (tcp_sync_mss); its TCP header,
            // options included, is what tcp.header holds beyond IPv4's 20 bytes.
            let header = tcb.wire_bytes.saturating_sub(tcb.mss_bytes);
            put(sk, f.icsk_pmtu_cookie, tcb.wire_bytes as u64);
            put(sk, f.tcp_header_len, header.saturating_sub(20) as u64);
            // ipv4_default_advmss (the MTU less IPv4's and TCP's fixed headers), less the
            // timestamp option once the handshake agreed on it (tcp_rcv_synsent_state_process):
            // the MTU less the whole header, options included.
            put(sk, f.advmss, tcb.wire_bytes.saturating_sub(header) as u64);
            self.filled.endpoints = true;
        }

        put(sk, f.snd_una, (tcb.snd_una as u64 * mss) & 0xffff_ffff);
        put(sk, f.snd_nxt, (tcb.high_tx as u64 * mss) & 0xffff_ffff);
        put(sk, f.packets_out, flight);
        // The scoreboard's counters; Linux's in-flight estimate from them,
        // packets_out - (sacked_out + lost_out) + retrans_out, is the sender's pipe.
        debug_assert_eq!(
            flight + tcb.retrans_out as u64 - tcb.sacked_out as u64 - tcb.lost_out as u64,
            tcb.in_flight as u64,
            "the pipe's counters were synced with it"
        );
        put(sk, f.sacked_out, tcb.sacked_out as u64);
        put(sk, f.lost_out, tcb.lost_out as u64);
        put(sk, f.retrans_out, tcb.retrans_out as u64);
        put(sk, f.total_retrans, tcb.total_retrans & 0xffff_ffff);
        put(sk, f.data_segs_out, tcb.data_segs_out & 0xffff_ffff);
        // RFC 4898's byte counters, from the segment counts (every segment of a bulk sender
        // is full). tcp_snd_una_update counts the handshake's sequence number in bytes_acked:
        // snd_una - bytes_acked is the initial sequence number (here 2^32 - 1, so that snd_una
        // counts the data bytes).
        put(sk, f.bytes_acked, tcb.snd_una as u64 * mss + 1);
        put(sk, f.bytes_sent, tcb.data_segs_out * mss);
        put(sk, f.bytes_retrans, tcb.total_retrans * mss);
        put(sk, f.reordering, tcb.reordering as u64);
        put(sk, f.high_seq, (tcb.high_seq as u64 * mss) & 0xffff_ffff);
        // The probe in flight (0: none), in bytes as snd_nxt.
        put(
            sk,
            f.tlp_high_seq,
            tcb.tlp_high_seq.map_or(0, |s| s as u64 * mss) & 0xffff_ffff,
        );
        put(sk, f.tlp_retrans, tcb.tlp_retrans as u64);
        // tcp_rate_gen's record of the last sample (0 before the first).
        let rate = tcb.delivery_rate.unwrap_or_default();
        put(sk, f.rate_delivered, rate.delivered & 0xffff_ffff);
        put(
            sk,
            f.rate_interval_us,
            (rate.interval.as_nanos() / 1000) & 0xffff_ffff,
        );
        put(sk, f.rate_app_limited, rate.app_limited as u64);
        put(sk, f.prr_delivered, tcb.prr_delivered as u64);
        put(sk, f.mdev_us, tcb.mdev4.as_nanos() / 1000);
        put(sk, f.rttvar_us, tcb.rttvar.as_nanos() / 1000);
        put(sk, f.mdev_max_us, tcb.mdev_max.as_nanos() / 1000);
        put(sk, f.segs_in, tcb.segs_in & 0xffff_ffff);
        put(
            sk,
            f.segs_out,
            (tcb.data_segs_out + tcb.control_segs_out) & 0xffff_ffff,
        );
        // icsk_rto in jiffies (usecs_to_jiffies rounds up), icsk_backoff.
        put(
            sk,
            f.icsk_rto,
            (tcb.rto.as_nanos() as u128 * hz as u128).div_ceil(1_000_000_000) as u64 & 0xffff_ffff,
        );
        put(sk, f.icsk_backoff, tcb.backoff.min(255) as u64);
        put(sk, f.icsk_retransmits, tcb.rto_retransmits.min(255) as u64);
        put(sk, f.total_rto, tcb.total_rto & 0xffff);
        put(
            sk,
            f.total_rto_recoveries,
            tcb.total_rto_recoveries & 0xffff,
        );
        // tcp_init_undo's count (-1 as the int's two's complement).
        put(sk, f.undo_retrans, tcb.undo_retrans as u64);
        // tcp_skb_timestamp_ts without microsecond timestamps: milliseconds of the TCP clock.
        put(
            sk,
            f.retrans_stamp,
            tcb.retrans_stamp.map_or(0, |t| t.as_nanos() / 1_000_000) & 0xffff_ffff,
        );
        put(sk, f.max_packets_out, tcb.max_packets_out as u64);
        put(sk, f.is_cwnd_limited, tcb.is_cwnd_limited as u64);
        // tcp_jiffies32 at the last data transmission, and at the last ACK (tcp_ack).
        let jiffies32 = |t: Time| startlab_bpf::vm::jiffies(t.as_nanos(), hz) & 0xffff_ffff;
        put(sk, f.lsndtime, jiffies32(tcb.lsndtime));
        put(sk, f.rcv_tstamp, jiffies32(tcb.rcv_tstamp));
        put(sk, f.delivered, tcb.delivered & 0xffff_ffff);
        put(sk, f.delivered_ce, tcb.delivered_ce & 0xffff_ffff);
        // TCP_ECN_OK (include/net/tcp_ecn.h: TCP_ECN_MODE_RFC3168) once negotiated; a
        // program's writes (TCP_ECN_DEMAND_CWR, a receiver's) do not reach the sender.
        put(sk, f.ecn_flags, tcb.ecn as u64);
        put(sk, f.tcp_mstamp, now.as_nanos() / 1000);
        put(sk, f.tcp_clock_cache, now.as_nanos());
        put(
            sk,
            f.snd_wnd,
            (tcb.rwnd as u64).saturating_mul(mss).min(u32::MAX as u64),
        );
        // snd_una when the loss episode whose reduction may still be undone began, in bytes
        // as snd_una; 0 for none (tcp_sock.undo_marker).
        put(
            sk,
            f.undo_marker,
            tcb.undo_marker
                .map_or(0, |m| (m as u64 * mss) & 0xffff_ffff),
        );
        put(sk, f.sack_ok, 1);
        put(sk, f.ca_state, ca_state(tcb.ca_state));
        put(sk, f.lost, tcb.lost & 0xffff_ffff);
        put(
            sk,
            f.delivered_mstamp,
            tcb.delivered_mstamp.as_nanos() / 1000,
        );
        put(sk, f.tcp_wstamp_ns, tcb.next_departure.max(now).as_nanos());
        put(sk, f.sk_max_pacing_rate, self.filled.max_pacing_rate);
        let app_limited = app_limited_image(tcb.app_limited);
        put(sk, f.app_limited, app_limited);
        self.filled.app_limited = app_limited;
        // sk_pacing_rate is the program's own (payload bytes per second) unless the sender
        // changed the rate since the program last set it. A socket nothing paces has the rate
        // Linux keeps for every socket after each ACK (tcp_update_pacing_rate at the
        // connection's ratios), which tcp_cubic.c's hystart_ack_delay reads; a program with cong_control
        // sets its own (Linux does not update it for one).
        if (tcb.pacing_rate.is_none() || self.filled.linux_paced) && self.hooks[7].is_none() {
            put(
                sk,
                f.sk_pacing_rate,
                crate::tcp::linux_sk_pacing_rate(tcb).min(self.filled.max_pacing_rate),
            );
            self.filled.published = None;
        } else if tcb.pacing_rate != self.filled.published {
            put(sk, f.sk_pacing_rate, pacing_image(tcb.pacing_rate, tcb));
            self.filled.published = tcb.pacing_rate;
        }
        self.filled.pacing_rate = layout::get(sk, f.sk_pacing_rate);
    }

    /// What the program wrote, back into the sender's state, and its reports.
    fn take(&mut self, tcb: &mut Tcb) {
        let f = layout::sock();
        let before = tcb.cwnd.max(1.0).floor();
        let cwnd = layout::get(self.vm.sock(), f.snd_cwnd) as f64;
        if cwnd != before {
            tcb.cwnd = cwnd.max(1.0);
        }
        tcb.ssthresh = ssthresh_of_image(layout::get(self.vm.sock(), f.snd_ssthresh));
        // The cap bpf_setsockopt(SO_MAX_PACING_RATE) set, which the sender's own pacing obeys.
        let max = layout::get(self.vm.sock(), f.sk_max_pacing_rate);
        if max != self.filled.max_pacing_rate {
            self.filled.max_pacing_rate = max;
            tcb.max_pacing_rate = (max != u64::MAX).then(|| pacing_of_image(max, tcb));
        }
        // A pacing rate the program set (payload bytes per second, Linux's sk_pacing_rate),
        // or the one bpf_setsockopt lowered to the cap.
        let pacing = layout::get(self.vm.sock(), f.sk_pacing_rate);
        let own_rate = pacing != self.filled.pacing_rate.min(max);
        // Only a cap (now or before) can hand the socket to Linux's pacing.
        let may_be_linux_paced =
            (max != u64::MAX || self.filled.linux_paced) && self.hooks[7].is_none() && !own_rate;
        let linux_paced = may_be_linux_paced
            && (self.filled.linux_paced || tcb.pacing_rate.is_none())
            && layout::get(self.vm.sock(), f.sk_pacing_status) == SK_PACING_NEEDED;
        if linux_paced {
            self.filled.linux_paced = true;
            tcb.pacing_rate = (pacing > 0).then(|| pacing_of_image(pacing, tcb));
            self.filled.published = tcb.pacing_rate;
            self.filled.pacing_rate = pacing;
        } else if std::mem::take(&mut self.filled.linux_paced) && !own_rate {
            // Pacing switched off (SK_PACING_NONE) with no rate of the program's own.
            tcb.pacing_rate = None;
            self.filled.published = None;
        } else if pacing != self.filled.pacing_rate {
            // The rate of a kernel module's model, if it set this one, exactly as it set it.
            let exact = self
                .modules()
                .and_then(|m| m.published.filter(|(p, _)| *p == pacing).map(|(_, r)| r));
            tcb.pacing_rate =
                (pacing > 0).then(|| exact.unwrap_or_else(|| pacing_of_image(pacing, tcb)));
            self.filled.published = tcb.pacing_rate;
            self.filled.pacing_rate = pacing;
        }
        let app_limited = layout::get(self.vm.sock(), f.app_limited);
        if app_limited != self.filled.app_limited {
            tcb.app_limited = (app_limited != 0).then_some(app_limited);
        }
        for record in self.vm.events.drain(..) {
            let Some(e) = Event::decode(&record) else {
                continue;
            };
            match e.kind {
                KIND_EXIT => {
                    self.startup = false;
                    // The reasons the stacks name themselves.
                    if !matches!(e.reason.as_str(), "threshold" | "loss" | "timeout" | "ecn")
                        && !e.reason.is_empty()
                    {
                        tcb.exit_reason_hint = Some(ExitReason::Detector(intern(&e.reason)));
                    }
                }
                KIND_PHASE => {
                    self.phase = Some(e.phase);
                    if e.phase == Phase::SlowStart as u32 {
                        self.startup = true;
                    } else if e.phase == Phase::CongestionAvoidance as u32 {
                        self.startup = false;
                    }
                }
                _ => {}
            }
        }
    }

    /// The kernel modules' state, if the program calls their functions.
    fn modules(&mut self) -> Option<&mut modules::Modules> {
        self.vm
            .modules
            .as_mut()?
            .as_any_mut()
            .downcast_mut::<modules::Modules>()
    }

    /// The exit of a slow start the program ended itself: named by the number
    /// `cc_params.exit_reason_global` or `exit_reason_map` points to when the program set it,
    /// else after the program.
    fn own_exit(&self) -> ExitReason {
        let program = &self.vm.loaded.name;
        let named = self.exit_record.as_ref().and_then(|r| {
            let bytes = match &r.place {
                ExitPlace::Section(name) => {
                    let i = self.vm.loaded.data.iter().position(|d| &d.name == name)?;
                    self.vm.data(i)
                }
                ExitPlace::Map { name, key_bytes } => {
                    self.vm.map_value(name, &vec![0; *key_bytes])?
                }
            };
            r.reason(&bytes, program)
        });
        ExitReason::Detector(intern(named.as_deref().unwrap_or(program)))
    }

    fn call(&mut self, tcb: &mut Tcb, now: Time, hook: &str, args: &[u64]) -> Option<u64> {
        if self.failed.is_some() {
            return None;
        }
        self.fill(tcb, now);
        if let Some(m) = self.modules() {
            m.tcb = tcb.clone();
            m.now = now;
        }
        let program = match hook {
            "init" => self.hooks[0],
            "ssthresh" => self.hooks[1],
            "cong_avoid" => self.hooks[2],
            "set_state" => self.hooks[3],
            "cwnd_event" => self.hooks[4],
            "pkts_acked" => self.hooks[5],
            "undo_cwnd" => self.hooks[6],
            "cong_control" => self.hooks[7],
            "in_ack_event" => self.hooks[8],
            _ => self.vm.loaded.hooks.get(hook).copied(),
        }?;
        let mut full = [region_base(SOCK_REGION), 0, 0, 0];
        let n = args.len().min(3);
        full[1..1 + n].copy_from_slice(&args[..n]);
        // In slow start, in the Open state, before the hook.
        let in_slow_start = tcb.ca_state == CaState::Open && tcb.cwnd < tcb.ssthresh;
        match self.vm.call_program(program, &full[..1 + n]) {
            Ok(v) => {
                let ssthresh_before = tcb.ssthresh;
                self.take(tcb);
                // A program that reports nothing (a user's) and lowers ssthresh to cwnd or
                // below in slow start has ended its start-up itself (HyStart's ssthresh = cwnd,
                // as tcp_cubic.c's hystart_update): its exit is named after the program.
                if in_slow_start
                    && self.phase.is_none()
                    && hook != "ssthresh"
                    && tcb.ssthresh != ssthresh_before
                    && tcb.cwnd >= tcb.ssthresh
                {
                    tcb.exit_reason_hint = Some(self.own_exit());
                }
                // A user's program with cong_control ends its start-up itself, by whichever hook
                // first leaves it with cwnd at or above a finite ssthresh (the ssthresh a loss
                // gave it included): named after it, as the kernel world names it.
                if self.hooks[7].is_some()
                    && self.phase.is_none()
                    && !tcb.in_slow_start()
                    && tcb.exit_reason_hint.is_none()
                {
                    tcb.exit_reason_hint = Some(self.own_exit());
                }
                // A kernel module's start-up exit (HyStart in cubictcp_acked, BBR's full pipe
                // in bbr_main) is the program's: named after it, as the kernel world names it
                // (the trace does not tell the kernel's rule from the program's).
                if self
                    .modules()
                    .and_then(|m| m.tcb.exit_reason_hint.take())
                    .is_some()
                {
                    tcb.exit_reason_hint = Some(self.own_exit());
                }
                Some(v)
            }
            Err(e) => {
                self.failed = Some(format!("{}: {hook}: {e}", self.vm.loaded.name));
                None
            }
        }
    }

    /// Instructions the VM has executed for this connection.
    pub fn executed(&self) -> u64 {
        self.vm.executed
    }

    /// The program's first error, if it had one.
    pub fn error(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// cwnd with the fraction startlab's ports keep beside snd_cwnd (`struct flow_common` at
    /// the start of their socket storage `flows`: snd_cwnd as last written, then the fraction
    /// x 2^16); snd_cwnd alone for other objects.
    pub fn exact_cwnd(&mut self) -> f64 {
        let cwnd = layout::get(self.vm.sock(), layout::sock().snd_cwnd);
        match self.vm.storage("flows") {
            Some(b)
                if b.len() >= 8
                    && u32::from_le_bytes(b[0..4].try_into().unwrap()) as u64 == cwnd =>
            {
                cwnd as f64 + u32::from_le_bytes(b[4..8].try_into().unwrap()) as f64 / 65536.0
            }
            _ => cwnd as f64,
        }
    }
}

impl BpfController {
    /// Gives startlab's port the window `cwnd` with its fraction (as if it had computed it),
    /// for a differential run in which the sender, not the controller, set a fractional window.
    pub fn sync_cwnd(&mut self, cwnd: f64) {
        let whole = cwnd.max(1.0).floor();
        let frac = ((cwnd.max(1.0) - whole) * 65536.0) as u32;
        if let Some(b) = self.vm.storage_mut("flows") {
            if b.len() >= 8 {
                b[0..4].copy_from_slice(&(whole as u32).to_le_bytes());
                b[4..8].copy_from_slice(&frac.to_le_bytes());
            }
        }
    }
}

/// A Rust model and its eBPF port compared hook by hook on the same inputs: the model drives
/// the connection; before each hook the port is given the model's state, after it the two
/// results are compared. Both get RTTs in whole microseconds (Linux's resolution: the model
/// alone would see nanoseconds). What [`Shadow`]s of one flow found.
#[derive(Clone, Debug, Default)]
pub struct Differences {
    /// Hook calls compared, and of them `cong_avoid` or `cong_control` calls (ACKs).
    pub hooks: u64,
    pub acks: u64,
    /// Largest |cwnd(port) - cwnd(model)| after a hook, segments, and relative to the model's.
    pub max_cwnd_gap: f64,
    pub max_cwnd_gap_relative: f64,
    /// Largest |ssthresh(port) - floor(ssthresh(model))|, segments (ssthresh is whole in Linux).
    pub max_ssthresh_gap: f64,
    /// The first hook where the cwnd gap passed `tolerance`, described.
    pub first_miss: Option<String>,
    /// Gaps above `tolerance`.
    pub misses: u64,
    /// Slow starts the port ended at the whole ssthresh below the model's fractional one
    /// (accepted; see `Shadow::both`).
    pub whole_ssthresh_ends: u64,
    /// Slow-start ACKs toward a fractional model ssthresh where the port, at floor(ssthresh),
    /// differed (accepted; see `Shadow::both`).
    pub fractional_ssthresh_starts: u64,
    /// The model's largest increase of cwnd in one hook, segments (a jump shows here).
    pub max_cwnd_step: f64,
    /// The start-up exit of each: (hook number, cwnd, reason hint).
    pub model_exit: Option<(u64, f64, String)>,
    pub port_exit: Option<(u64, f64, String)>,
    /// The port's first error.
    pub error: Option<String>,
}

/// `now` in whole microseconds (Linux's `tcp_mstamp`), for both sides of a [`Shadow`].
fn at(now: Time) -> Time {
    Time::from_nanos(now.as_nanos() / 1000 * 1000)
}

/// Relative tolerance of the cwnd comparison: the ports keep cwnd to 2^-16 of a segment and
/// compute per-ACK increments in fixed point; 2^-10 of the window bounds what that costs.
pub const CWND_TOLERANCE: f64 = 1.0 / 1024.0;

/// See [`Differences`].
pub struct Shadow {
    model: Box<dyn CongestionControl>,
    port: BpfController,
    log: Arc<Mutex<Differences>>,
    model_started: bool,
    port_started: bool,
    /// The model's cwnd after the last hook: a different one before the next means the sender
    /// set it (recovery, a timeout), and the port is given it too.
    last_cwnd: f64,
}

impl fmt::Debug for Shadow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Shadow({:?})", self.model)
    }
}

impl Shadow {
    pub fn new(
        model: Box<dyn CongestionControl>,
        port: BpfController,
        log: Arc<Mutex<Differences>>,
    ) -> Shadow {
        Shadow {
            model,
            port,
            log,
            model_started: true,
            port_started: true,
            last_cwnd: f64::NAN,
        }
    }

    /// Runs `hook` on both: the model on `tcb`, the port on a copy taken before; compares
    /// the windows after it, and `returned` (what ssthresh and undo_cwnd return) when given.
    fn both<R: Copy + Into<f64>>(
        &mut self,
        tcb: &mut Tcb,
        hook: &str,
        f: impl FnOnce(&mut dyn CongestionControl, &mut Tcb) -> R,
        g: impl FnOnce(&mut BpfController, &mut Tcb) -> R,
        compare_returned: bool,
    ) -> R {
        // The same inputs for both, at Linux's resolution, which is all a port ever sees: RTTs
        // (and the clock, see `at`) in whole microseconds.
        let us = |d: Option<crate::time::Duration>| {
            d.map(|d| crate::time::Duration::from_nanos(d.as_nanos() / 1000 * 1000))
        };
        let (cwnd_before, ssthresh_before) = (tcb.cwnd, tcb.ssthresh);
        tcb.srtt = us(tcb.srtt);
        tcb.min_rtt = us(tcb.min_rtt);
        tcb.latest_rtt = us(tcb.latest_rtt);
        let mut copy = tcb.clone();
        copy.exit_reason_hint = None;
        let hint_before = tcb.exit_reason_hint;
        // The sender set cwnd, or the two straddle a whole segment (the port would read the
        // model's whole cwnd as a change from outside): the port is given the model's window.
        if tcb.cwnd != self.last_cwnd || tcb.cwnd.max(1.0).floor() != self.port.exact_cwnd().floor()
        {
            self.port.sync_cwnd(tcb.cwnd);
        }
        let port_before = self.port.exact_cwnd();
        let r = f(self.model.as_mut(), tcb);
        let p = g(&mut self.port, &mut copy);
        let mut log = self.log.lock().unwrap();
        log.hooks += 1;
        if matches!(hook, "cong_avoid" | "cong_control") {
            log.acks += 1;
        }
        if let (None, Some(e)) = (&log.error, self.port.error()) {
            log.error = Some(e.to_string());
        }
        // Linux's snd_cwnd is whole segments: the port's must be the model's, whole; where the
        // model's is within the tolerance of a whole number the port may be on either side.
        let port_cwnd = self.port.exact_cwnd();
        let whole = port_cwnd.floor();
        let gap = (port_cwnd - tcb.cwnd).abs();
        log.max_cwnd_gap = log.max_cwnd_gap.max(gap);
        log.max_cwnd_step = log.max_cwnd_step.max(tcb.cwnd - cwnd_before);
        log.max_cwnd_gap_relative = log.max_cwnd_gap_relative.max(gap / tcb.cwnd.max(1.0));
        let mut agrees =
            whole == tcb.cwnd.max(1.0).floor() || gap <= CWND_TOLERANCE * tcb.cwnd.max(1.0);
        // Linux's ssthresh is whole segments: where the model's slow start ends at a fractional
        // ssthresh S + f, a port without a fraction of its own ends at S, up to f below. That
        // ACK is accepted, and the port given the model's window after it.
        let f = ssthresh_before - ssthresh_before.floor();
        if hook == "cong_avoid"
            && ssthresh_before.is_finite()
            && f > 0.0
            && cwnd_before < ssthresh_before
            && tcb.cwnd >= ssthresh_before.floor()
            && port_cwnd >= tcb.cwnd - f - CWND_TOLERANCE * tcb.cwnd
            && port_cwnd <= tcb.cwnd + CWND_TOLERANCE * tcb.cwnd
        {
            agrees = true;
            if port_cwnd != tcb.cwnd {
                log.whole_ssthresh_ends += 1;
                self.port.sync_cwnd(tcb.cwnd);
            }
        }
        // Linux's ssthresh is whole segments: while the model's slow start heads for a
        // fractional ssthresh S (cwnd < S before the ACK), the port heads for floor(S) (P-Start
        // plans its rounds against it; Vegas slow start holds a round at floor(S) that the port,
        // with snd_cwnd >= snd_ssthresh, spends in congestion avoidance). Its window may lie
        // anywhere from where either began the ACK up to one segment (one round of avoidance)
        // above max(model, floor(S)); the port is then given the model's window.
        if !agrees
            && hook == "cong_avoid"
            && ssthresh_before.is_finite()
            && f > 0.0
            && cwnd_before < ssthresh_before
            && port_cwnd >= cwnd_before.min(port_before) - CWND_TOLERANCE * tcb.cwnd
            && port_cwnd <= tcb.cwnd.max(ssthresh_before.floor()) + 1.0 + CWND_TOLERANCE * tcb.cwnd
        {
            agrees = true;
            log.fractional_ssthresh_starts += 1;
            self.port.sync_cwnd(tcb.cwnd);
        }
        if !agrees {
            log.misses += 1;
            if log.first_miss.is_none() {
                log.first_miss = Some(format!(
                    "hook {} ({hook}): model cwnd {:.5}, port {:.5}, state {:?}",
                    log.hooks, tcb.cwnd, port_cwnd, tcb.ca_state
                ));
            }
        }
        // A controller that paces must set the same rate: exactly with cong_control; a
        // start-up algorithm's rate (Careful Resume's, SUSS's) to the tolerance of the window
        // it is computed from (a jump is half a saved window the port kept in fixed point).
        let same_rate = |m: Option<Rate>, p: Option<Rate>| match (m, p) {
            (Some(m), Some(p)) if !self.model.has_cong_control() => {
                (m.bps() as f64 - p.bps() as f64).abs() <= CWND_TOLERANCE * m.bps() as f64
            }
            (m, p) => m == p,
        };
        if !same_rate(tcb.pacing_rate, copy.pacing_rate) {
            log.misses += 1;
            if log.first_miss.is_none() {
                log.first_miss = Some(format!(
                    "hook {} ({hook}): model pacing {:?}, port {:?}",
                    log.hooks, tcb.pacing_rate, copy.pacing_rate
                ));
            }
        }
        let whole_ss = |x: f64| {
            if x.is_finite() {
                x.floor().min(INFINITE_SSTHRESH as f64)
            } else {
                INFINITE_SSTHRESH as f64
            }
        };
        let (model_ss, port_ss) = if compare_returned {
            (whole_ss(r.into()), whole_ss(p.into()))
        } else {
            (whole_ss(tcb.ssthresh), whole_ss(copy.ssthresh))
        };
        let ss_gap = (model_ss - port_ss).abs();
        if hook != "undo_cwnd" && ss_gap > log.max_ssthresh_gap {
            log.max_ssthresh_gap = ss_gap;
            if ss_gap > 1.0 && log.first_miss.is_none() {
                log.first_miss = Some(format!(
                    "hook {} ({hook}): model ssthresh {model_ss}, port {port_ss}",
                    log.hooks
                ));
            }
        }
        self.last_cwnd = tcb.cwnd;
        // Start-up exits: when each first says it is out of start-up.
        let n = log.hooks;
        if self.model_started && !self.model.in_startup(tcb) {
            self.model_started = false;
            let hint = tcb
                .exit_reason_hint
                .or(hint_before)
                .map(|h| h.to_string())
                .unwrap_or_default();
            log.model_exit = Some((n, tcb.cwnd, hint));
        }
        if self.port_started && !self.port.in_startup(&copy) {
            self.port_started = false;
            let hint = copy
                .exit_reason_hint
                .map(|h| h.to_string())
                .unwrap_or_default();
            log.port_exit = Some((n, port_cwnd, hint));
        }
        r
    }
}

impl CongestionControl for Shadow {
    fn release(&mut self, tcb: &mut Tcb, now: Time) {
        self.model.release(tcb, now);
        self.port.release(tcb, now);
    }

    fn init(&mut self, tcb: &mut Tcb, now: Time) {
        self.both(
            tcb,
            "init",
            |m, t| {
                m.init(t, at(now));
                0.0
            },
            |p, t| {
                p.init(t, at(now));
                0.0
            },
            false,
        );
    }
    fn ssthresh(&mut self, tcb: &mut Tcb, now: Time) -> f64 {
        self.both(
            tcb,
            "ssthresh",
            |m, t| m.ssthresh(t, at(now)),
            |p, t| p.ssthresh(t, at(now)),
            true,
        )
    }
    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        self.both(
            tcb,
            "cong_avoid",
            |m, t| {
                m.cong_avoid(t, ack, at(now));
                0.0
            },
            |p, t| {
                p.cong_avoid(t, ack, at(now));
                0.0
            },
            false,
        );
    }
    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, now: Time) {
        self.both(
            tcb,
            "set_state",
            |m, t| {
                m.set_state(t, state, at(now));
                0.0
            },
            |p, t| {
                p.set_state(t, state, at(now));
                0.0
            },
            false,
        );
    }
    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, now: Time) {
        self.both(
            tcb,
            "cwnd_event",
            |m, t| {
                m.cwnd_event(t, event, at(now));
                0.0
            },
            |p, t| {
                p.cwnd_event(t, event, at(now));
                0.0
            },
            false,
        );
    }
    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        let mut sample = *sample;
        sample.rtt = sample
            .rtt
            .map(|d| crate::time::Duration::from_nanos(d.as_nanos() / 1000 * 1000));
        let sample = &sample;
        self.both(
            tcb,
            "pkts_acked",
            |m, t| {
                m.pkts_acked(t, sample, at(now));
                0.0
            },
            |p, t| {
                p.pkts_acked(t, sample, at(now));
                0.0
            },
            false,
        );
    }
    fn undo_cwnd(&mut self, tcb: &mut Tcb) -> f64 {
        self.both(
            tcb,
            "undo_cwnd",
            |m, t| m.undo_cwnd(t),
            |p, t| p.undo_cwnd(t),
            true,
        )
    }
    fn in_ack_event(&mut self, tcb: &mut Tcb, event: AckEvent, now: Time) {
        self.both(
            tcb,
            "in_ack_event",
            |m, t| {
                m.in_ack_event(t, event, at(now));
                0.0
            },
            |p, t| {
                p.in_ack_event(t, event, at(now));
                0.0
            },
            false,
        );
    }
    fn needs_ecn(&self) -> bool {
        self.model.needs_ecn()
    }
    fn in_startup(&self, tcb: &Tcb) -> bool {
        self.model.in_startup(tcb)
    }
    fn cong_control(&mut self, tcb: &mut Tcb, rs: &super::RateSample, now: Time) -> bool {
        if !self.model.has_cong_control() {
            return self.model.cong_control(tcb, rs, at(now));
        }
        let ran = |ran: bool| if ran { 1.0 } else { 0.0 };
        self.both(
            tcb,
            "cong_control",
            |m, t| ran(m.cong_control(t, rs, at(now))),
            |p, t| ran(p.cong_control(t, rs, at(now))),
            false,
        ) > 0.0
    }
    fn has_cong_control(&self) -> bool {
        self.model.has_cong_control()
    }
    /// Both draw from the same stream, as the port's `bpf_get_prandom_u32` and the model do.
    fn seed(&mut self, rng: crate::rng::Rng) {
        self.model.seed(rng.clone());
        self.port.seed(rng);
    }
    fn loss_verdicts(&self) -> Option<super::LossVerdicts> {
        self.model.loss_verdicts()
    }
    /// The model only: Linux has no per-segment hook, so no port has one (SUSS's port does
    /// without, see crates/startlab-bpf/bpf/startup/suss.bpf.c).
    fn on_transmit(&mut self, tcb: &mut Tcb, now: Time) {
        self.model.on_transmit(tcb, at(now));
    }
    /// Careful Resume: the model is handed its saved state by the host's path cache and leaves
    /// its observation there; the port keeps its own in a map (`cr_paths`, written in release,
    /// read in init), as it does in the kernel. Each finds what its own predecessor left.
    fn resumes(&self) -> bool {
        self.model.resumes()
    }
    fn resume_from(&mut self, saved: crate::tcp::path_cache::ResumeState) {
        self.model.resume_from(saved)
    }
    fn path_observation(&self, tcb: &Tcb, now: Time) -> super::PathObservation {
        self.model.path_observation(tcb, now)
    }
}

impl CongestionControl for BpfController {
    fn init(&mut self, tcb: &mut Tcb, now: Time) {
        self.call(tcb, now, "init", &[]);
    }

    fn release(&mut self, tcb: &mut Tcb, now: Time) {
        // What release writes to the socket is lost with it; only its maps and globals stay.
        let mut gone = tcb.clone();
        // TCP_CLOSE: tcp_done sets it before the socket is destroyed.
        layout::put(self.vm.sock(), layout::sock().skc_state, 7);
        self.call(&mut gone, now, "release", &[]);
    }

    fn ssthresh(&mut self, tcb: &mut Tcb, now: Time) -> f64 {
        match self.call(tcb, now, "ssthresh", &[]) {
            Some(v) if v as u32 as u64 >= INFINITE_SSTHRESH => f64::INFINITY,
            Some(v) => (v as u32) as f64,
            // The program failed (one without ssthresh is refused when loaded, as Linux refuses
            // it): tcp_reno_ssthresh.
            None => (tcb.cwnd / 2.0).floor().max(2.0),
        }
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, ack: &Ack, now: Time) {
        let seq = (ack.ack_seq as u64 * tcb.mss_bytes as u64) & 0xffff_ffff;
        self.call(tcb, now, "cong_avoid", &[seq, ack.acked as u64]);
    }

    fn set_state(&mut self, tcb: &mut Tcb, state: CaState, now: Time) {
        // The stack's own write before the hook: tcp_init_cwnd_reduction (CWR, Recovery) and
        // tcp_enter_loss zero snd_cwnd_cnt, which tcp_cong_avoid_ai counts in.
        if matches!(state, CaState::Cwr | CaState::Recovery | CaState::Loss) {
            layout::put(self.vm.sock(), layout::sock().snd_cwnd_cnt, 0);
        }
        self.call(tcb, now, "set_state", &[ca_state(state)]);
    }

    fn cwnd_event(&mut self, tcb: &mut Tcb, event: CwndEvent, now: Time) {
        // enum tcp_ca_event: CA_EVENT_TX_START 0, CA_EVENT_CWND_RESTART 1,
        // CA_EVENT_COMPLETE_CWR 2, CA_EVENT_LOSS 3.
        let ev = match event {
            CwndEvent::TxStart => 0,
            CwndEvent::CwndRestart => 1,
            CwndEvent::CompleteCwr => 2,
            CwndEvent::Loss => 3,
            // A duplicate ACK is not a Linux event: its pkts_acked with nothing acknowledged
            // ran in in_ack_event, which the stacks call on every ACK.
            CwndEvent::DupAck => return,
        };
        self.call(tcb, now, "cwnd_event", &[ev]);
    }

    fn pkts_acked(&mut self, tcb: &mut Tcb, sample: &AckSample, now: Time) {
        self.sampled = true;
        let f = layout::sock();
        let s = self.vm.ack_sample();
        layout::put(s, f.pkts_acked, sample.acked as u64);
        // No sample is -1 (Linux: rtt_us < 0 when none was taken).
        let rtt = sample.rtt.map_or(-1i64, |d| (d.as_nanos() / 1000) as i64);
        layout::put(s, f.rtt_us, rtt as u64);
        layout::put(s, f.in_flight, sample.prior_in_flight as u64);
        if let Some(m) = self.modules() {
            m.ack = Some(*sample);
        }
        self.call(tcb, now, "pkts_acked", &[region_base(ACK_REGION)]);
    }

    fn undo_cwnd(&mut self, tcb: &mut Tcb) -> f64 {
        let now = Time::from_nanos(self.vm.now_ns);
        match self.call(tcb, now, "undo_cwnd", &[]) {
            Some(v) => (v as u32).max(1) as f64,
            // The program failed (undo_cwnd is required, as in Linux): tcp_reno_undo_cwnd.
            None => tcb.cwnd.max(tcb.prior_cwnd),
        }
    }

    fn error(&self) -> Option<String> {
        self.failed.clone()
    }

    /// A program with `cong_control` sets cwnd itself on every ACK, from the rate sample (Linux
    /// tcp_cong_control: cong_avoid is then not called).
    fn cong_control(&mut self, tcb: &mut Tcb, rs: &super::RateSample, now: Time) -> bool {
        if self.hooks[7].is_none() {
            return false;
        }
        let f = layout::sock();
        let us = |d: crate::time::Duration| d.as_nanos() / 1000;
        let none = -1i64 as u64;
        let r = self.vm.rate_sample();
        let prior_mstamp = now.as_nanos().saturating_sub(rs.ack_interval.as_nanos()) / 1000;
        layout::put(r, f.rs_prior_mstamp, prior_mstamp);
        layout::put(r, f.rs_prior_delivered, rs.prior_delivered);
        // TCPCB_DELIVERED_CE_MASK: the skb keeps delivered_ce in 20 bits.
        const CE_MASK: u64 = (1 << 20) - 1;
        layout::put(r, f.rs_prior_delivered_ce, rs.prior_delivered_ce & CE_MASK);
        layout::put(r, f.rs_delivered_ce, rs.delivered_ce & CE_MASK);
        layout::put(r, f.rs_delivered, rs.delivered.unwrap_or(none));
        layout::put(r, f.rs_interval_us, rs.interval.map_or(none, us));
        layout::put(r, f.rs_snd_interval_us, us(rs.send_interval));
        layout::put(r, f.rs_rcv_interval_us, us(rs.ack_interval));
        layout::put(r, f.rs_rtt_us, rs.rtt.map_or(none, us));
        layout::put(r, f.rs_losses, rs.losses as u64);
        layout::put(r, f.rs_acked_sacked, rs.acked_sacked as u64);
        layout::put(r, f.rs_prior_in_flight, rs.prior_in_flight as u64);
        layout::put(r, f.rs_is_app_limited, rs.is_app_limited as u64);
        layout::put(r, f.rs_is_retrans, rs.is_retrans as u64);
        if let Some(m) = self.modules() {
            m.rs = Some(*rs);
        }
        // cong_control(sk, ack, flag, rs): the ACK's sequence and flags are not tracked (0).
        self.call(tcb, now, "cong_control", &[0, 0, region_base(RATE_REGION)]);
        true
    }

    fn has_cong_control(&self) -> bool {
        self.hooks[7].is_some()
    }

    /// tcp_in_ack_event (Linux 6.18: every ACK, after tcp_clean_rtx_queue): `CA_ACK_WIN_UPDATE`
    /// for an ACK that advanced `snd_una` on the fast path; `CA_ACK_SLOWPATH`, and with it
    /// `CA_ACK_ECE`, for one with an ECN echo (its ECE flag takes it off the fast path).
    fn in_ack_event(&mut self, tcb: &mut Tcb, event: AckEvent, now: Time) {
        let duplicate = !std::mem::take(&mut self.sampled) && tcb.flight_size() > 0;
        if duplicate {
            // tcp_clean_rtx_queue calls pkts_acked for every ACK with data outstanding, a
            // duplicate that acknowledged nothing included.
            let f = layout::sock();
            let s = self.vm.ack_sample();
            layout::put(s, f.pkts_acked, 0);
            layout::put(s, f.rtt_us, u32::MAX as u64);
            layout::put(s, f.in_flight, tcb.in_flight as u64);
            let sample = AckSample {
                acked: 0,
                rtt: None,
                prior_in_flight: tcb.in_flight,
            };
            if let Some(m) = self.modules() {
                m.ack = Some(sample);
            }
            if self.hooks[5].is_some() {
                self.call(tcb, now, "pkts_acked", &[region_base(ACK_REGION)]);
            }
        }
        if self.hooks[8].is_none() {
            return;
        }
        // include/net/tcp.h: CA_ACK_SLOWPATH 1, CA_ACK_WIN_UPDATE 2, CA_ACK_ECE 4.
        let flags = if event.ece { 1 | 4 } else { 0 } | if event.win_update { 2 } else { 0 };
        self.call(tcb, now, "in_ack_event", &[flags]);
    }

    fn needs_ecn(&self) -> bool {
        self.needs_ecn
    }

    /// `bpf_get_prandom_u32` draws from the connection's stream, and so does a kernel module
    /// the program calls (BBR's ProbeBW phase), as the model would.
    fn seed(&mut self, mut rng: crate::rng::Rng) {
        if let Some(m) = self.modules() {
            m.seed(rng.clone());
        }
        self.vm.prandom = rng.next_u64();
    }

    /// The model of the kernel's BBR a program runs through bbr_main, if it does.
    fn model_state(&self, tcb: &Tcb) -> Option<super::ModelState> {
        let m = self
            .vm
            .modules
            .as_ref()?
            .as_any()
            .downcast_ref::<modules::Modules>()?;
        m.model_state(tcb)
    }

    fn in_startup(&self, tcb: &Tcb) -> bool {
        if self.phase.is_none() && self.startup {
            return tcb.in_slow_start();
        }
        self.startup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads loading one object at once all get the same copy, so that one run's flow entries
    /// share its registration (a second copy split Careful Resume's saved state from its next
    /// connection, once in a few runs of the test suite).
    #[test]
    fn threads_loading_one_object_at_once_get_the_same_copy() {
        let built = Controllers::built().expect("the eBPF object is built").elf;
        let key = format!("concurrent-load-test-{}", std::process::id());
        let barrier = std::sync::Barrier::new(4);
        let loads: Vec<Arc<Loaded>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        load(&key, built, Some("startlab")).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for l in &loads[1..] {
            assert!(Arc::ptr_eq(&loads[0], l), "two copies of one object");
        }
    }

    /// An object rebuilt in place at the same length is loaded again, not served from the cache.
    #[test]
    fn a_rebuilt_object_of_the_same_length_is_loaded_again() {
        let built = Controllers::built().expect("the eBPF object is built").elf;
        // The same object with another struct_ops name (the 16-byte `name` member).
        let at = built
            .windows(16)
            .position(|w| w == b"startlab\0\0\0\0\0\0\0\0")
            .expect("the struct_ops name");
        let mut renamed = built.to_vec();
        renamed[at..at + 8].copy_from_slice(b"rebuiltA");
        let path =
            std::env::temp_dir().join(format!("startlab-cache-{}.bpf.o", std::process::id()));
        let name = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let f = factory(
                &format!("{}#startlab", path.to_str().unwrap()),
                &Params::new(),
                crate::cc::registry::DEFAULT_STARTUP,
                &Params::new(),
            )
            .unwrap();
            f.loaded.name.clone()
        };
        assert_eq!(name(built), "startlab");
        assert_eq!(name(&renamed), "rebuiltA");
        renamed[at..at + 8].copy_from_slice(b"rebuiltB");
        assert_eq!(name(&renamed), "rebuiltB");
        assert_eq!(name(built), "startlab");
        std::fs::remove_file(&path).unwrap();
    }
}
