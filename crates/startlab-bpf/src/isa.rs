//! The eBPF instruction set, as RFC 9669 ("BPF Instruction Set Architecture") defines it: how an
//! instruction is encoded (§3), the named opcodes of the instructions the simulator's virtual
//! machine executes, and their decoding into [`Op`], the form the interpreter (`vm`) runs. The
//! loader (`elf`) reads and relocates instructions with it; neither needs the other for this.

use std::collections::HashMap;

/// One instruction slot as encoded (§3.1): an 8-bit opcode, 4-bit destination and source
/// registers, a signed 16-bit offset and a signed 32-bit immediate. The wide `lddw` (§3.2,
/// §5.4) is two slots: its first carries the whole 64-bit value in `imm`, its second is left
/// empty.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Insn {
    pub op: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i64,
}

impl Insn {
    /// Bytes per slot.
    pub const BYTES: usize = 8;

    /// A slot from its little-endian encoding (§3.1: the destination register in the low four
    /// bits of the second byte, the source in the high four).
    pub fn from_le_bytes(b: [u8; 8]) -> Insn {
        Insn {
            op: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]) as i64,
        }
    }

    /// The instruction class (§3.3).
    pub fn class(&self) -> u8 {
        self.op & CLASS_MASK
    }
}

// §3.3 Instruction classes: the opcode's three low bits.
pub const CLASS_MASK: u8 = 0x07;
pub const LD: u8 = 0x00;
pub const LDX: u8 = 0x01;
pub const ST: u8 = 0x02;
pub const STX: u8 = 0x03;
pub const ALU: u8 = 0x04;
pub const JMP: u8 = 0x05;
pub const JMP32: u8 = 0x06;
pub const ALU64: u8 = 0x07;

// §4 Arithmetic and jump instructions: the source bit, then the operation code in the four high
// bits (`Alu`, `JA`...`JSLE`).
pub const SOURCE_MASK: u8 = 0x08;
/// The second operand is the immediate (K), or the source register (X).
pub const K: u8 = 0x00;
pub const X: u8 = 0x08;
const CODE_SHIFT: u32 = 4;

/// The operation code of an arithmetic or jump opcode (its four high bits).
pub fn code(op: u8) -> u8 {
    op >> CODE_SHIFT
}

// §5 Load and store instructions: the size (bits 3-4) and the mode (bits 5-7).
pub const SIZE_MASK: u8 = 0x18;
pub const W: u8 = 0x00;
pub const H: u8 = 0x08;
pub const B: u8 = 0x10;
pub const DW: u8 = 0x18;
pub const MODE_MASK: u8 = 0xe0;
pub const IMM: u8 = 0x00;
pub const MEM: u8 = 0x60;
pub const ATOMIC: u8 = 0xc0;

/// Bytes accessed by a load or store of `op` (§5: W 4, H 2, B 1, DW 8).
pub fn size_bytes(op: u8) -> u8 {
    match op & SIZE_MASK {
        W => 4,
        H => 2,
        B => 1,
        _ => 8,
    }
}

/// `lddw`: the 64-bit immediate load (§5.4), and its source field for a plain value (others
/// name maps and variables, which the loader resolves from relocations).
pub const LDDW: u8 = LD | IMM | DW;
pub const LDDW_IMM64: u8 = 0;

// §4.3 Jump instructions: the codes besides the conditions of `Cond`.
pub const JA: u8 = 0x0;
pub const CALL: u8 = 0x8;
pub const EXIT: u8 = 0x9;
/// The `call` instruction, and its source field (§4.3.1, §4.3.2): a helper by number, a
/// BPF-local function at a relative offset, a helper by BTF id (a kernel function).
pub const CALL_OP: u8 = JMP | K | (CALL << CODE_SHIFT);
pub const CALL_HELPER: u8 = 0;
pub const CALL_LOCAL: u8 = 1;
pub const CALL_KFUNC: u8 = 2;

/// The byte-swap operation code (§4.2), in the ALU classes.
pub const END: u8 = 0xd;

