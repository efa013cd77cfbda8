//! A virtual machine for eBPF congestion controls: an interpreter of the instruction set (RFC
//! 9669; decoded by `isa`) over a memory of separate regions (`memory`: stack, arguments, the
//! socket, the ACK and rate samples, ring-buffer records, the object's data sections, socket
//! storage), the helpers and kernel functions a controller calls, and
//! the checks the kernel's verifier would have made at load time made at run time instead:
//! every access inside a region, writes to the socket only where a congestion control may
//! write, a bounded number of instructions per call. A program that breaks one gets an error,
//! never the process.

use crate::elf::{
    helper, is_array, is_keyed, Callee, Loaded, MapDef, Program, MAP_TAG, MAP_TYPE_LRU_HASH,
    MAP_TYPE_RINGBUF, MAP_TYPE_SK_STORAGE,
};
use crate::isa::{Alu, AtomicOp, Cond, Op, Src};
use crate::layout::{self, Image};
use crate::memory::split;
pub use crate::memory::{
    region_base, ACK_REGION, CTX_REGION, FIRST_DATA_REGION, RATE_REGION, RING_REGION, SOCK_REGION,
    STACK_REGION,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Bytes of stack per call frame (MAX_BPF_STACK) and frames at most.
const FRAME: usize = 512;
const FRAMES: usize = 8;
/// Instructions one hook call may execute (the verifier bounds programs statically; a bound
/// at run time keeps a looping program from hanging the simulator).
pub const BUDGET: u64 = 1_000_000;

#[derive(Clone, Debug)]
enum Writes {
    Any,
    Never,
    /// Only these byte ranges (the socket: fields a congestion control may write).
    Ranges(Vec<(u32, u32)>),
}

#[derive(Clone, Debug)]
struct Region {
    bytes: Vec<u8>,
    writes: Writes,
}

/// What went wrong in a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmError(pub String);

impl std::fmt::Display for VmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `bpf_get_prandom_u32` in the simulator: the high half of SplitMix64 (Steele, Lea and
/// Flood 2014) stepped from the connection's seed, so that a run is the same for the same
/// scenario and seed. A Rust model that draws as a port does (BBR's ProbeBW phase) calls this
/// with the same seed, so both draw the same numbers.
pub fn prandom_u32(state: &mut u64) -> u32 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 32) as u32
}

/// The exported functions of the kernel's own congestion-control modules that Linux registers
/// as kfuncs for struct_ops programs (`tcp_cubic.c`'s `cubictcp_*`, `tcp_bbr.c`'s `bbr_*`),
/// which a program may call to reuse the kernel's algorithm on its socket. The embedder
/// provides them (with its own models of those algorithms); the VM passes the call through.
pub trait KernelModules: std::fmt::Debug {
    /// Calls `name` with the arguments `args` (r1-r5; r1 is the socket) on the socket image
    /// `sock`, which the call may change, as the kernel's function changes `tcp_sock`.
    fn call(&mut self, name: &str, args: &[u64; 5], sock: &mut [u8]) -> Result<u64, String>;
    /// A copy for another connection.
    fn clone_box(&self) -> Box<dyn KernelModules>;
    /// The concrete type, for the embedder to reach its own state.
    fn as_any(&self) -> &dyn std::any::Any;
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

impl Clone for Box<dyn KernelModules> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// What the connections running one object share, as the kernel keeps one copy of an object's
/// global data (`.data`, `.bss`) and of its array and hash maps for every socket it runs on.
/// A connection holds the state only while one of its hooks runs: the bytes move into its
/// memory when the hook starts and back when it ends, so the interpreter reads and writes them
/// as its own.
#[derive(Debug)]
pub struct Shared {
    /// Per data section: its bytes when writable and not held (read-only sections are each
    /// connection's own copy: they never change).
    sections: Vec<Option<Vec<u8>>>,
    /// Per map: an array's or hash map's store when not held.
    maps: Vec<Option<MapStore>>,
}

/// One array or hash map: its values, `value_size` bytes per slot up to the highest slot used
/// (at most `max_entries`), and for a hash map which key holds which slot.
#[derive(Clone, Debug, Default)]
struct MapStore {
    values: Vec<u8>,
    /// A hash map's keys and their slots (ordered, so that nothing depends on hashing).
    keys: BTreeMap<Vec<u8>, u32>,
    /// A hash map's slots freed by deletes (the last freed is used first), and the slots never
    /// used, from `fresh` to `max_entries`.
    free: Vec<u32>,
    fresh: u32,
    /// An LRU hash map's last use of each slot (a lookup that finds it or an update), on
    /// `clock`, which counts uses.
    last_use: Vec<u64>,
    clock: u64,
}

impl MapStore {
    /// An LRU hash map's use of `slot`.
    fn touch(&mut self, slot: u32) {
        let slot = slot as usize;
        if self.last_use.len() <= slot {
            self.last_use.resize(slot + 1, 0);
        }
        self.clock += 1;
        self.last_use[slot] = self.clock;
    }

