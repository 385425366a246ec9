//! The world pose of every segment and leaf, as every dynamics model writes it and the
//! renderer reads it.
//!
//! Invariants: `base` and `orient` hold one entry per segment of the forest, `leaf_pos` one per
//! leaf. `leaf_orient` is empty when leaves are rigid on their segment (their orientation is
//! the segment's times the leaf's rest orientation, composed on demand); a model whose leaves
//! turn on their own holds one world orientation per leaf there. `removed` is empty while no
//! segment was ever removed from the scene, else it holds one flag per segment: true for a
//! segment of a broken piece the debris cap removed (see `dynamics::debris`), which is no
//! longer simulated and which the renderer skips with its leaves (its base and orientation
//! keep their last values).

use glam::{Quat, Vec3};

use crate::forest::{unpack_quat, Forest, NO_PARENT};

/// World pose of every segment and leaf.
#[derive(Clone, Debug, Default)]
pub struct Pose {
    /// World position of each segment's base \[m\].
    pub base: Vec<Vec3>,
    /// World orientation of each segment (its local +y runs along its axis, base to tip).
    pub orient: Vec<Quat>,
    /// World position of every leaf's attachment point \[m\].
    pub leaf_pos: Vec<Vec3>,
    /// World orientation of every leaf, or empty when leaves are rigid on their segment.
    pub leaf_orient: Vec<Quat>,
    /// Per segment, whether it was removed (a piece of debris over the cap); empty while
    /// nothing was ever removed.
    pub removed: Vec<bool>,
}

impl Pose {
    /// The pose of the forest's generated shape, every tree standing as it was built: each
    /// segment turned from its parent by its rest rotation in Weber's mapping
    /// (`weber::mapping::relative_rotation` of `SegmentData::shape`), its base on its parent's
    /// tip, each tree's root segment at the tree's position; leaves rigid on their segments.
    /// What a model at rest shows, up to rounding.
    pub fn of_shape(forest: &Forest) -> Pose {
        use crate::dynamics::weber::mapping::relative_rotation;
        let s = &forest.seg;
        let n = forest.segment_count();
        let mut pose = Pose {
            base: vec![Vec3::ZERO; n],
            orient: vec![Quat::IDENTITY; n],
            leaf_pos: vec![Vec3::ZERO; forest.leaf_count()],
            ..Pose::default()
        };
        for t in &forest.trees {
            for i in t.segments.start as usize..t.segments.end as usize {
                let rel = relative_rotation(s.shape[0][i], s.shape[1][i]);
                let p = s.parent[i];
                if p == NO_PARENT {
                    pose.orient[i] = rel.normalize();
                    pose.base[i] = t.root;
                } else {
                    let p = p as usize;
                    pose.orient[i] = (pose.orient[p] * rel).normalize();
                    pose.base[i] = pose.tip(p, s.length[p]);
                }
                for j in forest.leaves_of(i) {
                    pose.leaf_pos[j] =
                        pose.base[i] + segment_axis(pose.orient[i]) * (forest.leaf.along_f32(j) * s.length[i]);
                }
            }
        }
        pose
    }

    /// World orientation of leaf `j` hanging on segment `segment`: its own when the model turns
    /// leaves, otherwise the segment's orientation times the leaf's rest orientation in the
    /// segment's frame.
    #[inline]
    pub fn leaf_orientation(&self, forest: &Forest, segment: usize, j: usize) -> Quat {
        match self.leaf_orient.get(j) {
            Some(&q) => q,
            None => self.orient[segment] * unpack_quat(forest.leaf.rest[j]),
        }
    }

    /// World orientation leaf `j` would have if rigid on its segment `segment`: the segment's
    /// orientation times the leaf's rest orientation in the segment's frame (what
    /// [`leaf_orientation`](Self::leaf_orientation) gives when `leaf_orient` is empty).
    #[inline]
    pub fn leaf_orientation_rigid(&self, forest: &Forest, segment: usize, j: usize) -> Quat {
        self.orient[segment] * unpack_quat(forest.leaf.rest[j])
    }

    /// Tip of segment `i` given its length \[m\].
    #[inline]
    pub fn tip(&self, i: usize, length: f32) -> Vec3 {
        self.base[i] + self.orient[i] * Vec3::new(0.0, length, 0.0)
    }

    /// Heap bytes held by the pose.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.base.capacity() * size_of::<Vec3>()
            + self.orient.capacity() * size_of::<Quat>()
            + self.leaf_pos.capacity() * size_of::<Vec3>()
            + self.leaf_orient.capacity() * size_of::<Quat>()
            + self.removed.capacity() * size_of::<bool>()
    }

    /// Whether segment `i` was removed from the scene (see `removed`).
    #[inline]
    pub fn is_removed(&self, i: usize) -> bool {
        self.removed.get(i).copied().unwrap_or(false)
    }
}

/// A segment's unit axis, base to tip, for its orientation `q`: q·(0, 1, 0), the second column
/// of q's rotation matrix, without the whole rotation.
#[inline(always)]
pub fn segment_axis(q: Quat) -> Vec3 {
    let (x, y, z, w) = (q.x, q.y, q.z, q.w);
    Vec3::new(
        2.0 * (x * y - w * z),
        1.0 - 2.0 * (x * x + z * z),
        2.0 * (y * z + w * x),
    )
}
