//! Figures derived from a spec's parameters: the stem, clone and leaf counts Arbaro's rules
//! give, replayed without geometry or randomness (mean stem lengths, children evenly spaced
//! within each segment, error diffusion in generation order). Pruning is not modelled: it needs
//! the stems' positions; pruned trees (PruneRatio > 0) can only have fewer stems.

use sylva_sim::spec::WeberPennSpec;

/// Expected counts.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Expected {
    pub stems: Vec<u64>,
    pub clones: Vec<u64>,
    pub leaves: u64,
}

#[derive(Clone, Copy)]
struct Stem {
    level: usize,
    length: f64,
    offset: f64,
    parent_length: f64,
    radius: f64,
    length_child_max: f64,
    per_segment: f64,
    leaves_per_segment: f64,
    segments: usize,
}

struct Model<'a> {
    s: &'a WeberPennSpec,
    /// The tree's size, Scale ± ScaleV as drawn.
    scale: f64,
    split_error: [f64; 4],
    substem_error: [f64; 4],
    leaf_error: f64,
    out: Expected,
}

/// The Weber-Penn shape ratio with Arbaro's definitions (shape 0 is ratio itself).
fn shape(s: &WeberPennSpec, shape: i64, r: f64) -> f64 {
    use std::f64::consts::PI;
    match shape {
        0 => r,
        1 => 0.2 + 0.8 * (PI * r).sin(),
        2 => 0.2 + 0.8 * (0.5 * PI * r).sin(),
        3 => 1.0,
        4 => 0.5 + 0.5 * r,
        5 => {
            if r <= 0.7 {
                r / 0.7
            } else {
                (1.0 - r) / 0.3
            }
        }
        6 => 1.0 - 0.8 * r,
        7 => {
            if r <= 0.7 {
                0.5 + 0.5 * r / 0.7
            } else {
                0.5 + 0.5 * (1.0 - r) / 0.3
            }
        }
        8 => {
            let peak = s.prune_width_peak;
            if !(0.0..=1.0).contains(&r) {
                0.0
            } else if r < 1.0 - peak {
                (r / (1.0 - peak)).powf(s.prune_power_high)
            } else {
                ((1.0 - r) / (1.0 - peak)).powf(s.prune_power_low)
            }
        }
        _ => 1.0,
    }
}

/// Radius along a stem with taper ≤ 2 (the linear part of the taper).
fn taper_radius(base: f64, taper: f64, z: f64) -> f64 {
    let unit = if taper <= 1.0 {
        taper
    } else if taper <= 2.0 {
        2.0 - taper
    } else {
        0.0
    };
    base * (1.0 - unit * z.min(1.0))
}

