#![no_main]
//! Fuzzes sylva_sim::spec::helios::parse: any UTF-8 input gives species or an error, never a
//! panic, hang or unbounded allocation; accepted specs validate and round-trip.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(species) = sylva_sim::spec::helios::parse(text, "fuzz") {
            assert!(!species.is_empty());
            for spec in &species {
                common::check(spec);
            }
        }
    }
});
