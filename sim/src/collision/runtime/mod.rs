//! Self-collision while a tree moves (Chen 2011 §5): each tree's pieces (its segments' root
//! parts and rests, its leaves' roots and blades, as `primitives` cuts them) bounded by
//! k-DOPs refitted to the pose every step, the tree's own hierarchy over them (`bvh`) refitted
//! bottom up, the unconnected pairs whose k-DOPs overlap collected, and a response spring
//! (Eq. 5.1) on every pair closer than the sum of their safe distances.
//!
//! Safe distance (§5.1): a stem piece's radius, a leaf piece's longest parallel venation (its
//! largest half-width), plus its buffer distance, the most it can move in a step. The buffer
//! is taken from the step just made: [`BUFFER_SCALE`] times the larger displacement of the
//! piece's two centreline ends since the last refit. Each piece's k-DOP reaches out by its
//! buffer (§5.1, so that a pair about to collide is found a step early) along the way the
//! piece moves: it is swept by [`BUFFER_SCALE`] times each end's last displacement
//! (`Kdop::swept`), bounding where the piece goes in the next step if it moves on as in the
//! last. Chen enlarges it by the buffer in every direction; but a tree's pieces sway together
//! (in a 10 m/s wind a treeE-sized tree's pieces move about 4 cm a step, its leaves and twigs
//! alike), and the pieces' buffers all round made neighbours that move as one candidates of
//! each other: Chen's model on that tree, 20 steps, 645,775 candidate pairs a step enlarged
//! all round against 164,558 swept, with the same pairs responding (41,848 and 41,826: the
//! response acts on the pose, below). Both are widened by a skin (`extra_safe`,
//! [`DEFAULT_SKIN`]): Chen's spring starts at contact, and a linear spring pressed by the wind
//! holds its load only by overlapping; starting it a skin early keeps that overlap outside the
//! pieces.
//!
//! Response (Eq. 5.1): F = Dir·K_s·(d_rest − d) on the first piece of a pair and −F on the
//! second, d the shortest distance between their centrelines, Dir the unit vector from the
//! second's k-DOP centre to the first's (Fig. 5.2). Chen's spring rest length is d_safe, the
//! sum of the safe distances, whose buffers Chen bounds by a fixed most angular displacement
//! per step. Here the buffers follow each piece's last step, and a rest length that grows
//! with the pieces' speed is a spring that pushes harder the faster they move: in a 25 m/s
//! gust it broke 230 of Manavi's branches where 2 broke without it, and a treeE-sized tree in
//! Weber's model diverged within 25 steps of a 10 m/s wind. The buffers therefore
//! find the pairs (the k-DOPs and the pair test, as Chen's) but the rest length is the sum of
//! the safe distances without them (radii and skin), or the pair's distance in the pose the
//! self-collision was built in (the rest pose, collision-free after modelling), whichever is
//! less, so that a tree at rest, whose leaves hang closer to their neighbours than a leaf is
//! wide, feels no response until the wind pushes a pair closer than it grew. Two additions
//! keep the explicit spring stable on the lightest twigs: K_s is capped per pair at
//! [`STABLE`]·m/Δt² (m the lighter piece's effective mass: its segment's inertia over its
//! length squared, the mass a force at the segment's end moves), and a damper of ratio
//! [`DAMPING_RATIO`] acts on the closing speed. Each force acts on the piece's segment (a
//! leaf's on the segment it hangs from); a model passes it on towards the root as its own
//! mechanics does (Fig. 5.3: in an articulated model the forces of a pair cancel below their
//! common ancestor), or, where a segment moves by its own forces alone (Chen's model), the
//! runtime passes it on to the common ancestor with Eq. 5.2's weights
//! ([`SelfCollision::with_transfer`]). A model that moves positions rather than forces (Manavi's particles)
//! takes the pairs within their safe distance as contacts instead (`SelfCollision::with_contacts`):
//! their centrelines' nearest points and the rest length, held apart as it holds its
//! constraints; a pair that holds a leaf also as strips (`TreeSet::blade_contact`), and, for
//! a model that holds them pass after pass through the step, from as far as the pair may
//! close in it (`SelfCollision::with_contacts_ahead`).
//!
//! A model whose springs must hold a steady push beyond their cap (Weber's: a gale pressing
//! leafy twigs together) adds a held force to each pair's spring
//! ([`SelfCollision::with_holding`]): the integral of the spring's push while the pair is
//! inside its radii, fading once it is out, kept with the pair from step to step, and capped
//! where the model says what its segments can carry ([`SelfCollision::with_hold_caps`]).
//!
//! Leaves that turn on their own ([`SelfCollision::with_leaves_turning`], Chen's §4.1) take
//! the springs on their blades as a torque about their attachments, and there the centreline
//! distance and the k-DOPs' centres fail: a leaf turning onto its own twig or a neighbour on
//! that twig pushes its blade into the other with its mid-venation barely nearer, and the push
//! between the centres points along the leaf, through its attachment, turning nothing. For
//! such a model d is the gap between the pieces as flat strips (`Strip`: a blade's surface
//! within its outline, a stem's axis; `strips_closest`), the rest length the stems' radii and
//! the skins (or the rest gap if less), and Dir the line between the strips' nearest points,
//! which on a blade's face is its normal (the nearest points of the two as convex hulls,
//! `strip`). Two blades that cross meet along a line, where their nearest points coincide and
//! say nothing of which way the pair parts (the gale test once held five pairs of stacked
//! leaves stuck through each other for 100 to 500 of its 600 steps): a crossing pair has a
//! gap of 0 and parts the way it lay in the pose built in, that direction turned as its
//! leaves have turned since (`TreeSet::rest_side`). The leaf takes the spring
//! [`LEAF_TURN_SCALE`] times stiffer about its attachment; its blade's contact with its own
//! twig is the model's, as a contact (`clearance`). (A model whose leaves are rigid on their
//! twigs keeps Chen's distance and direction: a leaf's push acts on its twig alone, and the
//! capsule of its blade engages the capped springs earlier: Weber's model in the gale test
//! keeps 71 pair-steps with Chen's measure, 620 with the strips'.)
//!
//! A piece of a segment that left its tree (a branch broken off, an uprooted tree;
//! [`SelfCollision::set_attached`]) bounds nothing and takes no part: it is debris.
//!
//! Pairs are kept from step to step (`SelfCollisionParams::pair_margin`): each piece has a
//! watched k-DOP, its k-DOP swept [`TRACK_AHEAD`] of its last steps further along its move
//! and enlarged by the margin; the nodes bound those, and the kept pairs are every
//! unconnected pair whose watched k-DOPs overlap. A step refits the pieces, watches anew
//! the pieces that left their watched k-DOPs, drops their pairs and queries the hierarchy
//! with each of them (or traverses a tree whole when many left), then finds the candidates
//! among the kept pairs: since a piece's k-DOP lies inside its watched one, every pair
//! whose k-DOPs overlap is kept, and the candidates are those a traversal finds. A kept
//! pair's rest distance is found the first time the pair comes nearer than its largest rest
//! length, and kept with it.
//!
//! Interpenetration (`close_pairs`) is counted exactly when asked
//! (`SelfCollisionParams::count_interpenetrating`), in a pass of its own after the response:
//! the pairs within their radii whose pieces, rebuilt in the pose, intersect
//! (`primitives::intersect`, as the modelling pass tests them).
//!
//! Invariant: the candidate pairs, the forces and every count depend only on the forest, the
//! poses and the parameters, never on the number of worker threads.

use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use glam::{Quat, Vec3};
use sylva_engine::JobSystem;

mod response;

pub use response::Contact;

use super::bvh::{Bvh, Task, LIMIT_BATCH};
use super::connect::Topology;
use super::kdop::{DopK, Kdop};
use super::modelling::leaf_joints;
use super::primitives::{blade, blade_kdop, intersect, leaf_half_width, Owner, Piece, Prism, Shape};
use crate::dynamics::pose::{segment_axis, Pose};
use crate::error::SimError;
use crate::forest::{Forest, NO_PARENT};
use crate::skeleton::{Skeleton, SkeletonLeaf, SkeletonSegment};

