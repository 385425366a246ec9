//! The size of the tree a spec grows, estimated from its parameters alone, so the generator can
//! refuse a tree beyond its limits before spending the memory and time on it.
//!
//! The counts follow Arbaro's rules as the generator replays them (see `weberpenn`), in
//! expectation and without geometry:
//! - trunks: `max(1, 0Branches)`;
//! - a stem of level n has `nCurveRes` segments; after each segment but the last it splits into
//!   `1 + nSegSplits` pieces on average (error diffusion keeps the mean exact), the trunk's first
//!   split being `1 + |0BaseSplits|`; every piece carries on with the remaining segments;
//! - a stem has `n+1Branches` children in all, scaled as Arbaro scales the count (its pieces
//!   share them: a split divides the children per segment among the pieces): the trunk exactly
//!   `1Branches`; a level-1 stem `2Branches · (0.2 + 0.8 · ratio)` with `ratio` its length over
//!   the longest it could have, the shape ratio of `Shape` at its place, averaged over the
//!   places; deeper stems `nBranches · (1 - 0.5 · offset / parent length)`, 0.75 on average;
//! - a stem of the last level carries `|Leaves| · LeafQuality` leaves times the shape ratio of
//!   `LeafDistrib` (averaged) per `nCurveRes` segments on each of its pieces (splits do not
//!   divide the leaves);
//! - a helical segment (`nCurveV < 0`) becomes ten chords in the skeleton, and a segment is cut
//!   once more where each child hangs;
//! - a pruned tree (`PruneRatio > 0`) grows each stem above the trunk up to 16 times while it
//!   tests the envelope (each test shortens it by at least 1/15 of its length).
//!
//! Stems that come out too short or thin, and pruned stems, are dropped by the generator, so a
//! real tree has about these counts or fewer (the built-in species grow within 7 % of theirs,
//! and a test holds them within 25 %); the generator also counts as it grows and stops at its
//! limits, so an estimate that falls short cannot run away.

use super::WeberPennSpec;
use crate::weberpenn::shape_ratio;

/// Chords per helical segment (Arbaro's `makeHelix(10)`).
const HELIX_CHORDS: f64 = 10.0;
/// Growth runs per pruned stem: the first, then at most 15 shortened test runs.
const PRUNE_RUNS: f64 = 16.0;

/// Expected counts of the tree a spec grows. Counts are `f64` and may be infinite (a count
/// that does not fit any integer is simply too large).
#[derive(Clone, Debug, PartialEq)]
pub struct SizeEstimate {
    /// Stems of each level (clones not counted separately).
    pub stems: Vec<f64>,
    /// Segments of each level as Arbaro makes them, clones included.
    pub segments: Vec<f64>,
    /// Segments of the skeleton: helical segments as their chords, plus a cut per child.
    pub skeleton_segments: f64,
    pub leaves: f64,
    /// Segments visited (pruning test runs included) plus stems made: the generator's time.
    pub work: f64,
}

impl SizeEstimate {
    /// The level with the most skeleton segments, for messages.
    pub fn largest_level(&self) -> usize {
        (0..self.segments.len())
            .max_by(|&a, &b| self.segments[a].total_cmp(&self.segments[b]))
            .unwrap_or(0)
    }
}

impl WeberPennSpec {
    /// The mean of the shape ratio of `shape` over positions 0..1 (64 midpoints), at least 0.
    fn mean_shape_ratio(&self, shape: i64) -> f64 {
        const N: usize = 64;
        let sum: f64 = (0..N)
            .map(|i| shape_ratio(self, (i as f64 + 0.5) / N as f64, shape).max(0.0))
            .sum();
        sum / N as f64
    }