    /// A full LRU hash map makes room: the key used least recently goes, and its slot is
    /// returned. Linux's LRU is approximate (`bpf_lru_pop_free`: lists kept by reference bits,
    /// freed in batches); this one is exact.
    fn evict_least_recent(&mut self) -> Option<u32> {
        let (key, slot) = self
            .keys
            .iter()
            .min_by_key(|(_, &slot)| self.last_use.get(slot as usize).copied().unwrap_or(0))
            .map(|(k, &s)| (k.clone(), s))?;
        self.keys.remove(&key);
        Some(slot)
    }
}

/// [`Shared`] as the connections of one object hold it.
pub type SharedState = Arc<Mutex<Shared>>;

impl Shared {
    /// The state of `loaded` as a run starts: its writable sections as `data` has them, and
    /// empty maps.
    pub fn new(loaded: &Loaded, data: &[Vec<u8>]) -> SharedState {
        let sections = loaded
            .data
            .iter()
            .zip(data)
            .map(|(section, bytes)| section.writable.then(|| bytes.clone()))
            .collect();
        let maps = loaded
            .maps
            .iter()
            .map(|m| {
                // Grown to the highest element used (zeroed, as the kernel's start).
                is_keyed(m.kind).then(MapStore::default)
            })
            .collect();
        Arc::new(Mutex::new(Shared { sections, maps }))
    }
}

/// The option length of a `bpf_setsockopt` or `bpf_getsockopt` call (`r1` the socket, `r2` the
/// level, `r3` the option, `r5` the length) for the one option the VM provides, SOL_SOCKET's
/// SO_MAX_PACING_RATE; any other stops the program with an error naming it.
fn sockopt_len(r: &[u64; 16], helper: &str) -> Result<u32, VmError> {
    const SOL_SOCKET: u64 = 1;
    const SO_MAX_PACING_RATE: u64 = 47;
    if r[1] != region_base(SOCK_REGION) {
        return Err(VmError(format!(
            "{helper} was given something other than the socket"
        )));
    }
    let (level, optname) = (r[2] as u32 as u64, r[3] as u32 as u64);
    if (level, optname) != (SOL_SOCKET, SO_MAX_PACING_RATE) {
        return Err(VmError(format!(
            "{helper}(level {level}, optname {optname}), which the simulator does not provide (it has SOL_SOCKET's SO_MAX_PACING_RATE)"
        )));
    }
    Ok(r[5] as u32)
}

/// `-errno` as a helper returns it in r0.
fn errno(e: i64) -> u64 {
    (-e) as u64
}
const ENOENT: i64 = 2;
const E2BIG: i64 = 7;
const EEXIST: i64 = 17;
const EINVAL: i64 = 22;
/// bpf_map_update_elem's flags (include/uapi/linux/bpf.h).
const BPF_NOEXIST: u64 = 1;
const BPF_EXIST: u64 = 2;

/// One controller instance (one connection): the object, its memory and what it reported.
#[derive(Clone, Debug)]
pub struct Vm {
    pub loaded: std::sync::Arc<Loaded>,
    /// The code of each program (specialised for this configuration, or as loaded).
    code: std::sync::Arc<Vec<Code>>,
    regions: Vec<Region>,
    /// Per map: the region of this connection's socket storage, once created.
    storage: Vec<Option<usize>>,
    /// The state the object's connections share ([`Shared`]; `None` only while a hook runs).
    shared: Option<SharedState>,
    /// The data sections and (map, region) pairs that are shared.
    shared_sections: Vec<usize>,
    shared_maps: Vec<(usize, usize)>,
    /// Per map: the region of an array's or hash map's values (held while a hook runs).
    map_regions: Vec<Option<usize>>,
    /// Per map: a hash map's keys and free slots while a hook runs.
    held_maps: Vec<Option<MapStore>>,
    /// Ring-buffer records submitted, in order.
    pub events: Vec<Vec<u8>>,
    /// The record reserved and not yet submitted: (map, size).
    reserved: Option<(usize, usize)>,
    /// `bpf_ktime_get_ns` and `bpf_jiffies64` (at `hz`).
    pub now_ns: u64,
    pub hz: u64,
    /// The state of `bpf_get_prandom_u32` ([`prandom_u32`]): the connection's seed.
    pub prandom: u64,
    /// Instructions executed so far (for the cost measurements).
    pub executed: u64,
    /// The kernel modules' functions the program may call ([`KernelModules`]), if any.
    pub modules: Option<Box<dyn KernelModules>>,
}

impl Vm {
    /// A fresh instance; `data` are the object's data sections as they start (`.rodata` with
    /// the configuration written).
    pub fn new(loaded: std::sync::Arc<Loaded>, data: Vec<Vec<u8>>) -> Vm {
        let code = std::sync::Arc::new(loaded.programs.iter().map(Code::of).collect());
        Self::with_code(loaded, data, code)
    }

    /// The code of every program specialised for `data` (see [`specialize`]): build it once per
    /// configuration and share it between the connections that run it.
    pub fn specialized(loaded: &Loaded, data: &[Vec<u8>]) -> std::sync::Arc<Vec<Code>> {
        let read_only: Vec<bool> = loaded.data.iter().map(|d| !d.writable).collect();
        std::sync::Arc::new(
            loaded
                .programs
                .iter()
                .map(|p| specialize(p, data, &read_only))
                .collect(),
        )
    }

    /// A fresh instance running `code` (from [`Vm::specialized`] with the same `data`), with
    /// global data and maps of its own.
    pub fn with_code(
        loaded: std::sync::Arc<Loaded>,
        data: Vec<Vec<u8>>,
        code: std::sync::Arc<Vec<Code>>,
    ) -> Vm {
        let shared = Shared::new(&loaded, &data);
        Self::sharing(loaded, data, code, shared)
    }

    /// A fresh instance that shares global data and maps with the others given `shared` (from
    /// [`Shared::new`] for the same object and `data`), as the kernel's connections of one
    /// registered object share them.
    pub fn sharing(
        loaded: std::sync::Arc<Loaded>,
        data: Vec<Vec<u8>>,
        code: std::sync::Arc<Vec<Code>>,
        shared: SharedState,
    ) -> Vm {
        let mut regions = vec![
            Region {
                bytes: vec![0; FRAME * FRAMES],
                writes: Writes::Any,
            },
            Region {
                bytes: vec![0; 64],
                writes: Writes::Never,
            },
            Region {
                bytes: vec![0; layout::SOCK_BYTES],
                writes: Writes::Ranges(layout::writable(Image::Sock)),
            },
            Region {
                bytes: vec![0; layout::ACK_SAMPLE_BYTES],
                writes: Writes::Never,
            },
            Region {
                bytes: vec![0; layout::RATE_SAMPLE_BYTES],
                writes: Writes::Never,
            },
            Region {
                bytes: Vec::new(),
                writes: Writes::Any,
            },
        ];
        for (section, bytes) in loaded.data.iter().zip(data) {
            regions.push(Region {
                // A writable section's bytes are the shared copy's, moved in for each hook.
                bytes: if section.writable { Vec::new() } else { bytes },
                writes: if section.writable {
                    Writes::Any
                } else {
                    Writes::Never
                },
            });
        }
        let maps = loaded.maps.len();
        let map_regions: Vec<Option<usize>> = loaded
            .maps
            .iter()
            .map(|m| {
                is_keyed(m.kind).then(|| {
                    regions.push(Region {
                        bytes: Vec::new(),
                        writes: Writes::Any,
                    });
                    regions.len() - 1
                })
            })
            .collect();
        let shared_sections = (0..loaded.data.len())
            .filter(|&i| loaded.data[i].writable)
            .collect();
        let shared_maps = map_regions
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.map(|r| (i, r)))
            .collect();
        Vm {
            loaded,
            code,
            regions,
            storage: vec![None; maps],
            shared: Some(shared),
            shared_sections,
            shared_maps,
            map_regions,
            held_maps: vec![None; maps],
            events: Vec::new(),
            reserved: None,
            now_ns: 0,
            hz: 1000,
            prandom: 0,
            executed: 0,
            modules: None,
        }
    }

    /// The socket image (fill it before a call, read what the program wrote after).
    pub fn sock(&mut self) -> &mut [u8] {
        &mut self.regions[SOCK_REGION].bytes
    }

