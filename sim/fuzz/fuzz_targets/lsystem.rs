#![no_main]
//! Fuzzes sylva_sim::lsystem: parsing, capped expansion and turtle interpretation of any UTF-8
//! input give a count or an error, never a panic, hang or unbounded allocation. An invariant
//! error would be a bug in the module, so it fails the run.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(sylva_sim::SimError::Invariant(msg)) = sylva_sim::lsystem::parse_and_expand_limited(text) {
            panic!("invariant broken: {msg}");
        }
    }
});
