#![no_main]
//! Fuzzes format detection and every parser behind sylva_sim::spec::load::load_str, plus
//! SpecLibrary::pick on what loads.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(lib) = sylva_sim::spec::load::load_str(text, "fuzz.py") {
            assert!(!lib.species.is_empty());
            for spec in &lib.species {
                common::check(spec);
            }
            let _ = lib.pick(None);
            let _ = lib.pick(Some("no such species"));
            if let Some(first) = lib.names().first() {
                assert!(lib.pick(Some(first)).is_ok());
            }
        }
    }
});
