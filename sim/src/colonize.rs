//! Space colonization: grows branch skeletons into an envelope of attraction points (Runions,
//! Lane and Prusinkiewicz 2007, "Modeling Trees with a Space Colonization Algorithm"; the blog
//! post in `shared/papers/001_*` walks through it).
//!
//! # Algorithm
//!
//! Attraction points are sampled inside an [`Envelope`]. Each iteration every live point picks
//! the node closest to it among those nearer than the influence distance `di`; every node picked
//! by at least one point grows a new node at distance `D` (`growth_distance`) along the
//! normalised sum of the unit directions to its points; points nearer than the kill distance
//! `dk` to any node are removed. Trunks start at their bases on the ground and grow straight up
//! in steps of `D` until a point is within `di` of their top (the blog's "stack a few segments
//! until the top is within MAX_DIST of some leaves"). Several trunks compete for one point set.
//! Roots are a second, independent run: a point cloud below ground, grown downward from the
//! same bases.
//!
//! # Cost: no all-pairs search
//!
//! Points and nodes live in uniform spatial hash grids whose cell size is `di`, so everything a
//! node can influence or kill lies in the cells overlapping a cube of half-size `di` around it
//! (27 cells, rarely a few more at cell borders). The nearest node of each point is kept
//! *incrementally*: nodes are never removed, so a point's nearest node only changes when a new
//! node appears near it, and each new node scans the points in its cells once, both to kill the
//! points within `dk` and to take over the points it is now the closest node to. The
//! nearest-node answer is exactly the one of a brute-force search over all nodes (ties go to the
//! lowest node index), which a test checks at every iteration. One iteration costs
//!
//!   O(L + A · ρ · 27 di³ + A · m + G log G)
//!
//! with L the live points (summing their pulls), A the nodes added, ρ the point density (so
//! ρ · 27 di³ points per scan), m the nodes in the few cells of the spacing check and G the
//! nodes that grow; over a whole run the scans total O(N · ρ · 27 di³) for N nodes. The
//! all-pairs method costs O(L · N) per iteration. A 20,000-point crown grows in about 50 ms on
//! one core (see `sphere_crown_benchmark`).
//!
//! # Termination
//!
//! The paper's method can loop forever (the blog's Figure 4): a node with points on opposite
//! sides averages their pulls into a direction towards neither; its new node is farther from
//! both, so in the next iteration both points still pick the old node, which grows the same node
//! again, forever, killing nothing. Two guards refuse such growth:
//!
//! 1. A growth whose summed pull is shorter than 1/1000 of its point count (the pulls
//!    cancel) is skipped: there is no direction to grow in (normalising would give NaN).
//! 2. A new node nearer than `D / 4` to any existing node (including those added earlier in
//!    the same iteration) is refused. The oscillating node would recreate the child it already
//!    has, so the repeat is refused. Measured on the sphere crown, almost every refusal is such
//!    an exact repeat; spacings of `D / 20` to `D / 2.5` grow the same trees within 0.5 %.
//!
//! A third refusal keeps crowns above and roots below the ground: no new node is created on the
//! wrong side of y = 0.
//!
//! Why every run ends: kills only happen near new nodes, so an iteration that adds no node
//! kills no point either and leaves the state unchanged: it is a fixed point, and the run stops
//! there ([`StopReason::Stalled`]; [`StopReason::NoPointsInReach`] when no point pulls on any
//! node; [`StopReason::Completed`] when every point was reached). Every iteration that does not
//! stop adds a node. A growing node is within `di` of a live point, which lies in the
//! envelope's bounding box, so every new node lies in that box grown by `di + D`; by guard 2
//! new nodes are pairwise at least `D / 4` apart, and only finitely many such nodes fit in a
//! bounded box (disjoint balls of radius `D / 8`). Hence finitely many iterations, whatever the
//! input. On top of that, the hard caps `max_nodes` ([`StopReason::NodeLimit`]) and
//! `10 · (diagonal of the envelope's box + 2 di) / D + 100` iterations
//! ([`StopReason::IterationLimit`]) bound the time of any run; the stop reason is reported.
//! The straight trunk steps before colonization stop at the envelope's top (bottom, for roots)
//! plus `di`, with an error naming the trunk if no point came within reach.

//! # Output
//!
//! Each node other than a trunk base gives one segment from its parent to itself. Radii follow
//! the pipe model: a terminal segment has the twig radius, and at a fork
//! `r_parent^e = Σ r_child^e` (with `e = pipe_exponent`; `e = 2` conserves cross-section area,
//! da Vinci's rule as Weber 2008 uses it). A segment carries its radius unchanged between forks,
//! so `radius_base = radius_tip = twig · (tips beyond it)^(1/e)`.
//!
//! A [`Skeleton`] has exactly one root, and every other segment starts at its parent's tip.
//! Trunks rooted at different points on the ground can only be joined into one skeleton by
//! inventing a rod between their bases, lying along (or under) the ground, which the solver
//! would animate as a branch: its spring and mass would tie the trunks' sway together. That is
//! not a sound representation, so [`Grown::trees`] holds one skeleton per trunk (each in world
//! space, its root at its trunk base: place them all at position zero in a forest). To keep
//! each skeleton singly rooted, a trunk base never grows: every trunk's first segment is the
//! step straight up from its base, and all its branches hang from that. Roots are returned the
//! same way, one skeleton per trunk, first segment straight down.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use glam::{Mat3, Quat, Vec3};

use crate::error::SimError;
use crate::rng::Rng;
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment, MAX_LEAVES_PER_TREE, MAX_SEGMENTS_PER_TREE};

/// Most attraction points in one cloud (crown or roots), and most points a file may hold.
pub const MAX_POINTS: usize = 1_000_000;
/// Largest points file read (1,000,000 points of three 20-character numbers fit).
pub const MAX_POINTS_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Most trunks in one run.
pub const MAX_TRUNKS: usize = 256;
/// Largest coordinate accepted anywhere \[m\]; beyond it f32 spacing gets coarse for twigs.
pub const MAX_COORDINATE: f32 = 10_000.0;
/// Smallest radius, radius component or height of an envelope shape \[m\].
pub const MIN_EXTENT: f32 = 1e-3;
/// Range of the growth, influence and kill distances \[m\].
pub const MIN_DISTANCE: f32 = 1e-4;
pub const MAX_DISTANCE: f32 = 1_000.0;
/// Most shapes in one (possibly nested) union.
pub const MAX_SHAPES: usize = 4096;