    /// The expected size of the tree this spec grows (see the module documentation). Meant for
    /// a validated spec; any spec gives an answer (possibly infinite), never a panic.
    pub fn estimate_size(&self) -> SizeEstimate {
        let levels = self.levels.clamp(1, 9) as usize;
        let mut est = SizeEstimate {
            stems: vec![0.0; levels],
            segments: vec![0.0; levels],
            skeleton_segments: 0.0,
            leaves: 0.0,
            work: 0.0,
        };
        let mut stems = self.level(0).branches.max(1) as f64;
        // 0 · ∞ is 0 here: no stems have no segments, however many each would have.
        let times = |a: f64, b: f64| if a == 0.0 || b == 0.0 { 0.0 } else { a * b };
        for n in 0..levels {
            let l = self.level(n);
            let res = l.curve_res.clamp(1, 1_000_000) as usize;
            let splits = l.seg_splits.max(0.0);
            // Segments of one stem with all its pieces.
            let (mut pieces, mut per_stem) = (1.0f64, 0.0f64);
            for k in 0..res {
                per_stem += pieces;
                if k + 1 < res {
                    let s = if n == 0 && k == 0 && self.base_splits != 0 {
                        self.base_splits.unsigned_abs() as f64
                    } else {
                        splits
                    };
                    pieces *= 1.0 + s;
                }
                if !per_stem.is_finite() {
                    break;
                }
            }
            let segments = times(stems, per_stem);
            est.stems[n] = stems;
            est.segments[n] = segments;
            let chords = if l.curve_v < 0.0 { HELIX_CHORDS } else { 1.0 };
            est.skeleton_segments += times(segments, chords);
            let runs = if n > 0 && self.prune_ratio > 0.0 {
                PRUNE_RUNS
            } else {
                1.0
            };
            est.work += stems + times(segments, runs);
            if n + 1 < levels {
                let per_stem = self.level(n + 1).branches.max(0) as f64
                    * match n {
                        0 => 1.0,
                        1 => 0.2 + 0.8 * self.mean_shape_ratio(self.shape),
                        _ => 0.75,
                    };
                let children = times(stems, per_stem);
                est.skeleton_segments += children;
                stems = children;
            } else if n > 0 && self.leaves != 0 {
                // Leaves hang on stems with a parent; the pieces of a split stem each carry
                // the per-segment count.
                let per_stem = self.leaves.unsigned_abs() as f64
                    * self.leaf_quality.max(0.0)
                    * self.mean_shape_ratio(self.leaf_distrib);
                let leaves = if self.leaves > 0 {
                    times(segments, per_stem / res as f64)
                } else {
                    // A fan at the tip of each piece.
                    times(times(stems, pieces), per_stem.round())
                };
                est.leaves = leaves;
                est.work += leaves;
            }
        }
        est
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SpecTool;

    fn spec() -> WeberPennSpec {
        WeberPennSpec::arbaro_default("t", SpecTool::Arbaro)
    }

    #[test]
    fn counts_follow_branches_and_resolution() {
        // Arbaro's defaults: 1 trunk of 3 segments, 10 branches of 3, each with 5 · (0.2 + 0.8 ·
        // 0.5) = 3 twigs of 1 segment (shape 0 is the ratio itself, 0.5 on average); leaves
        // spread by LeafDistrib 4 (0.5 + 0.5 · ratio, 0.75 on average).
        let mut s = spec();
        s.leaves = 6;
        let e = s.estimate_size();
        let near = |a: &[f64], b: &[f64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        assert!(near(&e.stems, &[1.0, 10.0, 30.0]), "{:?}", e.stems);
        assert!(near(&e.segments, &[3.0, 30.0, 30.0]), "{:?}", e.segments);
        assert!(near(&[e.skeleton_segments], &[63.0 + 40.0]), "{}", e.skeleton_segments);
        assert!((e.leaves - 30.0 * 6.0 * 0.75).abs() < 1e-9, "{}", e.leaves);
    }

    /// The estimate against the trees the generator grows, for the built-in species.
    #[test]
    fn built_in_species_grow_about_their_estimate() {
        use crate::weberpenn::{generate, GenOptions};
        for name in crate::species::names() {
            let spec = crate::species::builtin(name).unwrap();
            let e = spec.estimate_size();
            let g = generate(&spec, &GenOptions::default(), &mut |_| {}).unwrap();
            let segments = g.skeleton.segments.len() as f64;
            let leaves = g.skeleton.leaves.len() as f64;
            let ratio = e.skeleton_segments / segments;
            eprintln!(
                "{name}: segments {segments} estimated {:.0}, leaves {leaves} estimated {:.0}",
                e.skeleton_segments, e.leaves
            );
            assert!(
                (0.8..=1.25).contains(&ratio),
                "{name}: {segments} segments, estimated {}",
                e.skeleton_segments
            );
            if leaves > 0.0 {
                let ratio = e.leaves / leaves;
                assert!(
                    (0.8..=1.25).contains(&ratio),
                    "{name}: {leaves} leaves, estimated {}",
                    e.leaves
                );
            }
        }
    }

    #[test]
    fn splits_multiply_the_remaining_segments() {
        let mut s = spec();
        s.levels = 1;
        s.level[0].curve_res = 4;
        s.level[0].seg_splits = 1.0;
        // 1 + 2 + 4 + 8 segments.
        assert_eq!(s.estimate_size().segments, vec![15.0]);
        s.base_splits = 3;
        // 1 + 4 + 8 + 16.
        assert_eq!(s.estimate_size().segments, vec![29.0]);
        // A helix is ten chords a segment.
        s.level[0].curve_v = -20.0;
        assert_eq!(s.estimate_size().skeleton_segments, 290.0);
    }

    #[test]
    fn overflowing_counts_are_infinite_not_a_panic() {
        let mut s = spec();
        s.levels = 9;
        for l in &mut s.level {
            l.branches = i64::MAX;
            l.curve_res = i64::MAX;
            l.seg_splits = 1e300;
        }
        s.leaves = i64::MIN;
        let e = s.estimate_size();
        assert!(e.skeleton_segments.is_infinite());
        assert!(!e.work.is_nan());
        // No branches on level 1: nothing beyond the trunk, however large the rest.
        s.level[1].branches = 0;
        let e = s.estimate_size();
        assert_eq!(e.stems[1], 0.0);
        assert!(e.segments[1..].iter().all(|&x| x == 0.0), "{:?}", e.segments);
        assert_eq!(e.leaves, 0.0);
    }
}
