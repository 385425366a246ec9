//! Shared by the fuzz targets: whatever a parser accepts must be a valid spec and must survive
//! Sylva's text format unchanged, and must have a size estimate.

use sylva_sim::spec::{text, WeberPennSpec};

pub fn check(spec: &WeberPennSpec) {
    spec.validate("fuzz").expect("a parsed spec validates");
    // The size estimate the generator refuses from is defined for every accepted spec.
    let size = spec.estimate_size();
    assert!(
        !size.skeleton_segments.is_nan() && !size.leaves.is_nan() && !size.work.is_nan(),
        "NaN size estimate: {size:?}"
    );
    let written = text::write(spec);
    let back = text::parse(&written, "fuzz").unwrap_or_else(|e| panic!("written spec does not parse: {e}\n{written}"));
    let mut a = spec.clone();
    let mut b = back;
    a.notes.clear();
    b.notes.clear();
    assert_eq!(a, b, "text round trip changed the spec\n{written}");
}