/// The traversal's root is opened this many levels down into parallel tasks (a treeE-sized
/// tree's 14-DOP traversal on 2 threads: 165 ms per step opened 2 levels, 94 ms opened 6, 92
/// at 8, 128 at 12, `sylva bench sim --segments 14615 --leaves 16607 --self-collision 14
/// --collision-free`: deeper, the tasks grow too many and small).
const TASK_DEPTH: u32 = 6;
/// The buffer distance is this many times a piece's last step's displacement.
pub const BUFFER_SCALE: f32 = 1.5;
/// A piece is watched for pairs this many of its last steps ahead along its move, beyond
/// the pair margin (`watched`): a tree's pieces sway together, and a piece that moves on as
/// it moved stays inside its watched k-DOP for that many steps (a treeE-sized tree in Chen's
/// model in a 10 m/s wind, 20 steps, `sylva bench sim --model chen --segments 14615 --leaves
/// 16607 --steps 20 --threads 2 --wind 10 --self-collision 14 --collision-free`,
/// self-collision ms per step: 151 at 0 (every step traversed the whole tree), 83 at 2, 92 at
/// 4, 145 at 8: farther, the kept pairs outgrow what the traversals save).
pub const TRACK_AHEAD: f32 = 2.0;
/// Most pairs kept (within the pair margin, over the whole forest, 24 bytes each); beyond it
/// the step answers none and says so (`SelfCollisionStats::overflow`).
pub const MAX_PAIRS: usize = 16 << 20;
/// Largest response spring constant accepted \[N/m\].
pub const MAX_STIFFNESS: f32 = 1.0e6;
/// Largest extra safe distance accepted \[m\].
pub const MAX_EXTRA_SAFE: f32 = 1.0;
/// The default extra safe distance \[m\]: a skin beyond Chen's radius and buffer, so that
/// a spring loaded by the wind comes to rest before the pieces touch (a linear spring under a
/// steady load keeps the load over K of overlap: without the skin a branch pressed onto
/// another by the wind stays inside it).
pub const DEFAULT_SKIN: f32 = 0.02;
/// The default pair margin \[m\] (`SelfCollisionParams::pair_margin`).
pub const DEFAULT_PAIR_MARGIN: f32 = 0.05;
/// A tree is traversed whole, not queried piece by piece, when more than one in this many
/// of its pieces left their watched k-DOPs.
const REBUILD_FRACTION: usize = 8;
/// Pieces that left their watched k-DOPs are queried this many to a task.
const QUERY_CHUNK: usize = 64;
/// Faces of a stem's prism in the exact interpenetration test (as the modelling pass's
/// default).
pub const PRISM_SIDES: u32 = 6;
/// A pair's spring constant is at most this times m/Δt², m the piece's own segment's
/// effective mass: a lower bound of the mass the force moves (the segment carries its
/// children and leaves), so the cap sits above the single-mass limit of 1/4 (ω·Δt = 1) by the
/// factor the articulated tree's heavier real masses allow (Weber's model stays finite with it
/// in a 25 m/s gusting wind and keeps its leaves and twigs apart, `tests/tests/self_collision.rs`).
pub const STABLE: f32 = 4.0;
/// The cap for a model whose segments' ends are free point masses (Manavi's particles): the
/// single-mass explicit limit, ω·Δt = 1.
pub const PARTICLE_STABLE: f32 = 0.25;
/// A leaf that turns on its own ([`SelfCollision::with_leaves_turning`]) takes each spring on
/// its blade this many times stiffer about its attachment. The model takes the springs'
/// stiffness implicitly in the leaf's own step, so a stiff spring stays stable; at K_s alone a
/// leaf's wind torque in a gale presses the blade through its own twig and its neighbours
/// (Chen's model in the gale of `tests/tests/self_collision.rs`, 300 steps, interpenetrating
/// pair-steps 65,264 without the response; with it, strips from the centrelines' closest
/// points alone: 9,388 at 1, 2,991 at 10, 2,215 at 50, 2,116 at 200; with 4 rounds of
/// alternating projections between the strips, no early stop: 1,455 at 20, 1,285 at 200; with
/// the stop, about 1,200 at 50).
pub const LEAF_TURN_SCALE: f32 = 50.0;
/// The held force's growth per step, as a fraction of the capped spring's force at the pair's
/// depth inside its radii ([`SelfCollision::with_holding`]). Weber's model, gale test seeds 5–8
/// (`tests/tests/self_collision.rs`), interpenetrating pair-steps, and a treeE-sized tree at
/// 10 m/s over 120 steps, interpenetrating pairs a step and branches broken, with the
/// contacts' turns as displacements through y: 0.3 gives 1/16/0/3, 320 and 93; 0.5 gives
/// 4/28/62/0, 343 and 196; 1.0 gives 0/12/38/0, 314 and 360 (1.0 with a pair's held force
/// lost whenever the pair was dropped and found again: 8/20/45/2, 316 and 81). With the turns
/// pulled by springs (`weber::touch::PULL`), 0.3 gives 0/0/3/0, 234 and 103.
pub const HOLD_GAIN: f32 = 0.3;
/// The fraction of its held force a pair keeps for each step it does not respond.
pub const HOLD_FADE: f32 = 0.5;
/// Damping ratio of the response on the closing speed.
pub const DAMPING_RATIO: f32 = 0.5;

/// How self-collision is detected and answered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelfCollisionParams {
    /// The k-DOP bounding the pieces and nodes.
    pub k: DopK,
    /// K_s of Eq. 5.1 \[N/m\].
    pub stiffness: f32,
    /// Added to every piece's safe distance \[m\] (0: Chen's radius plus buffer; by default
    /// [`DEFAULT_SKIN`]).
    pub extra_safe: f32,
    /// Whether each step counts the interpenetrating pairs exactly
    /// (`SelfCollisionStats::close_pairs`): it rebuilds both pieces of every pair closer than
    /// their radii and tests them triangle against triangle, a measurement that on a dense
    /// tree costs several times the method itself, so it is off unless asked for.
    pub count_interpenetrating: bool,
    /// How much farther than its k-DOP a piece is watched for pairs \[m\], beyond where its
    /// last move carries it [`TRACK_AHEAD`] steps on (by default [`DEFAULT_PAIR_MARGIN`]). The
    /// pairs whose watched k-DOPs overlap are kept from step to step; a step finds its
    /// candidates among them, and queries the hierarchy only for the pieces that moved out of
    /// their watched k-DOPs. The candidates are the same for every margin.
    pub pair_margin: f32,
}

impl Default for SelfCollisionParams {
    fn default() -> Self {
        SelfCollisionParams {
            k: DopK::K14,
            stiffness: 200.0,
            extra_safe: DEFAULT_SKIN,
            count_interpenetrating: false,
            pair_margin: DEFAULT_PAIR_MARGIN,
        }
    }
}

impl SelfCollisionParams {
    /// Checks every parameter, naming the one out of range.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(self.stiffness.is_finite() && (0.0..=MAX_STIFFNESS).contains(&self.stiffness)) {
            return Err(SimError::param(
                "self-collision spring constant",
                self.stiffness,
                format!("allowed: 0 to {MAX_STIFFNESS} N/m"),
            ));
        }
        if !(self.extra_safe.is_finite() && (0.0..=MAX_EXTRA_SAFE).contains(&self.extra_safe)) {
            return Err(SimError::param(
                "self-collision safe distance",
                self.extra_safe,
                format!("allowed: 0 to {MAX_EXTRA_SAFE} m"),
            ));
        }
        if !(self.pair_margin.is_finite() && (0.0..=MAX_EXTRA_SAFE).contains(&self.pair_margin)) {
            return Err(SimError::param(
                "self-collision pair margin",
                self.pair_margin,
                format!("allowed: 0 to {MAX_EXTRA_SAFE} m"),
            ));
        }
        Ok(())
    }
}

