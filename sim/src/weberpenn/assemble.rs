//! From the generator's stems to Sylva's skeleton: every stem cut at its children into
//! solver segments, Weber 2008's fork rules (`nForkArea`, `nForkPush`) applied, the pieces
//! connected and written y-up.

use glam::{DMat3, DQuat, DVec3, Quat, Vec3};

use super::frame::Frame;
use super::{Gen, TreeStats, HELIX_CHORDS, MIN_PIECE};
use crate::error::SimError;
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment};

/// One solver segment while the skeleton is assembled (Arbaro coordinates).
#[derive(Clone, Copy, Debug)]
struct Piece {
    parent: Option<usize>,
    stem: usize,
    level: usize,
    base: DVec3,
    tip: DVec3,
    r_base: f64,
    r_tip: f64,
    /// A joint of several trunks (root collar or connector): its tip area is the sum of what
    /// grows from it, whatever the fork rules say.
    junction: bool,
}

/// Arbaro's z-up to Sylva's y-up.
fn to_sylva(v: DVec3) -> Vec3 {
    Vec3::new(v.x as f32, v.z as f32, -v.y as f32)
}

/// Pieces the trunk's flare (its lowest eighth) is cut into, where it falls within the trunk's
/// segments.
const FLARE_CUTS: usize = 6;

/// Smallest radius written to the skeleton (cones taper to exactly zero) [m].
const MIN_RADIUS: f64 = 5.0e-6;

