//! A deterministic test-tree generator: for a seed, a segment count N and a leaf count M it grows
//! a plausible broadleaf tree with exactly N segments and M leaves. Benchmarks and tests use it
//! before real species specs come in; its presets are the tree sizes of the papers.
//!
//! Shape: a trunk, first-level branches from a third of the height up with lengths following a
//! conical crown, sub-branches down to twigs, forks where a stem ends in several children. The
//! segment budget is divided top-down so the count is exact: a stem keeps about the square root
//! of its budget for itself and shares the rest among its children in proportion to their
//! length. Radii follow Weber 2008's pipe model ("Structure"): the cross-section area at the tip
//! of a segment is exactly the sum of its children's base areas, so the area just before a fork
//! equals the sum just after it, and stems taper between forks.

use glam::{Quat, Vec3};

use crate::error::SimError;
use crate::rng::Rng;
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment, MAX_LEAVES_PER_TREE, MAX_SEGMENTS_PER_TREE};

/// Named tree sizes from the papers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeSize {
    /// Weber 2008, Figure 6b: 907 segments, 1,530 leaves.
    Simple,
    /// Weber 2008, Figure 6a: 2,246 segments, 6,840 leaves.
    Dense,
    /// Oliapuram & Kumar 2010: 1,597 segments, 3,603 leaves.
    Oliapuram,
}

impl TreeSize {
    /// (segments, leaves).
    pub fn counts(self) -> (usize, usize) {
        match self {
            TreeSize::Simple => (907, 1530),
            TreeSize::Dense => (2246, 6840),
            TreeSize::Oliapuram => (1597, 3603),
        }
    }
}

/// One stem waiting to be laid out.
struct StemPlan {
    /// Segment whose tip is this stem's base (`None` for the trunk).
    attach: Option<u32>,
    base: Vec3,
    direction: Vec3,
    length: f32,
    budget: usize,
    level: u32,
}

/// Grows the test tree. Refuses a zero segment count and sizes beyond the per-tree limits.
pub fn test_tree(seed: u64, segments: usize, leaves: usize) -> Result<Skeleton, SimError> {
    if segments == 0 {
        return Err(SimError::param(
            "segments",
            segments,
            format!("a tree needs at least 1 segment (and leaves need segments to hang on); allowed 1..={MAX_SEGMENTS_PER_TREE}"),
        ));
    }
    if segments > MAX_SEGMENTS_PER_TREE {
        return Err(SimError::param(
            "segments",
            segments,
            format!("allowed 1..={MAX_SEGMENTS_PER_TREE}"),
        ));
    }
    if leaves > MAX_LEAVES_PER_TREE {
        return Err(SimError::param(
            "leaves",
            leaves,
            format!("allowed 0..={MAX_LEAVES_PER_TREE}"),
        ));
    }
    let rng = Rng::new(seed);
    let mut layout_rng = rng.fork(1);
    let height = (2.8 * (segments as f32).powf(0.18)).clamp(2.0, 40.0);

    let mut skel = Skeleton::default();
    let mut level_of: Vec<u32> = Vec::with_capacity(segments);
    let mut queue = std::collections::VecDeque::new();
    let lean = Vec3::new(layout_rng.sym(0.03), 1.0, layout_rng.sym(0.03)).normalize();
    queue.push_back(StemPlan {
        attach: None,
        base: Vec3::ZERO,
        direction: lean,
        length: height,
        budget: segments,
        level: 0,
    });

    while let Some(stem) = queue.pop_front() {
        lay_out_stem(&stem, height, &mut layout_rng, &mut skel, &mut level_of, &mut queue);
    }
    debug_assert_eq!(skel.segments.len(), segments);

    assign_pipe_radii(&mut skel, height, leaves, &level_of, &mut rng.fork(2));
    Ok(skel)
}