/// What the last step found and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SelfCollisionStats {
    /// Unconnected pairs whose k-DOPs overlap (the traversal's output).
    pub candidates: usize,
    /// Candidate pairs closer than the sum of their safe distances (given a response force).
    pub responding: usize,
    /// Candidate pairs whose pieces intersect now (interpenetrating, the exact test; 0 unless
    /// `SelfCollisionParams::count_interpenetrating`, see `counted`).
    pub close_pairs: usize,
    /// Whether `close_pairs` was counted this step.
    pub counted: bool,
    /// Pairs kept from step to step (those whose k-DOPs enlarged by the pair margin overlap),
    /// among which the candidates are found.
    pub tracked: usize,
    /// Pieces whose pairs were looked for anew this step (every piece of a tree traversed
    /// whole; otherwise those that left their watched k-DOPs).
    pub requeried: usize,
    /// Trees traversed whole this step.
    pub traversed: usize,
    /// k-DOP pairs the traversal compared.
    pub kdop_tests: u64,
    /// Wall time of the refit of pieces and nodes, the traversal and the response.
    pub refit: Duration,
    pub traverse: Duration,
    pub respond: Duration,
    /// Wall time of the exact interpenetration count (a measurement, not part of the method).
    pub count: Duration,
    /// More kept pairs than the limit ([`MAX_PAIRS`] unless
    /// [`SelfCollision::with_pair_limit`] set another): none was kept or answered this step (a
    /// tree thrown into itself, or a safe distance far beyond the tree's spacing).
    pub overflow: bool,
}

/// The springs' share on a leaf that turns on its own: their torque about its attachment
/// \[N·m\], Σ r × F, and their stiffness about it \[N·m/rad\], Σ K_s·|r|² (r from the
/// attachment to each piece's centre; an upper bound of the stiffness along any axis).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LeafTurn {
    pub torque: Vec3,
    pub stiffness: f32,
}

/// One piece as the runtime bounds it: its owner (tree-local indices) and its stretch (a
/// stem's: metres from its segment's base; a leaf's: fractions of its blade) and radius.
#[derive(Clone, Copy, Debug)]
struct RtPiece {
    owner: Owner,
    t0: f32,
    t1: f32,
    ra: f32,
    rb: f32,
}

/// One tree's pieces, hierarchy and per-step state.
struct TreeSet {
    seg0: u32,
    leaf0: u32,
    /// The tree's leaf width over length (`TreeInfo::leaf_aspect`).
    aspect: f32,
    topo: Topology,
    bvh: Bvh,
    pieces: Vec<RtPiece>,
    /// Per piece: k-DOP (enlarged by the buffer), centreline ends at the last refit, safe
    /// distance, radius.
    kdop: Vec<Kdop>,
    ends: Vec<[Vec3; 2]>,
    /// Per piece: the ends in the pose the self-collision was built in, the mid-point's
    /// displacement in the last step, and the effective mass \[kg\].
    rest_ends: Vec<[Vec3; 2]>,
    /// Per piece: a leaf's blade across its mid-venation, the vector from the mid-venation to
    /// where the outline would be at half-width 1 (`leaf_half_width`), now and in the pose built
    /// in; zero for a stem.
    across: Vec<Vec3>,
    rest_across: Vec<Vec3>,
    moved: Vec<Vec3>,
    mass: Vec<f32>,
    safe: Vec<f32>,
    radius: Vec<f32>,
    /// Per piece: its watched k-DOP (`watched`), made when it last left the one before; the
    /// nodes bound these.
    fat: Vec<Kdop>,
    /// Per piece: it left its watched k-DOP this step, and those pieces in order (scratch).
    escaped: Vec<bool>,
    left: Vec<u32>,
    /// Per node: to be refitted (scratch for `Bvh::refit_above`).
    dirty: Vec<bool>,
    nodes: Vec<Kdop>,
    /// Every unconnected pair whose watched k-DOPs overlap, smaller piece first, with its
    /// rest distance once a step has needed it (NaN before: `TreeSet::answer` finds it).
    tracked: Vec<Tracked>,
    /// The held forces of the pairs dropped this step (pair key `p << 32 | q`, force, step),
    /// sorted: a pair found again takes its own back.
    carried: Vec<(u64, f32, u32)>,
    /// The candidate pairs of the last step: those of `tracked` whose k-DOPs overlap, as
    /// indices into it.
    pairs: Vec<u32>,
    kdop_tests: u64,
    /// Pieces whose pairs the last step looked for anew.
    requeried: usize,
    /// The last refit's positions are not to be trusted (first step, after a reset).
    fresh: bool,
    /// `fat`, `nodes` and `tracked` are to be rebuilt from scratch this step.
    rebuild: bool,
}

/// A pair of pieces (`p` < `q`) and their distance in the pose the self-collision was built
/// in, NaN until first needed; for a model that moves its pieces apart, also their gap there
/// as strips (`TreeSet::blade_contact`), NaN until first needed.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tracked {
    p: u32,
    q: u32,
    rest: f32,
    rest_strips: f32,
    /// The held force of the pair's response when it last responded \[N\]
    /// ([`SelfCollision::with_holding`]), and the step it did (`SelfCollision::steps`).
    hold: f32,
    held: u32,
}

/// Self-collision of every tree of a forest.
pub struct SelfCollision {
    params: SelfCollisionParams,
    /// The cap on a pair's spring, times m/Δt² ([`STABLE`] unless a model sets its own).
    stable: f32,
    /// Whether a segment's pairs share its cap (by the square root of their number: the
    /// articulated cap of [`STABLE`] summed over a leafy twig's many pairs made a 6,000-stem
    /// tree diverge); a model with its own cap ([`with_cap`](Self::with_cap)) does not.
    share: bool,
    /// Per segment of the forest: responding pairs pressing on it this step (scratch).
    pressing: Vec<u32>,
    /// Per segment of the forest: the most held force \[N\] the pairs pressing on it may
    /// keep together ([`with_hold_caps`](Self::with_hold_caps)); empty for no cap.
    hold_caps: Vec<f32>,
    /// Each pair's force passed on to its common ancestor with Eq. 5.2's weights
    /// ([`with_transfer`](Self::with_transfer)), and the weights of the original forces it
    /// leaves per segment (scratch paths with it).
    transfer: Option<Transfer>,
    original: Vec<f32>,
    /// Most pairs kept ([`MAX_PAIRS`] unless set).
    pair_limit: usize,
    /// Whether the model's leaves turn on their own ([`with_leaves_turning`]): each step then
    /// also leaves every leaf's share of the springs in `leaf_turns`.
    ///
    /// [`with_leaves_turning`]: Self::with_leaves_turning
    leaves_turn: bool,
    leaf_turns: Vec<LeafTurn>,
    /// Whether the step lists its contacts ([`with_contacts`](Self::with_contacts)), and the
    /// last step's.
    want_contacts: bool,
    /// Contacts also for the pairs that may close within the step ([`SelfCollision::with_contacts_ahead`]).
    contacts_ahead: bool,
    contacts: Vec<Contact>,
    /// The gain of the held force per step ([`with_holding`](Self::with_holding)), 0 for none.
    holding: f32,
    /// Steps taken (the held forces' clock).
    steps: u32,
    /// Per segment of the forest: it left its tree (a piece broken off, an uprooted tree) and
    /// takes no part ([`set_attached`](Self::set_attached)); empty while none did.
    gone: Vec<bool>,
    trees: Vec<TreeSet>,
    last: SelfCollisionStats,
}

/// Tree `t` of `forest` in `pose` as a skeleton with tree-local indices.
fn skeleton_of(forest: &Forest, pose: &Pose, t: usize) -> Skeleton {
    let tree = &forest.trees[t];
    let (s0, l0) = (tree.segments.start, tree.leaves.start);
    let seg = &forest.seg;
    let mut out = Skeleton::default();
    for g in tree.segments.clone() {
        let i = g as usize;
        let parent = (seg.parent[i] != NO_PARENT).then(|| seg.parent[i] - s0);
        out.segments.push(SkeletonSegment {
            parent,
            base: pose.base[i],
            tip: pose.tip(i, seg.length[i]),
            radius_base: seg.radius_base[i],
            radius_tip: seg.radius_tip[i],
        });
        for j in forest.leaves_of(i) {
            let length = forest.leaf.length_m(j);
            out.leaves.push(SkeletonLeaf {
                segment: g - s0,
                along: forest.leaf.along_f32(j),
                orientation: pose.leaf_orientation(forest, i, j),
                length,
                width: tree.leaf_aspect * length,
            });
        }
    }
    debug_assert_eq!(out.leaves.len(), tree.leaves.len());
    debug_assert!(out.leaves.len() as u32 + l0 == tree.leaves.end);
    out
}