/// Guard 1: a summed pull shorter than this fraction of its point count has no direction.
const CANCEL_FRACTION: f32 = 1e-3;
/// Guard 2: no new node nearer than this fraction of `D` to an existing node.
const SPACING_FRACTION: f32 = 0.25;
/// The progress callback is called every this many iterations.
const PROGRESS_EVERY: u32 = 4;
/// A trunk base must lie within this height of the ground [m].
const GROUND_TOLERANCE: f32 = 1e-3;
const NONE: u32 = u32::MAX;

/// The volume attraction points fill.
#[derive(Clone, Debug, PartialEq)]
pub enum Envelope {
    Sphere {
        center: Vec3,
        radius: f32,
    },
    /// Axis-aligned ellipsoid with semi-axes `radii`.
    Ellipsoid {
        center: Vec3,
        radii: Vec3,
    },
    /// Upright cone: a disc of `radius` at `base`, apex at `base + height · Y`.
    Cone {
        base: Vec3,
        radius: f32,
        height: f32,
    },
    /// Upright cylinder from the disc at `base` up by `height`.
    Cylinder {
        base: Vec3,
        radius: f32,
        height: f32,
    },
    /// Every point inside any of the shapes (which may not be `Points`).
    Union(Vec<Envelope>),
    /// Given attraction points, for example from [`parse_points`]. They have no volume: `sample`
    /// picks among them and `contains` is true only for the exact points.
    Points(Vec<Vec3>),
}

impl Envelope {
    /// Whether `p` lies inside (boundaries included).
    pub fn contains(&self, p: Vec3) -> bool {
        match self {
            Envelope::Union(_) => {
                // An explicit stack: a deeply nested union must not exhaust the call stack.
                let mut stack = vec![self];
                while let Some(e) = stack.pop() {
                    match e {
                        Envelope::Union(list) => stack.extend(list.iter()),
                        shape => {
                            if shape.contains(p) {
                                return true;
                            }
                        }
                    }
                }
                false
            }
            Envelope::Points(list) => list.contains(&p),
            Envelope::Sphere { center, radius } => (p - *center).length_squared() <= radius * radius,
            Envelope::Ellipsoid { center, radii } => ((p - *center) / *radii).length_squared() <= 1.0,
            Envelope::Cone { base, radius, height } => {
                let t = (p.y - base.y) / height;
                let r = radius * (1.0 - t);
                (0.0..=1.0).contains(&t) && horizontal_distance_squared(p, *base) <= r * r
            }
            Envelope::Cylinder { base, radius, height } => {
                let h = p.y - base.y;
                (0.0..=*height).contains(&h) && horizontal_distance_squared(p, *base) <= radius * radius
            }
        }
    }

