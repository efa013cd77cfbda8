//! A virtual machine for eBPF congestion controls: an interpreter of the instruction set
//! (Documentation/bpf/standardization/instruction-set.rst) over a memory of separate regions
//! (stack, arguments, the socket, the ACK and rate samples, ring-buffer records, the object's
//! data sections, socket storage), the helpers and kernel functions a controller calls, and
//! the checks the kernel's verifier would have made at load time made at run time instead:
//! every access inside a region, writes to the socket only where a congestion control may
//! write, a bounded number of instructions per call. A program that breaks one gets an error,
//! never the process.

use crate::elf::{Callee, Insn, Loaded, MapDef, MAP_TAG, MAP_TYPE_RINGBUF, MAP_TYPE_SK_STORAGE};
use crate::layout::{self, Image};

pub const STACK_REGION: usize = 0;
pub const CTX_REGION: usize = 1;
pub const SOCK_REGION: usize = 2;
pub const ACK_REGION: usize = 3;
pub const RATE_REGION: usize = 4;
pub const RING_REGION: usize = 5;
/// The object's data sections come next, in order; socket storage after them.
pub const FIRST_DATA_REGION: usize = 6;

/// Bytes of stack per call frame (MAX_BPF_STACK) and frames at most.
const FRAME: usize = 512;
const FRAMES: usize = 8;
/// Instructions one hook call may execute (the verifier bounds programs statically; a bound
/// at run time keeps a looping program from hanging the simulator).
pub const BUDGET: u64 = 1_000_000;

/// The address of the first byte of region `i`: regions are 2^36 bytes apart, and address 0
/// (NULL) is in none.
pub fn region_base(i: usize) -> u64 {
    (i as u64 + 1) << 36
}

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

/// One controller instance (one connection): the object, its memory and what it reported.
#[derive(Clone, Debug)]
pub struct Vm {
    pub loaded: std::sync::Arc<Loaded>,
    regions: Vec<Region>,
    /// Per map: the region of this connection's socket storage, once created.
    storage: Vec<Option<usize>>,
    /// Ring-buffer records submitted, in order.
    pub events: Vec<Vec<u8>>,
    /// The record reserved and not yet submitted: (map, size).
    reserved: Option<(usize, usize)>,
    /// `bpf_ktime_get_ns` and `bpf_jiffies64` (at `hz`).
    pub now_ns: u64,
    pub hz: u64,
    /// Instructions executed so far (for the cost measurements).
    pub executed: u64,
}

