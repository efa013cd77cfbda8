//! An eBPF object file made ready for the simulator's virtual machine (`vm`): its programs
//! with every relocation applied (maps, data sections, kernel functions, calls between
//! functions, and CO-RE field accesses resolved against the simulator's `layout`), its
//! `struct_ops` table (which program is which hook), its maps and data sections.
//!
//! What libbpf does when it loads an object into the kernel, for what a congestion control
//! uses; anything else is refused by name before a run.

use crate::btf::{Btf, Type};
pub use crate::isa::Insn;
use crate::isa::{self, Op, CALL_LOCAL, CALL_OP, LDDW, LDX, ST, STX};
use crate::layout;
pub use crate::memory::data_address;
use object::{Object as _, ObjectSection as _, ObjectSymbol as _, RelocationTarget};
use std::collections::HashMap;

/// What a `call` calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    Helper(u32),
    /// A kernel function, by name (`tcp_slow_start`, …).
    Kfunc(String),
    /// A function of the same program, at this instruction index.
    Local(usize),
}

/// A program: one function with the subprograms it calls appended.
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub insns: Vec<Insn>,
    /// The callee of each `call` instruction, by index.
    pub calls: HashMap<usize, Callee>,
    /// The instructions decoded for the interpreter (`isa::decode`), one per slot.
    pub ops: Vec<Op>,
    /// The callees of `calls`, each once, and each call's index among them.
    pub callees: Vec<Callee>,
    pub callees_index: HashMap<usize, usize>,
}

/// A map the programs use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapDef {
    pub name: String,
    /// `BPF_MAP_TYPE_*`.
    pub kind: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    /// The BTF type of a value declared with `__type(value, T)`; 0 for one declared by size.
    pub value_type: u32,
}

pub const MAP_TYPE_HASH: u32 = 1;
pub const MAP_TYPE_ARRAY: u32 = 2;
pub const MAP_TYPE_PERCPU_HASH: u32 = 5;
pub const MAP_TYPE_PERCPU_ARRAY: u32 = 6;
pub const MAP_TYPE_LRU_HASH: u32 = 9;
pub const MAP_TYPE_SK_STORAGE: u32 = 24;
pub const MAP_TYPE_RINGBUF: u32 = 27;

/// An array: plain or per-CPU. The simulator is one CPU, so a per-CPU map holds one value per
/// key, the one a program on CPU 0 sees.
pub fn is_array(kind: u32) -> bool {
    matches!(kind, MAP_TYPE_ARRAY | MAP_TYPE_PERCPU_ARRAY)
}

/// A hash map: plain, per-CPU (one CPU, as for arrays) or LRU.
pub fn is_hash(kind: u32) -> bool {
    matches!(
        kind,
        MAP_TYPE_HASH | MAP_TYPE_PERCPU_HASH | MAP_TYPE_LRU_HASH
    )
}

/// A map whose values the program reaches by key: an array or a hash map.
pub fn is_keyed(kind: u32) -> bool {
    is_array(kind) || is_hash(kind)
}

/// `PCPU_MIN_UNIT_SIZE`: a per-CPU map's values are at most this large (rounded up to 8).
const PCPU_MIN_UNIT_SIZE: u32 = 32 << 10;

/// The tag of a map reference in a register (a map is not memory the program can read).
pub const MAP_TAG: u64 = 0xfeed_0000_0000_0000;

/// A data section the programs address (`.rodata`, `.bss`, `.data`, strings).
#[derive(Clone, Debug)]
pub struct DataSection {
    pub name: String,
    pub bytes: Vec<u8>,
    pub writable: bool,
}

/// A loaded object.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub programs: Vec<Program>,
    /// `struct tcp_congestion_ops` member name → program index.
    pub hooks: HashMap<String, usize>,
    /// The controller's name (`.name` of the struct_ops).
    pub name: String,
    /// Its `.flags` (`TCP_CONG_NON_RESTRICTED`, [`TCP_CONG_NEEDS_ECN`]).
    pub flags: u32,
    pub maps: Vec<MapDef>,
    pub data: Vec<DataSection>,
    pub btf: Btf,
    /// The `__kconfig` externs the programs read: name and offset in the data section
    /// `.kconfig` (which [`Loaded::write_kconfig`] fills).
    pub kconfig: Vec<(String, u64)>,
}

/// The kernel configuration values (`extern ... __kconfig`) the simulator provides, as
/// libbpf fills them from the running kernel's configuration: `CONFIG_HZ` is the jiffies rate
/// of the flow (`tcp.hz`), `LINUX_KERNEL_VERSION` is 6.18.0 (`KERNEL_VERSION(6, 18, 0)`).
pub const KCONFIG: &[&str] = &["CONFIG_HZ", "LINUX_KERNEL_VERSION"];

/// The value of kernel configuration `name` for a flow whose kernel ticks at `hz`.
pub fn kconfig_value(name: &str, hz: u64) -> Option<u64> {
    match name {
        "CONFIG_HZ" => Some(hz),
        "LINUX_KERNEL_VERSION" => Some((6 << 16) | (18 << 8)),
        _ => None,
    }
}