    /// Axis-aligned bounding box `(min, max)`. An empty union or point list gives the empty box
    /// `(+∞, -∞)`.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        match self {
            Envelope::Sphere { center, radius } => (*center - Vec3::splat(*radius), *center + Vec3::splat(*radius)),
            Envelope::Ellipsoid { center, radii } => (*center - *radii, *center + *radii),
            Envelope::Cone { base, radius, height } | Envelope::Cylinder { base, radius, height } => (
                *base - Vec3::new(*radius, 0.0, *radius),
                *base + Vec3::new(*radius, *height, *radius),
            ),
            Envelope::Points(list) => list.iter().fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(*p), hi.max(*p))
            }),
            Envelope::Union(_) => {
                let mut stack = vec![self];
                let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
                while let Some(e) = stack.pop() {
                    match e {
                        Envelope::Union(list) => stack.extend(list.iter()),
                        shape => {
                            let (a, b) = shape.bounds();
                            lo = lo.min(a);
                            hi = hi.max(b);
                        }
                    }
                }
                (lo, hi)
            }
        }
    }

    /// Checks sizes and coordinates: finite, shapes at least [`MIN_EXTENT`] across, unions
    /// non-empty and without `Points`, point lists of 1 to [`MAX_POINTS`] points.
    pub fn validate(&self) -> Result<(), SimError> {
        self.check("envelope")
    }

    /// `n` points uniformly distributed inside, by rejection sampling. A union picks one of its
    /// shapes in proportion to the volume of its bounding box, samples that box and keeps a
    /// point inside the shape with probability 1 / (number of shapes containing it), which is
    /// uniform over the union however far apart its shapes are. For `Points`, `n` of the given
    /// points chosen at random without repetition, or all of them when `n` is at least their
    /// number. Fails on an invalid envelope, on `n` above [`MAX_POINTS`], and when the tries run
    /// out (an envelope of near-zero volume).
    pub fn sample(&self, n: usize, rng: &mut Rng) -> Result<Vec<Vec3>, SimError> {
        self.sample_named("envelope", n, rng)
    }

    fn sample_named(&self, name: &'static str, n: usize, rng: &mut Rng) -> Result<Vec<Vec3>, SimError> {
        self.check(name)?;
        if n > MAX_POINTS {
            return Err(SimError::param("points", n, format!("allowed 0..={MAX_POINTS}")));
        }
        self.sample_unchecked(name, n, rng)
    }

    /// The sampling itself, on an envelope already checked (or, in a test, deliberately not).
    fn sample_unchecked(&self, name: &'static str, n: usize, rng: &mut Rng) -> Result<Vec<Vec3>, SimError> {
        if let Envelope::Points(list) = self {
            if n >= list.len() {
                return Ok(list.clone());
            }
            // Partial Fisher-Yates over the indices.
            let mut idx: Vec<u32> = (0..list.len() as u32).collect();
            for i in 0..n {
                let j = i + rng.below((list.len() - i) as u64) as usize;
                idx.swap(i, j);
            }
            return Ok(idx[..n].iter().map(|&i| list[i as usize]).collect());
        }
        let shapes = self.shapes();
        let boxes: Vec<(Vec3, Vec3)> = shapes.iter().map(|s| s.bounds()).collect();
        let mut cumulative = Vec::with_capacity(boxes.len());
        let mut total = 0.0f64;
        for (lo, hi) in &boxes {
            let size = (*hi - *lo).as_dvec3();
            total += size.x * size.y * size.z;
            cumulative.push(total);
        }
        // Each valid shape fills at least π/12 of its box (the cone), so this limit is only
        // reached when f32 rounding has squeezed a shape to (near) nothing.
        let max_tries = 1000 * n as u64 + 10_000;
        let mut out = Vec::with_capacity(n);
        let mut tries = 0u64;
        while out.len() < n {
            if tries >= max_tries {
                return Err(SimError::param(
                    name,
                    format!("{self:?}"),
                    format!(
                        "rejection sampling kept only {} of {n} points in {tries} tries: the envelope has (near) zero volume",
                        out.len()
                    ),
                ));
            }
            tries += 1;
            let k = if shapes.len() == 1 {
                0
            } else {
                let x = rng.unit() as f64 * total;
                cumulative.partition_point(|&c| c <= x).min(shapes.len() - 1)
            };
            let (lo, hi) = boxes[k];
            let p = lo + (hi - lo) * Vec3::new(rng.unit(), rng.unit(), rng.unit());
            if !shapes[k].contains(p) {
                continue;
            }
            if shapes.len() > 1 {
                let m = shapes.iter().filter(|s| s.contains(p)).count();
                if m > 1 && rng.unit() * m as f32 >= 1.0 {
                    continue;
                }
            }
            out.push(p);
        }
        Ok(out)
    }

    /// The shapes of a union, flattened (the envelope itself when it is one shape).
    fn shapes(&self) -> Vec<&Envelope> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            match e {
                // Reversed so the shapes come out in the order written.
                Envelope::Union(list) => stack.extend(list.iter().rev()),
                shape => out.push(shape),
            }
        }
        out
    }

    fn check(&self, name: &'static str) -> Result<(), SimError> {
        let coordinate = |what: &str, v: Vec3| -> Result<(), SimError> {
            if v.is_finite() && v.abs().max_element() <= MAX_COORDINATE {
                Ok(())
            } else {
                Err(SimError::param(
                    name,
                    format!("{what} {v}"),
                    format!("coordinates must be finite and within ±{MAX_COORDINATE} m"),
                ))
            }
        };
        let extent = |what: &str, v: f32| -> Result<(), SimError> {
            if v.is_finite() && (MIN_EXTENT..=MAX_COORDINATE).contains(&v) {
                Ok(())
            } else {
                Err(SimError::param(
                    name,
                    format!("{what} {v}"),
                    format!("must be a finite size from {MIN_EXTENT} to {MAX_COORDINATE} m (a shape needs volume)"),
                ))
            }
        };
        let mut count = 0usize;
        let mut stack = vec![(self, 0usize)];
        while let Some((e, depth)) = stack.pop() {
            match e {
                Envelope::Union(list) => {
                    if list.is_empty() {
                        return Err(SimError::param(
                            name,
                            "an empty Union",
                            "a union needs at least one shape",
                        ));
                    }
                    stack.extend(list.iter().map(|e| (e, depth + 1)));
                    continue;
                }
                Envelope::Points(list) => {
                    if depth > 0 {
                        return Err(SimError::param(
                            name,
                            "Points inside a Union",
                            "a union combines volumes (Sphere, Ellipsoid, Cone, Cylinder); given points stand alone",
                        ));
                    }
                    if list.is_empty() || list.len() > MAX_POINTS {
                        return Err(SimError::param(
                            name,
                            format!("{} given points", list.len()),
                            format!("allowed 1..={MAX_POINTS} points"),
                        ));
                    }
                    for (i, p) in list.iter().enumerate() {
                        coordinate(&format!("point {i}"), *p)?;
                    }
                }
                Envelope::Sphere { center, radius } => {
                    coordinate("Sphere center", *center)?;
                    extent("Sphere radius", *radius)?;
                }
                Envelope::Ellipsoid { center, radii } => {
                    coordinate("Ellipsoid center", *center)?;
                    for r in radii.to_array() {
                        extent("Ellipsoid radius", r)?;
                    }
                }
                Envelope::Cone { base, radius, height } => {
                    coordinate("Cone base", *base)?;
                    extent("Cone radius", *radius)?;
                    extent("Cone height", *height)?;
                }
                Envelope::Cylinder { base, radius, height } => {
                    coordinate("Cylinder base", *base)?;
                    extent("Cylinder radius", *radius)?;
                    extent("Cylinder height", *height)?;
                }
            }
            count += 1;
            if count > MAX_SHAPES {
                return Err(SimError::param(
                    name,
                    format!("more than {MAX_SHAPES} shapes"),
                    format!("a union holds at most {MAX_SHAPES} shapes"),
                ));
            }
        }
        Ok(())
    }
}

fn horizontal_distance_squared(a: Vec3, b: Vec3) -> f32 {
    let (dx, dz) = (a.x - b.x, a.z - b.z);
    dx * dx + dz * dz
}

/// Reads attraction points: one point per line as three numbers `x y z`, separated by spaces,
/// tabs or commas; `#` starts a comment; blank lines are skipped. `file` names the source in
/// errors, which give the line number. At most [`MAX_POINTS`] points.
pub fn parse_points(text: &str, file: &str) -> Result<Vec<Vec3>, SimError> {
    let at = |line: usize, content: &str| format!("{file}:{line}: `{}`", content.chars().take(80).collect::<String>());
    let mut points = Vec::new();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let fields: Vec<&str> = if content.contains(',') {
            content.split(',').map(str::trim).collect()
        } else {
            content.split_whitespace().collect()
        };
        if fields.len() != 3 || fields.iter().any(|f| f.is_empty()) {
            return Err(SimError::param(
                "points file",
                at(line, content),
                format!(
                    "expected three numbers x y z separated by spaces or commas, found {} field(s)",
                    fields.len()
                ),
            ));
        }
        let mut xyz = [0.0f32; 3];
        for (v, f) in xyz.iter_mut().zip(&fields) {
            *v = match f.parse::<f32>() {
                Ok(x) if x.is_finite() => x,
                Ok(_) => {
                    return Err(SimError::param(
                        "points file",
                        at(line, content),
                        format!("`{f}` is not a finite number"),
                    ))
                }
                Err(_) => {
                    return Err(SimError::param(
                        "points file",
                        at(line, content),
                        format!("`{f}` is not a number"),
                    ))
                }
            };
        }
        if points.len() == MAX_POINTS {
            return Err(SimError::param(
                "points file",
                at(line, content),
                format!("a points file holds at most {MAX_POINTS} points"),
            ));
        }
        points.push(Vec3::from_array(xyz));
    }
    if points.is_empty() {
        return Err(SimError::param(
            "points file",
            file,
            "holds no points; expected one `x y z` line per point",
        ));
    }
    Ok(points)
}

