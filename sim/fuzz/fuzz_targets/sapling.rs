#![no_main]
//! Fuzzes sylva_sim::spec::sapling::parse: any UTF-8 input gives a spec or an error, never a
//! panic, hang or unbounded allocation; accepted specs validate and round-trip.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(spec) = sylva_sim::spec::sapling::parse(text, "fuzz") {
            common::check(&spec);
        }
    }
});