impl SelfCollision {
    /// Self-collision of `forest`'s trees, their structure read in `pose` (the rest pose: a
    /// leaf's root part is where its blade is inside its twig there).
    pub fn new(forest: &Forest, pose: &Pose, params: SelfCollisionParams) -> Result<SelfCollision, SimError> {
        params.validate()?;
        let mut trees = Vec::with_capacity(forest.trees.len());
        for t in 0..forest.trees.len() {
            let skel = skeleton_of(forest, pose, t);
            let topo = Topology::new(&skel);
            let mut pieces = Vec::new();
            let mut of_segment: Vec<Vec<u32>> = vec![Vec::new(); skel.segments.len()];
            for (i, s) in skel.segments.iter().enumerate() {
                let len = s.length();
                let r = |x: f32| s.radius_base + (s.radius_tip - s.radius_base) * (x / len);
                for (root, t0, t1) in topo.stem_parts(i as u32) {
                    if t1 > t0 {
                        of_segment[i].push(pieces.len() as u32);
                        pieces.push(RtPiece {
                            owner: Owner::Stem {
                                segment: i as u32,
                                root,
                            },
                            t0,
                            t1,
                            ra: r(t0),
                            rb: r(t1),
                        });
                    }
                }
            }
            for (j, leaf) in skel.leaves.iter().enumerate() {
                for (root, t0, t1) in topo.leaf_parts(j as u32) {
                    if t1 > t0 {
                        // The longest parallel venation of the part's blade (§5.1).
                        let joints = leaf_joints(root);
                        let half = (0..=joints)
                            .map(|k| leaf_half_width(t0 + (t1 - t0) * k as f32 / joints as f32))
                            .fold(0.0, f32::max)
                            * leaf.width;
                        of_segment[leaf.segment as usize].push(pieces.len() as u32);
                        pieces.push(RtPiece {
                            owner: Owner::Leaf {
                                leaf: j as u32,
                                segment: leaf.segment,
                                root,
                            },
                            t0,
                            t1,
                            ra: half,
                            rb: half,
                        });
                    }
                }
            }
            let radius: Vec<f32> = skel.segments.iter().map(|s| s.radius_base.max(s.radius_tip)).collect();
            let leafy: Vec<bool> = {
                let mut v = vec![false; skel.segments.len()];
                skel.leaves.iter().for_each(|l| v[l.segment as usize] = true);
                v
            };
            let bvh = Bvh::build(
                &topo,
                &radius,
                |s| leafy[s as usize],
                |s| of_segment[s as usize].clone(),
            );
            let n = pieces.len();
            let tree = &forest.trees[t];
            // The ends in the pose built in, taken as every step takes them (so that a pose
            // unchanged since is at its rest distances exactly).
            let (s0, l0) = (tree.segments.start as usize, tree.leaves.start as usize);
            let (rest_ends, rest_across): (Vec<[Vec3; 2]>, Vec<Vec3>) = pieces
                .iter()
                .map(|p| {
                    let f = fit(p, forest, pose, s0, l0, tree.leaf_aspect, params.k);
                    (f.1, f.3)
                })
                .unzip();
            let mass: Vec<f32> = pieces
                .iter()
                .map(|p| forest.seg.end_mass((tree.segments.start + p.owner.segment()) as usize))
                .collect();
            trees.push(TreeSet {
                seg0: tree.segments.start,
                leaf0: tree.leaves.start,
                aspect: tree.leaf_aspect,
                topo,
                nodes: vec![Kdop::empty(params.k); bvh.nodes.len()],
                bvh,
                pieces,
                kdop: vec![Kdop::empty(params.k); n],
                ends: vec![[Vec3::ZERO; 2]; n],
                rest_ends,
                across: vec![Vec3::ZERO; n],
                rest_across,
                moved: vec![Vec3::ZERO; n],
                mass,
                safe: vec![0.0; n],
                radius: vec![0.0; n],
                fat: vec![Kdop::empty(params.k); n],
                escaped: vec![false; n],
                left: Vec::new(),
                dirty: Vec::new(),
                tracked: Vec::new(),
                carried: Vec::new(),
                pairs: Vec::new(),
                kdop_tests: 0,
                requeried: 0,
                fresh: true,
                rebuild: true,
            });
        }
        Ok(SelfCollision {
            params,
            stable: STABLE,
            share: true,
            pressing: Vec::new(),
            hold_caps: Vec::new(),
            transfer: None,
            original: Vec::new(),
            pair_limit: MAX_PAIRS,
            leaves_turn: false,
            leaf_turns: Vec::new(),
            gone: Vec::new(),
            want_contacts: false,
            contacts_ahead: false,
            contacts: Vec::new(),
            holding: 0.0,
            steps: 0,
            trees,
            last: SelfCollisionStats::default(),
        })
    }

    /// Caps each pair's spring at `stable`·m/Δt² instead of [`STABLE`], unshared (a model
    /// whose masses move alone, e.g. [`PARTICLE_STABLE`]); refuses a cap that is not positive and
    /// finite.
    pub fn with_cap(mut self, stable: f32) -> Result<SelfCollision, SimError> {
        crate::error::check_positive("self-collision spring cap", stable, STABLE)?;
        self.stable = stable;
        self.share = false;
        Ok(self)
    }

    /// Keeps at most `most` pairs (within the pair margin) instead of [`MAX_PAIRS`] (beyond it
    /// the step answers none, sets `SelfCollisionStats::overflow` and the next step traverses
    /// anew).
    pub fn with_pair_limit(mut self, most: usize) -> SelfCollision {
        self.pair_limit = most;
        self
    }

    /// For a model whose leaves turn on their own about their attachment (Chen's §4.1): each
    /// step also gives every leaf the torque of the springs on its pieces about its attachment
    /// and their stiffness there ([`leaf_turns`](Self::leaf_turns)), uncapped, for the model to
    /// take implicitly in the leaf's own step. The forces on the leaves' segments stay as
    /// they are (the petiole passes the push on to the twig). A leaf pressed against its own
    /// twig or a leaf beside it is turned away by this alone: the two forces on the one
    /// segment cancel.
    pub fn with_leaves_turning(mut self) -> SelfCollision {
        self.leaves_turn = true;
        self
    }

    /// For a model that keeps its pieces apart by moving them (Manavi's particles, as their
    /// ground and colliders do): each step also lists every candidate pair within its safe
    /// distance as a [`Contact`] ([`contacts`](Self::contacts)), for the model to hold at
    /// its rest length while it moves the pieces through the step. The forces are found as
    /// before; such a model leaves them unused.
    pub fn with_contacts(mut self) -> SelfCollision {
        self.want_contacts = true;
        self
    }

    /// The contacts ([`with_contacts`](Self::with_contacts)) also hold the pairs that may
    /// close within the step: a pair that holds a leaf gets its strips' contact while its
    /// strips lie within the pieces' buffers (the most each moved in the last step, scaled by
    /// [`BUFFER_SCALE`]) of its rest length, not only once they are nearer than it. For a
    /// model that holds its contacts pass after pass as it moves the pieces through the step
    /// (Manavi's): a blade flapping onto a twig closes 3 to 5 cm in a step of a gale, and a
    /// contact made only for the pairs already inside their rest length comes a step late.
    /// (A model that holds its contacts once, where the step starts, has no use for them.)
    pub fn with_contacts_ahead(mut self) -> SelfCollision {
        self.want_contacts = true;
        self.contacts_ahead = true;
        self
    }

    /// Each responding pair also pushes with a held force: it grows each step the pair is
    /// inside its pieces' radii (by [`HOLD_GAIN`] times the capped spring constant times the
    /// depth), fades by [`HOLD_FADE`] each step the pair is outside them or not responding,
    /// and is kept with the pair from step to step (also when the pair is dropped and found
    /// again in the same step): an integral of the spring's push. A spring capped for
    /// stability on a light twig holds only its cap times its overlap, less than a gale's push
    /// on the twig's leaves; the held force grows to the push it meets while its stiffness stays
    /// the capped spring's. For a model that takes the forces (Weber's).
    pub fn with_holding(mut self) -> SelfCollision {
        self.holding = HOLD_GAIN;
        self
    }