/// Lays out one stem's own segments and queues its children with their share of the budget.
fn lay_out_stem(
    stem: &StemPlan,
    height: f32,
    rng: &mut Rng,
    skel: &mut Skeleton,
    level_of: &mut Vec<u32>,
    queue: &mut std::collections::VecDeque<StemPlan>,
) {
    let budget = stem.budget;
    let own = if stem.level == 0 {
        ((budget as f32).powf(0.45) * 1.2).round() as usize
    } else {
        (budget as f32).sqrt().round() as usize
    }
    .clamp(1, budget);
    let rest = budget - own;
    // Twigs and small branches are short: a long, thin segment cannot carry its own weight.
    let max_segment = match stem.level {
        0 => f32::INFINITY,
        1 => 0.5,
        2 => 0.35,
        _ => 0.25,
    };
    let length = stem.length.min(max_segment * own as f32);
    let seg_len = length / own as f32;

    // The stem's own segments: a gentle curve with upward tropism for branches and some wobble.
    let first = skel.segments.len() as u32;
    let mut dir = stem.direction;
    let mut base = stem.base;
    let mut parent = stem.attach;
    // The trunk keeps straightening towards vertical; branches turn up towards the light.
    let (tropism, wobble_size) = if stem.level == 0 {
        (0.04, 0.03)
    } else {
        (0.05 + 0.03 * stem.level as f32, 0.06)
    };
    for _ in 0..own {
        let tip = base + dir * seg_len;
        skel.segments.push(SkeletonSegment {
            parent,
            base,
            tip,
            radius_base: 1.0,
            radius_tip: 1.0,
        });
        level_of.push(stem.level);
        parent = Some(skel.segments.len() as u32 - 1);
        base = tip;
        let wobble = Vec3::new(rng.sym(1.0), rng.sym(1.0), rng.sym(1.0)) * wobble_size;
        dir = (dir + Vec3::Y * tropism + wobble).normalize();
    }
    if rest == 0 {
        return;
    }

    // Children: about the square root of the remaining budget, spread over the stem's joints
    // above its bare base, several per joint (whorls) when there are more children than joints.
    let children = ((rest as f32).sqrt().round() as usize).clamp(1, rest);
    let bare = if stem.level == 0 { 0.3 } else { 0.15 };
    let first_joint = ((own as f32 * bare) as usize).min(own - 1);
    let joints = own - first_joint;
    let golden = std::f32::consts::PI * (3.0 - 5.0f32.sqrt());
    let mut azimuth = rng.range(0.0, std::f32::consts::TAU);

    struct Child {
        joint: usize,
        direction: Vec3,
        length: f32,
    }
    let mut kids = Vec::with_capacity(children);
    for c in 0..children {
        // Spread children evenly over the joints, lowest first.
        let joint = first_joint + (c * joints) / children;
        let along = (joint + 1) as f32 / own as f32;
        let joint_seg = first + joint as u32;
        let parent_seg = skel.segments[joint_seg as usize];
        let axis = (parent_seg.tip - parent_seg.base).normalize();
        azimuth += golden + rng.sym(0.3);
        let (down, length) = if stem.level == 0 {
            // Conical crown: long branches low in the crown, short ones near the top.
            let crown = ((along - bare) / (1.0 - bare)).clamp(0.0, 1.0);
            let down = (65.0 - 30.0 * crown + rng.sym(8.0)).to_radians();
            (
                down,
                height * (0.5 * (1.0 - crown).powf(0.7) + 0.08) * rng.range(0.85, 1.15),
            )
        } else {
            let remaining = length * (1.0 - along) + 0.3 * length;
            ((45.0 + rng.sym(12.0)).to_radians(), remaining * rng.range(0.45, 0.65))
        };
        let direction = tilt(axis, down, azimuth);
        kids.push(Child {
            joint,
            direction,
            length: length.max(0.05),
        });
    }

    // Budgets: at least one segment each, the rest in proportion to length (largest remainder).
    let weights: Vec<f64> = kids.iter().map(|k| k.length as f64).collect();
    let shares = apportion(rest - children, &weights);
    for (k, extra) in kids.into_iter().zip(shares) {
        let joint_seg = first + k.joint as u32;
        queue.push_back(StemPlan {
            attach: Some(joint_seg),
            base: skel.segments[joint_seg as usize].tip,
            direction: k.direction,
            length: k.length,
            budget: 1 + extra,
            level: stem.level + 1,
        });
    }
}

