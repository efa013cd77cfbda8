//! Any text as a scenario file: parsing and resolution never panic, and a refusal names where.
#![no_main]

use libfuzzer_sys::fuzz_target;
use startlab_core::scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A document that does not parse may be refused as a whole (TOML syntax, a missing or
    // unknown top-level key): the path is then empty.
    let s = match scenario::from_toml(text) {
        Ok(s) => s,
        Err(e) => {
            assert!(!e.message.is_empty(), "an error without a message");
            return;
        }
    };
    // Every check after parsing is about a field: the refusal names it.
    if let Err(e) = scenario::resolve(&s) {
        assert!(!e.message.is_empty(), "an error without a message");
        assert!(!e.path.is_empty(), "a refusal without a field path: {e}");
    }
});