    pub fn ack_sample(&mut self) -> &mut [u8] {
        &mut self.regions[ACK_REGION].bytes
    }

    pub fn rate_sample(&mut self) -> &mut [u8] {
        &mut self.regions[RATE_REGION].bytes
    }

    /// This connection's socket storage of map `map`, if the program created it.
    pub fn storage(&self, map: &str) -> Option<&[u8]> {
        let i = self.loaded.maps.iter().position(|m| m.name == map)?;
        self.storage[i].map(|r| self.regions[r].bytes.as_slice())
    }

    /// The same, to change it.
    pub fn storage_mut(&mut self, map: &str) -> Option<&mut [u8]> {
        let i = self.loaded.maps.iter().position(|m| m.name == map)?;
        self.storage[i].map(|r| self.regions[r].bytes.as_mut_slice())
    }

    /// Data section `i` as it is now (`.bss` counters, for example): a writable one as the
    /// object's connections share it.
    pub fn data(&self, i: usize) -> Vec<u8> {
        let shared = self
            .shared
            .as_ref()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()));
        match shared
            .as_ref()
            .and_then(|s| s.sections.get(i))
            .and_then(Option::as_ref)
        {
            Some(bytes) => bytes.clone(),
            None => self.regions[FIRST_DATA_REGION + i].bytes.clone(),
        }
    }

    /// The value at `key` of the array or hash map `map` as it is now (an array's element not
    /// yet written is zeros, as the kernel's); `None` for no such map or key.
    pub fn map_value(&self, map: &str, key: &[u8]) -> Option<Vec<u8>> {
        let i = self.loaded.maps.iter().position(|m| m.name == map)?;
        let m = &self.loaded.maps[i];
        let size = m.value_size as usize;
        let shared = self
            .shared
            .as_ref()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()));
        let (values, keys) = match shared.as_ref().and_then(|s| s.maps.get(i)?.as_ref()) {
            Some(store) => (store.values.as_slice(), &store.keys),
            None => {
                let held = self.held_maps.get(i)?.as_ref()?;
                (
                    self.regions[self.map_regions[i]?].bytes.as_slice(),
                    &held.keys,
                )
            }
        };
        let slot = if is_array(m.kind) {
            let index = u32::from_le_bytes(key.get(..4)?.try_into().ok()?);
            (index < m.max_entries).then_some(index)?
        } else {
            *keys.get(key)?
        } as usize;
        let mut value = values
            .get(slot * size..)
            .map(|v| v[..v.len().min(size)].to_vec())
            .unwrap_or_default();
        value.resize(size, 0);
        Some(value)
    }

    /// Moves the shared state into this connection's memory for a hook ([`Shared`]); takes
    /// nothing if any of it is held elsewhere (a hook called from a hook of another connection,
    /// which the simulator never does).
    fn hold_shared(&mut self, s: &mut Shared) -> Result<(), VmError> {
        if self
            .shared_sections
            .iter()
            .any(|&i| s.sections[i].is_none())
            || self.shared_maps.iter().any(|&(i, _)| s.maps[i].is_none())
        {
            return Err(VmError(
                "the object's global data and maps are held by another hook".into(),
            ));
        }
        for &i in &self.shared_sections {
            self.regions[FIRST_DATA_REGION + i].bytes = s.sections[i].take().expect("checked");
        }
        for &(i, r) in &self.shared_maps {
            let mut m = s.maps[i].take().expect("checked");
            self.regions[r].bytes = std::mem::take(&mut m.values);
            self.held_maps[i] = Some(m);
        }
        Ok(())
    }

    /// Gives the shared state back after a hook.
    fn release_shared(&mut self, s: &mut Shared) {
        for &i in &self.shared_sections {
            s.sections[i] = Some(std::mem::take(
                &mut self.regions[FIRST_DATA_REGION + i].bytes,
            ));
        }
        for &(i, r) in &self.shared_maps {
            if let Some(mut m) = self.held_maps[i].take() {
                m.values = std::mem::take(&mut self.regions[r].bytes);
                s.maps[i] = Some(m);
            }
        }
    }

    /// Runs hook `hook` (a member of `tcp_congestion_ops`) with `args` (the socket first, as
    /// the kernel passes them); `Ok(None)` if the object does not implement it.
    pub fn call(&mut self, hook: &str, args: &[u64]) -> Result<Option<u64>, VmError> {
        let Some(&p) = self.loaded.hooks.get(hook) else {
            return Ok(None);
        };
        self.call_program(p, args).map(Some)
    }

    /// Runs program `p` (an index into the object's programs; see `Loaded::hooks`) with `args`.
    pub fn call_program(&mut self, p: usize, args: &[u64]) -> Result<u64, VmError> {
        // The context: the arguments as an array of u64 (BPF_PROG).
        let ctx = &mut self.regions[CTX_REGION].bytes;
        ctx.fill(0);
        for (i, a) in args.iter().enumerate().take(8) {
            ctx[i * 8..i * 8 + 8].copy_from_slice(&a.to_le_bytes());
        }
        if self.shared_sections.is_empty() && self.shared_maps.is_empty() {
            return self.run(p);
        }
        // One lock for the whole hook, on the handle moved out of `self` meanwhile.
        let shared = self
            .shared
            .take()
            .expect("a hook is not called from a hook");
        let result = {
            let mut guard = shared.lock().unwrap_or_else(|e| e.into_inner());
            self.hold_shared(&mut guard).and_then(|()| {
                let result = self.run(p);
                self.release_shared(&mut guard);
                result
            })
        };
        self.shared = Some(shared);
        result
    }

    fn translate(&self, addr: u64, size: usize, write: bool) -> Result<(usize, usize), VmError> {
        let (region, offset) = split(addr);
        if region == 0 || region > self.regions.len() {
            return Err(VmError(format!(
                "access to address {addr:#x}, which is in no memory the program may use"
            )));
        }
        let r = &self.regions[region - 1];
        if offset + size > r.bytes.len() {
            return Err(VmError(format!(
                "access of {size} bytes at offset {offset} of a region of {} bytes",
                r.bytes.len()
            )));
        }
        if write {
            let ok = match &r.writes {
                Writes::Any => true,
                Writes::Never => false,
                Writes::Ranges(ranges) => ranges
                    .iter()
                    .any(|&(a, b)| offset as u32 >= a && (offset + size) as u32 <= b),
            };
            if !ok {
                let what = if region - 1 == SOCK_REGION {
                    layout::FIELDS
                        .iter()
                        .find(|f| {
                            f.image == Image::Sock
                                && offset as u32 >= f.offset
                                && (offset as u32) < f.offset + f.size
                        })
                        .map_or("the socket".to_string(), |f| {
                            format!("{}.{}", f.root, f.path)
                        })
                } else {
                    "read-only memory".to_string()
                };
                return Err(VmError(format!(
                    "the program writes {what}, which a congestion control may not write"
                )));
            }
        }
        Ok((region - 1, offset))
    }

    #[inline(always)]
    fn load(&self, addr: u64, size: usize) -> Result<u64, VmError> {
        let (region, offset) = split(addr);
        if let Some(r) = region.checked_sub(1).and_then(|i| self.regions.get(i)) {
            if let Some(b) = r.bytes.get(offset..offset + size) {
                return Ok(match size {
                    1 => b[0] as u64,
                    2 => u16::from_le_bytes([b[0], b[1]]) as u64,
                    4 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64,
                    _ => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
                });
            }
        }
        // Out of bounds: the error says where.
        self.translate(addr, size, false).map(|_| 0)
    }

    #[inline(always)]
    fn store(&mut self, addr: u64, size: usize, v: u64) -> Result<(), VmError> {
        let (region, offset) = split(addr);
        if let Some(r) = region.checked_sub(1).and_then(|i| self.regions.get_mut(i)) {
            if matches!(r.writes, Writes::Any) {
                if let Some(b) = r.bytes.get_mut(offset..offset + size) {
                    match size {
                        1 => b[0] = v as u8,
                        2 => b.copy_from_slice(&(v as u16).to_le_bytes()),
                        4 => b.copy_from_slice(&(v as u32).to_le_bytes()),
                        _ => b.copy_from_slice(&v.to_le_bytes()),
                    }
                    return Ok(());
                }
            }
        }
        let (r, o) = self.translate(addr, size, true)?;
        self.regions[r].bytes[o..o + size].copy_from_slice(&v.to_le_bytes()[..size]);
        Ok(())
    }

    fn map(&self, handle: u64) -> Result<(usize, &MapDef), VmError> {
        if handle & !0xffff != MAP_TAG {
            return Err(VmError(
                "a helper was given something that is not a map".into(),
            ));
        }
        let i = (handle & 0xffff) as usize;
        self.loaded
            .maps
            .get(i)
            .map(|m| (i, m))
            .ok_or_else(|| VmError("a map that does not exist".into()))
    }

    fn helper(&mut self, id: u32, r: &[u64; 16]) -> Result<u64, VmError> {
        let (a1, a2, a4) = (r[1], r[2], r[4]);
        Ok(match id {
            helper::MAP_LOOKUP_ELEM => {
                let (i, m, key) = self.keyed_map(a1, a2)?;
                match self.slot_of(i, &m, &key) {
                    Ok(slot) => {
                        if m.kind == MAP_TYPE_LRU_HASH {
                            self.held_maps[i]
                                .as_mut()
                                .expect("held while a hook runs")
                                .touch(slot);
                        }
                        self.slot_address(i, &m, slot)
                    }
                    Err(_) => 0,
                }
            }
            helper::MAP_UPDATE_ELEM => self.map_update(a1, a2, r[3], a4)?,
            helper::MAP_DELETE_ELEM => self.map_delete(a1, a2)?,
            // The simulator's clock is the boot clock too (nothing suspends it).
            helper::KTIME_GET_NS | helper::KTIME_GET_BOOT_NS => self.now_ns,
            // ktime_get_coarse_ns: the clock as the last tick left it (timekeeping advances
            // the coarse clock with jiffies).
            helper::KTIME_GET_COARSE_NS => {
                let tick = 1_000_000_000 / self.hz.max(1);
                self.now_ns - self.now_ns % tick
            }
            helper::GET_NUMA_NODE_ID => 0,
            helper::GETSOCKOPT => self.getsockopt(r)?,
            // The simulator is one CPU (per-CPU maps hold CPU 0's values).
            helper::GET_SMP_PROCESSOR_ID => 0,
            helper::SETSOCKOPT => self.setsockopt(r)?,
            // A receiver's immediate ACK (tcp_dctcp.h's dctcp_ece_ack_update, on
            // CA_EVENT_ECN_IS_CE / _NO_CE). The simulator runs controllers on senders, which
            // never get those events; its receivers echo CE as tcp_dctcp.c's receiver does.
            helper::TCP_SEND_ACK => {
                return Err(VmError(
                    "bpf_tcp_send_ack: a receiver's ACK, and the simulator runs controllers on senders only".into(),
                ))
            }
            helper::TRACE_PRINTK => 0,
            helper::GET_PRANDOM_U32 => prandom_u32(&mut self.prandom) as u64,
            helper::JIFFIES64 => jiffies(self.now_ns, self.hz),
            helper::SK_STORAGE_GET => {
                // bpf_sk_storage_get(map, sk, value, flags): one socket per instance.
                let (i, m) = self.map(a1)?;
                if m.kind != MAP_TYPE_SK_STORAGE {
                    return Err(VmError(format!(
                        "bpf_sk_storage_get on map \"{}\", which is not socket storage",
                        m.name
                    )));
                }
                let size = m.value_size as usize;
                match self.storage[i] {
                    Some(region) => region_base(region),
                    None if a4 & helper::SK_STORAGE_GET_F_CREATE != 0 => {
                        self.regions.push(Region {
                            bytes: vec![0; size],
                            writes: Writes::Any,
                        });
                        self.storage[i] = Some(self.regions.len() - 1);
                        region_base(self.regions.len() - 1)
                    }
                    None => 0,
                }
            }
            helper::SK_STORAGE_DELETE => {
                let (i, _) = self.map(a1)?;
                if let Some(region) = self.storage[i].take() {
                    self.regions[region].bytes.clear();
                }
                0
            }
            helper::RINGBUF_RESERVE => {
                // bpf_ringbuf_reserve(map, size, flags)
                let (i, m) = self.map(a1)?;
                if m.kind != MAP_TYPE_RINGBUF || self.reserved.is_some() || a2 > 1 << 16 {
                    return Ok(0);
                }
                self.regions[RING_REGION].bytes = vec![0; a2 as usize];
                self.reserved = Some((i, a2 as usize));
                region_base(RING_REGION)
            }
            helper::RINGBUF_SUBMIT | helper::RINGBUF_DISCARD => {
                // bpf_ringbuf_submit / _discard(data, flags)
                if a1 != region_base(RING_REGION) || self.reserved.is_none() {
                    return Err(VmError(
                        "a ring-buffer record submitted that was not reserved".into(),
                    ));
                }
                self.reserved = None;
                let record = std::mem::take(&mut self.regions[RING_REGION].bytes);
                if id == helper::RINGBUF_SUBMIT {
                    self.events.push(record);
                }
                0
            }
            helper::RINGBUF_OUTPUT => {
                // bpf_ringbuf_output(map, data, size, flags)
                let (_, m) = self.map(a1)?;
                if m.kind != MAP_TYPE_RINGBUF {
                    return Ok(u64::MAX);
                }
                let (reg, o) = self.translate(a2, r[3] as usize, false)?;
                self.events
                    .push(self.regions[reg].bytes[o..o + r[3] as usize].to_vec());
                0
            }
            _ => return Err(VmError(format!("helper {id} is not provided"))),
        })
    }

    /// An array's or hash map's definition, its index and the key the program points at.
    fn keyed_map(&self, handle: u64, key: u64) -> Result<(usize, MapDef, Vec<u8>), VmError> {
        let (i, m) = self.map(handle)?;
        if !is_keyed(m.kind) {
            return Err(VmError(format!(
                "a map helper on map \"{}\", which is neither an array nor a hash map",
                m.name
            )));
        }
        let m = m.clone();
        let (r, o) = self.translate(key, m.key_size as usize, false)?;
        let key = self.regions[r].bytes[o..o + m.key_size as usize].to_vec();
        Ok((i, m, key))
    }

    /// The slot of `key` in map `i` (definition `m`), or the error a lookup of a missing key
    /// gives.
    fn slot_of(&self, i: usize, m: &MapDef, key: &[u8]) -> Result<u32, i64> {
        if is_array(m.kind) {
            let index = u32::from_le_bytes(key[..4].try_into().unwrap());
            return if index < m.max_entries {
                Ok(index)
            } else {
                Err(ENOENT)
            };
        }
        let held = self.held_maps[i].as_ref().expect("held while a hook runs");
        held.keys.get(key).copied().ok_or(ENOENT)
    }

    /// The address of `slot`'s value in map `i` (definition `m`), its memory grown to it if
    /// needed.
    fn slot_address(&mut self, i: usize, m: &MapDef, slot: u32) -> u64 {
        let size = m.value_size as usize;
        let r = self.map_regions[i].expect("a keyed map has a region");
        let need = (slot as usize + 1) * size;
        if self.regions[r].bytes.len() < need {
            self.regions[r].bytes.resize(need, 0);
        }
        region_base(r) + (slot as usize * size) as u64
    }

    /// bpf_map_update_elem(map, key, value, flags), as `array_map_update_elem` and
    /// `htab_map_update_elem` answer it.
    fn map_update(
        &mut self,
        handle: u64,
        key: u64,
        value: u64,
        flags: u64,
    ) -> Result<u64, VmError> {
        let (i, m, key_bytes) = self.keyed_map(handle, key)?;
        if flags > BPF_EXIST {
            return Ok(errno(EINVAL));
        }
        let slot = match self.slot_of(i, &m, &key_bytes) {
            Ok(_) if flags == BPF_NOEXIST => return Ok(errno(EEXIST)),
            Ok(slot) => slot,
            // An array's every index exists: one outside it is E2BIG.
            Err(_) if is_array(m.kind) => return Ok(errno(E2BIG)),
            Err(_) if flags == BPF_EXIST => return Ok(errno(ENOENT)),
            Err(_) => {
                let held = self.held_maps[i].as_mut().expect("held while a hook runs");
                let slot = match held.free.pop() {
                    Some(slot) => slot,
                    None if held.fresh < m.max_entries => {
                        held.fresh += 1;
                        held.fresh - 1
                    }
                    // htab_lru_map_update_elem: a full LRU map evicts instead of refusing.
                    None if m.kind == MAP_TYPE_LRU_HASH => {
                        held.evict_least_recent().expect("a full map holds a key")
                    }
                    None => return Ok(errno(E2BIG)),
                };
                held.keys.insert(key_bytes, slot);
                slot
            }
        };
        if m.kind == MAP_TYPE_LRU_HASH {
            self.held_maps[i]
                .as_mut()
                .expect("held while a hook runs")
                .touch(slot);
        }
        let size = m.value_size as usize;
        let (r, o) = self.translate(value, size, false)?;
        let bytes = self.regions[r].bytes[o..o + size].to_vec();
        let (region, at) = split(self.slot_address(i, &m, slot));
        self.regions[region - 1].bytes[at..at + size].copy_from_slice(&bytes);
        Ok(0)
    }

    /// bpf_map_delete_elem(map, key): an array's elements cannot be deleted (EINVAL).
    fn map_delete(&mut self, handle: u64, key: u64) -> Result<u64, VmError> {
        let (i, m, key_bytes) = self.keyed_map(handle, key)?;
        if is_array(m.kind) {
            return Ok(errno(EINVAL));
        }
        let held = self.held_maps[i].as_mut().expect("held while a hook runs");
        Ok(match held.keys.remove(&key_bytes) {
            Some(slot) => {
                held.free.push(slot);
                0
            }
            None => errno(ENOENT),
        })
    }

    /// bpf_setsockopt(sk, level, optname, optval, optlen) as a struct_ops controller's call
    /// runs (net/core/filter.c, sol_socket_sockopt, then net/core/sock.c, sk_setsockopt), for
    /// the options the VM provides: SOL_SOCKET's SO_MAX_PACING_RATE. An int, so a cap of at
    /// most 2^32 - 2 bytes per second, ~0U lifting it; any other rate asks for pacing
    /// (SK_PACING_NONE becomes SK_PACING_NEEDED) and lowers sk_pacing_rate to it. Any other
    /// option stops the program with an error naming it.
    fn setsockopt(&mut self, r: &[u64; 16]) -> Result<u64, VmError> {
        const SK_PACING_NONE: u64 = 0;
        const SK_PACING_NEEDED: u64 = 1;
        let optlen = sockopt_len(r, "bpf_setsockopt")?;
        if optlen != 4 {
            return Ok(errno(EINVAL));
        }
        let (reg, o) = self.translate(r[4], 4, false)?;
        let val = u32::from_le_bytes(self.regions[reg].bytes[o..o + 4].try_into().unwrap());
        let f = layout::sock();
        let max = if val == u32::MAX {
            u64::MAX
        } else {
            val as u64
        };
        if max != u64::MAX && self.sock_get(f.sk_pacing_status) == SK_PACING_NONE {
            self.sock_set(f.sk_pacing_status, SK_PACING_NEEDED);
        }
        self.sock_set(f.sk_max_pacing_rate, max);
        if max < self.sock_get(f.sk_pacing_rate) {
            self.sock_set(f.sk_pacing_rate, max);
        }
        Ok(0)
    }

    /// bpf_getsockopt(sk, level, optname, optval, optlen), as `__bpf_getsockopt` answers a
    /// controller: SOL_SOCKET's SO_MAX_PACING_RATE (`sk_getsockopt`'s 32-bit form:
    /// min(sk_max_pacing_rate, ~0U)); an option of another length than an int is -EINVAL; on
    /// an error the buffer is zeroed.
    fn getsockopt(&mut self, r: &[u64; 16]) -> Result<u64, VmError> {
        let optlen = sockopt_len(r, "bpf_getsockopt")?;
        let (reg, o) = self.translate(r[4], optlen.max(1) as usize, true)?;
        let out = &mut self.regions[reg].bytes[o..o + optlen as usize];
        if optlen != 4 {
            out.fill(0);
            return Ok(errno(EINVAL));
        }
        let max = layout::get(
            &self.regions[SOCK_REGION].bytes,
            layout::sock().sk_max_pacing_rate,
        );
        let v = max.min(u32::MAX as u64) as u32;
        self.regions[reg].bytes[o..o + 4].copy_from_slice(&v.to_le_bytes());
        Ok(0)
    }

    fn sock_get(&self, f: &layout::Field) -> u64 {
        layout::get(&self.regions[SOCK_REGION].bytes, f)
    }

    fn sock_set(&mut self, f: &layout::Field, v: u64) {
        layout::put(&mut self.regions[SOCK_REGION].bytes, f, v)
    }

    /// The kernel functions a controller may call, as Linux computes them.
    fn kfunc(&mut self, name: &str, r: &[u64; 16]) -> Result<u64, VmError> {
        if r[1] != region_base(SOCK_REGION) {
            return Err(VmError(format!(
                "{name} was given something other than the socket"
            )));
        }
        let cwnd = self.sock_get(layout::sock().snd_cwnd) as u32;
        let ssthresh = self.sock_get(layout::sock().snd_ssthresh) as u32;
        let clamp = self.sock_get(layout::sock().snd_cwnd_clamp) as u32;
        Ok(match name {
            // net/ipv4/tcp_cong.c, tcp_slow_start
            "tcp_slow_start" => {
                let acked = r[2] as u32;
                let grown = cwnd.saturating_add(acked).min(ssthresh);
                let left = acked - (grown.saturating_sub(cwnd)).min(acked);
                self.sock_set(layout::sock().snd_cwnd, grown.min(clamp) as u64);
                left as u64
            }
            // tcp_cong_avoid_ai
            "tcp_cong_avoid_ai" => {
                self.cong_avoid_ai(r[2] as u32, r[3] as u32);
                0
            }
            // tcp_reno_ssthresh
            "tcp_reno_ssthresh" => (cwnd >> 1).max(2) as u64,
            // tcp_reno_undo_cwnd
            "tcp_reno_undo_cwnd" => {
                cwnd.max(self.sock_get(layout::sock().prior_cwnd) as u32) as u64
            }
            // tcp_reno_cong_avoid
            "tcp_reno_cong_avoid" => {
                let mut acked = r[3] as u32;
                if !self.is_cwnd_limited() {
                    return Ok(0);
                }
                if cwnd < ssthresh {
                    let grown = cwnd.saturating_add(acked).min(ssthresh);
                    acked -= (grown - cwnd).min(acked);
                    self.sock_set(layout::sock().snd_cwnd, grown.min(clamp) as u64);
                    if acked == 0 {
                        return Ok(0);
                    }
                }
                let w = self.sock_get(layout::sock().snd_cwnd) as u32;
                self.cong_avoid_ai(w, acked);
                0
            }
            _ => {
                let Some(modules) = self.modules.as_mut() else {
                    return Err(VmError(format!("kernel function {name} is not provided")));
                };
                let args = [r[1], r[2], r[3], r[4], r[5]];
                let sock = &mut self.regions[SOCK_REGION].bytes;
                return modules.call(name, &args, sock).map_err(VmError);
            }
        })
    }

    /// include/net/tcp.h, tcp_is_cwnd_limited (6.x).
    fn is_cwnd_limited(&self) -> bool {
        if self.sock_get(layout::sock().is_cwnd_limited) & 1 == 1 {
            return true;
        }
        let cwnd = self.sock_get(layout::sock().snd_cwnd);
        cwnd < self.sock_get(layout::sock().snd_ssthresh)
            && cwnd < 2 * self.sock_get(layout::sock().max_packets_out)
    }

    /// net/ipv4/tcp_cong.c, tcp_cong_avoid_ai: one segment per `w` acknowledged.
    fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        let mut cwnd = self.sock_get(layout::sock().snd_cwnd) as u32;
        let mut cnt = self.sock_get(layout::sock().snd_cwnd_cnt) as u32;
        if cnt >= w {
            cnt = 0;
            cwnd += 1;
        }
        cnt += acked;
        if cnt >= w {
            let delta = cnt / w;
            cnt -= delta * w;
            cwnd += delta;
        }
        let clamp = self.sock_get(layout::sock().snd_cwnd_clamp) as u32;
        self.sock_set(layout::sock().snd_cwnd_cnt, cnt as u64);
        self.sock_set(layout::sock().snd_cwnd, cwnd.min(clamp) as u64);
    }

    /// Executes program `p` from its first instruction with r1 = the context.
    fn run(&mut self, p: usize) -> Result<u64, VmError> {
        let loaded = self.loaded.clone();
        let code = self.code.clone();
        let prog = &loaded.programs[p];
        let ops: &[Op] = &code[p].ops;
        let callees: &[Callee] = &code[p].callees;
        // r0-r10 (16 slots so that a register number masked with 15 needs no bounds check).
        let mut reg = [0u64; 16];
        reg[1] = region_base(CTX_REGION);
        let mut frame = 0usize;
        reg[10] = region_base(STACK_REGION) + FRAME as u64;
        // Return addresses and callee-saved registers of the frames below.
        let mut stack: Vec<(usize, [u64; 4])> = Vec::new();
        let mut pc = 0usize;
        let mut count = 0u64;
        loop {
            count += 1;
            if count > BUDGET {
                self.executed += count;
                return Err(VmError(format!(
                    "{} ran more than {BUDGET} instructions",
                    prog.name
                )));
            }
            let Some(&op) = ops.get(pc) else {
                return Err(VmError(format!("{} ran off its end", prog.name)));
            };
            pc += 1;
            match op {
                // RFC 9669 §4.1: division by zero gives 0, modulo by zero leaves the dividend;
                // shifts take the shift amount modulo the width.
                Op::Alu64 { op, d, src } => {
                    let x = match src {
                        Src::Reg(s) => reg[(s & 15) as usize],
                        Src::Imm(v) => v,
                    };
                    let a = reg[(d & 15) as usize];
                    reg[(d & 15) as usize] = match op {
                        Alu::Add => a.wrapping_add(x),
                        Alu::Sub => a.wrapping_sub(x),
                        Alu::Mul => a.wrapping_mul(x),
                        Alu::Div => a.checked_div(x).unwrap_or(0),
                        Alu::Or => a | x,
                        Alu::And => a & x,
                        Alu::Lsh => a << (x & 63),
                        Alu::Rsh => a >> (x & 63),
                        Alu::Neg => (a as i64).wrapping_neg() as u64,
                        Alu::Mod => {
                            if x == 0 {
                                a
                            } else {
                                a % x
                            }
                        }
                        Alu::Xor => a ^ x,
                        Alu::Mov => x,
                        Alu::Arsh => ((a as i64) >> (x & 63)) as u64,
                    };
                }
                Op::Alu32 { op, d, src } => {
                    let x = match src {
                        Src::Reg(s) => reg[(s & 15) as usize],
                        Src::Imm(v) => v,
                    } as u32;
                    let a = reg[(d & 15) as usize] as u32;
                    reg[(d & 15) as usize] = (match op {
                        Alu::Add => a.wrapping_add(x),
                        Alu::Sub => a.wrapping_sub(x),
                        Alu::Mul => a.wrapping_mul(x),
                        Alu::Div => a.checked_div(x).unwrap_or(0),
                        Alu::Or => a | x,
                        Alu::And => a & x,
                        Alu::Lsh => a << (x & 31),
                        Alu::Rsh => a >> (x & 31),
                        Alu::Neg => (a as i32).wrapping_neg() as u32,
                        Alu::Mod => {
                            if x == 0 {
                                a
                            } else {
                                a % x
                            }
                        }
                        Alu::Xor => a ^ x,
                        Alu::Mov => x,
                        Alu::Arsh => ((a as i32) >> (x & 31)) as u32,
                    }) as u64;
                }
                Op::Swap { d, to_be, bits } => {
                    let full = reg[(d & 15) as usize];
                    reg[(d & 15) as usize] = match (bits, to_be) {
                        (16, false) => full & 0xffff,
                        (32, false) => full & 0xffff_ffff,
                        (16, true) => (full as u16).swap_bytes() as u64,
                        (32, true) => (full as u32).swap_bytes() as u64,
                        (_, true) => full.swap_bytes(),
                        _ => full,
                    };
                }
                Op::Ja(target) => pc = target as usize,
                Op::Jcc {
                    cond,
                    wide,
                    d,
                    src,
                    target,
                } => {
                    let x = match src {
                        Src::Reg(s) => reg[(s & 15) as usize],
                        Src::Imm(v) => v,
                    };
                    if condition(cond, wide, reg[(d & 15) as usize], x) {
                        pc = target as usize;
                    }
                }
                Op::Call(i) => {
                    match &callees[i as usize] {
                        Callee::Helper(id) => reg[0] = self.helper(*id, &reg)?,
                        Callee::Kfunc(name) => reg[0] = self.kfunc(name, &reg)?,
                        &Callee::Local(target) => {
                            if frame + 1 >= FRAMES {
                                return Err(VmError(format!(
                                    "{}: calls nested more than {FRAMES} deep",
                                    prog.name
                                )));
                            }
                            stack.push((pc, [reg[6], reg[7], reg[8], reg[9]]));
                            frame += 1;
                            reg[10] = region_base(STACK_REGION) + ((frame + 1) * FRAME) as u64;
                            pc = target;
                            continue;
                        }
                    }
                    // Caller-saved registers are undefined after a call.
                    for r in reg.iter_mut().take(6).skip(1) {
                        *r = 0;
                    }
                }
                Op::Exit => match stack.pop() {
                    None => {
                        self.executed += count;
                        return Ok(reg[0]);
                    }
                    Some((ret, saved)) => {
                        pc = ret;
                        reg[6..10].copy_from_slice(&saved);
                        frame -= 1;
                        reg[10] = region_base(STACK_REGION) + ((frame + 1) * FRAME) as u64;
                    }
                },
                Op::LdImm64 { d, value } => {
                    reg[(d & 15) as usize] = value;
                    pc += 1;
                }
                Op::Ldx { size, d, s, off } => {
                    reg[(d & 15) as usize] = self.load(
                        reg[(s & 15) as usize].wrapping_add(off as i64 as u64),
                        size as usize,
                    )?;
                }
                Op::Stx { size, d, s, off } => {
                    self.store(
                        reg[(d & 15) as usize].wrapping_add(off as i64 as u64),
                        size as usize,
                        reg[(s & 15) as usize],
                    )?;
                }
                Op::St { size, d, off, imm } => {
                    self.store(
                        reg[(d & 15) as usize].wrapping_add(off as i64 as u64),
                        size as usize,
                        imm as u64,
                    )?;
                }
                Op::Atomic {
                    size,
                    d,
                    s,
                    off,
                    op,
                    fetch,
                } => {
                    // One thread: a read, the operation, a write (RFC 9669 §5.3).
                    let (size, s) = (size as usize, (s & 15) as usize);
                    let addr = reg[(d & 15) as usize].wrapping_add(off as i64 as u64);
                    let old = self.load(addr, size)?;
                    let val = reg[s];
                    let new = match op {
                        AtomicOp::Add => old.wrapping_add(val),
                        AtomicOp::Or => old | val,
                        AtomicOp::And => old & val,
                        AtomicOp::Xor => old ^ val,
                        AtomicOp::Xchg => val,
                        AtomicOp::Cmpxchg => {
                            // cmpxchg: r0 is compared and receives the old value.
                            let expected = if size == 4 {
                                reg[0] as u32 as u64
                            } else {
                                reg[0]
                            };
                            self.store(addr, size, if old == expected { val } else { old })?;
                            reg[0] = old;
                            continue;
                        }
                    };
                    self.store(addr, size, new)?;
                    if fetch {
                        reg[s] = old;
                    }
                }
                Op::Invalid(what) => return Err(VmError(format!("{}: {what}", prog.name))),
            }
        }
    }
}