/// Arithmetic operation codes (§4.1).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Alu {
    Add = 0x0,
    Sub = 0x1,
    Mul = 0x2,
    Div = 0x3,
    Or = 0x4,
    And = 0x5,
    Lsh = 0x6,
    Rsh = 0x7,
    Neg = 0x8,
    Mod = 0x9,
    Xor = 0xa,
    Mov = 0xb,
    Arsh = 0xc,
}

impl Alu {
    pub fn from_code(code: u8) -> Option<Alu> {
        use Alu::*;
        Some(match code {
            0x0 => Add,
            0x1 => Sub,
            0x2 => Mul,
            0x3 => Div,
            0x4 => Or,
            0x5 => And,
            0x6 => Lsh,
            0x7 => Rsh,
            0x8 => Neg,
            0x9 => Mod,
            0xa => Xor,
            0xb => Mov,
            0xc => Arsh,
            _ => return None,
        })
    }
}

/// Conditional jump codes (§4.3): unsigned and signed comparisons, and `jset` (a & x != 0).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cond {
    Jeq = 0x1,
    Jgt = 0x2,
    Jge = 0x3,
    Jset = 0x4,
    Jne = 0x5,
    Jsgt = 0x6,
    Jsge = 0x7,
    Jlt = 0xa,
    Jle = 0xb,
    Jslt = 0xc,
    Jsle = 0xd,
}

impl Cond {
    pub fn from_code(code: u8) -> Option<Cond> {
        use Cond::*;
        Some(match code {
            0x1 => Jeq,
            0x2 => Jgt,
            0x3 => Jge,
            0x4 => Jset,
            0x5 => Jne,
            0x6 => Jsgt,
            0x7 => Jsge,
            0xa => Jlt,
            0xb => Jle,
            0xc => Jslt,
            0xd => Jsle,
            _ => return None,
        })
    }
}

/// Atomic operations (§5.3), the immediate of an `ATOMIC` store; `FETCH` (which returns the old
/// value in the source register) is a flag of its own in [`Op::Atomic`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Or,
    And,
    Xor,
    /// Exchange (always with FETCH).
    Xchg,
    /// Compare r0 and exchange (always with FETCH; the old value goes to r0).
    Cmpxchg,
}

pub const ATOMIC_FETCH: i64 = 0x01;

impl AtomicOp {
    /// The operation of immediate `imm`, and whether it fetches; `None` for an immediate §5.3
    /// does not define.
    pub fn from_imm(imm: i64) -> Option<(AtomicOp, bool)> {
        use AtomicOp::*;
        let fetch = imm & ATOMIC_FETCH != 0;
        let op = match imm & !ATOMIC_FETCH {
            0x00 => Add,
            0x40 => Or,
            0x50 => And,
            0xa0 => Xor,
            0xe0 if fetch => Xchg,
            0xf0 if fetch => Cmpxchg,
            _ => return None,
        };
        Some((op, fetch))
    }
}

/// The second operand of an operation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Src {
    Reg(u8),
    /// The immediate, sign-extended to 64 bits.
    Imm(u64),
}

/// An instruction decoded once for the interpreter; jump targets are absolute indices.
///
/// `repr(u8)` keeps the variant in a byte of its own that the interpreter's dispatch reads as it
/// is (without it, the compiler may hide it in the unused values of `Cond` or `Alu`, and every
/// dispatch would pay for decoding it); the fields are in an order that keeps `Op` 24 bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    Alu64 {
        op: Alu,
        d: u8,
        src: Src,
    },
    Alu32 {
        op: Alu,
        d: u8,
        src: Src,
    },
    /// Byte swap (§4.2): to big-endian (`to_be`) or little-endian, on the low `bits` bits.
    Swap {
        d: u8,
        to_be: bool,
        bits: u32,
    },
    Ja(u32),
    /// A conditional jump, comparing 64 bits (`wide`, JMP) or the low 32 (JMP32).
    Jcc {
        cond: Cond,
        wide: bool,
        d: u8,
        target: u32,
        src: Src,
    },
    /// A call of `Program::callees[i]`.
    Call(u32),
    Exit,
    /// `lddw` (the next slot is its second half, skipped).
    LdImm64 {
        d: u8,
        value: u64,
    },
    Ldx {
        size: u8,
        d: u8,
        s: u8,
        off: i16,
    },
    Stx {
        size: u8,
        d: u8,
        s: u8,
        off: i16,
    },
    St {
        size: u8,
        d: u8,
        off: i16,
        imm: i64,
    },
    Atomic {
        size: u8,
        d: u8,
        s: u8,
        off: i16,
        op: AtomicOp,
        fetch: bool,
    },
    /// Never reached by a valid program (the second slot of `lddw`), or reached and refused.
    Invalid(&'static str),
}

