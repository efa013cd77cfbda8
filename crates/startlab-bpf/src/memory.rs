//! The virtual machine's address space: separate regions (stack, arguments, the socket, the ACK
//! and rate samples, a ring-buffer record, the object's data sections, socket storage), each at
//! its own base, so that an address says which region it is in. The loader (`elf`) relocates
//! data addresses into it; the VM (`vm`) checks every access against it.

pub const STACK_REGION: usize = 0;
pub const CTX_REGION: usize = 1;
pub const SOCK_REGION: usize = 2;
pub const ACK_REGION: usize = 3;
pub const RATE_REGION: usize = 4;
pub const RING_REGION: usize = 5;
/// The object's data sections come next, in order; socket storage after them.
pub const FIRST_DATA_REGION: usize = 6;

/// Regions are 2^REGION_BITS bytes apart.
pub const REGION_BITS: u32 = 36;

/// The address of the first byte of region `i`; address 0 (NULL) is in none.
#[inline(always)]
pub fn region_base(i: usize) -> u64 {
    (i as u64 + 1) << REGION_BITS
}

/// The region an address is in, plus one (0 for NULL and what lies below the first region),
/// and its offset in that region.
#[inline(always)]
pub fn split(addr: u64) -> (usize, usize) {
    (
        (addr >> REGION_BITS) as usize,
        (addr & ((1 << REGION_BITS) - 1)) as usize,
    )
}

/// The address of byte `offset` of data section `i`.
pub fn data_address(i: usize, offset: u64) -> u64 {
    region_base(FIRST_DATA_REGION + i) + offset
}