/// Whether conditional jump `cond` is taken for `a` and `x`, compared in 64 bits or, for
/// `wide == false` (JMP32), in their low 32 (RFC 9669 §4.3).
#[inline(always)]
fn condition(cond: Cond, wide: bool, a: u64, x: u64) -> bool {
    let (a, x, sa, sx) = if wide {
        (a, x, a as i64, x as i64)
    } else {
        (
            a as u32 as u64,
            x as u32 as u64,
            a as u32 as i32 as i64,
            x as u32 as i32 as i64,
        )
    };
    match cond {
        Cond::Jeq => a == x,
        Cond::Jgt => a > x,
        Cond::Jge => a >= x,
        Cond::Jset => a & x != 0,
        Cond::Jne => a != x,
        Cond::Jsgt => sa > sx,
        Cond::Jsge => sa >= sx,
        Cond::Jlt => a < x,
        Cond::Jle => a <= x,
        Cond::Jslt => sa < sx,
        Cond::Jsle => sa <= sx,
    }
}

/// `ops` specialised for data sections that never change: a load from read-only data at a
/// known address becomes the value, a conditional jump on known values becomes a jump or
/// nothing, and the instructions left with nothing to do are removed. The kernel's verifier
/// prunes the branches of a frozen `.rodata` the same way (which is how startlab's object
/// runs only the algorithms its configuration names); here it is what keeps a hook call short.
///
/// Registers are known only within a straight run of instructions (knowledge is dropped at
/// every jump target and, for r0-r5, after every call), so the result computes what `ops`
/// computes on every path.
pub fn specialize(prog: &Program, data: &[Vec<u8>], read_only: &[bool]) -> Code {
    let ops = &prog.ops;
    let n = ops.len();
    let mut targets = vec![false; n + 1];
    for op in ops {
        match *op {
            Op::Ja(t) | Op::Jcc { target: t, .. } => targets[t as usize] = true,
            _ => {}
        }
    }
    for c in &prog.callees {
        if let Callee::Local(t) = c {
            targets[(*t).min(n)] = true;
        }
    }
    // Calls return to the next instruction; a callee's first instruction is a target too.
    let mut out: Vec<Op> = ops.to_vec();
    let mut known: [Option<u64>; 11] = [None; 11];
    let constant_at = |addr: u64, size: usize| -> Option<u64> {
        let (region, offset) = split(addr);
        let i = region.checked_sub(1)?.checked_sub(FIRST_DATA_REGION)?;
        if !*read_only.get(i)? {
            return None;
        }
        let b = data.get(i)?.get(offset..offset + size)?;
        let mut w = [0u8; 8];
        w[..size].copy_from_slice(b);
        Some(u64::from_le_bytes(w))
    };
    for pc in 0..n {
        if targets[pc] {
            known = [None; 11];
        }
        match out[pc] {
            Op::LdImm64 { d, value } => known[d as usize] = Some(value),
            Op::Alu64 {
                op: Alu::Mov,
                d,
                src,
            } => {
                known[d as usize] = match src {
                    Src::Imm(v) => Some(v),
                    Src::Reg(s) => known[s as usize],
                };
            }
            Op::Alu64 {
                op: Alu::Add,
                d,
                src: Src::Imm(v),
            } => known[d as usize] = known[d as usize].map(|a| a.wrapping_add(v)),
            Op::Ldx { size, d, s, off } => {
                let value = known[s as usize]
                    .and_then(|a| constant_at(a.wrapping_add(off as i64 as u64), size as usize));
                if let Some(v) = value {
                    out[pc] = Op::Alu64 {
                        op: Alu::Mov,
                        d,
                        src: Src::Imm(v),
                    };
                }
                known[d as usize] = value;
            }
            Op::Jcc {
                cond,
                wide,
                d,
                src,
                target,
            } => {
                let x = match src {
                    Src::Imm(v) => Some(v),
                    Src::Reg(s) => known[s as usize],
                };
                if let (Some(a), Some(x)) = (known[d as usize], x) {
                    let taken = condition(cond, wide, a, x);
                    out[pc] = Op::Ja(if taken { target } else { pc as u32 + 1 });
                }
            }
            Op::Call(_) => {
                for r in known.iter_mut().take(6) {
                    *r = None;
                }
            }
            Op::Alu64 { d, .. } | Op::Alu32 { d, .. } | Op::Swap { d, .. } => {
                known[d as usize] = None
            }
            Op::Atomic { s, .. } => {
                known[s as usize] = None;
                known[0] = None;
            }
            _ => {}
        }
    }
    // Remove jumps to the next instruction, then renumber the jump targets and local calls.
    let mut new_index = vec![0u32; n + 1];
    let mut kept = Vec::with_capacity(n);
    for pc in 0..n {
        new_index[pc] = kept.len() as u32;
        if out[pc] != Op::Ja(pc as u32 + 1) {
            kept.push(pc);
        }
    }
    new_index[n] = kept.len() as u32;
    let ops = kept
        .iter()
        .map(|&pc| match out[pc] {
            Op::Ja(t) => Op::Ja(new_index[t as usize]),
            Op::Jcc {
                cond,
                wide,
                d,
                src,
                target,
            } => Op::Jcc {
                cond,
                wide,
                d,
                src,
                target: new_index[target as usize],
            },
            op => op,
        })
        .collect();
    let callees = prog
        .callees
        .iter()
        .map(|c| match c {
            Callee::Local(t) => Callee::Local(new_index[(*t).min(n)] as usize),
            other => other.clone(),
        })
        .collect();
    Code { ops, callees }
}