/// Roots: a second point cloud below ground, grown down from the trunk bases.
#[derive(Clone, Debug, PartialEq)]
pub struct RootParams {
    /// Must lie below ground (its bounding box at y ≤ 0).
    pub envelope: Envelope,
    pub points: usize,
}

/// Everything a colonization run depends on. Distances in metres.
#[derive(Clone, Debug, PartialEq)]
pub struct ColonizeParams {
    /// Where the crown's attraction points go; must lie above ground (its box at y ≥ 0).
    pub crown: Envelope,
    /// Attraction points in the crown, 1..=[`MAX_POINTS`].
    pub points: usize,
    /// Step D between a node and its child.
    pub growth_distance: f32,
    /// di: a point pulls only nodes nearer than this; also the grid's cell size.
    pub influence_distance: f32,
    /// dk: a point this near to a node has been reached and is removed. Best above D / 2: a
    /// lone point nearer than D / 2 to its node may be overshot and never reached.
    pub kill_distance: f32,
    /// Trunk bases on the ground (y = 0), at least D apart; one tree grows from each.
    pub trunks: Vec<Vec3>,
    pub roots: Option<RootParams>,
    /// Radius of every terminal segment.
    pub twig_radius: f32,
    /// e in r_parent^e = Σ r_child^e; 2 conserves cross-section area (pipe model).
    pub pipe_exponent: f32,
    /// Leaf cards on each terminal segment of the crown.
    pub leaves_per_twig: u32,
    pub leaf_length: f32,
    /// Most nodes grown (= segments) in the crown over all trunks, trunk steps included; the
    /// roots have the same limit of their own.
    pub max_nodes: usize,
    pub seed: u64,
}

impl Default for ColonizeParams {
    /// A broadleaf crown: a 4 m sphere of 20,000 points 7 m up over one trunk.
    fn default() -> Self {
        ColonizeParams {
            crown: Envelope::Sphere {
                center: Vec3::new(0.0, 7.0, 0.0),
                radius: 4.0,
            },
            points: 20_000,
            growth_distance: 0.15,
            influence_distance: 1.5,
            kill_distance: 0.3,
            trunks: vec![Vec3::ZERO],
            roots: None,
            twig_radius: 0.004,
            pipe_exponent: 2.0,
            leaves_per_twig: 4,
            leaf_length: 0.1,
            max_nodes: 200_000,
            seed: 1,
        }
    }
}

impl ColonizeParams {
    /// Checks every parameter, naming the first bad one and what is allowed.
    pub fn validate(&self) -> Result<(), SimError> {
        self.crown.check("crown")?;
        let (lo, _) = self.crown.bounds();
        if lo.y < 0.0 {
            return Err(SimError::param(
                "crown",
                format!("an envelope reaching down to y = {}", lo.y),
                "the crown must lie above the ground (y ≥ 0); roots take the space below",
            ));
        }
        check_count("points", self.points)?;
        let d = self.growth_distance;
        let di = self.influence_distance;
        let dk = self.kill_distance;
        for (name, v) in [
            ("growth_distance", d),
            ("influence_distance", di),
            ("kill_distance", dk),
        ] {
            if !(v.is_finite() && (MIN_DISTANCE..=MAX_DISTANCE).contains(&v)) {
                return Err(SimError::param(
                    name,
                    v,
                    format!("must be a finite distance from {MIN_DISTANCE} to {MAX_DISTANCE} m"),
                ));
            }
        }
        if dk >= di {
            return Err(SimError::param(
                "kill_distance",
                dk,
                format!("must be less than influence_distance ({di})"),
            ));
        }
        if d >= di {
            return Err(SimError::param(
                "growth_distance",
                d,
                format!("must be less than influence_distance ({di})"),
            ));
        }
        if self.trunks.is_empty() || self.trunks.len() > MAX_TRUNKS {
            return Err(SimError::param(
                "trunks",
                format!("{} trunk bases", self.trunks.len()),
                format!("allowed 1..={MAX_TRUNKS} trunk bases"),
            ));
        }
        for (k, b) in self.trunks.iter().enumerate() {
            if !(b.is_finite() && b.abs().max_element() <= MAX_COORDINATE && b.y.abs() <= GROUND_TOLERANCE) {
                return Err(SimError::param(
                    "trunks",
                    format!("base {k} at {b}"),
                    format!("a trunk base must be finite, within ±{MAX_COORDINATE} m and on the ground (y = 0)"),
                ));
            }
            for (j, c) in self.trunks[..k].iter().enumerate() {
                if b.distance(*c) < d {
                    return Err(SimError::param(
                        "trunks",
                        format!("bases {j} and {k} {} m apart", b.distance(*c)),
                        format!("trunk bases must be at least growth_distance ({d} m) apart"),
                    ));
                }
            }
        }
        if let Some(r) = &self.roots {
            r.envelope.check("roots.envelope")?;
            let (_, hi) = r.envelope.bounds();
            if hi.y > 0.0 {
                return Err(SimError::param(
                    "roots.envelope",
                    format!("an envelope reaching up to y = {}", hi.y),
                    "roots must lie below the ground (y ≤ 0)",
                ));
            }
            check_count("roots.points", r.points)?;
        }
        if !(self.twig_radius.is_finite() && self.twig_radius > 0.0 && self.twig_radius <= 1.0) {
            return Err(SimError::param(
                "twig_radius",
                self.twig_radius,
                "must be a finite radius greater than 0 and at most 1 m",
            ));
        }
        if !(self.pipe_exponent.is_finite() && (1.0..=5.0).contains(&self.pipe_exponent)) {
            return Err(SimError::param(
                "pipe_exponent",
                self.pipe_exponent,
                "must be finite, from 1 to 5 (2 conserves cross-section area)",
            ));
        }
        if self.leaves_per_twig > 1000 {
            return Err(SimError::param(
                "leaves_per_twig",
                self.leaves_per_twig,
                "allowed 0..=1000",
            ));
        }
        if !(self.leaf_length.is_finite() && self.leaf_length > 0.0 && self.leaf_length <= 10.0) {
            return Err(SimError::param(
                "leaf_length",
                self.leaf_length,
                "must be a finite length greater than 0 and at most 10 m",
            ));
        }
        if self.max_nodes < self.trunks.len() || self.max_nodes > MAX_SEGMENTS_PER_TREE {
            return Err(SimError::param(
                "max_nodes",
                self.max_nodes,
                format!(
                    "allowed {}..={MAX_SEGMENTS_PER_TREE} (at least one node per trunk)",
                    self.trunks.len()
                ),
            ));
        }
        Ok(())
    }
}

