//! What Chen's model reads of the forest every step, worked out once when it is built: each
//! stem's constants of Eqs. 4.1–4.7, its children (for the transfer force, Eq. 4.3), its rest
//! direction relative to its parent (Eq. 4.2), the rest pose, and each leaf's constants.
//!
//! Invariants: every per-segment array is in the forest's segment order and as long as the
//! forest's segments, every per-leaf array in the forest's leaf order; `children` lists each
//! segment's children in ascending order (so the transfer force sums them in one fixed order).

use glam::{Quat, Vec3};

use super::params::ChenParams;
use crate::dynamics::weber::mapping;
use crate::dynamics::Pose;
use crate::error::SimError;
use crate::forest::{unpack_quat, Forest, NO_PARENT};

/// Per-segment constants.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stem {
    /// Length l \[m\].
    pub len: f32,
    /// Eq. 4.1's m·g, the stem's own weight \[N\] (a vector along −y).
    pub weight: Vec3,
    /// The weight the stem carries at its tip in the generated shape, its own and its
    /// children's passed on by Eq. 4.3 \[N\]: what `Material::compensate_gravity` balances.
    pub rest_weight: Vec3,
    /// 1/(m·l²) of Eq. 4.7 [1/(kg·m²)].
    pub inv_inertia: f32,
    /// k_r·l²/(m·l²): the restoration's angular acceleration per unit of |ori × ori_rest|
    /// (Eqs. 4.2, 4.6, 4.7) [1/s²].
    pub w2: f32,
    /// Drag coefficients of the bark and of the leaves [N·s/m] (the forest's).
    pub bark_drag: f32,
    pub leaf_drag: f32,
    /// Largest drag coefficient the relative velocity may take in one step, m·l²/(l²·Δt)
    /// (see `kernels::drag`).
    pub drag_cap: f32,
    /// Largest angular acceleration the self-collision's response may give the stem in one
    /// step: the one that turns it by r/len, moving its tip by its radius, within the step
    /// (r_base/len/Δt²) [1/s²].
    pub response_cap: f32,
}

/// Per-leaf constants.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Blade {
    /// Orientation in its segment's frame at rest.
    pub rest: Quat,
    /// Distance of the attachment from the segment's base \[m\].
    pub along: f32,
    /// Length of the mid-venation L \[m\] (the lever of Eq. 4.6).
    pub len: f32,
    /// C_W·A (Eq. 4.4) [N·s/m].
    pub wind: f32,
    /// Eq. 4.1's m·g \[N\].
    pub weight: Vec3,
    /// 1/(m·L²) [1/(kg·m²)].
    pub inv_inertia: f32,
    /// (2π·f)²: the restoration's angular acceleration per unit of |b × b_rest| [1/s²].
    pub w2: f32,
}

/// Everything static the model reads.
#[derive(Clone, Debug, Default)]
pub(super) struct Statics {
    pub stem: Vec<Stem>,
    /// Segment i's children are `child[child_start[i]..child_start[i + 1]]`.
    pub child_start: Vec<u32>,
    pub child: Vec<u32>,
    /// Rest orientation relative to the parent's (the root's: to the world).
    pub rel_rest: Vec<Quat>,
    /// The generated shape: each segment's base and orientation.
    pub rest_base: Vec<Vec3>,
    pub rest_orient: Vec<Quat>,
    pub blade: Vec<Blade>,
    /// Each leaf's segment.
    pub leaf_seg: Vec<u32>,
    /// Each tree's segment count in its top block (the serial part of §4.3).
    pub top_len: Vec<usize>,
}

