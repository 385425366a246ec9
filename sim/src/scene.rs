//! Ready-made scenes: forests of test trees on a grid and Weber's orbiting collider. Shared by
//! the benchmarks, the tests and the viewer so they all measure the same thing.

use crate::collision::modelling::CollisionFreeOptions;
use glam::Vec3;

use crate::collider::{Motion, SphereCollider};
use crate::error::SimError;
use crate::forest::{Forest, TreePlacement};
use crate::material::Material;
use crate::rng::Rng;
use crate::skeleton::Skeleton;
use crate::spec::WeberPennSpec;
use crate::testtree::test_tree;
use crate::weberpenn::{generate, GenOptions};

/// Most segments a generated test forest may hold in total (about 8 GB of state), so that an
/// absurd request is refused instead of exhausting memory.
pub const MAX_TEST_FOREST_SEGMENTS: usize = 32_000_000;
/// Most leaves a generated test forest may hold in total.
pub const MAX_TEST_FOREST_LEAVES: usize = 128_000_000;
/// Most trees in a generated test forest.
pub const MAX_TEST_FOREST_TREES: usize = 100_000;

/// A forest of test trees: tree k grows from seed `seed + k`; trees stand on a square grid.
pub struct TestForest {
    /// Tree k's skeleton.
    pub skeletons: Vec<Skeleton>,
    /// Where tree k's base stands \[m\].
    pub positions: Vec<Vec3>,
    /// The trees as solver data.
    pub forest: Forest,
}

impl TestForest {
    /// `trees` test trees of `segments` segments and `leaves` leaves each, built with `material`; counts out of range are refused, naming them.
    pub fn new(
        seed: u64,
        segments: usize,
        leaves: usize,
        trees: usize,
        material: &Material,
    ) -> Result<TestForest, SimError> {
        TestForest::new_with(seed, segments, leaves, trees, material, None)
    }