fn check_count(name: &'static str, n: usize) -> Result<(), SimError> {
    if (1..=MAX_POINTS).contains(&n) {
        Ok(())
    } else {
        Err(SimError::param(name, n, format!("allowed 1..={MAX_POINTS}")))
    }
}

/// Why a colonization run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Every attraction point was reached.
    Completed,
    /// Points are left, but none is within the influence distance of any node.
    NoPointsInReach,
    /// Points still pull on nodes, but every growth they asked for was refused (cancelling
    /// pulls, a new node on top of an existing one, or a step through the ground), so the
    /// iteration added no node and killed no point.
    Stalled,
    /// `max_nodes` was reached.
    NodeLimit,
    /// The iteration cap derived from the envelope's size and D was reached.
    IterationLimit,
}

/// Figures of one colonization run (crown or roots).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrowthStats {
    /// Colonization iterations (the straight trunk steps before them not counted).
    pub iterations: u32,
    /// Nodes grown, trunk steps included, trunk bases not: the number of segments.
    pub nodes: usize,
    /// Of those, the steps straight up (or down, for roots) before any point was in reach.
    pub trunk_nodes: usize,
    /// Attraction points sampled.
    pub points: usize,
    pub points_killed: usize,
    pub points_left: usize,
    /// Growths refused: cancelling pulls, a node already there, or a step through the ground.
    pub refused: usize,
    pub stop: StopReason,
}

/// A colonization result.
#[derive(Clone, Debug, PartialEq)]
pub struct Grown {
    /// One skeleton per trunk, in the order of `ColonizeParams::trunks`, in world coordinates
    /// (root segment at the trunk base). Several trunks cannot share one skeleton soundly (see
    /// the module documentation).
    pub trees: Vec<Skeleton>,
    /// One root skeleton per trunk when roots were asked for, empty otherwise.
    pub roots: Vec<Skeleton>,
    pub crown: GrowthStats,
    pub root_stats: Option<GrowthStats>,
    /// What a caller must tell the user about a result that is likely not what was asked for:
    /// each trunk that grew no branch (a bare pole), with the crown points reached and why the
    /// others were not (out of reach, `max_nodes`, growth refused).
    pub warnings: Vec<String>,
}

/// Grows trees (and roots) by space colonization. `progress` gets the fraction of all
/// attraction points reached so far, every few iterations, and 1.0 once when finished.
pub fn colonize(params: &ColonizeParams, progress: &mut dyn FnMut(f32)) -> Result<Grown, SimError> {
    params.validate()?;
    let rng = Rng::new(params.seed);
    let crown_points = params.crown.sample_named("crown", params.points, &mut rng.fork(1))?;
    let root_points = match &params.roots {
        Some(r) => Some(r.envelope.sample_named("roots.envelope", r.points, &mut rng.fork(2))?),
        None => None,
    };
    let total = (crown_points.len() + root_points.as_ref().map_or(0, Vec::len)).max(1) as f32;

    let (colony, crown) = grow(
        params,
        crown_points,
        Vec3::Y,
        params.crown.bounds(),
        &mut |killed| progress(killed as f32 / total),
    )
    .map_err(|k| {
        SimError::param(
            "trunks",
            format!("base {k} at {}", params.trunks[k]),
            "growing straight up from it never comes within influence_distance of a crown point; place trunks under the crown",
        )
    })?;
    let (mut trees, tips) = colony.skeletons(params.twig_radius, params.pipe_exponent);
    let warnings = bare_poles(params, &tips, &crown);
    for (k, tree) in trees.iter_mut().enumerate() {
        add_leaves(tree, &tips[k], params, &mut rng.fork(1000 + k as u64))?;
        tree.validate()?;
    }
    drop(colony);

    let (roots, root_stats) = match (&params.roots, root_points) {
        (Some(r), Some(points)) => {
            let done = crown.points_killed;
            let (colony, stats) = grow(params, points, Vec3::NEG_Y, r.envelope.bounds(), &mut |killed| {
                progress((done + killed) as f32 / total)
            })
            .map_err(|k| {
                SimError::param(
                    "roots.envelope",
                    format!("no root point below trunk base {k} at {}", params.trunks[k]),
                    "growing straight down from each trunk base must come within influence_distance of a root point",
                )
            })?;
            let (roots, _) = colony.skeletons(params.twig_radius, params.pipe_exponent);
            for root in &roots {
                root.validate()?;
            }
            (roots, Some(stats))
        }
        _ => (Vec::new(), None),
    };
    progress(1.0);
    Ok(Grown {
        trees,
        roots,
        crown,
        root_stats,
        warnings,
    })
}