impl Statics {
    /// Works out the constants for `params`; refuses leaves without mass (no inertia to step)
    /// and segments whose Eq. 4.7 has no mass.
    pub fn new(forest: &Forest, params: &ChenParams) -> Result<Statics, SimError> {
        let n = forest.segment_count();
        let s = &forest.seg;
        let g = Vec3::new(0.0, -params.gravity, 0.0);
        let mut out = Statics::default();
        // Children, ascending (parents come first, so one ascending pass lists them in order).
        let mut count = vec![0u32; n + 1];
        for i in 0..n {
            if s.parent[i] != NO_PARENT {
                count[s.parent[i] as usize + 1] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        out.child_start = count.clone();
        out.child = vec![0; count[n] as usize];
        let mut fill = count;
        for i in 0..n {
            if s.parent[i] != NO_PARENT {
                let p = s.parent[i] as usize;
                out.child[fill[p] as usize] = i as u32;
                fill[p] += 1;
            }
        }
        // Rest shape, root to tips.
        out.rel_rest = (0..n)
            .map(|i| mapping::relative_rotation(s.shape[0][i], s.shape[1][i]))
            .collect();
        let shape = Pose::of_shape(forest);
        (out.rest_orient, out.rest_base) = (shape.orient, shape.base);
        // What a stem's turn swings (Eq. 4.10 carries everything beyond its tip along, turned
        // rigidly about its base): Σ m_j·(|c_j − b|² + l_j²/12) over its subtree in the rest
        // shape, c_j each segment's centre, b the stem's base; the moment about the base point,
        // an upper bound of the moment about any axis through it. Summed tips to root as
        // Σm, Σm·c and Σm·(|c|² + l²/12), in f64 about each tree's root, so each stem's is
        // S2 − 2·b·S1 + |b|²·S0.
        let swung: Vec<f32> = {
            let mut sums = vec![(0.0f64, glam::DVec3::ZERO, 0.0f64); n];
            let mut root = vec![glam::DVec3::ZERO; n];
            for t in &forest.trees {
                for i in t.segments.start as usize..t.segments.end as usize {
                    root[i] = t.root.as_dvec3();
                }
            }
            for i in (0..n).rev() {
                let (m, l) = (s.mass[i] as f64, s.length[i] as f64);
                let centre = out.rest_base[i] + out.rest_orient[i] * Vec3::new(0.0, 0.5 * s.length[i], 0.0);
                let c = centre.as_dvec3() - root[i];
                let own = (m, c * m, m * (c.length_squared() + l * l / 12.0));
                let (a, b, d) = sums[i];
                sums[i] = (a + own.0, b + own.1, d + own.2);
                if s.parent[i] != NO_PARENT {
                    let p = s.parent[i] as usize;
                    let (a, b, d) = sums[i];
                    let q = &mut sums[p];
                    *q = (q.0 + a, q.1 + b, q.2 + d);
                }
            }
            (0..n)
                .map(|i| {
                    let (s0, s1, s2) = sums[i];
                    let b = out.rest_base[i].as_dvec3() - root[i];
                    (s2 - 2.0 * b.dot(s1) + b.length_squared() * s0) as f32
                })
                .collect()
        };
        // Stems.
        let transfer = params.transfer();
        out.stem = Vec::with_capacity(n);
        for i in 0..n {
            let len = s.length[i];
            let m = if params.carried_inertia {
                swung[i] / (len * len)
            } else {
                s.mass[i]
            };
            if !(m > 0.0 && m.is_finite()) {
                return Err(SimError::param(
                    "segment mass",
                    format!("{m} (segment {i})"),
                    "every segment needs a positive mass for Chen's Eq. 4.7",
                ));
            }
            let inertia = m * len * len;
            let k_r = params.stiffness_scale * s.stiffness[i] / (len * len);
            out.stem.push(Stem {
                len,
                weight: g * s.mass[i],
                rest_weight: Vec3::ZERO,
                inv_inertia: 1.0 / inertia,
                w2: k_r * len * len / inertia,
                bark_drag: s.drag[i] - s.leaf_drag[i],
                leaf_drag: s.leaf_drag[i],
                drag_cap: m / params.dt,
                response_cap: s.radius_base[i] / len / (params.dt * params.dt),
            });
        }
        // The weight each stem carries in the generated shape (Eq. 4.3 applied to Eq. 4.1),
        // tips to root.
        for i in (0..n).rev() {
            // In the order and grouping `kernels::stem_forces` sums a load, so that a stem at
            // rest in calm air carries exactly its rest weight.
            let mut sum = Vec3::ZERO;
            for &c in &out.child[out.child_start[i] as usize..out.child_start[i + 1] as usize] {
                sum += out.stem[c as usize].rest_weight;
            }
            out.stem[i].rest_weight = Vec3::ZERO + out.stem[i].weight + sum * transfer;
        }
        // Leaves.
        let material = &forest.material;
        if forest.leaf_count() > 0 && material.leaf_mass_per_area <= 0.0 {
            return Err(SimError::param(
                "leaf_mass_per_area",
                material.leaf_mass_per_area,
                "must be greater than 0 kg/m² when the trees have leaves: Chen's leaves turn by Eq. 4.7 on their own mass",
            ));
        }
        let w2 = (std::f32::consts::TAU * params.leaf_frequency).powi(2);
        out.blade = Vec::with_capacity(forest.leaf_count());
        out.leaf_seg = Vec::with_capacity(forest.leaf_count());
        for (t, tree) in forest.trees.iter().enumerate() {
            let _ = t;
            for i in tree.segments.start as usize..tree.segments.end as usize {
                for j in forest.leaves_of(i) {
                    let len = forest.leaf.length_m(j);
                    let area = std::f32::consts::FRAC_PI_4 * len * len * tree.leaf_aspect;
                    let m = material.leaf_mass_per_area * area;
                    out.blade.push(Blade {
                        rest: unpack_quat(forest.leaf.rest[j]),
                        along: forest.leaf.along_f32(j) * s.length[i],
                        len,
                        wind: params.leaf_wind * area,
                        weight: g * m,
                        inv_inertia: 1.0 / (m * len * len),
                        w2,
                    });
                    out.leaf_seg.push(i as u32);
                }
            }
        }
        out.top_len = forest
            .trees
            .iter()
            .map(|t| {
                let b = &forest.blocks[t.blocks.start as usize];
                (b.segments.end - b.segments.start) as usize
            })
            .collect();
        Ok(out)
    }

    /// Segment i's children.
    #[inline(always)]
    pub fn children(&self, i: usize) -> &[u32] {
        &self.child[self.child_start[i] as usize..self.child_start[i + 1] as usize]
    }

    /// Bytes held (capacities).
    pub fn heap_bytes(&self) -> usize {
        use crate::dynamics::vec_bytes as b;
        b(&self.stem)
            + b(&self.child_start)
            + b(&self.child)
            + b(&self.rel_rest)
            + b(&self.rest_base)
            + b(&self.rest_orient)
            + b(&self.blade)
            + b(&self.leaf_seg)
            + b(&self.top_len)
    }
}