/// The direction at angle `down` from `axis`, turned by `azimuth` around it.
fn tilt(axis: Vec3, down: f32, azimuth: f32) -> Vec3 {
    let side = axis.any_orthonormal_vector();
    let side = Quat::from_axis_angle(axis, azimuth) * side;
    (axis * down.cos() + side * down.sin()).normalize()
}

/// Splits `total` into integer shares proportional to `weights` (largest remainder method), so
/// the shares sum to exactly `total`.
pub(crate) fn apportion(total: usize, weights: &[f64]) -> Vec<usize> {
    let n = weights.len();
    if n == 0 {
        return Vec::new();
    }
    let sum: f64 = weights.iter().sum();
    let uniform = !(sum > 0.0 && sum.is_finite());
    let ideal: Vec<f64> = weights
        .iter()
        .map(|w| {
            if uniform {
                total as f64 / n as f64
            } else {
                total as f64 * w / sum
            }
        })
        .collect();
    let mut shares: Vec<usize> = ideal.iter().map(|x| x.floor() as usize).collect();
    let assigned: usize = shares.iter().sum();
    let mut order: Vec<usize> = (0..n).collect();
    // Largest fractional part first; ties by index keep it deterministic.
    order.sort_by(|&a, &b| {
        let fa = ideal[a] - ideal[a].floor();
        let fb = ideal[b] - ideal[b].floor();
        fb.partial_cmp(&fa).unwrap_or(std::cmp::Ordering::Equal).then(a.cmp(&b))
    });
    for &i in order.iter().cycle().take(total.saturating_sub(assigned)) {
        shares[i] += 1;
    }
    shares
}

