//! Ready-made scenes: forests of test trees on a grid and Weber's orbiting collider. Shared by
//! the benchmarks, the tests and the viewer so they all measure the same thing.

use glam::Vec3;

use crate::collider::{Motion, SphereCollider};
use crate::error::SimError;
use crate::forest::{Forest, TreePlacement};
use crate::params::Material;
use crate::skeleton::Skeleton;
use crate::testtree::test_tree;

/// Most segments a generated test forest may hold in total (about 8 GB of state), so that an
/// absurd request is refused instead of exhausting memory.
pub const MAX_TEST_FOREST_SEGMENTS: usize = 32_000_000;
/// Most leaves a generated test forest may hold in total.
pub const MAX_TEST_FOREST_LEAVES: usize = 128_000_000;
/// Most trees in a generated test forest.
pub const MAX_TEST_FOREST_TREES: usize = 100_000;

/// A forest of test trees: tree k grows from seed `seed + k`; trees stand on a square grid.
pub struct TestForest {
    pub skeletons: Vec<Skeleton>,
    pub positions: Vec<Vec3>,
    pub forest: Forest,
}

impl TestForest {
    pub fn new(
        seed: u64,
        segments: usize,
        leaves: usize,
        trees: usize,
        material: &Material,
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
            .map(|k| test_tree(seed.wrapping_add(k as u64), segments, leaves))
            .collect::<Result<Vec<_>, _>>()?;
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

/// Largest horizontal extent of a skeleton [m].
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