/// A program's instructions as the interpreter runs them, with the callees of its calls.
#[derive(Clone, Debug)]
pub struct Code {
    pub ops: Vec<Op>,
    pub callees: Vec<Callee>,
}

impl Code {
    /// The program as loaded, not specialised.
    pub fn of(prog: &Program) -> Code {
        Code {
            ops: prog.ops.clone(),
            callees: prog.callees.clone(),
        }
    }
}

/// The jiffies counter at `now_ns` for a kernel ticking at `hz` (`get_jiffies_64`, as
/// `bpf_jiffies64` reads it and as `tcp_jiffies32` stamps `lsndtime` and `rcv_tstamp`).
pub fn jiffies(now_ns: u64, hz: u64) -> u64 {
    (u128::from(now_ns) * u128::from(hz) / 1_000_000_000) as u64
}

#[cfg(test)]
mod tests {
    use super::MapStore;

    /// A full LRU hash map gives up the key used least recently: keys 1, 2, 3 in slots 0, 1,
    /// 2, then key 1 looked up again, so key 2 is the oldest use.
    #[test]
    fn a_full_lru_map_evicts_the_key_used_least_recently() {
        let mut m = MapStore::default();
        for (key, slot) in [(1u8, 0u32), (2, 1), (3, 2)] {
            m.keys.insert(vec![key], slot);
            m.touch(slot);
        }
        m.touch(0);
        assert_eq!(m.evict_least_recent(), Some(1));
        assert!(!m.keys.contains_key(&vec![2u8]));
        // Then key 3 (slot 2), then key 1 (slot 0); then nothing is left.
        assert_eq!(m.evict_least_recent(), Some(2));
        assert_eq!(m.evict_least_recent(), Some(0));
        assert_eq!(m.evict_least_recent(), None);
    }
}