/// Trunks that grew no branch (one twig end: a single unbranched line of nodes), one warning
/// each, saying how many crown points were reached and why the others were not.
fn bare_poles(params: &ColonizeParams, tips: &[Vec<bool>], crown: &GrowthStats) -> Vec<String> {
    let reason = match crown.stop {
        _ if crown.points_left == 0 => String::new(),
        StopReason::NodeLimit => format!(
            "; max_nodes ({}) ran out before the crown was colonized: raise max_nodes",
            params.max_nodes
        ),
        StopReason::IterationLimit => "; the iteration cap was reached".to_string(),
        StopReason::Stalled => "; every growth towards the other points was refused (their pulls cancel, or a \
                                step would pass the ground or repeat a node)"
            .to_string(),
        _ => format!(
            "; the other points lie farther than influence_distance ({} m) from every node: place the trunks \
             under the crown, or raise influence_distance or points",
            params.influence_distance
        ),
    };
    (0..tips.len())
        .filter(|&k| tips[k].iter().filter(|t| **t).count() <= 1)
        .map(|k| {
            format!(
                "trunk {k} at {} grew no branches (a bare pole); {} of {} crown points were reached{reason}",
                params.trunks[k], crown.points_killed, crown.points
            )
        })
        .collect()
}

/// One colonization run from the trunk bases along `up`. Fails with the index of a trunk that
/// never comes within reach of a point.
fn grow(
    params: &ColonizeParams,
    points: Vec<Vec3>,
    up: Vec3,
    bounds: (Vec3, Vec3),
    progress: &mut dyn FnMut(usize),
) -> Result<(Colony, GrowthStats), usize> {
    let (d, di) = (params.growth_distance, params.influence_distance);
    let mut colony = Colony::new(points, &params.trunks, d, di, params.kill_distance, true);
    // Beyond this height (depth, for roots) no point can come within di of a trunk's top.
    let beyond = if up.y > 0.0 {
        bounds.1.y + di
    } else {
        -(bounds.0.y - di)
    };
    let cap = iteration_cap(bounds, d, di);
    let pregrown = colony.pregrow(up, beyond, params.max_nodes)?;
    colony.start();
    let stop = if pregrown {
        StopReason::NodeLimit
    } else {
        loop {
            if colony.iterations >= cap {
                break StopReason::IterationLimit;
            }
            if let Some(stop) = colony.step(params.max_nodes) {
                break stop;
            }
            if colony.iterations % PROGRESS_EVERY == 0 {
                progress(colony.killed);
            }
        }
    };
    let stats = colony.stats(stop);
    Ok((colony, stats))
}

/// 10 × the straight path across the envelope's box (plus reach on both sides) in steps of D,
/// plus 100: branches meander, but not ten times over.
fn iteration_cap((lo, hi): (Vec3, Vec3), d: f32, di: f32) -> u32 {
    let diagonal = (hi - lo).length() as f64;
    let steps = ((diagonal + 2.0 * di as f64) / d as f64).ceil();
    (10.0 * steps + 100.0).min(u32::MAX as f64) as u32
}

/// Leaf cards on the terminal segments (`terminal[i]`), orientations from `rng`.
fn add_leaves(tree: &mut Skeleton, terminal: &[bool], params: &ColonizeParams, rng: &mut Rng) -> Result<(), SimError> {
    let per = params.leaves_per_twig as usize;
    let twigs = terminal.iter().filter(|t| **t).count();
    if twigs.saturating_mul(per) > MAX_LEAVES_PER_TREE {
        return Err(SimError::param(
            "leaves_per_twig",
            per,
            format!("{twigs} twigs would carry more than {MAX_LEAVES_PER_TREE} leaves on one tree"),
        ));
    }
    tree.leaves.reserve_exact(twigs * per);
    for (i, s) in tree.segments.iter().enumerate() {
        if !terminal[i] {
            continue;
        }
        let axis = (s.tip - s.base).normalize();
        for _ in 0..per {
            // The blade leaves the twig at 30-70°, at any azimuth, its face turned up.
            let pitch = rng.range(30.0, 70.0).to_radians();
            let azimuth = rng.range(0.0, std::f32::consts::TAU);
            let side = Quat::from_axis_angle(axis, azimuth) * axis.any_orthonormal_vector();
            let blade = (axis * pitch.cos() + side * pitch.sin()).normalize();
            let up = Vec3::new(rng.sym(0.4), 1.0, rng.sym(0.4));
            let mut normal = up - blade * up.dot(blade);
            if normal.length_squared() < 1e-6 {
                normal = blade.any_orthonormal_vector();
            }
            let normal = normal.normalize();
            let orientation = Quat::from_mat3(&Mat3::from_cols(blade.cross(normal), blade, normal)).normalize();
            let length = params.leaf_length * rng.range(0.85, 1.15);
            tree.leaves.push(SkeletonLeaf {
                segment: i as u32,
                along: rng.range(0.4, 1.0),
                orientation,
                length,
                width: 0.5 * length,
            });
        }
    }
    Ok(())
}

/// A multiplicative hash for packed cell keys; std's SipHash is needlessly slow here.
#[derive(Default)]
struct CellHasher(u64);

impl Hasher for CellHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        let h = (k ^ (k >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.0 = h ^ (h >> 32);
    }
}

/// Uniform spatial hash grid of ids. Cells are keyed by their integer coordinates packed into
/// 21 bits each; cells that share a key (2²¹ cells apart) share a list, which costs only extra
/// distance checks, never a wrong answer, since every query checks true distances.
struct Grid {
    inv_cell: f32,
    slot: HashMap<u64, u32, BuildHasherDefault<CellHasher>>,
    cells: Vec<Vec<u32>>,
}

impl Grid {
    fn new(cell: f32) -> Self {
        Grid {
            inv_cell: 1.0 / cell,
            slot: HashMap::default(),
            cells: Vec::new(),
        }
    }

    fn coord(&self, x: f32) -> i32 {
        // `as` saturates (and maps NaN to 0): never UB, never a panic.
        (x * self.inv_cell).floor() as i32
    }

    fn key(x: i32, y: i32, z: i32) -> u64 {
        const MASK: u64 = (1 << 21) - 1;
        ((x as u32 as u64 & MASK) << 42) | ((y as u32 as u64 & MASK) << 21) | (z as u32 as u64 & MASK)
    }