impl Model<'_> {
    fn new_stem(&self, level: usize, length: f64, offset: f64, parent: Option<&Stem>, radius: f64) -> Stem {
        let s = self.s;
        let child = s.level(level + 1);
        let segments = s.level(level).curve_res.max(1) as usize;
        let max = child.branches.max(0) as f64;
        // Children per stem: all of nBranches on a trunk; on level 1 in proportion to the
        // branch's relative length; deeper, fewer towards the parent's tip.
        let count = match (level, parent) {
            (0, _) | (_, None) => max,
            (1, Some(p)) => ((max * (0.2 + 0.8 * length / p.length / p.length_child_max)) as i64) as f64,
            (_, Some(p)) => ((max * (1.0 - 0.5 * offset / p.length)) as i64) as f64,
        };
        let per_segment = if level == 0 {
            count / segments as f64 / (1.0 - s.base_size)
        } else {
            count / segments as f64
        };
        let leaves_per_segment = match parent {
            Some(p) if level + 1 == s.levels as usize => {
                s.leaves.unsigned_abs() as f64 * shape(s, s.leaf_distrib, offset / p.length) * s.leaf_quality
                    / segments as f64
            }
            _ => 0.0,
        };
        Stem {
            level,
            length,
            offset,
            parent_length: parent.map_or(1.0, |p| p.length),
            radius,
            length_child_max: child.length,
            per_segment,
            leaves_per_segment,
            segments,
        }
    }

    fn stem(&mut self, mut st: Stem, start: usize) {
        let levels = self.s.levels as usize;
        let seg_len = st.length / st.segments as f64;
        for seg in start..st.segments {
            if st.level + 1 < levels {
                self.substems(&st, seg, seg_len);
            }
            if st.level + 1 == levels && self.s.leaves > 0 {
                let n = (st.leaves_per_segment + self.leaf_error + 0.5) as i64;
                self.leaf_error -= n as f64 - st.leaves_per_segment;
                self.out.leaves += n.max(0) as u64;
            }
            if st.level + 1 == levels && self.s.leaves < 0 && seg + 1 == st.segments && st.level > 0 {
                let fan = self.s.leaves.unsigned_abs() as f64
                    * shape(self.s, self.s.leaf_distrib, st.offset / st.parent_length)
                    * self.s.leaf_quality;
                self.out.leaves += ((fan + 0.5) as i64).max(0) as u64;
            }
            if seg + 1 < st.segments {
                let lv = st.level.min(3);
                let n = if st.level == 0 && seg == 0 && self.s.base_splits > 0 {
                    self.s.base_splits
                } else {
                    let splits = self.s.level(st.level).seg_splits;
                    let n = (splits + self.split_error[lv] + 0.5) as i64;
                    self.split_error[lv] -= n as f64 - splits;
                    n
                };
                if n >= 1 {
                    // Clones share the stem's substems: each side keeps 1/(n+1) of the rate.
                    let mut clone = st;
                    clone.per_segment = st.per_segment / (n + 1) as f64;
                    for _ in 0..n {
                        let last = self.out.clones.len() - 1;
                        self.out.clones[st.level.min(last)] += 1;
                        self.stem(clone, seg + 1);
                    }
                    st.per_segment /= (n + 1) as f64;
                }
            }
        }
    }

    fn substems(&mut self, st: &Stem, seg: usize, seg_len: f64) {
        let s = self.s;
        let next = st.level + 1;
        let (per, offs) = if st.level > 0 {
            (st.per_segment, 0.0)
        } else {
            // No branches on the bare base of the trunk.
            let bare = s.base_size * st.length;
            if seg as f64 * seg_len > bare {
                (st.per_segment, 0.0)
            } else if (seg + 1) as f64 * seg_len <= bare {
                return;
            } else {
                let offs = (bare - seg as f64 * seg_len) / seg_len;
                (st.per_segment * (1.0 - offs), offs)
            }
        };
        let lv = st.level.min(3);
        let n = (per + self.substem_error[lv] + 0.5) as i64;
        self.substem_error[lv] -= n as f64 - per;
        if n <= 0 {
            return;
        }
        let dist = (1.0 - offs) / n as f64 * s.level(next).branch_dist;
        for k in 0..n {
            let offset = (seg as f64 + offs + dist / 2.0 + k as f64 * dist) * seg_len;
            let length = if next == 1 {
                st.length
                    * st.length_child_max
                    * shape(
                        s,
                        s.shape,
                        (st.length - offset) / (st.length - s.base_size * self.scale),
                    )
            } else {
                st.length_child_max * (st.length - 0.6 * offset)
            };
            let max_radius = taper_radius(st.radius, s.level(st.level).taper, offset / st.length);
            let radius = (st.radius * (length / st.length).powf(s.ratio_power)).min(max_radius);
            // Arbaro does not make stems shorter than 0.5 mm or thinner than 0.05 mm.
            if !(length > 0.0005 && radius > 0.00005) {
                continue;
            }
            let last = self.out.stems.len() - 1;
            self.out.stems[next.min(last)] += 1;
            let child = self.new_stem(next, length, offset, Some(st), radius);
            self.stem(child, 0);
        }
    }
}

/// The counts Arbaro's rules give for `spec` grown at size `scale` (Scale ± ScaleV as drawn):
/// the size matters where stems fall under Arbaro's 0.5 mm length and 0.05 mm radius limits.
pub fn expected_counts(spec: &WeberPennSpec, scale: f64) -> Expected {
    let levels = spec.levels.max(1) as usize;
    let mut m = Model {
        s: spec,
        scale,
        split_error: [0.0; 4],
        substem_error: [0.0; 4],
        leaf_error: 0.0,
        out: Expected {
            stems: vec![0; levels],
            clones: vec![0; levels],
            leaves: 0,
        },
    };
    for _ in 0..spec.level(0).branches.max(1) {
        let length = spec.level(0).length * scale;
        let trunk = m.new_stem(0, length, 0.0, None, length * spec.ratio);
        m.out.stems[0] += 1;
        m.stem(trunk, 0);
    }
    m.out
}
