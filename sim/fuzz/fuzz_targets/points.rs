#![no_main]
//! Fuzzes sylva_sim::colonize::parse_points (attraction points from a file): any UTF-8 input
//! gives points or an error, never a panic; accepted points are finite.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(points) = sylva_sim::colonize::parse_points(text, "fuzz") {
            assert!(points.iter().all(|p| p.is_finite()), "a non-finite point was accepted");
        }
    }
});