    /// [`new`](Self::new), each tree made collision-free first when `collision_free` says how
    /// (Chen 2011 §3.2: what the pass removes is gone from the forest).
    pub fn new_with(
        seed: u64,
        segments: usize,
        leaves: usize,
        trees: usize,
        material: &Material,
        collision_free: Option<&CollisionFreeOptions>,
    ) -> Result<TestForest, SimError> {
        if trees == 0 || trees > MAX_TEST_FOREST_TREES {
            return Err(SimError::param(
                "trees",
                trees,
                format!("allowed 1..={MAX_TEST_FOREST_TREES}"),
            ));
        }
        let total = segments.saturating_mul(trees);
        if total > MAX_TEST_FOREST_SEGMENTS {
            return Err(SimError::param(
                "segments × trees",
                total,
                format!("allowed at most {MAX_TEST_FOREST_SEGMENTS} segments in a test forest"),
            ));
        }
        let total_leaves = leaves.saturating_mul(trees);
        if total_leaves > MAX_TEST_FOREST_LEAVES {
            return Err(SimError::param(
                "leaves × trees",
                total_leaves,
                format!("allowed at most {MAX_TEST_FOREST_LEAVES} leaves in a test forest"),
            ));
        }
        let skeletons = (0..trees)
            .map(|k| {
                let s = test_tree(seed.wrapping_add(k as u64), segments, leaves)?;
                match collision_free {
                    Some(o) => Ok(crate::collision::modelling::collision_free(&s, o)?.skeleton),
                    None => Ok(s),
                }
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        let spacing = skeletons.iter().map(crown_width).fold(1.0f32, f32::max) * 1.1;
        let side = (trees as f32).sqrt().ceil() as usize;
        let positions: Vec<Vec3> = (0..trees)
            .map(|k| Vec3::new((k % side) as f32 * spacing, 0.0, (k / side) as f32 * spacing))
            .collect();
        let placements: Vec<_> = skeletons
            .iter()
            .zip(&positions)
            .map(|(s, &p)| TreePlacement {
                skeleton: s,
                position: p,
            })
            .collect();
        let forest = Forest::build(&placements, material)?;
        Ok(TestForest {
            skeletons,
            positions,
            forest,
        })
    }
}

/// A forest of species trees: tree k is `specs[k % specs.len()]` grown from seed `seed + k`,
/// standing on a square grid one crown apart, jittered so the rows do not look planted.
pub struct SpeciesForest {
    /// Tree k's skeleton.
    pub skeletons: Vec<Skeleton>,
    /// Where tree k's base stands \[m\].
    pub positions: Vec<Vec3>,
    /// The trees as solver data.
    pub forest: Forest,
}

/// A tree of a [`SpeciesForest::placed`] forest: the index of its species in the forest's
/// list, the seed it grows from and where its base stands \[m\].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlacedTree {
    pub species: usize,
    pub seed: u64,
    pub position: Vec3,
}

/// Farthest from the origin a placed tree may stand \[m\].
pub const MAX_PLACEMENT: f32 = 100_000.0;

impl SpeciesForest {
    /// Grows the trees on up to `threads` threads (the result does not depend on it).
    pub fn new(
        specs: &[WeberPennSpec],
        trees: usize,
        seed: u64,
        material: &Material,
        threads: usize,
    ) -> Result<SpeciesForest, SimError> {
        if specs.is_empty() {
            return Err(SimError::param("species", 0, "at least one species is needed"));
        }
        if trees == 0 || trees > MAX_TEST_FOREST_TREES {
            return Err(SimError::param(
                "trees",
                trees,
                format!("allowed 1..={MAX_TEST_FOREST_TREES}"),
            ));
        }
        let plan: Vec<(usize, u64)> = (0..trees)
            .map(|k| (k % specs.len(), seed.wrapping_add(k as u64)))
            .collect();
        let skeletons = grow_all(specs, &plan, threads)?;
        let spacing = skeletons.iter().map(crown_width).fold(1.0f32, f32::max);
        let side = (trees as f32).sqrt().ceil() as usize;
        let mut rng = Rng::new(seed ^ 0x5EED_F0E5);
        let positions: Vec<Vec3> = (0..trees)
            .map(|k| {
                let jitter = Vec3::new(rng.unit_f64() as f32 - 0.5, 0.0, rng.unit_f64() as f32 - 0.5) * (0.3 * spacing);
                Vec3::new((k % side) as f32 * spacing, 0.0, (k / side) as f32 * spacing) + jitter
            })
            .collect();
        SpeciesForest::build(skeletons, positions, material)
    }

    /// A forest of the trees `trees` lists, each of its species grown from its seed and standing
    /// where it says (a scene file's trees); grown on up to `threads` threads.
    pub fn placed(
        specs: &[WeberPennSpec],
        trees: &[PlacedTree],
        material: &Material,
        threads: usize,
    ) -> Result<SpeciesForest, SimError> {
        if trees.is_empty() || trees.len() > MAX_TEST_FOREST_TREES {
            return Err(SimError::param(
                "trees",
                trees.len(),
                format!("allowed 1..={MAX_TEST_FOREST_TREES}"),
            ));
        }
        for t in trees {
            if t.species >= specs.len() {
                return Err(SimError::param(
                    "tree species",
                    t.species,
                    format!("allowed 0..{} (the species given)", specs.len()),
                ));
            }
            if !t.position.is_finite() || t.position.abs().max_element() > MAX_PLACEMENT {
                return Err(SimError::param(
                    "tree position",
                    t.position,
                    format!("allowed finite coordinates within ±{MAX_PLACEMENT} m"),
                ));
            }
        }
        let plan: Vec<(usize, u64)> = trees.iter().map(|t| (t.species, t.seed)).collect();
        let skeletons = grow_all(specs, &plan, threads)?;
        SpeciesForest::build(skeletons, trees.iter().map(|t| t.position).collect(), material)
    }

