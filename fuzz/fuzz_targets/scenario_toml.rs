//! Any text as a scenario file: parsing and resolution never panic, and a refusal names where.
#![no_main]

use libfuzzer_sys::fuzz_target;
use startlab_core::scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match scenario::from_toml(text).and_then(|s| scenario::resolve(&s)) {
        Ok(_) => {}
        Err(e) => assert!(!e.message.is_empty(), "an error without a message"),
    }
});