    /// Caps the held forces ([`with_holding`](Self::with_holding)) on each segment: `caps[i]`
    /// \[N\] is the most the pairs pressing on segment i of the forest keep together (each
    /// pair's held force at most the smaller of its two segments' caps over the larger number
    /// of responding pairs on either). A held force grows for as long as its pair stays inside
    /// its radii; a model whose joints break (Weber's) caps it at a share of what the joints
    /// below the pair can carry, so that a pair pressed together by a gale is not pushed apart
    /// by a force that breaks the twig it hangs from. Fails unless there is one cap per
    /// segment, each 0 or more (infinite for none).
    pub fn with_hold_caps(mut self, forest: &Forest, caps: Vec<f32>) -> Result<SelfCollision, SimError> {
        if caps.len() != forest.segment_count() {
            return Err(SimError::param(
                "self-collision held-force caps",
                caps.len() as f32,
                format!("allowed: one per segment, {}", forest.segment_count()),
            ));
        }
        if let Some(&bad) = caps.iter().find(|&&c| c.is_nan() || c < 0.0) {
            return Err(SimError::param(
                "self-collision held-force cap",
                bad,
                "allowed: 0 N or more, infinite for none".to_string(),
            ));
        }
        self.hold_caps = caps;
        Ok(self)
    }

    /// Passes each pair's force on from the segment it acts on to the pair's common ancestor,
    /// as Chen does (§5.2, Fig. 5.3: so that a parent that pulls a primitive the wrong way
    /// takes the push too), with the weights of Eq. 5.2: on the segment a piece acts on the
    /// force times `p2` and the segment's original forces (F_W + F_G + F_T + F_Restore) times
    /// `p1`; along the path to the common ancestor the response's weight falls linearly to 0
    /// and the original's rises to 1 (a stem far from the pair: P1 up, P2 down), where the
    /// two pieces' forces, equal and opposite, would cancel. A segment on several pairs' paths
    /// sums their weighted forces and keeps the least original weight
    /// ([`original_weights`](Self::original_weights)). For a model whose segments do not pass
    /// forces to their parents by their own mechanics (Chen's). Fails unless both weights
    /// lie in 0 to 1.
    pub fn with_transfer(mut self, forest: &Forest, (p1, p2): (f32, f32)) -> Result<SelfCollision, SimError> {
        let weights = [
            ("self-collision response weight P1 (Eq. 5.2)", p1),
            ("self-collision response weight P2 (Eq. 5.2)", p2),
        ];
        for (name, w) in weights {
            if !(0.0..=1.0).contains(&w) {
                return Err(SimError::param(name, w, "allowed: 0 to 1"));
            }
        }
        self.transfer = Some(Transfer {
            p1,
            p2,
            depth: forest.depths(),
            paths: [Vec::new(), Vec::new()],
        });
        Ok(self)
    }

    /// Per segment of the forest after a step, with [`with_transfer`](Self::with_transfer):
    /// the weight P1 of Eq. 5.2 on its original forces (1 where no pair's path reached it);
    /// empty otherwise.
    pub fn original_weights(&self) -> &[f32] {
        &self.original
    }

    /// The last step's contacts (empty unless [`with_contacts`](Self::with_contacts)), in an
    /// order that does not depend on the workers.
    pub fn contacts(&self) -> &[Contact] {
        &self.contacts
    }

    /// Per leaf of the forest after a step (empty unless
    /// [`with_leaves_turning`](Self::with_leaves_turning)): the springs' torque about its
    /// attachment and their stiffness there.
    pub fn leaf_turns(&self) -> &[LeafTurn] {
        &self.leaf_turns
    }

    /// Leaves out, from the next step on, every piece of a segment that no longer hangs from
    /// its tree and of the leaves on it: `attached(i)` tells whether segment `i` still hangs
    /// from its parent (`DynamicsModel::attached`: false for the first segment of a piece
    /// broken off and for an uprooted tree's root), and every segment beyond one that does
    /// not is gone with it. A broken piece is debris, a body of its own: the springs, whose
    /// rest lengths are the standing tree's, would hold it to the tree it fell from, or throw
    /// it and, through the breaking thresholds, break the branches it falls past.
    pub fn set_attached(&mut self, forest: &Forest, attached: impl Fn(usize) -> bool) {
        let n = forest.segment_count();
        self.gone.clear();
        self.gone.resize(n, false);
        let mut any = false;
        for i in 0..n {
            // Parents come first in the forest.
            let p = forest.seg.parent[i];
            let gone = !attached(i) || (p != NO_PARENT && self.gone[p as usize]);
            self.gone[i] = gone;
            any |= gone;
        }
        if !any {
            self.gone.clear();
        }
    }

    /// The parameters.
    pub fn params(&self) -> &SelfCollisionParams {
        &self.params
    }

    /// What the last step found and cost.
    pub fn stats(&self) -> SelfCollisionStats {
        self.last
    }

    /// Forgets the last refit's positions (after a reset: the next buffers start from 0).
    pub fn restart(&mut self) {
        for t in &mut self.trees {
            t.fresh = true;
            t.rebuild = true;
        }
    }