/// Decodes the instructions of program `name`, refusing what the interpreter does not execute.
/// `call_index` gives the callee index of each `call` (its `Op::Call`).
pub fn decode(
    name: &str,
    insns: &[Insn],
    call_index: &HashMap<usize, usize>,
) -> Result<Vec<Op>, String> {
    let n = insns.len();
    let mut ops = Vec::with_capacity(n);
    let mut k = 0;
    let fail = |k: usize, what: &str| format!("{name}: instruction {k}: {what}");
    while k < n {
        let i = insns[k];
        // Registers r0-r10 (§3.1); r10 is the read-only frame pointer.
        if i.dst > 10 || i.src > 10 {
            return Err(fail(k, "a register that does not exist"));
        }
        let size = size_bytes(i.op);
        let jump = |off: i64| -> Result<u32, String> {
            let t = k as i64 + 1 + off;
            if t < 0 || t as usize >= n {
                return Err(fail(k, "a jump outside the program"));
            }
            Ok(t as u32)
        };
        let src = if i.op & SOURCE_MASK == X {
            Src::Reg(i.src)
        } else {
            Src::Imm(i.imm as i32 as i64 as u64)
        };
        let op = match i.class() {
            class @ (ALU | ALU64) => {
                if i.dst == 10 {
                    return Err(fail(k, "writes the frame pointer"));
                }
                match code(i.op) {
                    // §4.2: in ALU64, an unconditional swap (bswap).
                    END => Op::Swap { d: i.dst, to_be: class == ALU64 || i.op & SOURCE_MASK == X, bits: i.imm as u32 },
                    // A non-zero offset makes div and mod signed and mov sign-extending (§4.1).
                    _ if i.off != 0 => return Err(fail(k, &format!("opcode {:#04x} with offset {}, which the simulator's VM does not execute", i.op, i.off))),
                    c => match Alu::from_code(c) {
                        Some(op) if class == ALU64 => Op::Alu64 { op, d: i.dst, src },
                        Some(op) => Op::Alu32 { op, d: i.dst, src },
                        None => return Err(fail(k, &format!("opcode {:#04x}", i.op))),
                    },
                }
            }
            class @ (JMP | JMP32) => match code(i.op) {
                // §4.3: in JMP32, `gotol` takes its offset from the immediate.
                JA if class == JMP32 => Op::Ja(jump(i.imm)?),
                JA => Op::Ja(jump(i.off as i64)?),
                CALL if class == JMP => {
                    let i = call_index
                        .get(&k)
                        .ok_or_else(|| fail(k, "a call without a callee"))?;
                    Op::Call(*i as u32)
                }
                EXIT if class == JMP => Op::Exit,
                c => match Cond::from_code(c) {
                    Some(cond) => Op::Jcc {
                        cond,
                        wide: class == JMP,
                        d: i.dst,
                        src,
                        target: jump(i.off as i64)?,
                    },
                    None => return Err(fail(k, &format!("opcode {:#04x}", i.op))),
                },
            },
            LD if i.op == LDDW => {
                ops.push(Op::LdImm64 {
                    d: i.dst,
                    value: i.imm as u64,
                });
                ops.push(Op::Invalid("the second half of a 64-bit load was executed"));
                k += 2;
                continue;
            }
            LDX if i.op & MODE_MASK == MEM => Op::Ldx {
                size,
                d: i.dst,
                s: i.src,
                off: i.off,
            },
            STX if i.op & MODE_MASK == MEM => Op::Stx {
                size,
                d: i.dst,
                s: i.src,
                off: i.off,
            },
            STX if i.op & MODE_MASK == ATOMIC && (size == 4 || size == 8) => {
                let Some((op, fetch)) = AtomicOp::from_imm(i.imm) else {
                    return Err(fail(k, &format!("atomic operation {:#x}", i.imm)));
                };
                Op::Atomic {
                    size,
                    d: i.dst,
                    s: i.src,
                    off: i.off,
                    op,
                    fetch,
                }
            }
            ST if i.op & MODE_MASK == MEM => Op::St {
                size,
                d: i.dst,
                off: i.off,
                imm: i.imm as i32 as i64,
            },
            _ => {
                return Err(fail(
                    k,
                    &format!(
                        "opcode {:#04x}, which the simulator's VM does not execute",
                        i.op
                    ),
                ))
            }
        };
        ops.push(op);
        k += 1;
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(op: u8, dst: u8, src: u8, off: i16, imm: i64) -> Result<Vec<Op>, String> {
        let insns = [
            Insn {
                op,
                dst,
                src,
                off,
                imm,
            },
            Insn {
                op: JMP | (EXIT << 4),
                ..Insn::default()
            },
        ];
        decode("p", &insns, &HashMap::new())
    }

    #[test]
    fn named_opcodes_are_the_encoded_ones() {
        // Opcodes as clang emits them (RFC 9669 Appendix A).
        assert_eq!(LDDW, 0x18);
        assert_eq!(CALL_OP, 0x85);
        assert_eq!(JMP | (EXIT << 4), 0x95);
        assert_eq!(ALU64 | X | ((Alu::Mov as u8) << 4), 0xbf);
        assert_eq!(STX | ATOMIC | DW, 0xdb);
        assert_eq!(LDX | MEM | W, 0x61);
    }

    #[test]
    fn decodes_and_refuses() {
        assert_eq!(
            one(0x07, 1, 0, 0, -1).unwrap()[0],
            Op::Alu64 {
                op: Alu::Add,
                d: 1,
                src: Src::Imm(u64::MAX)
            }
        );
        assert_eq!(
            one(0xcc, 2, 3, 0, 0).unwrap()[0],
            Op::Alu32 {
                op: Alu::Arsh,
                d: 2,
                src: Src::Reg(3)
            }
        );
        assert_eq!(
            one(0xdc, 1, 0, 0, 16).unwrap()[0],
            Op::Swap {
                d: 1,
                to_be: true,
                bits: 16
            }
        );
        assert_eq!(
            one(0xd7, 1, 0, 0, 32).unwrap()[0],
            Op::Swap {
                d: 1,
                to_be: true,
                bits: 32
            }
        );
        assert_eq!(
            one(0xad, 1, 2, 0, 0).unwrap()[0],
            Op::Jcc {
                cond: Cond::Jlt,
                wide: true,
                d: 1,
                src: Src::Reg(2),
                target: 1
            }
        );
        assert_eq!(one(0x06, 0, 0, 0, 0).unwrap()[0], Op::Ja(1));
        assert_eq!(
            one(0xdb, 1, 2, 8, 0xf1).unwrap()[0],
            Op::Atomic {
                size: 8,
                d: 1,
                s: 2,
                off: 8,
                op: AtomicOp::Cmpxchg,
                fetch: true
            }
        );
        assert!(one(0xdb, 1, 2, 0, 0xe0)
            .unwrap_err()
            .contains("atomic operation 0xe0"));
        // sdiv (offset 1), a load with sign extension (MEMSX), the frame pointer written.
        assert!(one(0x3f, 1, 2, 1, 0).unwrap_err().contains("offset 1"));
        assert!(one(0x81, 1, 2, 0, 0)
            .unwrap_err()
            .contains("does not execute"));
        assert!(one(0xb7, 10, 0, 0, 0)
            .unwrap_err()
            .contains("frame pointer"));
        assert!(one(0x05, 0, 0, 5, 0)
            .unwrap_err()
            .contains("outside the program"));
    }
}