impl Loaded {
    /// The kernel modules' functions ([`MODULE_KFUNCS`]) the programs call, each once.
    pub fn module_kfuncs(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .programs
            .iter()
            .flat_map(|p| p.callees.iter())
            .filter_map(|c| match c {
                Callee::Kfunc(n) if MODULE_KFUNCS.contains(&n.as_str()) => Some(n.as_str()),
                _ => None,
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Writes the `__kconfig` values for a kernel ticking at `hz` into `data` (the data
    /// sections as a connection starts them), 8 bytes each, little-endian.
    pub fn write_kconfig(&self, data: &mut [Vec<u8>], hz: u64) {
        let Some(i) = self.data.iter().position(|d| d.name == ".kconfig") else {
            return;
        };
        for (name, off) in &self.kconfig {
            if let Some(v) = kconfig_value(name, hz) {
                data[i][*off as usize..*off as usize + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
    }
}

/// The largest object file read, and the largest data section or map value it may declare: far
/// beyond any congestion control, small enough that no file can exhaust the process.
pub const MAX_OBJECT_BYTES: u64 = 64 << 20;
pub const MAX_SECTION_BYTES: u64 = 16 << 20;

/// Reads an object file of at most [`MAX_OBJECT_BYTES`] (a path to a device or a huge file is
/// refused, not read).
pub fn read_object(path: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_OBJECT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_OBJECT_BYTES {
        return Err(format!(
            "larger than {} MiB, which no eBPF controller is",
            MAX_OBJECT_BYTES >> 20
        ));
    }
    Ok(bytes)
}

/// The helpers the VM provides, by number (include/uapi/linux/bpf.h, `enum bpf_func_id`).
pub mod helper {
    pub const MAP_LOOKUP_ELEM: u32 = 1;
    pub const MAP_UPDATE_ELEM: u32 = 2;
    pub const MAP_DELETE_ELEM: u32 = 3;
    pub const KTIME_GET_NS: u32 = 5;
    pub const SETSOCKOPT: u32 = 49;
    pub const TCP_SEND_ACK: u32 = 116;
    pub const TRACE_PRINTK: u32 = 6;
    pub const GET_PRANDOM_U32: u32 = 7;
    pub const GET_SMP_PROCESSOR_ID: u32 = 8;
    pub const GET_NUMA_NODE_ID: u32 = 42;
    pub const GETSOCKOPT: u32 = 57;
    pub const KTIME_GET_BOOT_NS: u32 = 125;
    pub const KTIME_GET_COARSE_NS: u32 = 160;
    pub const SK_STORAGE_GET: u32 = 107;
    pub const SK_STORAGE_DELETE: u32 = 108;
    pub const JIFFIES64: u32 = 118;
    pub const RINGBUF_OUTPUT: u32 = 130;
    pub const RINGBUF_RESERVE: u32 = 131;
    pub const RINGBUF_SUBMIT: u32 = 132;
    pub const RINGBUF_DISCARD: u32 = 133;
    /// bpf_sk_storage_get's flag that creates the storage.
    pub const SK_STORAGE_GET_F_CREATE: u64 = 1;
}

/// The helpers the VM provides, with their names.
pub const HELPERS: &[(u32, &str)] = &[
    (helper::MAP_LOOKUP_ELEM, "bpf_map_lookup_elem"),
    (helper::MAP_UPDATE_ELEM, "bpf_map_update_elem"),
    (helper::MAP_DELETE_ELEM, "bpf_map_delete_elem"),
    (helper::KTIME_GET_NS, "bpf_ktime_get_ns"),
    (helper::GET_SMP_PROCESSOR_ID, "bpf_get_smp_processor_id"),
    (helper::TRACE_PRINTK, "bpf_trace_printk"),
    (helper::GET_PRANDOM_U32, "bpf_get_prandom_u32"),
    (helper::SETSOCKOPT, "bpf_setsockopt"),
    (helper::GETSOCKOPT, "bpf_getsockopt"),
    (helper::KTIME_GET_BOOT_NS, "bpf_ktime_get_boot_ns"),
    (helper::KTIME_GET_COARSE_NS, "bpf_ktime_get_coarse_ns"),
    (helper::GET_NUMA_NODE_ID, "bpf_get_numa_node_id"),
    (helper::TCP_SEND_ACK, "bpf_tcp_send_ack"),
    (helper::SK_STORAGE_GET, "bpf_sk_storage_get"),
    (helper::SK_STORAGE_DELETE, "bpf_sk_storage_delete"),
    (helper::JIFFIES64, "bpf_jiffies64"),
    (helper::RINGBUF_OUTPUT, "bpf_ringbuf_output"),
    (helper::RINGBUF_RESERVE, "bpf_ringbuf_reserve"),
    (helper::RINGBUF_SUBMIT, "bpf_ringbuf_submit"),
    (helper::RINGBUF_DISCARD, "bpf_ringbuf_discard"),
];

/// Kernel functions the VM provides (net/ipv4/bpf_tcp_ca.c's set, as far as a controller of
/// this simulator needs them).
pub const KFUNCS: &[&str] = &[
    "tcp_slow_start",
    "tcp_cong_avoid_ai",
    "tcp_reno_ssthresh",
    "tcp_reno_cong_avoid",
    "tcp_reno_undo_cwnd",
];

/// The kfuncs Linux 6.18 registers for struct_ops programs from its own congestion-control
/// modules (`tcp_cubic.c`'s and `tcp_bbr.c`'s BTF kfunc sets): the kernel's algorithm on the
/// program's socket. The simulator runs its own models of those algorithms for them
/// (`vm::KernelModules`).
pub const MODULE_KFUNCS: &[&str] = &[
    "cubictcp_init",
    "cubictcp_recalc_ssthresh",
    "cubictcp_cong_avoid",
    "cubictcp_state",
    "cubictcp_cwnd_event",
    "cubictcp_acked",
    "bbr_init",
    "bbr_main",
    "bbr_sndbuf_expand",
    "bbr_undo_cwnd",
    "bbr_cwnd_event",
    "bbr_ssthresh",
    "bbr_min_tso_segs",
    "bbr_set_state",
];

/// `tcp_dctcp.c`'s kfuncs, which Linux registers too but the simulator has no model of yet.
const DCTCP_KFUNCS: &[&str] = &[
    "dctcp_init",
    "dctcp_update_alpha",
    "dctcp_cwnd_event",
    "dctcp_ssthresh",
    "dctcp_cwnd_undo",
    "dctcp_state",
];

/// Whether the simulator provides kernel function `name`.
pub fn provides_kfunc(name: &str) -> bool {
    KFUNCS.contains(&name) || MODULE_KFUNCS.contains(&name)
}

fn err<T>(m: impl Into<String>) -> Result<T, String> {
    Err(m.into())
}

impl Loaded {
    /// Loads `elf`, whose only `struct_ops` is the controller, or says what in it the
    /// simulator does not provide.
    pub fn parse(elf: &[u8]) -> Result<Loaded, String> {
        Self::parse_ops(elf, None)
    }

    /// Loads `elf` with its `struct_ops` variable `ops` as the controller (`None`: the only
    /// one; an object with several must name one).
    pub fn parse_ops(elf: &[u8], ops: Option<&str>) -> Result<Loaded, String> {
        let file = object::File::parse(elf).map_err(|e| format!("not an ELF object: {e}"))?;
        let btf_bytes = file
            .section_by_name(".BTF")
            .ok_or("the object has no BTF (compile with -g)")?;
        let mut btf = Btf::parse(btf_bytes.data().map_err(|e| e.to_string())?)?;
        fix_offsets(&file, &mut btf);
        // Data sections, in section order.
        let mut data = Vec::new();
        let mut data_index: HashMap<object::SectionIndex, usize> = HashMap::new();
        for s in file.sections() {
            let name = s.name().unwrap_or("").to_string();
            if name == ".rodata"
                || name.starts_with(".rodata.")
                || name == ".bss"
                || name == ".data"
                || name.starts_with(".data.")
            {
                if s.size() > MAX_SECTION_BYTES {
                    return err(format!(
                        "section {name} has {} bytes; at most {} MiB are provided",
                        s.size(),
                        MAX_SECTION_BYTES >> 20
                    ));
                }
                let bytes = if name == ".bss" {
                    vec![0u8; s.size() as usize]
                } else {
                    s.data().map_err(|e| e.to_string())?.to_vec()
                };
                data_index.insert(s.index(), data.len());
                data.push(DataSection {
                    writable: !name.starts_with(".rodata"),
                    name,
                    bytes,
                });
            }
        }
        // A kernel function must be declared as one (`extern ... __ksym`, which puts its
        // prototype in the object's BTF): libbpf refuses a call it finds no BTF for.
        for sym in file.symbols().filter(|s| s.is_undefined()) {
            let n = sym.name().unwrap_or("");
            if provides_kfunc(n) && !btf.declares(n) {
                return err(format!("the program calls {n} without declaring it a kernel function (extern ... __ksym): its BTF has no prototype of it, and Linux's loader (libbpf) refuses the object"));
            }
        }
        // The kernel configuration the programs read (`__kconfig` externs): a read-only section
        // of its own, 8 bytes per value.
        let mut kconfig: Vec<(String, u64)> = Vec::new();
        for sym in file.symbols().filter(|s| s.is_undefined()) {
            let n = sym.name().unwrap_or("");
            if !(n.starts_with("CONFIG_") || n.starts_with("LINUX_"))
                || kconfig.iter().any(|k| k.0 == n)
            {
                continue;
            }
            if !KCONFIG.contains(&n) {
                return err(format!("the program reads the kernel configuration value {n} (__kconfig), which the simulator does not provide (it has {})", KCONFIG.join(", ")));
            }
            kconfig.push((n.to_string(), 8 * kconfig.len() as u64));
        }
        let kconfig_section = (!kconfig.is_empty()).then(|| {
            data.push(DataSection {
                name: ".kconfig".into(),
                bytes: vec![0; 8 * kconfig.len()],
                writable: false,
            });
            data.len() - 1
        });
        let kconfig_at: HashMap<String, (usize, u64)> = kconfig
            .iter()
            .filter_map(|(n, off)| kconfig_section.map(|i| (n.clone(), (i, *off))))
            .collect();
        // Maps, from the .maps section's BTF.
        let maps = map_defs(&btf)?;
        let map_index = |name: &str| maps.iter().position(|m| m.name == name);
        // Code sections: every FUNC symbol is a function.
        let mut functions: Vec<(object::SectionIndex, u64, u64, String)> = file
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
            .filter_map(|s| {
                Some((
                    s.section_index()?,
                    s.address(),
                    s.size(),
                    s.name().ok()?.to_string(),
                ))
            })
            .collect();
        functions.sort_by_key(|f| (f.0 .0, f.1));
        let core = core_relocations(&file, &btf)?;
        let mut programs = Vec::new();
        let mut by_symbol = HashMap::new();
        for (section, start, size, name) in &functions {
            let sec = file.section_by_index(*section).map_err(|e| e.to_string())?;
            let sec_name = sec.name().unwrap_or("").to_string();
            if sec_name == ".text" {
                continue; // subprograms: appended to the programs that call them
            }
            let program = link(
                &file,
                &functions,
                *section,
                *start,
                *size,
                name,
                &data_index,
                &kconfig_at,
                &map_index,
                &core,
            )?;
            by_symbol.insert(name.clone(), programs.len());
            programs.push(program);
            let _ = sec_name;
        }
        // The struct_ops table: which program each member points at.
        let (hooks, name, flags) = struct_ops(&file, &btf, &by_symbol, ops)?;
        validate_hooks(&hooks, &name)?;
        validate_release(&hooks, &programs, &name)?;
        validate_flags(flags, &name)?;
        Ok(Loaded {
            programs,
            hooks,
            name,
            flags,
            maps,
            data,
            btf,
            kconfig,
        })
    }
}

/// The data sections' variable offsets in `btf`, from the symbols (see `Btf::fix_variable_offsets`).
pub fn fix_offsets(file: &object::File, btf: &mut Btf) {
    let symbols: Vec<(String, String, u32)> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Data)
        .filter_map(|s| {
            let section = file.section_by_index(s.section_index()?).ok()?;
            Some((
                section.name().ok()?.to_string(),
                s.name().ok()?.to_string(),
                s.address() as u32,
            ))
        })
        .collect();
    btf.fix_variable_offsets(&|section, var| {
        symbols
            .iter()
            .find(|(s, v, _)| s == section && v == var)
            .map(|x| x.2)
    });
}

/// Refuses an array or hash map the kernel would not create (`array_map_alloc_check`,
/// `htab_map_alloc_check`: a key of 4 bytes for an array, entries and values not empty, a key
/// at most MAX_BPF_STACK), or one larger than the simulator gives a map.
fn check_keyed_map(def: &MapDef) -> Result<(), String> {
    let name = &def.name;
    if def.max_entries == 0 || def.value_size == 0 {
        return err(format!("map \"{name}\" has max_entries {} and values of {} bytes; the kernel refuses an empty map (EINVAL)", def.max_entries, def.value_size));
    }
    let per_cpu = matches!(def.kind, MAP_TYPE_PERCPU_ARRAY | MAP_TYPE_PERCPU_HASH);
    if per_cpu && def.value_size.div_ceil(8) * 8 > PCPU_MIN_UNIT_SIZE {
        return err(format!(
            "per-CPU map \"{name}\" has values of {} bytes; the kernel allows at most {PCPU_MIN_UNIT_SIZE} (PCPU_MIN_UNIT_SIZE, E2BIG)",
            def.value_size
        ));
    }
    if is_array(def.kind) && def.key_size != 4 {
        return err(format!(
            "array map \"{name}\" has keys of {} bytes; an array's key is a 4-byte index (EINVAL)",
            def.key_size
        ));
    }
    if def.key_size == 0 || def.key_size > 512 {
        return err(format!(
            "map \"{name}\" has keys of {} bytes; 1 to 512 (MAX_BPF_STACK) are allowed",
            def.key_size
        ));
    }
    let bytes = def.max_entries as u64 * (def.value_size as u64 + def.key_size as u64);
    if bytes > MAX_SECTION_BYTES {
        return err(format!(
            "map \"{name}\" needs {bytes} bytes ({} entries); at most {} MiB are provided",
            def.max_entries,
            MAX_SECTION_BYTES >> 20
        ));
    }
    Ok(())
}

/// The maps declared in `.maps` (libbpf's BTF-defined maps: `__uint(type, N)` is a pointer to
/// an array of N elements, `__type(value, T)` a pointer to T).
fn map_defs(btf: &Btf) -> Result<Vec<MapDef>, String> {
    let Some(Type::DataSec { vars, .. }) = (1..)
        .map_while(|i| btf.get(i))
        .find(|t| matches!(t, Type::DataSec { name, .. } if name == ".maps"))
        .cloned()
    else {
        return Ok(Vec::new());
    };
    let mut maps = Vec::new();
    for (var, _, _) in vars {
        let Some(Type::Var { name, ty }) = btf.get(var).cloned() else {
            continue;
        };
        let mut def = MapDef {
            name,
            kind: 0,
            key_size: 0,
            value_size: 0,
            max_entries: 0,
            value_type: 0,
        };
        for m in btf.members(ty) {
            let pointee = match btf.get(btf.resolved(m.ty)) {
                Some(Type::Ptr { ty }) => *ty,
                _ => continue,
            };
            let array_len = match btf.get(btf.resolved(pointee)) {
                Some(Type::Array { len, .. }) => Some(*len),
                _ => None,
            };
            match m.name.as_str() {
                "type" => def.kind = array_len.unwrap_or(0),
                "max_entries" => def.max_entries = array_len.unwrap_or(0),
                "key" => def.key_size = btf.size_of(pointee).unwrap_or(0),
                "value" => {
                    def.value_size = btf.size_of(pointee).unwrap_or(0);
                    def.value_type = pointee;
                }
                "key_size" => def.key_size = array_len.unwrap_or(0),
                "value_size" => def.value_size = array_len.unwrap_or(0),
                _ => {}
            }
        }
        if def.value_size as u64 > MAX_SECTION_BYTES {
            return err(format!(
                "map \"{}\" has values of {} bytes; at most {} MiB are provided",
                def.name,
                def.value_size,
                MAX_SECTION_BYTES >> 20
            ));
        }
        if !(is_keyed(def.kind) || matches!(def.kind, MAP_TYPE_SK_STORAGE | MAP_TYPE_RINGBUF)) {
            return err(format!("map \"{}\" is of type {}, which the simulator does not provide (it has hash maps, arrays, their per-CPU versions, LRU hash maps, socket storage and ring buffers)", def.name, def.kind));
        }
        if is_keyed(def.kind) {
            check_keyed_map(&def)?;
        }
        maps.push(def);
    }
    Ok(maps)
}

/// A CO-RE relocation, resolved: patch instruction `insn_off` (bytes, in `section`) with `value`.
struct CoreFix {
    value: i64,
}

/// The CO-RE relocations of `.BTF.ext` (Documentation/bpf/btf.rst, "BTF.ext section"), each
/// resolved against the simulator's layout: (section name, instruction byte offset) → value.
fn core_relocations(
    file: &object::File,
    btf: &Btf,
) -> Result<HashMap<(String, u64), CoreFix>, String> {
    let mut fixes = HashMap::new();
    let Some(ext) = file.section_by_name(".BTF.ext") else {
        return Ok(fixes);
    };
    let b = ext.data().map_err(|e| e.to_string())?;
    let u32_at = |at: usize| -> Result<u32, String> {
        b.get(at..at + 4)
            .map(|s| u32::from_le_bytes(s.try_into().unwrap()))
            .ok_or_else(|| "truncated .BTF.ext".to_string())
    };
    let hdr_len = u32_at(4)? as usize;
    if hdr_len < 32 {
        return Ok(fixes); // no CO-RE relocations in this version of the header
    }
    let (off, len) = (u32_at(24)? as usize, u32_at(28)? as usize);
    if len == 0 {
        // An object that reads no field through CO-RE has an empty subsection: not even the
        // record size that would open it (libbpf's btf_ext__new skips it the same way).
        return Ok(fixes);
    }
    let start = hdr_len + off;
    let rec_size = u32_at(start)? as usize;
    if rec_size < 16 {
        return err(format!(
            "CO-RE relocation records of {rec_size} bytes (at least 16)"
        ));
    }
    let mut at = start + 4;
    while at < start + len {
        let section = btf.string_at(u32_at(at)?).unwrap_or("").to_string();
        let n = u32_at(at + 4)? as usize;
        at += 8;
        if n > len / rec_size {
            return err(format!("{n} CO-RE relocations do not fit in .BTF.ext"));
        }
        for _ in 0..n {
            let (insn_off, type_id, access_off, kind) = (
                u32_at(at)?,
                u32_at(at + 4)?,
                u32_at(at + 8)?,
                u32_at(at + 12)?,
            );
            at += rec_size;
            let access = btf.string_at(access_off).unwrap_or("");
            let value = resolve_core(btf, type_id, access, kind)?;
            fixes.insert((section.clone(), insn_off as u64), CoreFix { value });
        }
    }
    Ok(fixes)
}

/// The value a CO-RE relocation takes in the simulator's layout.
fn resolve_core(btf: &Btf, type_id: u32, access: &str, kind: u32) -> Result<i64, String> {
    let root = btf.name_of(btf.resolved(type_id)).to_string();
    let indices: Vec<u32> = access.split(':').filter_map(|s| s.parse().ok()).collect();
    // Walk the access string: the first index is into the pointer, the rest are members (or
    // array elements) of the local types.
    let mut ty = btf.resolved(type_id);
    let mut path = String::new();
    for &i in indices.iter().skip(1) {
        match btf.get(ty) {
            Some(Type::Struct { members, .. }) | Some(Type::Union { members, .. }) => {
                let m = members.get(i as usize).ok_or_else(|| {
                    format!("a relocation on {root} names member {i}, which it lacks")
                })?;
                if !m.name.is_empty() {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&m.name);
                }
                ty = btf.resolved(m.ty);
            }
            Some(Type::Array { elem, .. }) => {
                path.push_str(&format!("[{i}]"));
                ty = btf.resolved(*elem);
            }
            _ => {
                return err(format!(
                    "a relocation on {root} goes through a type that is not a struct or array"
                ))
            }
        }
    }
    // Kinds: enum bpf_core_relo_kind (include/uapi/linux/bpf.h).
    if kind == 2 {
        return Ok(layout::field(&root, &path).is_some() as i64); // FIELD_EXISTS
    }
    if !(0..=5).contains(&kind) {
        return err(format!("CO-RE relocation of kind {kind} on {root} (type and enum relocations are not provided)"));
    }
    let f = layout::field(&root, &path).ok_or_else(|| format!("the program reads {root}.{path}, which the simulator does not provide (docs/bpf.md lists what it does)"))?;
    Ok(match kind {
        0 => f.offset as i64,
        1 => f.size as i64,
        3 => f.signed as i64,
        // A bit field of `bits` bits at bit 0 of its byte, read as `size` bytes into a u64:
        // shift left by 64 - bits, then right by 64 - bits (bpf_core_read.h).
        4 => 64 - if f.bits > 0 { f.bits } else { f.size * 8 } as i64,
        _ => 64 - if f.bits > 0 { f.bits } else { f.size * 8 } as i64,
    })
}

/// Decodes and relocates the function `name` at `start..start + size` of `section`, with the
/// subprograms of `.text` it calls appended.
#[allow(clippy::too_many_arguments)]
fn link(
    file: &object::File,
    functions: &[(object::SectionIndex, u64, u64, String)],
    section: object::SectionIndex,
    start: u64,
    size: u64,
    name: &str,
    data_index: &HashMap<object::SectionIndex, usize>,
    kconfig: &HashMap<String, (usize, u64)>,
    map_index: &dyn Fn(&str) -> Option<usize>,
    core: &HashMap<(String, u64), CoreFix>,
) -> Result<Program, String> {
    let mut program = Program {
        name: name.to_string(),
        insns: Vec::new(),
        calls: HashMap::new(),
        ops: Vec::new(),
        callees: Vec::new(),
        callees_index: HashMap::new(),
    };
    // (section, function start) of each piece appended, and where it begins in `insns`.
    let mut pieces: Vec<(object::SectionIndex, u64, u64)> = vec![(section, start, size)];
    let mut placed: HashMap<(object::SectionIndex, u64), usize> = HashMap::new();
    let mut i = 0;
    while i < pieces.len() {
        let (sec_idx, fstart, fsize) = pieces[i];
        i += 1;
        let sec = file.section_by_index(sec_idx).map_err(|e| e.to_string())?;
        let sec_name = sec.name().unwrap_or("").to_string();
        let bytes = sec.data().map_err(|e| e.to_string())?;
        let base = program.insns.len();
        placed.insert((sec_idx, fstart), base);
        let code = bytes
            .get(fstart as usize..(fstart + fsize) as usize)
            .ok_or("a function lies outside its section")?;
        let relocs: HashMap<u64, (object::Relocation, Option<object::Symbol>)> = sec
            .relocations()
            .filter(|(off, _)| *off >= fstart && *off < fstart + fsize)
            .map(|(off, r)| {
                let sym = match r.target() {
                    RelocationTarget::Symbol(s) => file.symbol_by_index(s).ok(),
                    _ => None,
                };
                (off, (r, sym))
            })
            .collect();
        let mut k = 0usize;
        const N: usize = Insn::BYTES;
        while k * N < code.len() {
            let Some(b) = code.get(k * N..k * N + N) else {
                return err("a function's code is not whole instructions");
            };
            let off_in_section = fstart + (k * N) as u64;
            let mut insn = Insn::from_le_bytes(b.try_into().unwrap());
            let pc = program.insns.len();
            if insn.op == LDDW {
                // The high half of the value is the second slot's immediate (RFC 9669 §3.2).
                let hi = code
                    .get(k * N + 12..k * N + 16)
                    .ok_or("a 64-bit load is cut short")?;
                let lo = insn.imm as u32 as u64;
                let hi = u32::from_le_bytes(hi.try_into().unwrap()) as u64;
                insn.imm = (lo | hi << 32) as i64;
                if let Some((_, Some(sym))) = relocs.get(&off_in_section) {
                    let sym_name = sym.name().unwrap_or("");
                    let target_section = sym.section_index();
                    if let Some(m) = map_index(sym_name) {
                        insn.imm = (MAP_TAG | m as u64) as i64;
                    } else if let Some(&(d, off)) =
                        kconfig.get(sym_name).filter(|_| sym.is_undefined())
                    {
                        insn.imm = data_address(d, off + lo) as i64;
                    } else if let Some(d) = target_section.and_then(|s| data_index.get(&s)) {
                        // A variable: its symbol's value; a section symbol: the addend in imm.
                        let offset = if sym.kind() == object::SymbolKind::Section {
                            lo
                        } else {
                            sym.address() + lo
                        };
                        insn.imm = data_address(*d, offset) as i64;
                    } else {
                        return err(format!("{name}: instruction {k} loads the address of \"{sym_name}\", which the simulator does not provide"));
                    }
                } else if insn.src != isa::LDDW_IMM64 {
                    return err(format!(
                        "{name}: instruction {k} is a 64-bit load of kind {} without a relocation",
                        insn.src
                    ));
                }
                program.insns.push(insn);
                program.insns.push(Insn::default());
                k += 2;
                continue;
            }
            if let Some(fix) = core.get(&(sec_name.clone(), off_in_section)) {
                // A field offset goes into a load's or store's offset, anything else (a size, an
                // existence) into the immediate.
                match insn.class() {
                    LDX | ST | STX => {
                        insn.off = i16::try_from(fix.value)
                            .map_err(|_| "a field offset does not fit".to_string())?
                    }
                    _ => insn.imm = fix.value,
                }
            }
            if insn.op == CALL_OP {
                let callee = match relocs.get(&off_in_section) {
                    Some((_, Some(sym))) if sym.is_undefined() => {
                        let n = sym.name().unwrap_or("").to_string();
                        if DCTCP_KFUNCS.contains(&n.as_str()) {
                            return err(format!("{name} calls the kernel function {n}, tcp_dctcp.c's: the simulator has no model of DCTCP yet to run it (it has tcp_cong.c's {} and the cubictcp_* and bbr_* of tcp_cubic.c and tcp_bbr.c)", KFUNCS.join(", ")));
                        }
                        if !provides_kfunc(&n) {
                            return err(format!("{name} calls the kernel function {n}, which the simulator does not provide (it has {}, and the cubictcp_* and bbr_* of tcp_cubic.c and tcp_bbr.c)", KFUNCS.join(", ")));
                        }
                        Callee::Kfunc(n)
                    }
                    Some((_, Some(sym))) => {
                        // A call into another function (libbpf's rule: the target is
                        // instruction imm + 1 of the symbol's section, from the symbol).
                        let target_sec = sym
                            .section_index()
                            .ok_or("a call to a symbol without a section")?;
                        let from = if sym.kind() == object::SymbolKind::Section {
                            0
                        } else {
                            sym.address() as i64
                        };
                        let target = (from + (insn.imm + 1) * Insn::BYTES as i64) as u64;
                        let f = functions
                            .iter()
                            .find(|(s, a, _, _)| *s == target_sec && *a == target)
                            .ok_or_else(|| format!("{name}: instruction {k} calls an address that starts no function"))?;
                        let piece = match pieces.iter().position(|p| p.0 == f.0 && p.1 == f.1) {
                            Some(i) => i,
                            None => {
                                pieces.push((f.0, f.1, f.2));
                                pieces.len() - 1
                            }
                        };
                        Callee::Local(usize::MAX - piece)
                    }
                    _ if insn.src == CALL_LOCAL => {
                        // A call within this function (relative, no relocation).
                        Callee::Local(((pc as i64) + insn.imm + 1).max(0) as usize)
                    }
                    _ => {
                        let id = insn.imm as u32;
                        if !HELPERS.iter().any(|(h, _)| *h == id) {
                            return err(format!("{name} calls helper {id}, which the simulator does not provide (it has {})", HELPERS.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")));
                        }
                        Callee::Helper(id)
                    }
                };
                program.calls.insert(pc, callee);
            }
            program.insns.push(insn);
            k += 1;
        }
        let _ = base;
    }
    // Calls to appended pieces: their start in `insns`.
    let starts: Vec<usize> = pieces.iter().map(|p| placed[&(p.0, p.1)]).collect();
    for c in program.calls.values_mut() {
        if let Callee::Local(t) = c {
            if *t > usize::MAX / 2 {
                *t = starts[usize::MAX - *t];
            }
        }
    }
    for (&pc, c) in &program.calls {
        let i = match program.callees.iter().position(|x| x == c) {
            Some(i) => i,
            None => {
                program.callees.push(c.clone());
                program.callees.len() - 1
            }
        };
        program.callees_index.insert(pc, i);
    }
    program.ops = isa::decode(&program.name, &program.insns, &program.callees_index)?;
    Ok(program)
}

/// `include/net/tcp.h`: the controller needs ECN (DCTCP): the connection negotiates it whatever
/// `net.ipv4.tcp_ecn` says and its receiver echoes each segment's CE state.
pub const TCP_CONG_NEEDS_ECN: u32 = 0x2;
/// `TCP_CONG_MASK`: the flags a controller may have (`TCP_CONG_NON_RESTRICTED` 0x1 and
/// `TCP_CONG_NEEDS_ECN`).
const TCP_CONG_MASK: u32 = 0x1 | TCP_CONG_NEEDS_ECN;

/// Refuses flags Linux would refuse (`bpf_tcp_ca_init_member`: any outside `TCP_CONG_MASK`).
fn validate_flags(flags: u32, name: &str) -> Result<(), String> {
    if flags & !TCP_CONG_MASK != 0 {
        return err(format!("the struct_ops \"{name}\" has flags {flags:#x}; Linux accepts only TCP_CONG_NON_RESTRICTED (0x1) and TCP_CONG_NEEDS_ECN (0x2) (bpf_tcp_ca_init_member)"));
    }
    Ok(())
}

/// Refuses a name Linux would not copy (`bpf_tcp_ca_init_member` → `bpf_obj_name_cpy`, EINVAL):
/// empty, without its NUL within `TCP_CA_NAME_MAX` (16) bytes, or with a character other than a
/// letter, a digit, `_` or `.`.
fn validate_name(raw: &[u8]) -> Result<(), String> {
    let end = raw.iter().position(|&c| c == 0);
    let shown = String::from_utf8_lossy(&raw[..end.unwrap_or(raw.len())]).into_owned();
    let why = match end {
        _ if raw.is_empty() => "has no name member".to_string(),
        Some(0) => "has an empty name".to_string(),
        None => format!("has the name {shown:?}, 16 bytes without a NUL: at most 15 characters (TCP_CA_NAME_MAX)"),
        Some(n) => match raw[..n]
            .iter()
            .find(|&&c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'.'))
        {
            Some(&c) => format!(
                "has the name {shown:?}, with {:?}: letters, digits, '_' and '.' only",
                c as char
            ),
            None => return Ok(()),
        },
    };
    err(format!(
        "the struct_ops {why}; Linux refuses to register it (bpf_tcp_ca_init_member, bpf_obj_name_cpy)"
    ))
}

/// Refuses a controller Linux would not register: net/ipv4/tcp_cong.c,
/// tcp_validate_congestion_control (called for a BPF struct_ops by bpf_tcp_ca.c,
/// bpf_tcp_ca_validate) requires ssthresh, undo_cwnd, and cong_avoid or cong_control. Every
/// other hook may be left NULL, and is then not called, in Linux as in the simulator.
fn validate_hooks(hooks: &HashMap<String, usize>, name: &str) -> Result<(), String> {
    let has = |hook: &str| hooks.contains_key(hook);
    let missing = match (
        has("ssthresh"),
        has("undo_cwnd"),
        has("cong_avoid") || has("cong_control"),
    ) {
        (false, _, _) => "ssthresh",
        (_, false, _) => "undo_cwnd",
        (_, _, false) => "cong_avoid or cong_control",
        _ => return Ok(()),
    };
    err(format!("the struct_ops \"{name}\" has no {missing}, which Linux requires of a congestion control (tcp_validate_congestion_control)"))
}

/// Refuses a `release` that calls bpf_setsockopt or bpf_getsockopt, as Linux's verifier does
/// (net/ipv4/bpf_tcp_ca.c, bpf_tcp_ca_get_func_proto: the controller is retiring, and an option
/// set then could use it).
fn validate_release(
    hooks: &HashMap<String, usize>,
    programs: &[Program],
    name: &str,
) -> Result<(), String> {
    let Some(&p) = hooks.get("release") else {
        return Ok(());
    };
    for (id, helper) in [
        (helper::SETSOCKOPT, "bpf_setsockopt"),
        (helper::GETSOCKOPT, "bpf_getsockopt"),
    ] {
        if programs[p]
            .calls
            .values()
            .any(|c| matches!(c, Callee::Helper(h) if *h == id))
        {
            return err(format!("the struct_ops \"{name}\": its release calls {helper}, which Linux does not allow there (bpf_tcp_ca_get_func_proto)"));
        }
    }
    Ok(())
}

/// The `struct_ops` variable `ops` (the only one when `None`): its members that point at
/// programs, its `name` and its `flags`.
fn struct_ops(
    file: &object::File,
    btf: &Btf,
    by_symbol: &HashMap<String, usize>,
    ops: Option<&str>,
) -> Result<(HashMap<String, usize>, String, u32), String> {
    let sec = file
        .sections()
        .find(|s| matches!(s.name(), Ok(".struct_ops.link") | Ok(".struct_ops")))
        .ok_or("the object has no struct_ops (SEC(\".struct_ops.link\"))")?;
    let data = sec.data().map_err(|e| e.to_string())?;
    let members = match btf.named("tcp_congestion_ops") {
        Some(Type::Struct { members, .. }) => members.clone(),
        _ => return err("the object's struct_ops is not a struct tcp_congestion_ops"),
    };
    // The variables of the section: (name, offset, size).
    let mut variables: Vec<(String, u64, u64)> = file
        .symbols()
        .filter(|s| {
            s.section_index() == Some(sec.index())
                && s.size() > 0
                && s.kind() == object::SymbolKind::Data
        })
        .map(|s| (s.name().unwrap_or("").to_string(), s.address(), s.size()))
        .collect();
    variables.sort_by_key(|v| v.1);
    let names = || {
        variables
            .iter()
            .map(|v| format!("\"{}\"", v.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (_, start, size) = match ops {
        Some(want) => variables
            .iter()
            .find(|v| v.0 == want)
            .cloned()
            .ok_or_else(|| {
                format!(
                    "the object has no struct_ops \"{want}\" (it has {})",
                    names()
                )
            })?,
        None if variables.len() > 1 => {
            return err(format!(
                "the object has several struct_ops ({}): name the one to run (ops = \"NAME\")",
                names()
            ))
        }
        // One variable, or an object whose struct_ops has no symbol: the whole section.
        None => variables
            .first()
            .cloned()
            .unwrap_or_else(|| (String::new(), 0, data.len() as u64)),
    };
    let mut hooks = HashMap::new();
    for (off, r) in sec.relocations() {
        let RelocationTarget::Symbol(s) = r.target() else {
            continue;
        };
        if off < start || off >= start + size {
            continue;
        }
        let sym = file.symbol_by_index(s).map_err(|e| e.to_string())?;
        let prog = sym.name().unwrap_or("");
        let member = members
            .iter()
            .find(|m| (m.bit_offset / 8) as u64 == off - start)
            .map(|m| m.name.clone())
            .unwrap_or_default();
        if let Some(&p) = by_symbol.get(prog) {
            hooks.insert(member, p);
        }
    }
    // The bytes of member `field` in the variable's data.
    let member = |field: &str, len: usize| {
        members.iter().find(|m| m.name == field).and_then(|m| {
            let at = start as usize + (m.bit_offset / 8) as usize;
            data.get(at..at + len)
        })
    };
    let raw = member("name", 16).unwrap_or(&[]);
    validate_name(raw)?;
    let end = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
    let name = String::from_utf8_lossy(&raw[..end]).into_owned();
    let flags = member("flags", 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    Ok((hooks, name, flags))
}