    /// A forest of trees grown elsewhere (species grown with [`grow_all`], L-systems, space
    /// colonization), tree k standing at `positions[k]`; refused, naming what is allowed, for a
    /// count of trees or segments or a position out of range.
    pub fn from_skeletons(
        skeletons: Vec<Skeleton>,
        positions: Vec<Vec3>,
        material: &Material,
    ) -> Result<SpeciesForest, SimError> {
        if skeletons.is_empty() || skeletons.len() > MAX_TEST_FOREST_TREES || positions.len() != skeletons.len() {
            return Err(SimError::param(
                "trees",
                skeletons.len(),
                format!("allowed 1..={MAX_TEST_FOREST_TREES}, one position each"),
            ));
        }
        if let Some(p) = positions
            .iter()
            .find(|p| !p.is_finite() || p.abs().max_element() > MAX_PLACEMENT)
        {
            return Err(SimError::param(
                "tree position",
                p,
                format!("allowed finite coordinates within ±{MAX_PLACEMENT} m"),
            ));
        }
        let segments: usize = skeletons.iter().map(|s| s.segments.len()).sum();
        let leaves: usize = skeletons.iter().map(|s| s.leaves.len()).sum();
        if segments > MAX_TEST_FOREST_SEGMENTS || leaves > MAX_TEST_FOREST_LEAVES {
            return Err(SimError::param(
                "forest size",
                format!("{segments} segments and {leaves} leaves"),
                format!("allowed at most {MAX_TEST_FOREST_SEGMENTS} segments and {MAX_TEST_FOREST_LEAVES} leaves"),
            ));
        }
        SpeciesForest::build(skeletons, positions, material)
    }