impl Vm {
    /// A fresh instance; `data` are the object's data sections as they start (`.rodata` with
    /// the configuration written).
    pub fn new(loaded: std::sync::Arc<Loaded>, data: Vec<Vec<u8>>) -> Vm {
        let mut regions = vec![
            Region { bytes: vec![0; FRAME * FRAMES], writes: Writes::Any },
            Region { bytes: vec![0; 64], writes: Writes::Never },
            Region { bytes: vec![0; layout::SOCK_BYTES], writes: Writes::Ranges(layout::writable(Image::Sock)) },
            Region { bytes: vec![0; layout::ACK_SAMPLE_BYTES], writes: Writes::Never },
            Region { bytes: vec![0; layout::RATE_SAMPLE_BYTES], writes: Writes::Never },
            Region { bytes: Vec::new(), writes: Writes::Any },
        ];
        for (section, bytes) in loaded.data.iter().zip(data) {
            regions.push(Region { bytes, writes: if section.writable { Writes::Any } else { Writes::Never } });
        }
        let maps = loaded.maps.len();
        Vm { loaded, regions, storage: vec![None; maps], events: Vec::new(), reserved: None, now_ns: 0, hz: 1000, executed: 0 }
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

    /// Data section `i` as it is now (`.bss` counters, for example).
    pub fn data(&self, i: usize) -> &[u8] {
        &self.regions[FIRST_DATA_REGION + i].bytes
    }

    /// Runs hook `hook` (a member of `tcp_congestion_ops`) with `args` (the socket first, as
    /// the kernel passes them); `Ok(None)` if the object does not implement it.
    pub fn call(&mut self, hook: &str, args: &[u64]) -> Result<Option<u64>, VmError> {
        let Some(&p) = self.loaded.hooks.get(hook) else { return Ok(None) };
        // The context: the arguments as an array of u64 (BPF_PROG).
        let ctx = &mut self.regions[CTX_REGION].bytes;
        ctx.fill(0);
        for (i, a) in args.iter().enumerate().take(8) {
            ctx[i * 8..i * 8 + 8].copy_from_slice(&a.to_le_bytes());
        }
        self.run(p).map(Some)
    }

    fn translate(&self, addr: u64, size: usize, write: bool) -> Result<(usize, usize), VmError> {
        let region = (addr >> 36) as usize;
        let offset = (addr & ((1 << 36) - 1)) as usize;
        if region == 0 || region > self.regions.len() {
            return Err(VmError(format!("access to address {addr:#x}, which is in no memory the program may use")));
        }
        let r = &self.regions[region - 1];
        if offset + size > r.bytes.len() {
            return Err(VmError(format!("access of {size} bytes at offset {offset} of a region of {} bytes", r.bytes.len())));
        }
        if write {
            let ok = match &r.writes {
                Writes::Any => true,
                Writes::Never => false,
                Writes::Ranges(ranges) => ranges.iter().any(|&(a, b)| offset as u32 >= a && (offset + size) as u32 <= b),
            };
            if !ok {
                let what = if region - 1 == SOCK_REGION {
                    layout::FIELDS
                        .iter()
                        .find(|f| f.image == Image::Sock && offset as u32 >= f.offset && (offset as u32) < f.offset + f.size)
                        .map_or("the socket".to_string(), |f| format!("{}.{}", f.root, f.path))
                } else {
                    "read-only memory".to_string()
                };
                return Err(VmError(format!("the program writes {what}, which a congestion control may not write")));
            }
        }
        Ok((region - 1, offset))
    }

    fn load(&self, addr: u64, size: usize) -> Result<u64, VmError> {
        let (r, o) = self.translate(addr, size, false)?;
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(&self.regions[r].bytes[o..o + size]);
        Ok(u64::from_le_bytes(b))
    }

    fn store(&mut self, addr: u64, size: usize, v: u64) -> Result<(), VmError> {
        let (r, o) = self.translate(addr, size, true)?;
        self.regions[r].bytes[o..o + size].copy_from_slice(&v.to_le_bytes()[..size]);
        Ok(())
    }

    fn map(&self, handle: u64) -> Result<(usize, &MapDef), VmError> {
        if handle & !0xffff != MAP_TAG {
            return Err(VmError("a helper was given something that is not a map".into()));
        }
        let i = (handle & 0xffff) as usize;
        self.loaded.maps.get(i).map(|m| (i, m)).ok_or_else(|| VmError("a map that does not exist".into()))
    }

    fn helper(&mut self, id: u32, r: &[u64; 11]) -> Result<u64, VmError> {
        let (a1, a2, a4) = (r[1], r[2], r[4]);
        Ok(match id {
            5 => self.now_ns,
            6 => 0,
            118 => self.now_ns.saturating_mul(self.hz) / 1_000_000_000,
            107 => {
                // bpf_sk_storage_get(map, sk, value, flags): one socket per instance.
                let (i, m) = self.map(a1)?;
                if m.kind != MAP_TYPE_SK_STORAGE {
                    return Err(VmError(format!("bpf_sk_storage_get on map \"{}\", which is not socket storage", m.name)));
                }
                let size = m.value_size as usize;
                match self.storage[i] {
                    Some(region) => region_base(region),
                    None if a4 & 1 != 0 => {
                        self.regions.push(Region { bytes: vec![0; size], writes: Writes::Any });
                        self.storage[i] = Some(self.regions.len() - 1);
                        region_base(self.regions.len() - 1)
                    }
                    None => 0,
                }
            }
            108 => {
                let (i, _) = self.map(a1)?;
                if let Some(region) = self.storage[i].take() {
                    self.regions[region].bytes.clear();
                }
                0
            }
            131 => {
                // bpf_ringbuf_reserve(map, size, flags)
                let (i, m) = self.map(a1)?;
                if m.kind != MAP_TYPE_RINGBUF || self.reserved.is_some() || a2 > 1 << 16 {
                    return Ok(0);
                }
                self.regions[RING_REGION].bytes = vec![0; a2 as usize];
                self.reserved = Some((i, a2 as usize));
                region_base(RING_REGION)
            }
            132 | 133 => {
                // bpf_ringbuf_submit / _discard(data, flags)
                if a1 != region_base(RING_REGION) || self.reserved.is_none() {
                    return Err(VmError("a ring-buffer record submitted that was not reserved".into()));
                }
                self.reserved = None;
                let record = std::mem::take(&mut self.regions[RING_REGION].bytes);
                if id == 132 {
                    self.events.push(record);
                }
                0
            }
            130 => {
                // bpf_ringbuf_output(map, data, size, flags)
                let (_, m) = self.map(a1)?;
                if m.kind != MAP_TYPE_RINGBUF {
                    return Ok(u64::MAX);
                }
                let (reg, o) = self.translate(a2, r[3] as usize, false)?;
                self.events.push(self.regions[reg].bytes[o..o + r[3] as usize].to_vec());
                0
            }
            _ => return Err(VmError(format!("helper {id} is not provided"))),
        })
    }

    fn sock_get(&self, path: &str) -> u64 {
        layout::get(&self.regions[SOCK_REGION].bytes, layout::known("tcp_sock", path))
    }

    fn sock_set(&mut self, path: &str, v: u64) {
        layout::put(&mut self.regions[SOCK_REGION].bytes, layout::known("tcp_sock", path), v)
    }

    /// The kernel functions a controller may call, as Linux computes them.
    fn kfunc(&mut self, name: &str, r: &[u64; 11]) -> Result<u64, VmError> {
        if r[1] != region_base(SOCK_REGION) {
            return Err(VmError(format!("{name} was given something other than the socket")));
        }
        let cwnd = self.sock_get("snd_cwnd") as u32;
        let ssthresh = self.sock_get("snd_ssthresh") as u32;
        let clamp = self.sock_get("snd_cwnd_clamp") as u32;
        Ok(match name {
            // net/ipv4/tcp_cong.c, tcp_slow_start
            "tcp_slow_start" => {
                let acked = r[2] as u32;
                let grown = cwnd.saturating_add(acked).min(ssthresh);
                let left = acked - (grown.saturating_sub(cwnd)).min(acked);
                self.sock_set("snd_cwnd", grown.min(clamp) as u64);
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
            "tcp_reno_undo_cwnd" => cwnd.max(self.sock_get("prior_cwnd") as u32) as u64,
            // tcp_reno_cong_avoid
            "tcp_reno_cong_avoid" => {
                let mut acked = r[3] as u32;
                if !self.is_cwnd_limited() {
                    return Ok(0);
                }
                if cwnd < ssthresh {
                    let grown = cwnd.saturating_add(acked).min(ssthresh);
                    acked -= (grown - cwnd).min(acked);
                    self.sock_set("snd_cwnd", grown.min(clamp) as u64);
                    if acked == 0 {
                        return Ok(0);
                    }
                }
                let w = self.sock_get("snd_cwnd") as u32;
                self.cong_avoid_ai(w, acked);
                0
            }
            _ => return Err(VmError(format!("kernel function {name} is not provided"))),
        })
    }

    /// include/net/tcp.h, tcp_is_cwnd_limited.
    fn is_cwnd_limited(&self) -> bool {
        let cwnd = self.sock_get("snd_cwnd");
        if cwnd < self.sock_get("snd_ssthresh") {
            return cwnd < 2 * self.sock_get("max_packets_out");
        }
        self.sock_get("is_cwnd_limited") & 1 == 1
    }

    /// net/ipv4/tcp_cong.c, tcp_cong_avoid_ai: one segment per `w` acknowledged.
    fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        let mut cwnd = self.sock_get("snd_cwnd") as u32;
        let mut cnt = self.sock_get("snd_cwnd_cnt") as u32;
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
        let clamp = self.sock_get("snd_cwnd_clamp") as u32;
        self.sock_set("snd_cwnd_cnt", cnt as u64);
        self.sock_set("snd_cwnd", cwnd.min(clamp) as u64);
    }

    /// Executes program `p` from its first instruction with r1 = the context.
    fn run(&mut self, p: usize) -> Result<u64, VmError> {
        let loaded = self.loaded.clone();
        let prog = &loaded.programs[p];
        let insns: &[Insn] = &prog.insns;
        let mut reg = [0u64; 11];
        reg[1] = region_base(CTX_REGION);
        let mut frame = 0usize;
        reg[10] = region_base(STACK_REGION) + FRAME as u64;
        // Return addresses and callee-saved registers of the frames below.
        let mut stack: Vec<(usize, [u64; 4])> = Vec::new();
        let mut pc = 0usize;
        let mut left = BUDGET;
        loop {
            if left == 0 {
                return Err(VmError(format!("{} ran more than {BUDGET} instructions", prog.name)));
            }
            left -= 1;
            self.executed += 1;
            let Some(&i) = insns.get(pc) else {
                return Err(VmError(format!("{} ran off its end", prog.name)));
            };
            pc += 1;
            let (d, s) = (i.dst as usize, i.src as usize);
            if d > 10 || s > 10 {
                return Err(VmError(format!("{}: register r{} does not exist", prog.name, d.max(s))));
            }
            let class = i.op & 7;
            match class {
                0x07 | 0x04 => {
                    let wide = class == 0x07;
                    let x = if i.op & 0x08 != 0 { reg[s] } else { i.imm as i32 as i64 as u64 };
                    let a = reg[d];
                    let code = i.op & 0xf0;
                    if d == 10 && code != 0x00 {
                        return Err(VmError(format!("{} changes the frame pointer", prog.name)));
                    }
                    let v = if wide {
                        match code {
                            0x00 => a.wrapping_add(x),
                            0x10 => a.wrapping_sub(x),
                            0x20 => a.wrapping_mul(x),
                            0x30 => if x == 0 { 0 } else { a / x },
                            0x40 => a | x,
                            0x50 => a & x,
                            0x60 => a << (x & 63),
                            0x70 => a >> (x & 63),
                            0x80 => (a as i64).wrapping_neg() as u64,
                            0x90 => if x == 0 { a } else { a % x },
                            0xa0 => a ^ x,
                            0xb0 => x,
                            0xc0 => ((a as i64) >> (x & 63)) as u64,
                            _ => return Err(VmError(format!("{}: opcode {:#04x}", prog.name, i.op))),
                        }
                    } else {
                        let (a, x) = (a as u32, x as u32);
                        (match code {
                            0x00 => a.wrapping_add(x),
                            0x10 => a.wrapping_sub(x),
                            0x20 => a.wrapping_mul(x),
                            0x30 => if x == 0 { 0 } else { a / x },
                            0x40 => a | x,
                            0x50 => a & x,
                            0x60 => a << (x & 31),
                            0x70 => a >> (x & 31),
                            0x80 => (a as i32).wrapping_neg() as u32,
                            0x90 => if x == 0 { a } else { a % x },
                            0xa0 => a ^ x,
                            0xb0 => x,
                            0xc0 => ((a as i32) >> (x & 31)) as u32,
                            0xd0 => {
                                // Byte swaps: to little endian (a no-op here, truncating) or to big.
                                let to_be = i.op & 0x08 != 0;
                                let full = reg[d];
                                let v = match (i.imm, to_be) {
                                    (16, false) => full & 0xffff,
                                    (32, false) => full & 0xffff_ffff,
                                    (64, false) => full,
                                    (16, true) => (full as u16).swap_bytes() as u64,
                                    (32, true) => (full as u32).swap_bytes() as u64,
                                    (64, true) => full.swap_bytes(),
                                    _ => return Err(VmError(format!("{}: byte swap of {} bits", prog.name, i.imm))),
                                };
                                reg[d] = v;
                                continue;
                            }
                            _ => return Err(VmError(format!("{}: opcode {:#04x}", prog.name, i.op))),
                        }) as u64
                    };
                    reg[d] = v;
                }
                0x05 | 0x06 => {
                    let code = i.op & 0xf0;
                    match code {
                        0x00 => {
                            pc = (pc as i64 + i.off as i64) as usize;
                            continue;
                        }
                        0x80 => {
                            let callee = prog.calls.get(&(pc - 1)).cloned().ok_or_else(|| VmError(format!("{}: a call without a callee", prog.name)))?;
                            match callee {
                                Callee::Helper(id) => reg[0] = self.helper(id, &reg)?,
                                Callee::Kfunc(name) => reg[0] = self.kfunc(&name, &reg)?,
                                Callee::Local(target) => {
                                    if frame + 1 >= FRAMES {
                                        return Err(VmError(format!("{}: calls nested more than {FRAMES} deep", prog.name)));
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
                            continue;
                        }
                        0x90 => {
                            match stack.pop() {
                                None => return Ok(reg[0]),
                                Some((ret, saved)) => {
                                    pc = ret;
                                    reg[6..10].copy_from_slice(&saved);
                                    frame -= 1;
                                    reg[10] = region_base(STACK_REGION) + ((frame + 1) * FRAME) as u64;
                                }
                            }
                            continue;
                        }
                        _ => {}
                    }
                    let x = if i.op & 0x08 != 0 { reg[s] } else { i.imm as i32 as i64 as u64 };
                    let a = reg[d];
                    let (a, x) = if class == 0x06 { (a as u32 as u64, x as u32 as u64) } else { (a, x) };
                    let (sa, sx) = if class == 0x06 { (a as u32 as i32 as i64, x as u32 as i32 as i64) } else { (a as i64, x as i64) };
                    let taken = match code {
                        0x10 => a == x,
                        0x20 => a > x,
                        0x30 => a >= x,
                        0x40 => a & x != 0,
                        0x50 => a != x,
                        0x60 => sa > sx,
                        0x70 => sa >= sx,
                        0xa0 => a < x,
                        0xb0 => a <= x,
                        0xc0 => sa < sx,
                        0xd0 => sa <= sx,
                        _ => return Err(VmError(format!("{}: opcode {:#04x}", prog.name, i.op))),
                    };
                    if taken {
                        pc = (pc as i64 + i.off as i64) as usize;
                    }
                }
                0x00 => {
                    reg[d] = i.imm as u64;
                    pc += 1;
                }
                0x01 | 0x02 | 0x03 => {
                    let size = match i.op & 0x18 {
                        0x00 => 4,
                        0x08 => 2,
                        0x10 => 1,
                        _ => 8,
                    };
                    if class == 0x01 {
                        let addr = reg[s].wrapping_add(i.off as i64 as u64);
                        reg[d] = self.load(addr, size)?;
                    } else if class == 0x02 {
                        let addr = reg[d].wrapping_add(i.off as i64 as u64);
                        self.store(addr, size, i.imm as u64)?;
                    } else if i.op & 0xe0 == 0xc0 {
                        // Atomic operations (one thread: a read, the operation, a write).
                        let addr = reg[d].wrapping_add(i.off as i64 as u64);
                        let old = self.load(addr, size)?;
                        let val = reg[s];
                        let fetch = i.imm & 1 != 0;
                        let new = match i.imm & !1 {
                            0x00 => old.wrapping_add(val),
                            0x40 => old | val,
                            0x50 => old & val,
                            0xa0 => old ^ val,
                            0xe0 => val,
                            0xf0 => {
                                // cmpxchg: r0 is compared and receives the old value.
                                let expected = if size == 4 { reg[0] as u32 as u64 } else { reg[0] };
                                let new = if old == expected { val } else { old };
                                self.store(addr, size, new)?;
                                reg[0] = old;
                                continue;
                            }
                            op => return Err(VmError(format!("{}: atomic operation {op:#x}", prog.name))),
                        };
                        self.store(addr, size, new)?;
                        if fetch || i.imm == 0xe1 {
                            reg[s] = old;
                        }
                    } else {
                        let addr = reg[d].wrapping_add(i.off as i64 as u64);
                        self.store(addr, size, reg[s])?;
                    }
                }
                _ => return Err(VmError(format!("{}: opcode {:#04x}", prog.name, i.op))),
            }
        }
    }
}