    /// Refits every piece and node to `pose`, collects the candidate pairs and adds each
    /// response force for a step of `dt` \[s\] to `forces` (one per segment of the forest,
    /// \[N\] at its centre).
    pub fn step(&mut self, jobs: &JobSystem, forest: &Forest, pose: &Pose, dt: f32, forces: &mut [Vec3]) {
        let k = self.params.k;
        let (extra, margin) = (self.params.extra_safe, self.params.pair_margin);
        let t0 = Instant::now();
        for tree in &mut self.trees {
            refit_pieces(jobs, tree, (forest, pose, &self.gone), k, extra);
        }
        // Pieces that left their watched k-DOPs are watched anew around where they are
        // (all of a tree's when it is rebuilt, or when so many left that one traversal costs
        // less than their queries), and the nodes refitted over the watched k-DOPs.
        let mut trees: Vec<&mut TreeSet> = self.trees.iter_mut().collect();
        jobs.for_each_mut(&mut trees, |_, t| {
            t.left.clear();
            t.left
                .extend((0..t.pieces.len() as u32).filter(|&i| t.escaped[i as usize]));
            t.rebuild |= t.left.len() * REBUILD_FRACTION > t.pieces.len();
            t.requeried = if t.rebuild { t.pieces.len() } else { t.left.len() };
            if t.rebuild {
                for ((fat, kdop), &moved) in t.fat.iter_mut().zip(&t.kdop).zip(&t.moved) {
                    *fat = watched(kdop, moved, margin);
                }
                t.bvh.refit(&t.fat, &mut t.nodes);
            } else {
                for &i in &t.left {
                    t.fat[i as usize] = watched(&t.kdop[i as usize], t.moved[i as usize], margin);
                }
                t.bvh.refit_above(&t.left, (&t.fat, &mut t.nodes), &mut t.dirty);
            }
        });
        let t1 = Instant::now();
        // The tracked pairs brought up to date: a rebuilt tree's from its whole traversal
        // (the root opened TASK_DEPTH levels down into tasks), another's by dropping the pairs
        // of the pieces that left and querying the hierarchy with each of them. The tasks of
        // every tree run at once, each with its own output, joined in the tasks' order, so the
        // pairs come out in an order that does not depend on the workers.
        let mut tasks: Vec<TraversalTask> = Vec::new();
        let mut kept = 0;
        let traversed = trees.iter().filter(|t| t.rebuild).count();
        let carry = self.holding > 0.0;
        for (n, t) in trees.iter_mut().enumerate() {
            // The held forces of the pairs about to be dropped, for the pairs found again.
            t.carried.clear();
            if carry {
                let escaped = &t.escaped;
                let dropped = |x: &&Tracked| t.rebuild || escaped[x.p as usize] || escaped[x.q as usize];
                t.carried.extend(
                    t.tracked
                        .iter()
                        .filter(|x| x.hold > 0.0)
                        .filter(dropped)
                        .map(|x| (pair_key(x.p, x.q), x.hold, x.held)),
                );
                t.carried.sort_unstable_by_key(|c| c.0);
            }
            if t.rebuild {
                t.tracked.clear();
                let jobs = t.bvh.tasks(TASK_DEPTH).into_iter().map(Job::Traverse);
                tasks.extend(jobs.map(|job| (n, job, Vec::new(), None)));
            } else {
                let escaped = &t.escaped;
                t.tracked.retain(|x| !escaped[x.p as usize] && !escaped[x.q as usize]);
                for start in (0..t.left.len()).step_by(QUERY_CHUNK) {
                    let range = start..(start + QUERY_CHUNK).min(t.left.len());
                    tasks.push((n, Job::Query(range), Vec::new(), None));
                }
            }
            kept += t.tracked.len();
        }
        // The tasks' running count of pairs, so that a tree thrown into itself (a diverged
        // pose, an absurd safe distance) cannot fill the memory with pairs: past the limit
        // (plus the batches still uncounted) the tasks stop.
        let found = AtomicUsize::new(kept);
        let most = self.pair_limit;
        let hard = most + LIMIT_BATCH * tasks.len().min(jobs.threads() * 4);
        {
            let (trees, found) = (&trees, &found);
            jobs.for_each_mut(&mut tasks, |_, (n, job, out, tests)| {
                let t = &*trees[*n];
                let (topo, pieces) = (&t.topo, &t.pieces);
                let connected = |p: u32, q: u32| topo.connected(pieces[p as usize].owner, pieces[q as usize].owner);
                *tests = match job {
                    Job::Traverse(task) => t
                        .bvh
                        .task_pairs(*task, (&t.fat, &t.nodes), connected, out, (found, hard)),
                    Job::Query(range) => t.query_pairs(&t.left[range.clone()], connected, out, (found, hard)),
                };
            });
        }
        // Over the limit (decided on the whole count, so on any number of workers alike):
        // no pair is answered this step, the stats say so and the next step rebuilds.
        let total: usize = kept + tasks.iter().map(|task| task.2.len()).sum::<usize>();
        let overflow = total > most || tasks.iter().any(|task| task.3.is_none());
        for t in trees.iter_mut() {
            t.kdop_tests = 0;
            if overflow {
                t.tracked = Vec::new();
            }
            t.rebuild = overflow;
        }
        for (n, _, out, tests) in &tasks {
            let t = &mut trees[*n];
            t.kdop_tests += tests.unwrap_or(0);
            if !overflow {
                let rest = f32::NAN;
                let carried = &t.carried;
                t.tracked.extend(out.iter().map(|&(p, q)| {
                    let (hold, held) = match carried.binary_search_by_key(&pair_key(p, q), |c| c.0) {
                        Ok(i) => (carried[i].1, carried[i].2),
                        Err(_) => (0.0, 0),
                    };
                    Tracked {
                        p,
                        q,
                        rest,
                        rest_strips: f32::NAN,
                        hold,
                        held,
                    }
                }));
            }
        }
        drop(tasks);
        // The candidates: the tracked pairs whose k-DOPs overlap now.
        const FILTER_CHUNK: usize = 8192;
        let mut chunks: Vec<(usize, usize, Vec<u32>)> = Vec::new();
        for (n, t) in trees.iter_mut().enumerate() {
            t.kdop_tests += t.tracked.len() as u64;
            chunks.extend(
                (0..t.tracked.len())
                    .step_by(FILTER_CHUNK)
                    .map(|start| (n, start, Vec::new())),
            );
        }
        {
            let trees = &trees;
            jobs.for_each_mut(&mut chunks, |_, (n, start, out)| {
                let t = &*trees[*n];
                let end = (*start + FILTER_CHUNK).min(t.tracked.len());
                for (i, x) in t.tracked[*start..end].iter().enumerate() {
                    if t.kdop[x.p as usize].overlaps(&t.kdop[x.q as usize]) {
                        out.push((*start + i) as u32);
                    }
                }
            });
        }
        for t in trees.iter_mut() {
            t.pairs.clear();
        }
        for (n, _, out) in chunks {
            trees[n].pairs.extend(out);
        }
        drop(trees);
        let t2 = Instant::now();
        let mut stats = SelfCollisionStats {
            overflow,
            traversed,
            ..SelfCollisionStats::default()
        };
        // The pairs in chunks, answered in parallel into per-chunk lists of forces, then added
        // to the segments in the pairs' order (the sums' bits do not depend on the workers).
        const CHUNK: usize = 2048;
        let (params, stable) = (&self.params, self.stable);
        let mut chunks: Vec<(usize, std::ops::Range<usize>, Answer)> = Vec::new();
        for (k, t) in self.trees.iter().enumerate() {
            stats.candidates += t.pairs.len();
            stats.tracked += t.tracked.len();
            stats.requeried += t.requeried;
            stats.kdop_tests += t.kdop_tests;
            for start in (0..t.pairs.len()).step_by(CHUNK) {
                chunks.push((k, start..(start + CHUNK).min(t.pairs.len()), Answer::default()));
            }
        }
        let trees = &self.trees;
        let turning = self.leaves_turn.then_some(pose);
        let want_contacts = (self.want_contacts, self.contacts_ahead);
        self.steps = self.steps.wrapping_add(1);
        let step = self.steps;
        jobs.for_each_mut(&mut chunks, |_, (k, range, answer)| {
            let t = &trees[*k];
            for &i in &t.pairs[range.clone()] {
                t.answer(i, (params, dt, turning, want_contacts, step), answer);
            }
        });
        // The rest distances the answers found, kept with their pairs.
        for (k, _, answer) in &chunks {
            let t = &mut self.trees[*k];
            for &(i, rest) in &answer.strip_rests {
                t.tracked[i as usize].rest_strips = rest;
            }
            for &(i, rest) in &answer.rests {
                t.tracked[i as usize].rest = rest;
            }
        }
        self.contacts.clear();
        for (_, _, answer) in &mut chunks {
            self.contacts.append(&mut answer.contacts);
        }
        // A segment pressed by many pairs at once (a leafy twig: each of its leaves' pairs)
        // shares its stability cap among them: each pair's spring is capped at the cap over
        // the square root of the larger number of responding pairs on its two segments.
        self.pressing.clear();
        self.pressing.resize(forces.len(), 0);
        for (_, _, answer) in &chunks {
            stats.responding += answer.springs.len();
            for s in &answer.springs {
                self.pressing[s.seg[0] as usize] += 1;
                self.pressing[s.seg[1] as usize] += 1;
            }
        }
        // Eq. 5.1, each spring capped for stability and damped on the closing speed, in
        // parallel; then added to the segments in the pairs' order.
        let (pressing, share, holding) = (&self.pressing, self.share, self.holding);
        let caps = &self.hold_caps;
        jobs.for_each_mut(&mut chunks, |_, (_, _, answer)| {
            for s in &mut answer.springs {
                let shared = if share {
                    (pressing[s.seg[0] as usize].max(pressing[s.seg[1] as usize]) as f32).sqrt()
                } else {
                    1.0
                };
                let stiff = params.stiffness.min(stable * s.mass / (dt * dt) / shared);
                let damp = 2.0 * DAMPING_RATIO * (stiff * s.mass).sqrt();
                s.hold = if holding == 0.0 {
                    0.0
                } else if s.deep > 0.0 {
                    s.hold + holding * stiff * s.deep
                } else {
                    s.hold * HOLD_FADE
                };
                if !caps.is_empty() {
                    let [a, b] = s.seg.map(|g| g as usize);
                    s.hold = s.hold.min(caps[a].min(caps[b]) / pressing[a].max(pressing[b]) as f32);
                }
                s.force = s.dir * (stiff * s.overlap + damp * s.closing + s.hold);
            }
        });
        self.leaf_turns.clear();
        if self.leaves_turn {
            self.leaf_turns.resize(forest.leaf_count(), LeafTurn::default());
        }
        if holding > 0.0 {
            for (k, _, answer) in &chunks {
                let t = &mut self.trees[*k];
                for s in &answer.springs {
                    let pair = &mut t.tracked[s.index as usize];
                    pair.hold = s.hold;
                    pair.held = step;
                }
            }
        }
        if self.transfer.is_some() {
            self.original.clear();
            self.original.resize(forces.len(), 1.0);
        }
        for (_, _, answer) in &chunks {
            for s in &answer.springs {
                match &mut self.transfer {
                    Some(t) => t.pass_on(&forest.seg.parent, (s.seg, s.force), forces, &mut self.original),
                    None => {
                        forces[s.seg[0] as usize] += s.force;
                        forces[s.seg[1] as usize] -= s.force;
                    }
                }
                for (&j, part) in s.leaf.iter().zip(&s.turn) {
                    if j != NO_LEAF {
                        let turn = &mut self.leaf_turns[j as usize];
                        turn.torque += part.torque;
                        turn.stiffness += part.stiffness;
                    }
                }
            }
        }
        let t3 = Instant::now();
        if self.params.count_interpenetrating {
            stats.counted = true;
            // The exact test, in parallel chunks of the pairs closer than their radii: a
            // measurement of the response's effect, not part of it.
            let k = self.params.k;
            let trees = &self.trees;
            let mut near: Vec<NearChunk<'_>> = chunks
                .iter()
                .flat_map(|(t, _, answer)| answer.near.chunks(256).map(move |c| (*t, c, 0)))
                .collect();
            jobs.for_each_mut(&mut near, |_, (t, pairs, close)| {
                let t = &trees[*t];
                *close = pairs
                    .iter()
                    .filter(|&&(p, q)| {
                        let (p, q) = (p as usize, q as usize);
                        intersect(&t.piece_now(forest, pose, p, k), &t.piece_now(forest, pose, q, k))
                    })
                    .count();
            });
            stats.close_pairs = near.iter().map(|n| n.2).sum();
        }
        let t4 = Instant::now();
        stats.refit = t1 - t0;
        stats.traverse = t2 - t1;
        stats.respond = t3 - t2;
        stats.count = t4 - t3;
        self.last = stats;
    }

