//! Any text as a rate, a duration or a size: parsed or refused, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use startlab_core::scenario::units::{parse_duration, parse_rate, parse_size};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_rate(text);
        let _ = parse_duration(text);
        let _ = parse_size(text);
    }
});
