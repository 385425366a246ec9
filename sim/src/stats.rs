//! What a grown tree is made of: the statistics `sylva spec stats` and `sylva grow` print.

use glam::Vec3;

use crate::skeleton::Skeleton;

/// Counts and extent of a tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TreeStats {
    pub species: String,
    /// Stem levels (for Weber-Penn trees the spec's `Levels`; otherwise the deepest level found).
    pub levels: u32,
    /// Stems at each level other than clones, level 0 (trunks) first.
    pub stems_per_level: Vec<u64>,
    /// Clones (stems split off a stem of the same level) at each level.
    pub clones_per_level: Vec<u64>,
    pub leaves: u64,
    /// Solver segments.
    pub segments: u64,
    /// Highest stem point above the base [m].
    pub height: f64,
    /// Largest horizontal extent of the stems, the larger of the x and z extents [m].
    pub width: f64,
    /// Corners of the box around every stem point (segment bases and tips) [m], in Arbaro's
    /// axes: z up, Sylva's (x, y, z) being Arbaro's (x, z, -y). Arbaro's height
    /// (`TreeImpl.getHeight`) is `bbox_max[2]`, its width (`getWidth`) the larger distance of
    /// the two corners from the z axis ([`TreeStats::arbaro_width`]). Arbaro's own box has
    /// the ends of each segment's axis, where the skeleton has the chords of helical stems,
    /// and also the stem ends it tries while pruning.
    pub bbox_min: [f64; 3],
    pub bbox_max: [f64; 3],
}

impl TreeStats {
    /// Statistics of any skeleton, its stems found by the rule of continuation: at every fork
    /// the child whose direction is closest to its parent's carries the stem on; each other
    /// child starts a stem one level deeper. Generators that know their stems (Weber-Penn) fill
    /// the stem counts themselves.
    pub fn of_skeleton(species: &str, skel: &Skeleton) -> TreeStats {
        let n = skel.segments.len();
        let dir: Vec<Vec3> = skel
            .segments
            .iter()
            .map(|s| (s.tip - s.base).normalize_or_zero())
            .collect();
        // The best-aligned child of each segment continues its stem.
        let mut best: Vec<Option<(usize, f32)>> = vec![None; n];
        for (i, s) in skel.segments.iter().enumerate() {
            if let Some(p) = s.parent {
                let p = p as usize;
                let align = dir[i].dot(dir[p]);
                if best[p].is_none_or(|(_, a)| align > a) {
                    best[p] = Some((i, align));
                }
            }
        }
        let mut level = vec![0u32; n];
        let mut stems: Vec<u64> = Vec::new();
        for (i, s) in skel.segments.iter().enumerate() {
            let starts_stem = match s.parent {
                None => true,
                Some(p) => {
                    let p = p as usize;
                    let continues = best[p].map(|(c, _)| c) == Some(i);
                    level[i] = if continues { level[p] } else { level[p] + 1 };
                    !continues
                }
            };
            if starts_stem {
                let l = level[i] as usize;
                if stems.len() <= l {
                    stems.resize(l + 1, 0);
                }
                stems[l] += 1;
            }
        }
        let mut stats = TreeStats {
            species: species.to_string(),
            levels: stems.len() as u32,
            clones_per_level: vec![0; stems.len()],
            stems_per_level: stems,
            ..TreeStats::default()
        };
        stats.fill_extent(skel);
        stats
    }

    /// Sets the segment and leaf counts, height and width from a skeleton.
    pub fn fill_extent(&mut self, skel: &Skeleton) {
        self.segments = skel.segments.len() as u64;
        self.leaves = skel.leaves.len() as u64;
        let base = skel.segments.first().map_or(0.0, |s| s.base.y.max(0.0).min(s.base.y));
        let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
        for s in &skel.segments {
            lo = lo.min(s.base).min(s.tip);
            hi = hi.max(s.base).max(s.tip);
        }
        if skel.segments.is_empty() {
            return;
        }
        self.height = (hi.y - base.max(0.0).min(lo.y.max(base))).max(0.0) as f64;
        self.width = (hi.x - lo.x).max(hi.z - lo.z) as f64;
        self.bbox_min = [lo.x as f64, -hi.z as f64, lo.y as f64];
        self.bbox_max = [hi.x as f64, -lo.z as f64, hi.y as f64];
    }

    /// Widens the box to hold a point given in Arbaro's axes (z up).
    pub fn include_arbaro_point(&mut self, p: [f64; 3]) {
        for k in 0..3 {
            self.bbox_min[k] = self.bbox_min[k].min(p[k]);
            self.bbox_max[k] = self.bbox_max[k].max(p[k]);
        }
    }

    /// Arbaro's width (`TreeImpl.getWidth`): the larger distance of the box's two corners from
    /// the vertical axis through the origin [m].
    pub fn arbaro_width(&self) -> f64 {
        let r = |c: &[f64; 3]| (c[0] * c[0] + c[1] * c[1]).sqrt();
        r(&self.bbox_min).max(r(&self.bbox_max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skeleton::SkeletonSegment;

    #[test]
    fn stems_follow_the_straightest_child() {
        // A trunk of two segments with one side branch at the joint.
        let seg = |parent: Option<u32>, base: Vec3, tip: Vec3| SkeletonSegment {
            parent,
            base,
            tip,
            radius_base: 0.1,
            radius_tip: 0.1,
        };
        let skel = Skeleton {
            segments: vec![
                seg(None, Vec3::ZERO, Vec3::Y),
                seg(Some(0), Vec3::Y, Vec3::new(0.0, 2.0, 0.0)),
                seg(Some(0), Vec3::Y, Vec3::new(1.0, 1.5, 0.0)),
                seg(Some(2), Vec3::new(1.0, 1.5, 0.0), Vec3::new(2.0, 1.6, 0.0)),
            ],
            leaves: vec![],
        };
        let s = TreeStats::of_skeleton("t", &skel);
        assert_eq!(s.stems_per_level, vec![1, 1]);
        assert_eq!(s.segments, 4);
        assert!((s.height - 2.0).abs() < 1e-6);
        assert!((s.width - 2.0).abs() < 1e-6);
    }

    #[test]
    fn box_is_in_arbaros_axes() {
        // One stem from the origin to Sylva's (1, 3, -2): Arbaro's (1, 2, 3).
        let skel = Skeleton {
            segments: vec![SkeletonSegment {
                parent: None,
                base: Vec3::ZERO,
                tip: Vec3::new(1.0, 3.0, -2.0),
                radius_base: 0.1,
                radius_tip: 0.1,
            }],
            leaves: vec![],
        };
        let mut s = TreeStats::of_skeleton("t", &skel);
        assert_eq!(s.bbox_min, [0.0, 0.0, 0.0]);
        assert_eq!(s.bbox_max, [1.0, 2.0, 3.0]);
        assert!((s.arbaro_width() - 5f64.sqrt()).abs() < 1e-12);
        s.include_arbaro_point([-3.0, 0.0, -1.0]);
        assert_eq!(s.bbox_min, [-3.0, 0.0, -1.0]);
        assert!((s.arbaro_width() - 3.0).abs() < 1e-12);
    }
}