    fn insert(&mut self, p: Vec3, id: u32) {
        let key = Self::key(self.coord(p.x), self.coord(p.y), self.coord(p.z));
        let next = self.cells.len() as u32;
        let s = *self.slot.entry(key).or_insert(next);
        if s == next {
            self.cells.push(Vec::new());
        }
        self.cells[s as usize].push(id);
    }

    /// Slots of the cells that hold every id within `r` of `p` (and some beyond), into `out`.
    fn slots_near(&self, p: Vec3, r: f32, out: &mut Vec<u32>) {
        out.clear();
        // Widen the range by a few ulps, a safety margin against rounding in p ± r; floor(x ·
        // inv) is monotone in x, so a point within r of p is never outside the range. (Without
        // it no point was found to be dropped either; it costs nothing measurable.)
        let range = |c: f32| {
            let m = 4.0 * f32::EPSILON * (c.abs() + r);
            (self.coord(c - r - m), self.coord(c + r + m))
        };
        let (x0, x1) = range(p.x);
        let (y0, y1) = range(p.y);
        let (z0, z1) = range(p.z);
        for x in x0..=x1 {
            for y in y0..=y1 {
                for z in z0..=z1 {
                    if let Some(&s) = self.slot.get(&Self::key(x, y, z)) {
                        // Colliding keys could repeat a slot; keep each once.
                        if !out.contains(&s) {
                            out.push(s);
                        }
                    }
                }
            }
        }
    }
}

/// The state of one colonization run: attraction points, nodes, and their grids.
struct Colony {
    d: f32,
    di: f32,
    dk2: f32,
    spacing: f32,
    /// Direction of growth away from the ground: +y for crowns, -y for roots. A new node must
    /// stay on its side of the ground (y > 0 for crowns, y < 0 for roots).
    up: Vec3,
    /// The oscillation guards (1 and 2 in the module docs); off only in the test that shows
    /// the oscillation.
    guards: bool,

    points: Vec<Vec3>,
    /// Nearest node within di of each point (`NONE` if none) and its squared distance (di²
    /// when none, so that only nearer nodes replace it).
    best: Vec<u32>,
    best_d2: Vec<f32>,
    alive: Vec<bool>,
    /// Indices of the live points, ascending.
    live: Vec<u32>,
    point_grid: Grid,
    killed: usize,

    /// Nodes: 0..bases are the trunk bases, which never grow; every other node's parent
    /// precedes it.
    pos: Vec<Vec3>,
    parent: Vec<u32>,
    owner: Vec<u32>,
    bases: usize,
    node_grid: Grid,

    // Per-iteration scratch.
    pull: Vec<Vec3>,
    pulled_by: Vec<u32>,
    growing: Vec<u32>,
    fresh: Vec<u32>,
    slots: Vec<u32>,

    iterations: u32,
    trunk_nodes: usize,
    refused: usize,
}

impl Colony {
    fn new(points: Vec<Vec3>, bases: &[Vec3], d: f32, di: f32, dk: f32, guards: bool) -> Self {
        let n = points.len();
        let mut point_grid = Grid::new(di);
        for (i, p) in points.iter().enumerate() {
            point_grid.insert(*p, i as u32);
        }
        let mut c = Colony {
            d,
            di,
            dk2: dk * dk,
            spacing: SPACING_FRACTION * d,
            up: Vec3::Y,
            guards,
            points,
            best: vec![NONE; n],
            best_d2: vec![di * di; n],
            alive: vec![true; n],
            live: (0..n as u32).collect(),
            point_grid,
            killed: 0,
            pos: Vec::new(),
            parent: Vec::new(),
            owner: Vec::new(),
            bases: bases.len(),
            node_grid: Grid::new(di),
            pull: Vec::new(),
            pulled_by: Vec::new(),
            growing: Vec::new(),
            fresh: Vec::new(),
            slots: Vec::new(),
            iterations: 0,
            trunk_nodes: 0,
            refused: 0,
        };
        for (k, b) in bases.iter().enumerate() {
            c.add_node(*b, NONE, k as u32);
        }
        c
    }

    fn add_node(&mut self, p: Vec3, parent: u32, owner: u32) -> u32 {
        let id = self.pos.len() as u32;
        self.pos.push(p);
        self.parent.push(parent);
        self.owner.push(owner);
        self.pull.push(Vec3::ZERO);
        self.pulled_by.push(0);
        self.node_grid.insert(p, id);
        id
    }

    /// Nodes grown so far (trunk bases excluded) = segments.
    fn grown(&self) -> usize {
        self.pos.len() - self.bases
    }

    /// Grows every trunk one step along `up`, then on in steps of D until a point is within di
    /// of its top. `Ok(true)`: `max_nodes` was reached. `Err(k)`: trunk k passed `beyond`
    /// (height along `up`) without coming within reach of any point.
    fn pregrow(&mut self, up: Vec3, beyond: f32, max_nodes: usize) -> Result<bool, usize> {
        self.up = up;
        // Every trunk's first step comes first, so a tight node budget still gives every tree
        // its root segment (validation ensures max_nodes ≥ trunks).
        for k in 0..self.bases {
            self.add_node(self.pos[k] + up * self.d, k as u32, k as u32);
        }
        let mut limit = false;
        for k in 0..self.bases {
            let mut top = (self.bases + k) as u32;
            while !self.point_within(self.pos[top as usize], self.di) {
                if self.pos[top as usize].dot(up) > beyond {
                    return Err(k);
                }
                if self.grown() >= max_nodes {
                    limit = true;
                    break;
                }
                top = self.add_node(self.pos[top as usize] + up * self.d, top, k as u32);
            }
        }
        self.trunk_nodes = self.grown();
        Ok(limit)
    }

    fn point_within(&mut self, p: Vec3, r: f32) -> bool {
        self.point_grid.slots_near(p, r, &mut self.slots);
        let r2 = r * r;
        self.slots.iter().any(|&s| {
            self.point_grid.cells[s as usize]
                .iter()
                .any(|&i| (self.points[i as usize] - p).length_squared() < r2)
        })
    }

    /// Kills the points near the initial nodes and finds their nearest nodes. Trunk bases
    /// kill but never attract (they never grow).
    fn start(&mut self) {
        for v in 0..self.pos.len() as u32 {
            self.scan(v, (v as usize) >= self.bases);
        }
        self.compact_live();
    }