impl Gen<'_> {
    /// Cuts every stem at its children, applies the fork rules and builds the skeleton.
    pub(super) fn assemble(&mut self) -> Result<(Skeleton, TreeStats, Vec<u32>), SimError> {
        let out = std::mem::take(&mut self.out);
        let trunks: Vec<usize> = (0..out.len())
            .filter(|&i| out[i].attach.is_none() && !out[i].segments.is_empty())
            .collect();
        if trunks.is_empty() {
            return Err(SimError::param(
                "tree",
                &self.spec.species,
                "grows no stem longer than 0.5 mm and thicker than 0.05 mm; check Scale, 0Length and Ratio",
            ));
        }

        // Children of every segment: (stem, segment position in the stem) -> (along, child).
        let mut children: Vec<Vec<Vec<(f64, usize)>>> =
            out.iter().map(|s| vec![Vec::new(); s.segments.len()]).collect();
        for (c, stem) in out.iter().enumerate() {
            if let Some(a) = stem.attach {
                let parent = &out[a.stem];
                if let Some(k) = parent.segments.iter().position(|s| s.index == a.segment) {
                    children[a.stem][k].push((a.along, c));
                }
            }
        }

        let mut pieces: Vec<Piece> = Vec::with_capacity(self.segments * 2);
        // Several trunks share a root collar just below the ground, with a connector to each
        // trunk base that is spread out by 0BranchDist, so the skeleton has one root.
        let mut trunk_attach: Vec<Option<usize>> = vec![None; out.len()];
        if trunks.len() > 1 {
            let area: f64 = trunks.iter().map(|&t| out[t].profile.radius(0.0).powi(2)).sum();
            let r = area.sqrt().max(MIN_RADIUS);
            let depth = (0.5 * r).max(1e-4);
            pieces.push(Piece {
                parent: None,
                stem: usize::MAX,
                level: 0,
                base: DVec3::new(0.0, 0.0, -depth),
                tip: DVec3::ZERO,
                r_base: r,
                r_tip: r,
                junction: true,
            });
            for &t in &trunks {
                let base = out[t].segments[0].frame.t;
                if base.length() > 1e-5 {
                    let rt = out[t].profile.radius(0.0).max(MIN_RADIUS);
                    pieces.push(Piece {
                        parent: Some(0),
                        stem: usize::MAX,
                        level: 0,
                        base: DVec3::ZERO,
                        tip: base,
                        r_base: rt,
                        r_tip: rt,
                        junction: true,
                    });
                    trunk_attach[t] = Some(pieces.len() - 1);
                } else {
                    trunk_attach[t] = Some(0);
                }
            }
        }

        // Resolved cuts: for each stem and segment, (along at the piece's end, piece index).
        let mut ends: Vec<Vec<Vec<(f64, usize)>>> = Vec::with_capacity(out.len());
        let mut stem_attach: Vec<Option<usize>> = vec![None; out.len()];
        let mut resolved_along: Vec<f64> = vec![0.0; out.len()];
        let mut leaf_list: Vec<(usize, f64, Frame)> = Vec::with_capacity(self.leaves);
        for (si, stem) in out.iter().enumerate() {
            let mut stem_ends = Vec::with_capacity(stem.segments.len());
            // Where this stem hangs from.
            let attach = match stem.attach {
                None => trunk_attach[si],
                Some(a) => {
                    let k = out[a.stem].segments.iter().position(|s| s.index == a.segment);
                    k.and_then(|k| piece_ending_at(&ends, &stem_attach, a.stem, k, resolved_along[si]))
                }
            };
            stem_attach[si] = attach;
            if stem.attach.is_some() && attach.is_none() {
                // The parent was not kept (cannot happen for Arbaro's order); skip the stem.
                ends.push(vec![Vec::new(); stem.segments.len()]);
                continue;
            }
            let seg_len = stem.segment_length;
            let min_frac = MIN_PIECE.max(1e-5 / seg_len.max(1e-12));
            for (k, seg) in stem.segments.iter().enumerate() {
                // Cut positions: helix chords, then children snapped to their neighbours.
                let mut cuts: Vec<f64> = Vec::new();
                if seg.helix.is_some() {
                    cuts.extend((1..HELIX_CHORDS).map(|i| i as f64 / HELIX_CHORDS as f64));
                }
                // The trunk's flare (Weber & Penn's radius × (1 + Flare·(100^(1−8z) − 1)/100)
                // below z = 1/8) falls tenfold every 1/16 of the stem: drawn by one straight
                // taper it is a stepped cone. Cut where it curves, so the pieces follow it.
                let p = &stem.profile;
                if p.trunk && p.flare > 0.0 && p.length > 0.0 {
                    for j in 1..FLARE_CUTS {
                        let h = p.length * j as f64 / (8.0 * FLARE_CUTS as f64);
                        let u = h / seg_len - seg.index as f64;
                        if u > min_frac && u < 1.0 - min_frac {
                            cuts.push(u);
                        }
                    }
                }
                let mut kids = children[si][k].clone();
                kids.sort_by(|a, b| a.0.total_cmp(&b.0));
                let can_start = k > 0 || attach.is_some();
                for (along, child) in kids {
                    let mut a = along.clamp(0.0, 1.0);
                    if a < min_frac {
                        a = if can_start { 0.0 } else { min_frac.min(0.5) };
                    } else if a > 1.0 - min_frac {
                        a = 1.0;
                    }
                    if a > 0.0 && a < 1.0 {
                        match cuts.iter().copied().find(|c| (c - a).abs() < min_frac) {
                            Some(c) => a = c,
                            None => cuts.push(a),
                        }
                    }
                    resolved_along[child] = a;
                }
                cuts.sort_by(|a, b| a.total_cmp(b));
                cuts.dedup();
                cuts.push(1.0);
                let point = |u: f64| -> DVec3 {
                    match &seg.helix {
                        None => seg.frame.t + seg.frame.z() * (u * seg_len),
                        Some(pts) => {
                            let x = u * HELIX_CHORDS as f64;
                            let i = (x.floor() as usize).min(HELIX_CHORDS - 1);
                            let p0 = if i == 0 { seg.frame.t } else { pts[i - 1] };
                            p0.lerp(pts[i], x - i as f64)
                        }
                    }
                };
                let mut seg_ends = Vec::with_capacity(cuts.len());
                let mut prev_u = 0.0;
                for &u in &cuts {
                    let parent = if !seg_ends.is_empty() {
                        seg_ends.last().map(|e: &(f64, usize)| e.1)
                    } else if k > 0 {
                        stem_ends.last().and_then(|e: &Vec<(f64, usize)>| e.last()).map(|e| e.1)
                    } else {
                        attach
                    };
                    let h0 = (seg.index as f64 + prev_u) * seg_len;
                    let h1 = (seg.index as f64 + u) * seg_len;
                    pieces.push(Piece {
                        parent,
                        stem: si,
                        level: stem.level,
                        base: point(prev_u),
                        tip: point(u),
                        r_base: stem.profile.radius(h0).max(MIN_RADIUS),
                        r_tip: stem.profile.radius(h1).max(MIN_RADIUS),
                        junction: false,
                    });
                    seg_ends.push((u, pieces.len() - 1));
                    prev_u = u;
                }
                stem_ends.push(seg_ends);
            }
            // Leaves onto the piece that contains them.
            for leaf in &stem.leaves {
                if let Some(k) = stem.segments.iter().position(|s| s.index == leaf.segment) {
                    let seg_ends = &stem_ends[k];
                    let j = seg_ends
                        .iter()
                        .position(|e| leaf.along <= e.0 + 1e-12)
                        .unwrap_or(seg_ends.len() - 1);
                    let u0 = if j == 0 { 0.0 } else { seg_ends[j - 1].0 };
                    let u1 = seg_ends[j].0;
                    let local = if u1 > u0 {
                        ((leaf.along - u0) / (u1 - u0)).clamp(0.0, 1.0)
                    } else {
                        1.0
                    };
                    leaf_list.push((seg_ends[j].1, local, leaf.frame));
                }
            }
            ends.push(stem_ends);
        }

        let fork_rules = self.opts.fork_rules && self.spec.has_fork_rules();
        if fork_rules {
            self.fork_areas(&mut pieces);
        }
        let rotation = if fork_rules {
            self.fork_push(&mut pieces)
        } else {
            connect(&mut pieces);
            vec![DQuat::IDENTITY; pieces.len()]
        };

        // The skeleton, in Sylva's axes.
        let mut skeleton = Skeleton::default();
        skeleton.segments.reserve_exact(pieces.len());
        for p in &pieces {
            skeleton.segments.push(SkeletonSegment {
                parent: p.parent.map(|q| q as u32),
                base: to_sylva(p.base),
                tip: to_sylva(p.tip),
                radius_base: p.r_base as f32,
                radius_tip: p.r_tip as f32,
            });
        }
        let leaf_len = self.spec.leaf_scale / self.spec.leaf_quality.max(1e-6).sqrt();
        let leaf_width = leaf_len * self.spec.leaf_scale_x;
        skeleton.leaves.reserve_exact(leaf_list.len());
        for (piece, along, frame) in leaf_list {
            let m = DMat3::from_quat(rotation[piece]) * frame.m;
            // Arbaro's leaf: z along the blade, y the upper normal. Sylva's card: +y along the
            // blade, +z the normal.
            let blade = to_sylva(m.z_axis).normalize_or(Vec3::Y);
            let normal = to_sylva(m.y_axis).normalize_or(Vec3::Z);
            let x = blade.cross(normal).normalize_or(Vec3::X);
            let normal = x.cross(blade);
            let orientation = Quat::from_mat3(&glam::Mat3::from_cols(x, blade, normal)).normalize();
            skeleton.leaves.push(SkeletonLeaf {
                segment: piece as u32,
                along: along as f32,
                orientation,
                length: leaf_len as f32,
                width: leaf_width as f32,
            });
        }

        let levels = self.spec.levels.max(1) as usize;
        let mut stats = TreeStats {
            stems_per_level: vec![0; levels],
            clones_per_level: vec![0; levels],
            leaves: skeleton.leaves.len() as u64,
            segments: skeleton.segments.len() as u64,
            ..TreeStats::default()
        };
        for (si, stem) in out.iter().enumerate() {
            if stem.segments.is_empty() || (stem.attach.is_some() && stem_attach[si].is_none()) {
                continue;
            }
            let slot = stem.level.min(levels - 1);
            if stem.is_clone {
                stats.clones_per_level[slot] += 1;
            } else {
                stats.stems_per_level[slot] += 1;
            }
        }
        stats.fill_extent(&skeleton);
        // Arbaro also tests (w, w, 0) for each trunk, w its base radius with flare
        // (`StemImpl.make`).
        for &t in &trunks {
            let p = &out[t].profile;
            let w = p.base_radius.max(p.radius(0.0));
            stats.include_arbaro_point([w, w, 0.0]);
        }
        let trunk_segments = trunks
            .iter()
            .filter_map(|&t| ends[t].first()?.first().map(|e| e.1 as u32))
            .collect();
        Ok((skeleton, stats, trunk_segments))
    }

    /// Weber 2008's first rule, scaled per level: tip area = continuation's base area + s·(the
    /// branches' base areas); between forks the stem keeps its own taper (the difference of
    /// its profile's areas).
    fn fork_areas(&self, pieces: &mut [Piece]) {
        let n = pieces.len();
        let mut cont: Vec<Option<usize>> = vec![None; n];
        let mut side_area = vec![0.0f64; n];
        let mut area_base = vec![0.0f64; n];
        for i in (0..n).rev() {
            let p = pieces[i];
            let own_tip = p.r_tip * p.r_tip;
            if !p.junction && self.spec.level(p.level).fork_area == 0.0 {
                // The rule is off on this level: the stem keeps its own radii (a periodic or
                // spherical taper included).
                area_base[i] = p.r_base * p.r_base;
                if let Some(q) = p.parent {
                    if !pieces[q].junction && pieces[q].stem == p.stem {
                        cont[q] = Some(i);
                    } else {
                        side_area[q] += area_base[i];
                    }
                }
                continue;
            }
            let tip = if p.junction {
                side_area[i] + cont.get(i).copied().flatten().map_or(0.0, |c| area_base[c])
            } else {
                let s = self.spec.level(p.level).fork_area;
                match cont[i] {
                    Some(c) => area_base[c] + s * side_area[i],
                    // A stem ending where branches go on: with the rule, what goes on is all.
                    None if side_area[i] > 0.0 => (1.0 - s) * own_tip + s * side_area[i],
                    None => own_tip,
                }
            };
            let base = (tip + (p.r_base * p.r_base - own_tip)).max(tip);
            area_base[i] = base;
            pieces[i].r_tip = tip.sqrt().max(MIN_RADIUS);
            pieces[i].r_base = base.sqrt().max(MIN_RADIUS);
            if let Some(q) = p.parent {
                if !pieces[q].junction && pieces[q].stem == p.stem {
                    cont[q] = Some(i);
                } else {
                    side_area[q] += base;
                }
            }
        }
    }

    /// Weber 2008's second rule, scaled per level: at every fork the continuing stem (and
    /// everything on it) turns so the area-weighted direction sum is conserved. Root outward,
    /// composing each piece's rotation from its parent's. Returns each piece's rotation.
    fn fork_push(&self, pieces: &mut [Piece]) -> Vec<DQuat> {
        let n = pieces.len();
        let dir: Vec<DVec3> = pieces.iter().map(|p| (p.tip - p.base).normalize_or(DVec3::Z)).collect();
        let len: Vec<f64> = pieces.iter().map(|p| (p.tip - p.base).length()).collect();
        // Direction sums of the branches leaving each piece's tip, weighted by area.
        let mut side = vec![DVec3::ZERO; n];
        for i in 0..n {
            if let Some(q) = pieces[i].parent {
                if pieces[q].stem != pieces[i].stem && !pieces[q].junction {
                    side[q] += dir[i] * (pieces[i].r_base * pieces[i].r_base);
                }
            }
        }
        let mut push = vec![DQuat::IDENTITY; n];
        for i in 0..n {
            let s = self.spec.level(pieces[i].level).fork_push;
            if s <= 0.0 || side[i] == DVec3::ZERO || pieces[i].junction {
                continue;
            }
            let before = pieces[i].r_tip * pieces[i].r_tip;
            let target = dir[i] * before - side[i];
            if target.length_squared() < 1e-30 {
                continue;
            }
            let target = target.normalize();
            let axis = dir[i].cross(target);
            if axis.length_squared() < 1e-24 {
                continue;
            }
            let angle = dir[i].angle_between(target) * s;
            push[i] = DQuat::from_axis_angle(axis.normalize(), angle);
        }
        let mut rot = vec![DQuat::IDENTITY; n];
        for i in 0..n {
            let (parent_rot, base) = match pieces[i].parent {
                None => (DQuat::IDENTITY, pieces[i].base),
                Some(q) => {
                    let r = if pieces[q].stem == pieces[i].stem {
                        rot[q] * push[q]
                    } else {
                        rot[q]
                    };
                    (r, pieces[q].tip)
                }
            };
            rot[i] = parent_rot;
            pieces[i].base = base;
            pieces[i].tip = base + (parent_rot * dir[i]) * len[i];
        }
        rot
    }
}

/// Moves every piece (with all that grows from it) so that it starts at its parent's tip: a
/// child snapped to a neighbouring cut (at most `MIN_PIECE` of a segment away) or hanging from
/// a helix chord moves with its subtree by that much. Parents come before their children.
fn connect(pieces: &mut [Piece]) {
    for i in 0..pieces.len() {
        if let Some(q) = pieces[i].parent {
            let shift = pieces[q].tip - pieces[i].base;
            pieces[i].base += shift;
            pieces[i].tip += shift;
        }
    }
}

/// The piece of stem `s`, segment position `k`, that ends at `along` (0 = the segment's start:
/// the previous segment's last piece, or where the stem hangs from).
fn piece_ending_at(
    ends: &[Vec<Vec<(f64, usize)>>],
    stem_attach: &[Option<usize>],
    s: usize,
    k: usize,
    along: f64,
) -> Option<usize> {
    if along <= 0.0 {
        return if k > 0 {
            ends[s].get(k - 1)?.last().map(|e| e.1)
        } else {
            stem_attach[s]
        };
    }
    let seg = ends.get(s)?.get(k)?;
    seg.iter()
        .find(|e| (e.0 - along).abs() < 1e-12)
        .or(seg.last())
        .map(|e| e.1)
}
