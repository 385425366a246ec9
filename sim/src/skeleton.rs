//! The skeleton every generator produces: segments (straight rods joined end to end) and leaves,
//! in world space, before any physics. `Forest::build` turns skeletons into solver data.

use glam::{Quat, Vec3};

use crate::error::SimError;

/// Largest skeleton a forest accepts, so that absurd input is refused instead of exhausting
/// memory (a whole Weber-Penn tree has tens of thousands of segments).
pub const MAX_SEGMENTS_PER_TREE: usize = 4_000_000;
/// Largest number of leaves per tree.
pub const MAX_LEAVES_PER_TREE: usize = 16_000_000;

/// A straight piece of stem. Its base must be its parent's tip.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SkeletonSegment {
    /// Index of the parent segment, which must precede this one; `None` for the root.
    pub parent: Option<u32>,
    /// Base point \[m\], y up.
    pub base: Vec3,
    /// Tip point \[m\].
    pub tip: Vec3,
    /// Radius at the base \[m\].
    pub radius_base: f32,
    /// Radius at the tip \[m\].
    pub radius_tip: f32,
}

impl SkeletonSegment {
    /// A segment of one radius `r` from `base` to `tip` under `parent`.
    pub fn cylinder(parent: Option<u32>, base: Vec3, tip: Vec3, r: f32) -> SkeletonSegment {
        SkeletonSegment {
            parent,
            base,
            tip,
            radius_base: r,
            radius_tip: r,
        }
    }

    /// Distance from base to tip \[m\].
    pub fn length(&self) -> f32 {
        (self.tip - self.base).length()
    }
}

/// A leaf card attached to a segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SkeletonLeaf {
    /// Index of the segment the leaf hangs from.
    pub segment: u32,
    /// Where along the segment it hangs, 0 at the base and 1 at the tip.
    pub along: f32,
    /// World orientation of the card at rest: its +y runs along the blade, +z is its normal.
    pub orientation: Quat,
    /// Blade length \[m\].
    pub length: f32,
    /// Blade width \[m\].
    pub width: f32,
}

impl SkeletonLeaf {
    /// Blade area \[m²\] (an ellipse of the blade's length and width).
    pub fn area(&self) -> f32 {
        // An elliptical blade.
        std::f32::consts::FRAC_PI_4 * self.length * self.width
    }
}

/// One tree: exactly one root segment (index 0) and every other segment's parent before it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Skeleton {
    /// Segments, each after its parent.
    pub segments: Vec<SkeletonSegment>,
    /// Leaf cards.
    pub leaves: Vec<SkeletonLeaf>,
}

impl Skeleton {
    /// Checks the rules `Forest::build` relies on, naming the first element that breaks one.
    pub fn validate(&self) -> Result<(), SimError> {
        let n = self.segments.len();
        if n == 0 {
            return Err(SimError::Skeleton("a tree needs at least one segment".into()));
        }
        if n > MAX_SEGMENTS_PER_TREE {
            return Err(SimError::Skeleton(format!(
                "{n} segments is more than the limit of {MAX_SEGMENTS_PER_TREE} per tree"
            )));
        }
        if self.leaves.len() > MAX_LEAVES_PER_TREE {
            return Err(SimError::Skeleton(format!(
                "{} leaves is more than the limit of {MAX_LEAVES_PER_TREE} per tree",
                self.leaves.len()
            )));
        }
        for (i, s) in self.segments.iter().enumerate() {
            let finite =
                s.base.is_finite() && s.tip.is_finite() && s.radius_base.is_finite() && s.radius_tip.is_finite();
            if !finite {
                return Err(SimError::Skeleton(format!(
                    "segment {i} has a non-finite position or radius"
                )));
            }
            match (i, s.parent) {
                (0, None) => {}
                (0, Some(_)) => return Err(SimError::Skeleton("segment 0 must be the root (no parent)".into())),
                (_, None) => {
                    return Err(SimError::Skeleton(format!(
                        "segment {i} has no parent; only segment 0 may be a root"
                    )))
                }
                (_, Some(p)) if p as usize >= i => {
                    return Err(SimError::Skeleton(format!(
                        "segment {i} has parent {p}; a parent must come before its children"
                    )))
                }
                (_, Some(p)) => {
                    let gap = (self.segments[p as usize].tip - s.base).length();
                    let tol = 1e-4 * (1.0 + s.base.length());
                    if gap > tol {
                        return Err(SimError::Skeleton(format!(
                            "segment {i} starts {gap} m away from the tip of its parent {p}; a segment's base must be its parent's tip"
                        )));
                    }
                }
            }
            let l = s.length();
            if l.is_nan() || l <= 1e-6 {
                return Err(SimError::Skeleton(format!(
                    "segment {i} has length {l} m; it must be longer than 1 µm"
                )));
            }
            if !(s.radius_base > 0.0 && s.radius_tip > 0.0) {
                return Err(SimError::Skeleton(format!(
                    "segment {i} has radii {} and {} m; radii must be positive",
                    s.radius_base, s.radius_tip
                )));
            }
        }
        for (j, leaf) in self.leaves.iter().enumerate() {
            if leaf.segment as usize >= n {
                return Err(SimError::Skeleton(format!(
                    "leaf {j} hangs on segment {} but the tree has {n} segments",
                    leaf.segment
                )));
            }
            if !(0.0..=1.0).contains(&leaf.along) {
                return Err(SimError::Skeleton(format!(
                    "leaf {j} sits at {} along its segment; allowed is 0 to 1",
                    leaf.along
                )));
            }
            if !(leaf.length.is_finite() && leaf.length > 0.0 && leaf.width.is_finite() && leaf.width > 0.0) {
                return Err(SimError::Skeleton(format!(
                    "leaf {j} is {} × {} m; a leaf's length and width must be positive",
                    leaf.length, leaf.width
                )));
            }
            if !(leaf.orientation.is_finite() && (leaf.orientation.length() - 1.0).abs() < 1e-3) {
                return Err(SimError::Skeleton(format!(
                    "leaf {j} has a non-unit orientation quaternion"
                )));
            }
        }
        Ok(())
    }

    /// Height of the highest point above the root's base \[m\].
    pub fn height(&self) -> f32 {
        let y0 = self.segments.first().map_or(0.0, |s| s.base.y);
        self.segments
            .iter()
            .map(|s| s.tip.y.max(s.base.y) - y0)
            .fold(0.0, f32::max)
    }
}