    /// Every candidate pair of the last step as (tree, piece, piece), for tests.
    pub fn candidates(&self) -> Vec<(usize, u32, u32)> {
        let mut out = Vec::new();
        for (t, tree) in self.trees.iter().enumerate() {
            out.extend(
                tree.pairs
                    .iter()
                    .map(|&i| (t, tree.tracked[i as usize].p, tree.tracked[i as usize].q)),
            );
        }
        out
    }

    /// Every unconnected pair of pieces whose k-DOPs overlap after the last step, found by
    /// comparing every pair, as (tree, piece, piece): what the hierarchy must find.
    pub fn brute_force_candidates(&self) -> Vec<(usize, u32, u32)> {
        let mut out = Vec::new();
        for (t, tree) in self.trees.iter().enumerate() {
            let n = tree.pieces.len() as u32;
            for p in 0..n {
                for q in p + 1..n {
                    let (a, b) = (tree.pieces[p as usize].owner, tree.pieces[q as usize].owner);
                    if tree.kdop[p as usize].overlaps(&tree.kdop[q as usize]) && !tree.topo.connected(a, b) {
                        out.push((t, p, q));
                    }
                }
            }
        }
        out
    }

    /// Per leaf of the forest: the fraction of its blade, from its attachment, that is its
    /// root part (inside its twig in the shape it grew in, `Topology::leaf_root`).
    pub fn leaf_roots(&self) -> Vec<f32> {
        let mut out = Vec::new();
        for t in &self.trees {
            debug_assert_eq!(out.len(), t.leaf0 as usize);
            out.extend((0..t.topo.leaf_count() as u32).map(|j| t.topo.leaf_root(j)));
        }
        out
    }

    /// Pieces of every tree (two per segment and leaf, fewer where a part is empty).
    pub fn piece_count(&self) -> usize {
        self.trees.iter().map(|t| t.pieces.len()).sum()
    }
}

/// The k-DOP within which a piece whose k-DOP is `kdop` and whose last step moved it by
/// `moved` is watched for pairs: swept [`TRACK_AHEAD`] steps on along its move and enlarged
/// by `margin`; a margin of 0 watches the k-DOP itself (nothing is kept that a moving piece
/// does not leave: Chen's traversal every step).
fn watched(kdop: &Kdop, moved: Vec3, margin: f32) -> Kdop {
    if margin > 0.0 {
        kdop.swept([moved * TRACK_AHEAD; 2]).enlarged(margin)
    } else {
        *kdop
    }
}

/// Refits tree `t`'s pieces to `pose` on `jobs`, noting those that left their enlarged
/// k-DOPs (each piece on its own, so the split into jobs changes nothing).
fn refit_pieces(
    jobs: &JobSystem,
    t: &mut TreeSet,
    (forest, pose, gone): (&Forest, &Pose, &[bool]),
    k: DopK,
    extra: f32,
) {
    const CHUNK: usize = 1024;
    let fresh = std::mem::replace(&mut t.fresh, false);
    let (seg0, leaf0, aspect) = (t.seg0 as usize, t.leaf0 as usize, t.aspect);
    let (pieces, fat) = (&t.pieces, &t.fat);
    let mut chunks: Vec<_> = t
        .kdop
        .chunks_mut(CHUNK)
        .zip(t.escaped.chunks_mut(CHUNK))
        .zip(t.ends.chunks_mut(CHUNK))
        .zip(t.moved.chunks_mut(CHUNK))
        .zip(t.safe.chunks_mut(CHUNK))
        .zip(t.radius.chunks_mut(CHUNK).zip(t.across.chunks_mut(CHUNK)))
        .enumerate()
        .collect();
    jobs.for_each_mut(
        &mut chunks,
        |_, (c, (((((kdop, escaped), ends), moved), safe), (radius, across)))| {
            let start = *c * CHUNK;
            for i in 0..kdop.len() {
                let (box_, e, r, a) = fit(&pieces[start + i], forest, pose, seg0, leaf0, aspect, k);
                let shift = if fresh {
                    Vec3::ZERO
                } else {
                    0.5 * ((e[0] - ends[i][0]) + (e[1] - ends[i][1]))
                };
                let most = if fresh {
                    0.0
                } else {
                    (e[0] - ends[i][0]).length().max((e[1] - ends[i][1]).length())
                };
                moved[i] = shift;
                let buffer = BUFFER_SCALE * most;
                // A piece gone from its tree bounds nothing: it overlaps nothing and stays
                // inside its watched k-DOP.
                let left = !gone.is_empty() && gone[seg0 + pieces[start + i].owner.segment() as usize];
                kdop[i] = if left {
                    Kdop::empty(k)
                } else {
                    let ahead = if fresh {
                        [Vec3::ZERO; 2]
                    } else {
                        [(e[0] - ends[i][0]) * BUFFER_SCALE, (e[1] - ends[i][1]) * BUFFER_SCALE]
                    };
                    box_.swept(ahead).enlarged(extra)
                };
                escaped[i] = !fat[start + i].contains(&kdop[i]);
                ends[i] = e;
                safe[i] = r + buffer + extra;
                radius[i] = r;
                across[i] = a;
            }
        },
    );
}

/// Piece `p` of the tree whose first segment and leaf are `seg0` and `leaf0` in `pose`: its
/// k-DOP (not enlarged), its centreline ends and its radius (a leaf's: the half-width of its
/// part's blade, as `blade` builds it).
fn fit(
    p: &RtPiece,
    forest: &Forest,
    pose: &Pose,
    seg0: usize,
    leaf0: usize,
    aspect: f32,
    k: DopK,
) -> (Kdop, [Vec3; 2], f32, Vec3) {
    match p.owner {
        Owner::Stem { segment, .. } => {
            let g = seg0 + segment as usize;
            let axis = segment_axis(pose.orient[g]);
            let (a, b) = (pose.base[g] + axis * p.t0, pose.base[g] + axis * p.t1);
            (
                Kdop::of_frustum(k, a, b, p.ra, p.rb),
                [a, b],
                p.ra.max(p.rb),
                Vec3::ZERO,
            )
        }
        Owner::Leaf { leaf, segment, root } => {
            let (gj, gs) = (leaf0 + leaf as usize, seg0 + segment as usize);
            let q: Quat = pose.leaf_orientation(forest, gs, gj);
            let attach = pose.leaf_pos[gj];
            let length = forest.leaf.length_m(gj);
            let width = aspect * length;
            let kd = blade_kdop(k, attach, q, (length, width), (p.t0, p.t1), leaf_joints(root));
            let along = q * Vec3::Y * length;
            let across = q * Vec3::X * width;
            (kd, [attach + along * p.t0, attach + along * p.t1], p.ra, across)
        }
    }
}

