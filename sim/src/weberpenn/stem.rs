//! The stem recursion, as Arbaro's `StemImpl` grows stems: trunks, lengths and radii, curving,
//! pruning against the envelope, substems, clones and leaves. Fills the generator's output
//! stems, which [`super::assemble`] cuts into the skeleton's segments.

use glam::DVec3;

use super::frame::{Frame, Profile};
use super::{
    envelope, shape_ratio, Attach, Gen, GenOptions, LevelState, OutLeaf, OutSegment, OutStem, ParentInfo, Stem,
    HELIX_CHORDS, MIN_STEM_LEN, MIN_STEM_RADIUS,
};
use crate::error::SimError;
use crate::rng::JavaRandom;
use crate::spec::{DownAngleV, NegativeRotate, SpecTool, WeberPennSpec};

impl<'a> Gen<'a> {
    pub(super) fn new(spec: &'a WeberPennSpec, opts: &GenOptions, progress: &'a mut dyn FnMut(f32)) -> Gen<'a> {
        // One random stream per level, seeded in a chain, so levels do not disturb each other:
        // Arbaro's `Params.prepare` (java.util.Random, level 0 seeded with the tree's seed, each
        // next level with the previous one's first nextLong).
        let mut seed = opts.seed as i64;
        let mut levels = Vec::with_capacity(4);
        for _ in 0..4 {
            let mut rng = JavaRandom::new(seed);
            seed = rng.next_long();
            levels.push(LevelState {
                rng,
                split_error: 0.0,
                substem_error: 0.0,
            });
        }
        // Scale ± ScaleV; files with ScaleV ≥ Scale exist (ca_black_oak, shave-grass), where
        // Arbaro would grow nothing at all for some seeds: the size is kept above 5 % of Scale.
        let scale_tree = (spec.scale + levels[0].rng.var(spec.scale_v)).max(0.05 * spec.scale);
        let l0 = spec.level(0);
        let l1 = spec.level(1);
        // Progress counts trunk segments and first-level branches.
        let progress_total = (l0.branches.max(1) as f64) * (l0.curve_res.max(1) as f64 + l1.branches.max(0) as f64);
        Gen {
            spec,
            opts: *opts,
            levels,
            leaves_error: 0.0,
            scale_tree,
            trunk_rotangle: 0.0,
            out: Vec::new(),
            segments: 0,
            leaves: 0,
            work: 0,
            progress,
            progress_total,
            progress_done: 0.0,
        }
    }

    fn lpar(&self, level: usize) -> &'a crate::spec::LevelSpec {
        self.spec.level(level)
    }

    fn var(&mut self, level: usize, v: f64) -> f64 {
        self.levels[level.min(3)].rng.var(v)
    }

    /// Counts `n` units of work, refusing the tree once the limit is passed.
    fn spend(&mut self, n: usize) -> Result<(), SimError> {
        self.work = self.work.saturating_add(n);
        if self.work > self.opts.limits.max_work() {
            return Err(SimError::param(
                "tree size",
                format!("more than {} generation steps", self.opts.limits.max_work()),
                "the generator stops at this limit; lower Levels, nBranches, nCurveRes or nSegSplits",
            ));
        }
        Ok(())
    }

    /// A child, clone or leaf count computed from the spec, refused before its loop starts
    /// when it alone would pass the work limit (a count that overflowed saturates to
    /// `i64::MAX` and would otherwise loop to it).
    fn check_count(&self, count: i64, what: &str) -> Result<(), SimError> {
        let left = self.opts.limits.max_work().saturating_sub(self.work);
        if count > 0 && count as u64 > left as u64 {
            return Err(SimError::param(
                "tree size",
                format!("{count} {what} on one stem segment"),
                format!(
                    "the generator stops at {} generation steps; lower nBranches, nSegSplits or Leaves",
                    self.opts.limits.max_work()
                ),
            ));
        }
        Ok(())
    }

    fn tick(&mut self) {
        self.progress_done += 1.0;
        if self.progress_total > 0.0 {
            (self.progress)((self.progress_done / self.progress_total).min(1.0) as f32);
        }
    }

    /// The shape ratio of `shape` at `ratio` (see [`shape_ratio`]).
    pub(super) fn shape_ratio(&self, ratio: f64, shape: i64) -> f64 {
        shape_ratio(self.spec, ratio, shape)
    }

    /// The pruning envelope (see [`envelope`]).
    fn envelope(&self, ratio: f64) -> f64 {
        envelope(self.spec, ratio)
    }

    pub(super) fn grow_trunks(&mut self) -> Result<(), SimError> {
        let l0 = self.lpar(0);
        let trunks = l0.branches.max(1) as usize;
        if self.spec.origin == SpecTool::TreeGen && trunks > 1 {
            // tree-gen: vertical trunks standing on points spread over a disc.
            for (pos, theta) in self.treegen_floor_points(trunks)? {
                let frame = Frame::identity().rotxz(0.0, theta.to_degrees() - 90.0).translate(pos);
                let mut trunk = Stem::new(0, frame, 0.0, None);
                self.make_stem(&mut trunk)?;
            }
            return Ok(());
        }
        for _ in 0..trunks {
            let frame = self.trunk_direction(Frame::identity());
            let angle = self.var(0, 360.0);
            let dist = self.var(0, l0.branch_dist);
            let frame = frame.translate(DVec3::new(dist * angle.sin(), dist * angle.cos(), 0.0));
            let mut trunk = Stem::new(0, frame, 0.0, None);
            self.make_stem(&mut trunk)?;
        }
        Ok(())
    }

    /// Where tree-gen stands `n` trunks (`Tree.points_for_floor_split` in tree-gen's
    /// `parametric/gen.py`): each at distance sqrt(u·n/2.5·g_scale·ratio) from the centre (u
    /// uniform in [0, 1)) at a uniform angle θ, redrawn while it is closer than 2.5 trunk radii
    /// (of a trunk of the largest size, (g_scale + g_scale_v)·length[0]·ratio) to one already
    /// placed; the trunk then turns by θ - 90° about its axis to face outwards. tree-gen draws
    /// forever when the trunks cannot fit; Sylva stops after `MAX_FLOOR_DRAWS` draws per trunk
    /// with an error naming the parameters.
    fn treegen_floor_points(&mut self, n: usize) -> Result<Vec<(DVec3, f64)>, SimError> {
        const MAX_FLOOR_DRAWS: usize = 10_000;
        let s = self.spec;
        let trunk_len = (s.scale + s.scale_v) * s.level[0].length;
        let spacing = 2.5 * trunk_len * s.ratio;
        let reach = n as f64 / 2.5 * s.scale * s.ratio;
        let mut points: Vec<(DVec3, f64)> = Vec::with_capacity(n);
        for _ in 0..n {
            let mut placed = false;
            for _ in 0..MAX_FLOOR_DRAWS {
                let rng = &mut self.levels[0].rng;
                let dis = (rng.next_double() * reach).sqrt();
                let theta = rng.next_double() * std::f64::consts::TAU;
                let pos = DVec3::new(dis * theta.cos(), dis * theta.sin(), 0.0);
                if points.iter().all(|(p, _)| (*p - pos).length() >= spacing) {
                    points.push((pos, theta));
                    placed = true;
                    break;
                }
            }
            if !placed {
                return Err(SimError::param(
                    "branches[0]",
                    n,
                    format!(
                        "{n} trunks do not fit {spacing:.3} m apart on a disc of radius {:.3} m (tree-gen would search \
                         forever); fewer trunks, or a smaller ratio or length[0]",
                        reach.sqrt()
                    ),
                ));
            }
        }
        Ok(points)
    }

    /// Arbaro's `trunkDirection`: the rotation angle first, then the down angle.
    fn trunk_direction(&mut self, frame: Frame) -> Frame {
        let l0 = self.lpar(0);
        let rot = self.rotation_angle(0, &mut 0.0, true);
        let down = l0.down_angle + self.var(0, l0.down_angle_v);
        frame.rotxz(down, rot)
    }

    /// Next rotation angle about the parent for a child at `level`, advancing `state`
    /// (Arbaro's `substemRotangle`; for trunks the tree's `trunk_rotangle`).
    fn rotation_angle(&mut self, level: usize, state: &mut f64, trunk: bool) -> f64 {
        let l = self.lpar(level);
        let mut local = if trunk { self.trunk_rotangle } else { *state };
        let angle = if l.rotate >= 0.0 || self.spec.semantics.negative_rotate == NegativeRotate::Plain {
            local = (local + l.rotate + self.var(level, l.rotate_v) + 360.0) % 360.0;
            local
        } else {
            if local.abs() != 1.0 {
                local = 1.0;
            }
            local = -local;
            match self.spec.semantics.negative_rotate {
                // Arbaro and tree-gen: alternate sides at ±(180 + nRotate).
                NegativeRotate::Alternate180 => local * (180.0 + l.rotate + self.var(level, l.rotate_v)),
                // Sapling: alternate sides at ±|nRotate|.
                _ => local * (l.rotate.abs() + self.var(level, l.rotate_v)),
            }
        };
        if trunk {
            self.trunk_rotangle = local;
        } else {
            *state = local;
        }
        angle
    }

    /// Arbaro's `Stem.make`: length, radius, pruning, then the segments. Returns whether the
    /// stem was kept.
    fn make_stem(&mut self, stem: &mut Stem) -> Result<bool, SimError> {
        self.spend(1)?;
        let lpar = self.lpar(stem.level);
        stem.segment_count = lpar.curve_res.max(1) as usize;
        stem.length = self.stem_length(stem);
        stem.segment_length = stem.length / stem.segment_count as f64;
        stem.base_radius = self.stem_base_radius(stem);
        if stem.level > 0 && self.spec.prune_ratio > 0.0 {
            self.prune(stem)?;
        }
        if !(stem.length > MIN_STEM_LEN && stem.base_radius > MIN_STEM_RADIUS) {
            return Ok(false);
        }
        self.prepare_substem_params(stem);
        self.record(stem, None);
        self.make_segments(stem, 0, stem.segment_count)?;
        Ok(true)
    }

    fn profile(&self, stem: &Stem) -> Profile {
        // Sapling 0.3 multiplies the trunk's first point by rootFlare (the importer's Flare is
        // rootFlare - 1); Arbaro's flare gives 1 + 0.99·Flare there, so the factor is rescaled to
        // give rootFlare exactly at the base (and Arbaro's decay over the lowest eighth above).
        let flare = match self.spec.origin {
            SpecTool::SaplingV03 | SpecTool::Sapling4 => self.spec.flare / 0.99,
            _ => self.spec.flare,
        };
        Profile {
            length: stem.length,
            base_radius: stem.base_radius,
            taper: self.lpar(stem.level).taper,
            trunk: stem.level == 0,
            flare,
            scale0: self.spec.scale0,
        }
    }

    /// Starts the output record of a kept stem.
    fn record(&mut self, stem: &mut Stem, attach: Option<Attach>) {
        if stem.prune_test {
            return;
        }
        let attach = attach.or(stem.attach_hint);
        self.out.push(OutStem {
            level: stem.level,
            is_clone: stem.is_clone,
            attach,
            segment_length: stem.segment_length,
            profile: self.profile(stem),
            // A clone only gets the segments after its split; a stem is cut short by pruning
            // or the limits, so capacity is only reserved up to a modest size.
            segments: Vec::with_capacity(stem.segment_count.min(64)),
            leaves: Vec::new(),
        });
        stem.out = Some(self.out.len() - 1);
    }

    fn stem_length(&mut self, stem: &Stem) -> f64 {
        let lpar = self.lpar(stem.level);
        match (stem.level, stem.parent) {
            (0, _) | (_, None) => (lpar.length + self.var(0, lpar.length_v)) * self.scale_tree,
            (1, Some(p)) => {
                let base_len = self.spec.base_size * self.scale_tree;
                let ratio = (p.length - stem.offset) / (p.length - base_len);
                p.length * p.length_child_max * self.shape_ratio(ratio, self.spec.shape)
            }
            (_, Some(p)) => p.length_child_max * (p.length - 0.6 * stem.offset),
        }
    }

    fn stem_base_radius(&self, stem: &Stem) -> f64 {
        match stem.parent {
            None => match self.spec.origin {
                // Helios uses ZScale as a trunk radius factor (`buildTree`: radius = length0 ·
                // Ratio · ZScale · flare).
                SpecTool::Helios if self.spec.z_scale > 0.0 => stem.length * self.spec.ratio * self.spec.z_scale,
                // Sapling 0.3 and sapling_4 (`kickstart_trunk`): startRad = scaleVal · ratio ·
                // scale0, the tree's size, not the trunk's length.
                SpecTool::SaplingV03 | SpecTool::Sapling4 => self.scale_tree * self.spec.ratio,
                // Arbaro (`stemBaseRadius`), tree-gen (`calc_stem_radius`), Sapling 0.2:
                // length · Ratio.
                _ => stem.length * self.spec.ratio,
            },
            Some(p) => {
                let max_radius = p.profile.radius(stem.offset);
                let radius = p.base_radius * (stem.length / p.length).powf(self.spec.ratio_power);
                radius.min(max_radius)
            }
        }
    }

    /// Arbaro's pruning: shorten the stem until it fits the envelope, then undo `PruneRatio`
    /// of the shortening. The random state and split error are saved and restored around the
    /// test runs, so the kept stem draws what the test drew.
    fn prune(&mut self, stem: &mut Stem) -> Result<(), SimError> {
        let level = stem.level.min(3);
        // Arbaro's `LevelParams.saveState` (which reseeds the stream) and `restoreState`.
        let saved = (self.levels[level].rng.save_state(), self.levels[level].split_error);
        let split_correction = stem.split_correction;
        let original = stem.length;
        stem.prune_test = true;
        let mut segm = self.make_segments(stem, 0, stem.segment_count)?;
        while let Some(s) = segm {
            if stem.length <= 0.001 * self.scale_tree {
                break;
            }
            self.levels[level].rng = saved.0.clone();
            self.levels[level].split_error = saved.1;
            stem.split_correction = split_correction;
            let min_len = stem.length / 2.0;
            let max_len = stem.length - original / 15.0;
            stem.length = (stem.segment_length * s as f64).max(min_len).min(max_len);
            stem.segment_length = stem.length / stem.segment_count as f64;
            stem.base_radius = self.stem_base_radius(stem);
            segm = if stem.length > MIN_STEM_LEN {
                self.make_segments(stem, 0, stem.segment_count)?
            } else {
                None
            };
        }
        stem.length = original - (original - stem.length) * self.spec.prune_ratio;
        self.levels[level].rng = saved.0;
        self.levels[level].split_error = saved.1;
        stem.split_correction = split_correction;
        stem.prune_test = false;
        Ok(())
    }

    fn inside_envelope(&self, p: DVec3) -> bool {
        let r = (p.x * p.x + p.y * p.y).sqrt();
        let ratio = (self.scale_tree - p.z) / (self.scale_tree * (1.0 - self.spec.base_size));
        r / self.scale_tree < self.spec.prune_width * self.envelope(ratio)
    }

    fn prepare_substem_params(&mut self, stem: &mut Stem) {
        let next = stem.level + 1;
        let l1 = self.lpar(next);
        stem.length_child_max = l1.length + self.var(next, l1.length_v);
        let stems_max = l1.branches.max(0) as f64;
        let count = if stem.level == 0 {
            stems_max
        } else if stem.level == 1 {
            let p = stem.parent.expect("a level-1 stem has a parent");
            ((stems_max * (0.2 + 0.8 * stem.length / p.length / p.length_child_max)) as i64) as f64
        } else {
            let p = stem.parent.expect("a stem above level 0 has a parent");
            ((stems_max * (1.0 - 0.5 * stem.offset / p.length)) as i64) as f64
        };
        stem.substems_per_segment = if stem.level == 0 && self.spec.base_size >= 1.0 {
            // The whole trunk is bare (1 / (1 - BaseSize) would be infinite).
            0.0
        } else if stem.level == 0 {
            count / stem.segment_count as f64 / (1.0 - self.spec.base_size)
        } else {
            count / stem.segment_count as f64
        };
        stem.substem_rotangle = 0.0;
        if stem.level + 1 == self.spec.levels as usize {
            stem.leaves_per_segment = self.leaves_per_branch(stem) / stem.segment_count as f64;
        }
    }

    fn leaves_per_branch(&self, stem: &Stem) -> f64 {
        if self.spec.leaves == 0 {
            return 0.0;
        }
        match stem.parent {
            None => 0.0,
            Some(p) => {
                self.spec.leaves.unsigned_abs() as f64
                    * self.shape_ratio(stem.offset / p.length, self.spec.leaf_distrib)
                    * self.spec.leaf_quality
            }
        }
    }

    /// Arbaro's `makeSegments`: returns the segment that left the envelope in a prune test.
    fn make_segments(&mut self, stem: &mut Stem, start: usize, end: usize) -> Result<Option<usize>, SimError> {
        let mut frame = stem.frame;
        let levels = self.spec.levels as usize;
        for s in start..end {
            if stem.level == 0 && !stem.prune_test {
                self.tick();
            }
            self.spend(1)?;
            frame = self.new_direction(stem, frame, s);
            if let Some(o) = stem.out.filter(|_| !stem.prune_test) {
                // A helical segment becomes its chords in the skeleton.
                self.segments += if self.lpar(stem.level).curve_v < 0.0 {
                    HELIX_CHORDS
                } else {
                    1
                };
                if self.segments > self.opts.limits.max_segments {
                    return Err(SimError::param(
                        "tree size",
                        format!("more than {} segments", self.opts.limits.max_segments),
                        "the generator stops at this limit; lower Levels, nBranches or nCurveRes",
                    ));
                }
                let helix = (self.lpar(stem.level).curve_v < 0.0).then(|| self.helix_points(stem, frame));
                self.out[o].segments.push(OutSegment { index: s, frame, helix });
                if stem.level + 1 < levels {
                    self.make_substems(stem, s, frame)?;
                }
                if stem.level + 1 == levels && self.spec.leaves != 0 {
                    self.make_leaves(stem, s, frame)?;
                }
            }
            frame = frame.translate(frame.z() * stem.segment_length);
            if stem.prune_test && !self.inside_envelope(frame.t) {
                return Ok(Some(s));
            }
            if s + 1 < end {
                if let Some(segm) = self.make_clones(stem, frame, s)? {
                    return Ok(Some(segm));
                }
            }
        }
        Ok(None)
    }

    /// Points of a helical segment (Arbaro's `makeHelix(10)`), in world space.
    fn helix_points(&self, stem: &Stem, frame: Frame) -> Vec<DVec3> {
        let angle = self.lpar(stem.level).curve_v.abs().to_radians();
        let len = stem.segment_length;
        let rad = ((1.0 / (angle.cos() * angle.cos()) - 1.0).max(0.0)).sqrt() * len / std::f64::consts::PI / 2.0;
        (1..=HELIX_CHORDS)
            .map(|i| {
                let a = std::f64::consts::TAU * i as f64 / HELIX_CHORDS as f64;
                let local = DVec3::new(rad * a.cos() - rad, rad * a.sin(), i as f64 * len / HELIX_CHORDS as f64);
                frame.t + frame.m * local
            })
            .collect()
    }

    fn new_direction(&mut self, stem: &Stem, frame: Frame, segment: usize) -> Frame {
        if segment == 0 {
            return frame;
        }
        let l = self.lpar(stem.level);
        let res = l.curve_res.max(1) as f64;
        let mut delta = if l.curve_back == 0.0 {
            l.curve / res
        } else if (segment as i64) < (l.curve_res.max(1) + 1) / 2 {
            l.curve * 2.0 / res
        } else {
            l.curve_back * 2.0 / res
        };
        delta += stem.split_correction;
        let mut frame = frame.rotx(delta);
        if l.curve_v > 0.0 {
            let delta = self.var(stem.level, l.curve_v) / res;
            let rho = 180.0 + self.var(stem.level, 180.0);
            frame = frame.rotaxisz(delta, rho);
        }
        let attraction = l.attraction_up;
        if attraction != 0.0 && stem.level >= 2 {
            let z = frame.z();
            let declination = z.z.clamp(-1.0, 1.0).acos();
            let curve_up = attraction * (declination * declination.sin()).abs() / res;
            let axis = DVec3::new(-z.y, z.x, 0.0);
            if curve_up != 0.0 && axis.length_squared() > 1e-24 {
                frame = frame.rotaxis(-curve_up.to_degrees(), axis);
            }
        }
        frame
    }

    fn make_substems(&mut self, stem: &mut Stem, segment: usize, seg_frame: Frame) -> Result<(), SimError> {
        let next = stem.level + 1;
        let l1 = self.lpar(next);
        let (per_segment, offs) = if stem.level > 0 {
            let offs = if segment == 0 {
                stem.parent.map_or(0.0, |p| p.profile.radius(stem.offset)) / stem.segment_length
            } else {
                0.0
            };
            (stem.substems_per_segment, offs)
        } else {
            let base = self.spec.base_size * stem.length;
            let seg_len = stem.segment_length;
            if segment as f64 * seg_len > base {
                (stem.substems_per_segment, 0.0)
            } else if (segment + 1) as f64 * seg_len <= base {
                return Ok(());
            } else {
                let offs = (base - segment as f64 * seg_len) / seg_len;
                (stem.substems_per_segment * (1.0 - offs), offs)
            }
        };
        let level = stem.level.min(3);
        let eff = (per_segment + self.levels[level].substem_error + 0.5) as i64;
        self.levels[level].substem_error -= eff as f64 - per_segment;
        if eff <= 0 {
            return Ok(());
        }
        self.check_count(eff, "substems")?;
        let dist = (1.0 - offs) / eff as f64 * l1.branch_dist;
        let distv = dist * 0.25;
        for s in 0..eff {
            let along = offs + dist / 2.0 + s as f64 * dist + self.var(next, distv);
            let offset = (segment as f64 + along) * stem.segment_length;
            let frame = self.substem_direction(stem, seg_frame, offset);
            let frame = frame.translate(seg_frame.z() * (along * stem.segment_length));
            let info = ParentInfo {
                length: stem.length,
                base_radius: stem.base_radius,
                length_child_max: stem.length_child_max,
                profile: self.profile(stem),
            };
            let mut child = Stem::new(next, frame, offset, Some(info));
            child.attach_hint = stem.out.map(|o| Attach {
                stem: o,
                segment,
                along,
            });
            self.make_stem(&mut child)?;
            if stem.level == 0 {
                self.tick();
            }
        }
        Ok(())
    }

    fn substem_direction(&mut self, stem: &mut Stem, frame: Frame, offset: f64) -> Frame {
        let next = stem.level + 1;
        let l1 = self.lpar(next);
        let mut state = stem.substem_rotangle;
        let rotangle = self.rotation_angle(next, &mut state, false);
        stem.substem_rotangle = state;
        let down = match (self.spec.semantics.down_angle_v, l1.down_angle_v >= 0.0) {
            (DownAngleV::Paper, true) | (DownAngleV::SaplingReversed, false) | (DownAngleV::Random, _) => {
                l1.down_angle + self.var(next, l1.down_angle_v.abs())
            }
            (DownAngleV::Paper, false) => {
                // Negative: the angle varies with the position along the parent.
                let len = if stem.level == 0 {
                    stem.length * (1.0 - self.spec.base_size)
                } else {
                    stem.length
                };
                l1.down_angle + l1.down_angle_v * (1.0 - 2.0 * self.shape_ratio((stem.length - offset) / len, 0))
            }
            (DownAngleV::SaplingReversed, true) => {
                // Sapling 0.3: positive decreases the angle towards the parent's tip.
                let base = if stem.level == 0 { self.spec.base_size } else { 0.0 };
                let o = (offset / stem.length).clamp(0.0, 1.0);
                let f = 1.0 - (1.0 - o) / (1.0 - base).max(1e-6);
                l1.down_angle - l1.down_angle_v * f * f
            }
        };
        frame.rotxz(down, rotangle)
    }

    fn make_leaves(&mut self, stem: &mut Stem, segment: usize, seg_frame: Frame) -> Result<(), SimError> {
        let o = match stem.out {
            Some(o) => o,
            None => return Ok(()),
        };
        let add = |g: &mut Gen<'_>, along: f64, frame: Frame| -> Result<(), SimError> {
            g.leaves += 1;
            if g.leaves > g.opts.limits.max_leaves {
                return Err(SimError::param(
                    "tree size",
                    format!("more than {} leaves", g.opts.limits.max_leaves),
                    "the generator stops at this limit; lower Leaves or nBranches",
                ));
            }
            let frame = g.bend_leaf(frame);
            g.out[o].leaves.push(OutLeaf { segment, along, frame });
            Ok(())
        };
        if self.spec.leaves > 0 {
            let eff = (stem.leaves_per_segment + self.leaves_error + 0.5) as i64;
            self.leaves_error -= eff as f64 - stem.leaves_per_segment;
            if eff <= 0 {
                return Ok(());
            }
            self.check_leaves(eff)?;
            let offs = if segment == 0 {
                stem.parent.map_or(0.0, |p| p.profile.radius(stem.offset)) / stem.segment_length
            } else {
                0.0
            };
            let dist = (1.0 - offs) / eff as f64;
            for s in 0..eff {
                let along = offs + dist / 2.0 + s as f64 * dist + self.var(stem.level, dist / 2.0);
                let loffs = (segment as f64 + along) * stem.segment_length;
                let frame = self.substem_direction(stem, seg_frame, loffs);
                let frame = frame.translate(seg_frame.z() * (along * stem.segment_length));
                add(self, along.clamp(0.0, 1.0), frame)?;
            }
        } else if segment + 1 == stem.segment_count {
            // A fan at the stem's tip.
            let next = stem.level + 1;
            let l1 = self.lpar(next);
            let count = (self.leaves_per_branch(stem) + 0.5) as i64;
            if count <= 0 {
                return Ok(());
            }
            self.check_leaves(count)?;
            let tip = seg_frame.translate(seg_frame.z() * stem.segment_length);
            let dist_angle = l1.rotate / count as f64;
            let var_angle = l1.rotate_v / count as f64;
            let offset_angle = if count % 2 == 1 {
                add(self, 1.0, tip)?;
                dist_angle
            } else {
                dist_angle / 2.0
            };
            for s in 0..count / 2 {
                for side in [1.0, -1.0] {
                    let turn = side * (offset_angle + s as f64 * dist_angle + self.var(next, var_angle));
                    let down = l1.down_angle + self.var(next, l1.down_angle_v);
                    let frame = tip.roty(turn).rotx(down);
                    add(self, 1.0, frame)?;
                }
            }
        }
        Ok(())
    }

    /// Refuses `count` more leaves before they are made when they would pass the leaf limit.
    fn check_leaves(&mut self, count: i64) -> Result<(), SimError> {
        if self.leaves as u64 + count as u64 > self.opts.limits.max_leaves as u64 {
            return Err(SimError::param(
                "tree size",
                format!("more than {} leaves", self.opts.limits.max_leaves),
                "the generator stops at this limit; lower Leaves or nBranches",
            ));
        }
        self.spend(count as usize)
    }

    /// Arbaro's leaf orientation towards the light (`LeafBend`): turn the leaf's normal
    /// outwards about the world z axis, then up about its own x axis.
    fn bend_leaf(&self, frame: Frame) -> Frame {
        let bend = self.spec.leaf_bend;
        if bend == 0.0 {
            return frame;
        }
        let pos = frame.t;
        let norm = frame.y();
        let tpos = pos.y.atan2(pos.x).to_degrees();
        let tbend = tpos - norm.y.atan2(norm.x).to_degrees();
        let frame = frame.rotaxis(bend * tbend, DVec3::Z);
        let norm = frame.y();
        let fbend = (norm.x * norm.x + norm.y * norm.y).sqrt().atan2(norm.z).to_degrees();
        frame.rotx(bend * fbend)
    }

    fn make_clones(&mut self, stem: &mut Stem, frame: Frame, segment: usize) -> Result<Option<usize>, SimError> {
        let level = stem.level.min(3);
        let l = self.lpar(stem.level);
        let eff = if stem.level == 0 && segment == 0 && self.spec.base_splits != 0 {
            if self.spec.base_splits > 0 {
                self.spec.base_splits
            } else {
                // tree-gen: a negative value is a random number of splits up to |n|.
                self.levels[0].rng.below(self.spec.base_splits.unsigned_abs() + 1) as i64
            }
        } else {
            let eff = (l.seg_splits + self.levels[level].split_error + 0.5) as i64;
            self.levels[level].split_error -= eff as f64 - l.seg_splits;
            eff
        };
        if eff < 1 {
            return Ok(None);
        }
        self.check_count(eff, "clones")?;
        let s_angle = (360 / (eff + 1)) as f64;
        for i in 0..eff {
            let mut clone = stem.clone_for_split();
            clone.frame = self.split(&mut clone, frame, s_angle * (1 + i) as f64, segment, eff);
            if !clone.prune_test {
                let attach = stem.out.map(|o| Attach {
                    stem: o,
                    segment,
                    along: 1.0,
                });
                self.record(&mut clone, attach);
            }
            let count = clone.segment_count;
            if let Some(segm) = self.make_segments(&mut clone, segment + 1, count)? {
                return Ok(Some(segm));
            }
        }
        // Arbaro computes a new direction for the original stem too but discards it; only the
        // side effects (split correction, random draws, fewer substems) take effect.
        let _ = self.split(stem, frame, 0.0, segment, eff);
        Ok(None)
    }

    fn split(&mut self, stem: &mut Stem, frame: Frame, s_angle: f64, segment: usize, splits: i64) -> Frame {
        let l = self.lpar(stem.level);
        let remaining = (stem.segment_count - segment - 1).max(1) as f64;
        let declination = frame.z().z.clamp(-1.0, 1.0).acos().to_degrees();
        let split_angle = (l.split_angle + self.var(stem.level, l.split_angle_v) - declination).max(0.0);
        let mut frame = frame.rotx(split_angle);
        stem.split_correction -= split_angle / remaining;
        if s_angle > 0.0 {
            let diverge = if self.spec.base_splits > 0 && stem.level == 0 && segment == 0 {
                s_angle + self.var(stem.level, l.split_angle_v)
            } else {
                let r = self.var(stem.level, 1.0);
                let d = 20.0 + 0.75 * (30.0 + (declination - 90.0).abs()) * ((r + 1.0) / 2.0).powi(2);
                if self.var(stem.level, 1.0) >= 0.0 {
                    -d
                } else {
                    d
                }
            };
            frame = frame.rotaxis(diverge, DVec3::Z);
        }
        if !stem.prune_test {
            stem.substems_per_segment /= (splits + 1) as f64;
        }
        frame
    }
}

impl Stem {
    pub(super) fn new(level: usize, frame: Frame, offset: f64, parent: Option<ParentInfo>) -> Stem {
        Stem {
            level,
            frame,
            offset,
            parent,
            is_clone: false,
            length: 0.0,
            segment_length: 0.0,
            segment_count: 1,
            base_radius: 0.0,
            length_child_max: 0.0,
            substems_per_segment: 0.0,
            substem_rotangle: 0.0,
            leaves_per_segment: 0.0,
            split_correction: 0.0,
            prune_test: false,
            out: None,
            attach_hint: None,
        }
    }

    /// Arbaro's `Stem.clone`: a stem with the same attributes, growing from the split.
    fn clone_for_split(&self) -> Stem {
        let mut c = self.clone();
        c.is_clone = true;
        c.out = None;
        c.attach_hint = None;
        if !self.prune_test {
            c.substem_rotangle = self.substem_rotangle + 180.0;
        }
        c
    }
}