/// Pipe-model radii and leaves. Areas are built tip to root in f64: a terminal segment's tip
/// carries one twig pipe, each leaf adds a petiole pipe, a segment tapers by 3 % along its
/// length, and the tip area of a segment with children is exactly the sum of their base areas
/// (Weber's first structural rule). One scale factor then sets the trunk's base radius to 1/60
/// of the height; scaling every area by the same factor keeps each fork's sums exact.
fn assign_pipe_radii(skel: &mut Skeleton, height: f32, leaves: usize, level_of: &[u32], rng: &mut Rng) {
    let n = skel.segments.len();
    let mut has_children = vec![false; n];
    for s in &skel.segments {
        if let Some(p) = s.parent {
            has_children[p as usize] = true;
        }
    }

    // Leaves go to the outer crown: every twig end, lighter on the stems leading to them.
    let max_level = level_of.iter().copied().max().unwrap_or(0);
    let weights: Vec<f64> = (0..n)
        .map(|i| {
            let level = level_of[i];
            if max_level == 0 || !has_children[i] {
                1.0
            } else if level + 1 >= max_level && level > 0 {
                0.4
            } else {
                0.0
            }
        })
        .collect();
    let per_segment = apportion(leaves, &weights);

    let twig = 1.0f64;
    let petiole = 0.15f64;
    let mut base_area = vec![0.0f64; n];
    let mut tip_area = vec![0.0f64; n];
    for i in (0..n).rev() {
        if !has_children[i] {
            tip_area[i] = twig;
        }
        base_area[i] = tip_area[i] * 1.03 + petiole * per_segment[i] as f64;
        if let Some(p) = skel.segments[i].parent {
            tip_area[p as usize] += base_area[i];
        }
    }
    let target_root_radius = (height / 60.0) as f64;
    let scale = std::f64::consts::PI * target_root_radius * target_root_radius / base_area[0];
    for (i, s) in skel.segments.iter_mut().enumerate() {
        s.radius_base = (base_area[i] * scale / std::f64::consts::PI).sqrt() as f32;
        s.radius_tip = (tip_area[i] * scale / std::f64::consts::PI).sqrt() as f32;
    }

    let leaf_len = 0.07 + 0.01 * height.min(10.0);
    skel.leaves.reserve_exact(leaves);
    for (seg, &count) in per_segment.iter().enumerate() {
        let s = skel.segments[seg];
        let axis = (s.tip - s.base).normalize();
        for _ in 0..count {
            let pitch = rng.range(35.0, 75.0).to_radians();
            let blade = tilt(axis, pitch, rng.range(0.0, std::f32::consts::TAU));
            // Leaves turn their faces up towards the light, with some scatter.
            let up = (Vec3::Y + Vec3::new(rng.sym(0.5), 0.0, rng.sym(0.5))).normalize();
            let mut normal = up - blade * up.dot(blade);
            if normal.length_squared() < 1e-6 {
                normal = blade.any_orthonormal_vector();
            }
            let normal = normal.normalize();
            let x = blade.cross(normal);
            let orientation = Quat::from_mat3(&glam::Mat3::from_cols(x, blade, normal)).normalize();
            let length = leaf_len * rng.range(0.8, 1.2);
            skel.leaves.push(SkeletonLeaf {
                segment: seg as u32,
                along: rng.range(0.15, 1.0),
                orientation,
                length,
                width: length * 0.55,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_and_valid_for_many_sizes() {
        for &(n, m) in &[
            (1, 0),
            (1, 5),
            (2, 3),
            (3, 0),
            (17, 40),
            (200, 10),
            (907, 1530),
            (2246, 6840),
            (1597, 3603),
        ] {
            for seed in 0..3 {
                let t = test_tree(seed, n, m).unwrap();
                assert_eq!(t.segments.len(), n);
                assert_eq!(t.leaves.len(), m);
                t.validate().unwrap();
            }
        }
    }

    #[test]
    fn deterministic_for_a_seed() {
        let a = test_tree(42, 907, 1530).unwrap();
        let b = test_tree(42, 907, 1530).unwrap();
        assert_eq!(a, b);
        let c = test_tree(43, 907, 1530).unwrap();
        assert_ne!(a, c);
    }

    #[test]
    fn pipe_model_holds_at_every_fork() {
        let t = test_tree(5, 2246, 6840).unwrap();
        let mut sum_children = vec![0.0f64; t.segments.len()];
        let mut has_children = vec![false; t.segments.len()];
        for s in &t.segments {
            if let Some(p) = s.parent {
                sum_children[p as usize] += (s.radius_base as f64).powi(2);
                has_children[p as usize] = true;
            }
        }
        for (i, s) in t.segments.iter().enumerate() {
            if has_children[i] {
                let before = (s.radius_tip as f64).powi(2);
                assert!((before - sum_children[i]).abs() <= 1e-6 * before, "fork at {i}");
            }
            assert!(s.radius_base >= s.radius_tip, "segment {i} widens towards its tip");
        }
    }

    #[test]
    fn plausible_shape() {
        let t = test_tree(1, 2246, 6840).unwrap();
        let h = t.height();
        assert!((5.0..20.0).contains(&h), "height {h}");
        let width = t
            .segments
            .iter()
            .map(|s| s.tip.x.abs().max(s.tip.z.abs()))
            .fold(0.0, f32::max);
        assert!(
            width > 0.2 * h && width < 1.5 * h,
            "crown half-width {width} for height {h}"
        );
        let r0 = t.segments[0].radius_base;
        assert!((0.05..0.5).contains(&r0), "trunk radius {r0}");
        // Branching: many stems end in twigs.
        let mut has_children = vec![false; t.segments.len()];
        for s in &t.segments {
            if let Some(p) = s.parent {
                has_children[p as usize] = true;
            }
        }
        let tips = has_children.iter().filter(|c| !**c).count();
        assert!(tips > 200, "{tips} twig ends");
    }

    #[test]
    fn refuses_zero_and_absurd_sizes() {
        assert!(matches!(
            test_tree(0, 0, 0),
            Err(SimError::Parameter { name: "segments", .. })
        ));
        assert!(matches!(
            test_tree(0, 0, 10),
            Err(SimError::Parameter { name: "segments", .. })
        ));
        assert!(test_tree(0, MAX_SEGMENTS_PER_TREE + 1, 0).is_err());
        assert!(test_tree(0, 10, MAX_LEAVES_PER_TREE + 1).is_err());
    }

    #[test]
    fn apportion_is_exact() {
        assert_eq!(apportion(10, &[1.0, 1.0, 1.0]).iter().sum::<usize>(), 10);
        assert_eq!(apportion(7, &[0.0, 0.0]), vec![4, 3]);
        assert_eq!(apportion(5, &[3.0, 1.0, 1.0]), vec![3, 1, 1]);
    }
}