    fn build(skeletons: Vec<Skeleton>, positions: Vec<Vec3>, material: &Material) -> Result<SpeciesForest, SimError> {
        let placements: Vec<_> = skeletons
            .iter()
            .zip(&positions)
            .map(|(s, &p)| TreePlacement {
                skeleton: s,
                position: p,
            })
            .collect();
        let forest = Forest::build(&placements, material)?;
        Ok(SpeciesForest {
            skeletons,
            positions,
            forest,
        })
    }
}

/// Grows tree k of `plan` as species `plan[k].0` of `specs` from seed `plan[k].1`, on up to
/// `threads` threads (the result does not depend on it), refusing before anything is grown a
/// forest whose species' estimates pass the caps, and stopping once the trees grown do.
pub fn grow_all(specs: &[WeberPennSpec], plan: &[(usize, u64)], threads: usize) -> Result<Vec<Skeleton>, SimError> {
    let trees = plan.len();
    // The forest's size from the species' estimates, before anything is grown.
    let sizes: Vec<_> = specs.iter().map(WeberPennSpec::estimate_size).collect();
    let (mut est_segments, mut est_leaves) = (0.0f64, 0.0f64);
    for &(k, _) in plan {
        est_segments += sizes[k].skeleton_segments;
        est_leaves += sizes[k].leaves;
    }
    if est_segments.is_nan()
        || est_leaves.is_nan()
        || est_segments > MAX_TEST_FOREST_SEGMENTS as f64
        || est_leaves > MAX_TEST_FOREST_LEAVES as f64
    {
        return Err(SimError::param(
            "trees",
            trees,
            format!(
                "{trees} trees of {} would have about {est_segments:.3e} segments and {est_leaves:.3e} leaves; a \
                 forest may hold at most {MAX_TEST_FOREST_SEGMENTS} segments and {MAX_TEST_FOREST_LEAVES} leaves",
                specs.iter().map(|s| s.species.as_str()).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    // Counted again as the trees grow: every thread stops once the forest is over its caps.
    let grown_segments = std::sync::atomic::AtomicUsize::new(0);
    let grown_leaves = std::sync::atomic::AtomicUsize::new(0);
    let over = |s: &Skeleton| {
        use std::sync::atomic::Ordering::Relaxed;
        let segments = grown_segments.fetch_add(s.segments.len(), Relaxed) + s.segments.len();
        let leaves = grown_leaves.fetch_add(s.leaves.len(), Relaxed) + s.leaves.len();
        segments > MAX_TEST_FOREST_SEGMENTS || leaves > MAX_TEST_FOREST_LEAVES
    };
    let too_many = |s: &Skeleton| {
        SimError::param(
            "trees",
            trees,
            format!(
                "this species grows {} segments and {} leaves per tree; a forest may hold at most \
                 {MAX_TEST_FOREST_SEGMENTS} segments and {MAX_TEST_FOREST_LEAVES} leaves",
                s.segments.len(),
                s.leaves.len()
            ),
        )
    };
    let grow = |k: usize| {
        let (species, seed) = plan[k];
        let opts = GenOptions {
            seed,
            ..GenOptions::default()
        };
        let s = generate(&specs[species], &opts, &mut |_| {})?.skeleton;
        if over(&s) {
            return Err(too_many(&s));
        }
        Ok(s)
    };
    let threads = threads.clamp(1, trees);
    let mut grown: Vec<Option<Result<Skeleton, SimError>>> = (0..trees).map(|_| None).collect();
    std::thread::scope(|scope| {
        for (t, chunk) in grown.chunks_mut(trees.div_ceil(threads)).enumerate() {
            let first = t * trees.div_ceil(threads);
            let grow = &grow;
            scope.spawn(move || {
                for (i, slot) in chunk.iter_mut().enumerate() {
                    let tree = grow(first + i);
                    let failed = tree.is_err();
                    *slot = Some(tree);
                    if failed {
                        break;
                    }
                }
            });
        }
    });
    // A thread stops at its first error, so the first slot not filled follows an error. With
    // none, the forest is within its caps: the grown counts are exact totals and `over` saw
    // the last of them.
    if let Some(e) = grown.iter().find_map(|g| g.as_ref().and_then(|r| r.as_ref().err())) {
        return Err(e.clone());
    }
    grown
        .into_iter()
        .map(|g| g.expect("every tree was grown"))
        .collect::<Result<Vec<_>, _>>()
}

/// Largest horizontal extent of a skeleton \[m\].
pub fn crown_width(s: &Skeleton) -> f32 {
    let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
    for seg in &s.segments {
        lo = lo.min(seg.tip).min(seg.base);
        hi = hi.max(seg.tip).max(seg.base);
    }
    (hi.x - lo.x).max(hi.z - lo.z)
}

/// Weber's Table 2 collider: a sphere orbiting closely around the trunk through the lower
/// crown, just clear of the trunk so it sweeps through the branches next to it.
pub fn orbit_collider(skeleton: &Skeleton, position: Vec3) -> Result<SphereCollider, SimError> {
    let height = skeleton.height();
    let y = 0.55 * height;
    // The trunk's radius and axis where the orbit passes: the root-chain segment spanning y.
    let mut trunk_radius = skeleton.segments[0].radius_base;
    let mut axis_point = skeleton.segments[0].base;
    let mut i = 0usize;
    loop {
        let s = &skeleton.segments[i];
        if s.base.y <= y && s.tip.y >= y {
            trunk_radius = s.radius_base;
            let t = (y - s.base.y) / (s.tip.y - s.base.y).max(1e-6);
            axis_point = s.base.lerp(s.tip, t);
            break;
        }
        // Follow the trunk: the first child of the same stem continues it.
        match skeleton.segments.iter().position(|c| c.parent == Some(i as u32)) {
            Some(next) => i = next,
            None => break,
        }
    }
    let radius = 0.12 * height;
    let orbit = trunk_radius + radius + 0.02 * height;
    let center = position + Vec3::new(axis_point.x, y, axis_point.z);
    SphereCollider::new(
        center,
        radius,
        Motion::Orbit {
            center,
            radius: orbit,
            period: 5.0,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn species_forest_is_the_same_for_any_thread_count() {
        let specs = [
            crate::species::builtin("lombardy_poplar").unwrap(),
            crate::species::builtin("quaking_aspen").unwrap(),
        ];
        let one = SpeciesForest::new(&specs, 5, 7, &Material::default(), 1).unwrap();
        let three = SpeciesForest::new(&specs, 5, 7, &Material::default(), 3).unwrap();
        assert_eq!(one.forest, three.forest);
        assert_eq!(one.positions, three.positions);
        assert_eq!(one.forest.tree_count(), 5);
        one.forest.validate().unwrap();
        assert!(!one.skeletons[0].segments.is_empty());
        assert!(SpeciesForest::new(&specs, 0, 7, &Material::default(), 1).is_err());
        assert!(SpeciesForest::new(&[], 3, 7, &Material::default(), 1).is_err());
    }
}