/// A chunk of the pairs closer than their radii for the exact count: its tree, the pairs and
/// how many of them interpenetrate.
type NearChunk<'a> = (usize, &'a [(u32, u32)], usize);

/// One task of a step's traversal: its tree, the job, the pairs it found and the k-DOP
/// pairs it compared (`None`: it stopped at the pair limit).
type TraversalTask = (usize, Job, Vec<(u32, u32)>, Option<u64>);

/// What a traversal task does: a task of a whole traversal of the watched k-DOPs, or the
/// queries of some of the pieces that left theirs (a stretch of `TreeSet::left`).
enum Job {
    Traverse(Task),
    Query(std::ops::Range<usize>),
}

/// What one chunk of candidate pairs answered: the pairs closer than their radii (the only ones
/// that can interpenetrate, for the count), and the response force on each pair's first piece
/// (the second takes its opposite).
#[derive(Default)]
struct Answer {
    near: Vec<(u32, u32)>,
    springs: Vec<Spring>,
    contacts: Vec<Contact>,
    /// The rest distances found this step: (index into `TreeSet::tracked`, distance), and
    /// the rest gaps as strips.
    rests: Vec<(u32, f32)>,
    strip_rests: Vec<(u32, f32)>,
}

/// One responding pair: the segments it pushes, the direction of the push on the first (see
/// `TreeSet::answer`), how far it is inside its rest length \[m\], its closing speed \[m/s\]
/// and the lighter piece's effective mass \[kg\].
struct Spring {
    /// The segments of the forest the two pieces act on (a leaf's: the one it hangs from).
    seg: [u32; 2],
    dir: Vec3,
    overlap: f32,
    closing: f32,
    mass: f32,
    /// The force on the first piece's segment \[N\] (the second takes its opposite), once
    /// capped and damped.
    force: Vec3,
    /// Per piece, for a model whose leaves turn on their own: the leaf of the forest it
    /// belongs to ([`NO_LEAF`] for a stem, or when leaves do not turn), and the spring's torque
    /// and stiffness about the leaf's attachment (lever from it to the piece's centre).
    leaf: [u32; 2],
    turn: [LeafTurn; 2],
    /// The pair's index in `TreeSet::tracked`, and its held force \[N\]: what it kept from its
    /// last response (faded since), then this step's.
    index: u32,
    hold: f32,
    /// How far the pair is inside its pieces' radii \[m\] (negative: outside): the held force
    /// grows only while it is.
    deep: f32,
}

/// Eq. 5.2's weights and what passing a pair's force on to its common ancestor needs: each
/// segment's depth below its tree's root (`Forest::depths`) and two scratch paths.
struct Transfer {
    p1: f32,
    p2: f32,
    depth: Vec<u32>,
    paths: [Vec<u32>; 2],
}

impl Transfer {
    /// Adds `force` on the first of `seg` and its opposite on the second, each along the
    /// path (up the forest's `parent`s) from its segment to the two's common ancestor (that
    /// excluded), weighted (Chen 2011 Fig. 5.3 and Eq. 5.2): h steps up a path of n,
    /// P2·(1 − h/n) of the force, and the segment's original forces' weight at most
    /// P1 + (1 − P1)·h/n in `original`.
    fn pass_on(&mut self, parent: &[u32], (seg, force): ([u32; 2], Vec3), forces: &mut [Vec3], original: &mut [f32]) {
        let depth = &self.depth;
        let [pa, pb] = &mut self.paths;
        pa.clear();
        pb.clear();
        let [mut a, mut b] = seg;
        while depth[a as usize] > depth[b as usize] {
            pa.push(a);
            a = parent[a as usize];
        }
        while depth[b as usize] > depth[a as usize] {
            pb.push(b);
            b = parent[b as usize];
        }
        // Segments of one tree meet at its root at the latest (a pair never spans two trees).
        while a != b {
            pa.push(a);
            pb.push(b);
            a = parent[a as usize];
            b = parent[b as usize];
        }
        for (path, f) in [(&*pa, force), (&*pb, -force)] {
            let n = path.len() as f32;
            for (h, &g) in path.iter().enumerate() {
                let t = h as f32 / n;
                forces[g as usize] += f * (self.p2 * (1.0 - t));
                let w = &mut original[g as usize];
                *w = w.min(self.p1 + (1.0 - self.p1) * t);
            }
        }
    }
}

/// A pair of pieces as one key, whichever comes first.
fn pair_key(p: u32, q: u32) -> u64 {
    ((p.min(q) as u64) << 32) | p.max(q) as u64
}

/// No leaf (a stem piece's `Spring::leaf`).
const NO_LEAF: u32 = u32::MAX;

impl TreeSet {
    /// The pairs of each piece of `left` (pieces that left their watched k-DOPs this step):
    /// the unconnected pieces whose watched k-DOPs overlap its own, found by querying the
    /// hierarchy, a pair of two such pieces only from the smaller's query; into `out`
    /// (smaller piece first), with the number of k-DOP pairs compared, `None` if the running
    /// count passed the limit (as [`Bvh::task_pairs`]).
    fn query_pairs(
        &self,
        left: &[u32],
        connected: impl Fn(u32, u32) -> bool,
        out: &mut Vec<(u32, u32)>,
        (count, most): (&AtomicUsize, usize),
    ) -> Option<u64> {
        let mut stack = Vec::new();
        let mut tests = 0;
        for &i in left {
            let before = out.len();
            tests += self
                .bvh
                .query(&self.fat[i as usize], (&self.fat, &self.nodes), &mut stack, |j| {
                    if j != i && (!self.escaped[j as usize] || i < j) && !connected(i, j) {
                        out.push((i.min(j), i.max(j)));
                    }
                });
            let new = out.len() - before;
            if new > 0 && count.fetch_add(new, std::sync::atomic::Ordering::Relaxed) + new > most {
                return None;
            }
        }
        Some(tests)
    }

    /// Whether piece `i` is a leaf's.
    fn is_leaf(&self, i: usize) -> bool {
        matches!(self.pieces[i].owner, Owner::Leaf { .. })
    }

    /// Piece `i`'s radius about its strip: a stem's radius, 0 for a blade.
    fn core(&self, i: usize) -> f32 {
        match self.pieces[i].owner {
            Owner::Stem { .. } => self.radius[i],
            Owner::Leaf { .. } => 0.0,
        }
    }

    /// Piece `i` rebuilt in `pose` (a prism of [`PRISM_SIDES`] faces, a blade), for the exact
    /// test.
    fn piece_now(&self, forest: &Forest, pose: &Pose, i: usize, k: DopK) -> Piece {
        let p = &self.pieces[i];
        let [a, b] = self.ends[i];
        match p.owner {
            Owner::Stem { segment, .. } => {
                let axis = segment_axis(pose.orient[(self.seg0 + segment) as usize]);
                Piece::new(
                    p.owner,
                    Shape::Prism(Prism::new(a, b, p.ra, p.rb, PRISM_SIDES, axis)),
                    k,
                    [a, b],
                )
            }
            Owner::Leaf { leaf, segment, root } => {
                let (gj, gs) = ((self.leaf0 + leaf) as usize, (self.seg0 + segment) as usize);
                let q = pose.leaf_orientation(forest, gs, gj);
                let length = forest.leaf.length_m(gj);
                let width = self.aspect * length;
                let tris = blade(pose.leaf_pos[gj], q, length, width, p.t0, p.t1, leaf_joints(root));
                Piece::new(p.owner, Shape::Blade(tris), k, [a, b])
            }
        }
    }
}

impl std::fmt::Debug for SelfCollision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfCollision")
            .field("params", &self.params)
            .field("trees", &self.trees.len())
            .field("last", &self.last)
            .finish()
    }
}

#[cfg(test)]
mod tests;