    /// Visits the points near node `v`: kills those within dk and, if `attract`, makes `v` the
    /// nearest node of those it is nearer to than their current one. Nodes are scanned in
    /// ascending index, so among equally near nodes the lowest index wins.
    fn scan(&mut self, v: u32, attract: bool) {
        let p = self.pos[v as usize];
        let Colony {
            point_grid,
            slots,
            points,
            best,
            best_d2,
            alive,
            killed,
            dk2,
            di,
            ..
        } = self;
        let dk2 = *dk2;
        point_grid.slots_near(p, *di, slots);
        for &s in slots.iter() {
            point_grid.cells[s as usize].retain(|&i| {
                let i = i as usize;
                let d2 = (points[i] - p).length_squared();
                if d2 < dk2 {
                    alive[i] = false;
                    *killed += 1;
                    return false;
                }
                if attract && d2 < best_d2[i] {
                    best[i] = v;
                    best_d2[i] = d2;
                }
                true
            });
        }
    }

    fn compact_live(&mut self) {
        let alive = &self.alive;
        self.live.retain(|&i| alive[i as usize]);
    }

    /// Whether a node lies within `r` of `p`.
    fn node_within(&mut self, p: Vec3, r: f32) -> bool {
        self.node_grid.slots_near(p, r, &mut self.slots);
        let r2 = r * r;
        self.slots.iter().any(|&s| {
            self.node_grid.cells[s as usize]
                .iter()
                .any(|&j| (self.pos[j as usize] - p).length_squared() < r2)
        })
    }

    /// One iteration: pull, grow, kill. `Some(reason)` when the run is over.
    fn step(&mut self, max_nodes: usize) -> Option<StopReason> {
        if self.live.is_empty() {
            return Some(StopReason::Completed);
        }
        // Pull: each live point adds its unit direction to its nearest node's sum.
        self.growing.clear();
        for &i in &self.live {
            let i = i as usize;
            let v = self.best[i];
            if v == NONE {
                continue;
            }
            let v = v as usize;
            let dir = (self.points[i] - self.pos[v]) / self.best_d2[i].sqrt();
            if self.pulled_by[v] == 0 {
                self.growing.push(v as u32);
            }
            self.pull[v] += dir;
            self.pulled_by[v] += 1;
        }
        if self.growing.is_empty() {
            return Some(StopReason::NoPointsInReach);
        }
        self.iterations += 1;
        self.growing.sort_unstable();

        // Grow: one node per pulled node, in ascending order (deterministic).
        self.fresh.clear();
        let mut limit = false;
        let growing = std::mem::take(&mut self.growing);
        for &v in &growing {
            let v = v as usize;
            let (sum, n) = (self.pull[v], self.pulled_by[v]);
            self.pull[v] = Vec3::ZERO;
            self.pulled_by[v] = 0;
            if limit {
                continue;
            }
            let len = sum.length();
            if self.guards && len <= CANCEL_FRACTION * n as f32 {
                // Guard 1: the pulls cancel; there is no direction to grow in.
                self.refused += 1;
                continue;
            }
            let w = self.pos[v] + sum * (self.d / len);
            if w.dot(self.up) <= 0.0 {
                // A crown branch may not dive into the ground, nor a root climb out of it.
                self.refused += 1;
                continue;
            }
            if self.guards && self.node_within(w, self.spacing) {
                // Guard 2: this node (or a neighbour) is already there.
                self.refused += 1;
                continue;
            }
            if self.grown() >= max_nodes {
                limit = true;
                continue;
            }
            let id = self.add_node(w, v as u32, self.owner[v]);
            self.fresh.push(id);
        }
        self.growing = growing;

        // Kill and re-attract around the new nodes only: older nodes have done theirs.
        let fresh = std::mem::take(&mut self.fresh);
        for &w in &fresh {
            self.scan(w, true);
        }
        let added = fresh.len();
        self.fresh = fresh;
        self.compact_live();
        if limit {
            Some(StopReason::NodeLimit)
        } else if added == 0 {
            // Kills happen only near new nodes: nothing added means nothing killed either.
            Some(StopReason::Stalled)
        } else {
            None
        }
    }

    fn stats(&self, stop: StopReason) -> GrowthStats {
        GrowthStats {
            iterations: self.iterations,
            nodes: self.grown(),
            trunk_nodes: self.trunk_nodes,
            points: self.points.len(),
            points_killed: self.killed,
            points_left: self.live.len(),
            refused: self.refused,
            stop,
        }
    }

    /// One skeleton per trunk with pipe-model radii, and per skeleton which segments are
    /// terminal.
    fn skeletons(&self, twig_radius: f32, exponent: f32) -> (Vec<Skeleton>, Vec<Vec<bool>>) {
        let n = self.pos.len();
        let t = self.bases;
        // Twig ends beyond each node: r^e is additive over forks, and every twig end carries
        // twig_radius^e, so r = twig_radius · tips^(1/e).
        let mut tips = vec![0u64; n];
        for i in (t..n).rev() {
            if tips[i] == 0 {
                tips[i] = 1;
            }
            let p = self.parent[i] as usize;
            tips[p] += tips[i];
        }
        let mut has_child = vec![false; n];
        for i in t..n {
            has_child[self.parent[i] as usize] = true;
        }
        let mut trees = vec![Skeleton::default(); t];
        let mut terminal = vec![Vec::new(); t];
        let mut seg = vec![NONE; n];
        let inv_e = 1.0 / exponent as f64;
        for i in t..n {
            let k = self.owner[i] as usize;
            let p = self.parent[i] as usize;
            let parent = if p < t { None } else { Some(seg[p]) };
            let r = (twig_radius as f64 * (tips[i] as f64).powf(inv_e)) as f32;
            seg[i] = trees[k].segments.len() as u32;
            trees[k].segments.push(SkeletonSegment {
                parent,
                base: self.pos[p],
                tip: self.pos[i],
                radius_base: r,
                radius_tip: r,
            });
            terminal[k].push(!has_child[i]);
        }
        (trees, terminal)
    }
}

#[cfg(test)]
mod tests;
