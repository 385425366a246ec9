//! Manavi's particle-and-constraint tree (Manavi 2007, Figure 1: "Branch Structure",
//! "Branching Plane Structure", "Connecting Branches", "Root Structure"), built from a forest's
//! segments.
//!
//! What becomes what:
//! - A *branch* is a chain of segments: a segment continues its parent's branch when it is
//!   the parent's thickest child (the first of equals), and starts a branch of its own
//!   otherwise. Every tree's root segment starts its trunk.
//! - *Skeletal particles*: one at every segment's tip, and one at each tree's root (the
//!   trunk's base). A segment's base is its parent's tip particle, so a branch's first skeletal
//!   particle is shared with its parent branch. The thesis's skeletal spacing is the
//!   generator's segment length.
//! - *Skeletal constraints*: one per segment, base to tip.
//! - *Branching plane*: at a branch's base, its centre (the shared skeletal particle) and four
//!   *structural particles* at ± `plane_scale`·r along the plane's tangent and bitangent (the
//!   branch's rest frame's x and z; its normal, y, is the branch's direction). Eight *plane
//!   constraints* keep it rigid in its plane: centre to each, and around the rim.
//! - *Structural constraints*: from every skeletal particle of a branch to each of its plane's
//!   four structural particles; they carry the bending.
//! - *Connecting branches*: a child's plane is tied to its parent's skeletal particles just
//!   below and just above its centre (the thesis's three shared particles: the centre and
//!   these two, whose constraint between them the parent keeps), each structural particle
//!   constrained to both, and to the parent plane's first structural particle (its first two
//!   where the parent's chain has only one neighbour of the centre), so the plane cannot spin
//!   about its parent's axis.
//! - *Breaking off* (the thesis's "Breaking Branches"): every branch but a trunk has a *twin*
//!   particle, unused until the branch breaks; then the twin takes the shared centre's place
//!   in every constraint of the branch and of the branches beyond it, and the constraints that
//!   tie them to the rest of the tree are dropped.
//! - *Root structure*: four static anchor particles, each splayed outward and down at 45° from
//!   one of the trunk plane's structural particles at `root_length`·r, with one root
//!   constraint each that is cut once it stretches past `root_stretch` of its length.
//!
//! Masses and drag: a segment's mass (wood and leaves) and its linear drag go half to its base
//! particle and half to its tip particle; structural and anchor particles carry none (they are
//! the thesis's geometric helpers: gravity moves them, the wind does not).
//!
//! Invariants: positions are relative to each tree's root (`TreeLayout::origin`); a tree's
//! particles are contiguous, in the order: its skeletal particles (root first, then one per
//! segment in the forest's order, so segment `i`'s tip is particle `1 + i − first segment`),
//! then one twin per branch after the trunk (in branch order), then its structural particles
//! (the trunk's plane first), then its four anchors. A tree's branches are in the order of
//! their first segments, so a parent comes before its children. Constraint
//! and root ends are indices inside the tree's particles. A tree's constraints are sorted by
//! their number of relaxation passes, most first (stably, so each class keeps the build
//! order: branches root to tips), so pass `k` relaxes a prefix of them.

use std::ops::Range;

use glam::{Quat, Vec3};

use super::params::VerletParams;
use super::solve::Link;
use crate::dynamics::weber::mapping;
use crate::error::SimError;
use crate::forest::{Forest, NO_PARENT};

/// Most particles a forest may be turned into (checked before anything is allocated).
pub const MAX_PARTICLES: usize = 40_000_000;

/// One tree's share of the arrays.
#[derive(Clone, Debug)]
pub(super) struct TreeLayout {
    /// Its particles (global indices).
    pub particles: Range<usize>,
    /// How many of them are skeletal (they come first).
    pub skeletal: usize,
    /// How many twins follow the skeletal particles (one per branch but the trunk).
    pub twins: usize,
    /// How many of them (the first) meet the ground and the colliders: the skeletal ones, the
    /// twins and the trunk's plane (the root plate).
    pub contact: usize,
    /// Its constraints (global indices).
    pub constraints: Range<usize>,
    /// `passes[k]`: how many of its constraints (a prefix) pass `k` relaxes.
    pub passes: Vec<u32>,
    /// Its root constraints (global indices).
    pub roots: Range<usize>,
    /// Its branches (global indices).
    pub branches: Range<usize>,
    /// Height of the ground under it in its own coordinates \[m\]: the world's y = 0, or the
    /// lowest of its particles that meet the ground, at rest, if lower.
    pub ground: f32,
    /// Where its particles' coordinates start: its root's world position. Positions are kept
    /// relative to it, so that a step's small moves keep their bits in a forest that spans
    /// hundreds of metres (in f32 at 100 m, a 1/240 s step's fall under gravity would keep
    /// only about 4 % of its precision).
    pub origin: Vec3,
}

/// A branch: its plane and the rest frame the plane's rotation is measured from.
#[derive(Clone, Copy, Debug)]
pub(super) struct Branch {
    /// Its first segment (forest index).
    pub first: u32,
    /// Its plane's structural particles (tree-local): +tangent, +bitangent, −tangent,
    /// −bitangent.
    pub plane: [u32; 4],
    /// The branch its plane hangs from (global index), [`NO_BRANCH`] for a trunk.
    pub parent: u32,
    /// Its plane's centre, the skeletal particle it shares with its parent (tree-local).
    pub centre: u32,
    /// The particle that takes the centre's place in this branch once it breaks off
    /// (tree-local; unused, and not stepped, until then; [`NO_BRANCH`] for a trunk).
    pub twin: u32,
    /// Its cone from the wood's strain alone, the thesis's rule (`VerletParams::cone_for`)
    /// \[rad\].
    pub strain_cone: f32,
    /// Its cone: it breaks off when its first segment leaves the cone of this half-angle
    /// \[rad\] around its rest direction in its parent's frame; at least `strain_cone` and
    /// the turn the branch grew to carry (`grown`).
    pub cone: f32,
}

/// `Branch::parent` and `Branch::twin` of a trunk.
pub(super) const NO_BRANCH: u32 = u32::MAX;

/// The static structure of every tree.
#[derive(Debug, Default)]
pub(super) struct Structure {
    pub trees: Vec<TreeLayout>,
    /// Rest position of every particle \[m\].
    pub rest: Vec<Vec3>,
    /// Mass of every particle \[kg\] (0 for structural particles and anchors).
    pub mass: Vec<f32>,
    /// Linear drag of every particle [N·s/m].
    pub drag: Vec<f32>,
    /// The leaves' part of `drag` [N·s/m] (the quadratic law treats leaves apart, see
    /// `Material::drag_scale`).
    pub leaf_drag: Vec<f32>,
    /// The weight each particle's end of a constraint carries in the relaxation: the mass it
    /// holds up (its own and everything beyond it), so that a pass moves twigs onto their
    /// wood rather than wood after its twigs and the load reaches the roots in few passes
    /// (Guendelman et al. 2003's shock propagation, for constraints). The converged shape is
    /// the same with any weights.
    pub weight: Vec<f32>,
    /// Radius of the wood at every particle \[m\], for contacts (0 for anchors).
    pub radius: Vec<f32>,
    /// Every constraint as built: its ends (tree-local particle indices), the square of its
    /// rest length, and the share of its correction its end `a` takes, w_a/(w_a + w_b) with w
    /// the inverse masses (Jakobsen 2003, the thesis's reference \[7\]; `b` takes the rest).
    pub links: Vec<Link>,
    /// Rest length of every constraint \[m\].
    pub length: Vec<f32>,
    /// Relaxation passes each constraint gets per step.
    pub iterations: Vec<u8>,
    /// The branch each constraint belongs to (global index): a plane's constraints and its
    /// ties to the parent belong to the plane's branch, a segment's skeletal and structural
    /// constraints to the segment's branch.
    pub owner: Vec<u32>,
    /// The branch each particle belongs to (global index; the root, the trunk's plane and the
    /// anchors to the trunk).
    pub particle_branch: Vec<u32>,
    /// Root constraints: anchor, plane particle (tree-local), rest length, length at which it
    /// is cut.
    pub root_anchor: Vec<u32>,
    pub root_plane: Vec<u32>,
    pub root_length: Vec<f32>,
    pub root_max: Vec<f32>,
    pub branches: Vec<Branch>,
    /// Each segment's branch (global index into `branches`).
    pub branch_of: Vec<u32>,
    /// Rest world orientation of every segment (local +y along its axis).
    pub rest_orient: Vec<Quat>,
}

impl Structure {
    /// Builds every tree's particles and constraints. Refuses a forest that would need more
    /// than [`MAX_PARTICLES`] particles, before allocating for them.
    pub fn build(forest: &Forest, params: &VerletParams) -> Result<Structure, SimError> {
        let n = forest.segment_count();
        // Rest frames: the generated shape's world orientations and bases, parents first.
        let mut rest_orient = vec![Quat::IDENTITY; n];
        let mut base = vec![Vec3::ZERO; n];
        let s = &forest.seg;
        for t in &forest.trees {
            for i in t.segments.start as usize..t.segments.end as usize {
                let p = s.parent[i];
                let (pq, pb) = if p == NO_PARENT {
                    (Quat::IDENTITY, t.root)
                } else {
                    let p = p as usize;
                    (rest_orient[p], base[p] + rest_orient[p] * Vec3::Y * s.length[p])
                };
                rest_orient[i] = (pq * mapping::relative_rotation(s.shape[0][i], s.shape[1][i])).normalize();
                base[i] = pb;
            }
        }
        // Branches: a segment continues its parent's branch when it is the parent's thickest
        // child.
        let mut continuation = vec![NO_PARENT; n];
        for i in 0..n {
            let p = s.parent[i];
            if p != NO_PARENT {
                let c = &mut continuation[p as usize];
                if *c == NO_PARENT || s.radius_base[i] > s.radius_base[*c as usize] {
                    *c = i as u32;
                }
            }
        }
        let starts_branch = |i: usize| s.parent[i] == NO_PARENT || continuation[s.parent[i] as usize] != i as u32;
        let branch_count = (0..n).filter(|&i| starts_branch(i)).count();
        let particles = forest.trees.len() * 5 + n + 4 * branch_count;
        if particles > MAX_PARTICLES {
            return Err(SimError::param(
                "particles",
                particles,
                format!("a Verlet forest may have at most {MAX_PARTICLES} particles (fewer trees or segments)"),
            ));
        }

        let mut st = Structure {
            rest_orient,
            branch_of: vec![0; n],
            ..Default::default()
        };
        st.rest.reserve(particles);
        for t in 0..forest.trees.len() {
            st.build_tree(forest, t, &base, &continuation, params);
        }
        Ok(st)
    }

    fn build_tree(&mut self, forest: &Forest, t: usize, base: &[Vec3], continuation: &[u32], params: &VerletParams) {
        let s = &forest.seg;
        let tree = &forest.trees[t];
        let segs = tree.segments.start as usize..tree.segments.end as usize;
        let first_seg = segs.start;
        let p0 = self.rest.len();
        let c0 = self.links.len();
        let b0 = self.branches.len();
        let trunk_r = s.radius_base[first_seg];
        let iters = |i: usize| params.iterations_for(s.radius_base[i], trunk_r) as u8;
        // Skeletal particles: the root, then every segment's tip.
        let node_of_tip = |i: usize| (1 + i - first_seg) as u32;
        let node_of_base = |i: usize| {
            let p = s.parent[i];
            if p == NO_PARENT {
                0
            } else {
                node_of_tip(p as usize)
            }
        };
        let push = |st: &mut Structure, at: Vec3, mass: f32, (drag, leaf_drag): (f32, f32), radius: f32| {
            st.rest.push(at);
            st.mass.push(mass);
            st.drag.push(drag);
            st.leaf_drag.push(leaf_drag);
            st.radius.push(radius);
            (st.rest.len() - 1 - p0) as u32
        };
        push(self, tree.root, 0.0, (0.0, 0.0), trunk_r);
        for i in segs.clone() {
            let tip = base[i] + self.rest_orient[i] * Vec3::Y * s.length[i];
            push(self, tip, 0.0, (0.0, 0.0), s.radius_tip[i]);
        }
        for i in segs.clone() {
            let (b, e) = (p0 + node_of_base(i) as usize, p0 + node_of_tip(i) as usize);
            for k in [b, e] {
                self.mass[k] += 0.5 * s.mass[i];
                self.drag[k] += 0.5 * s.drag[i];
                self.leaf_drag[k] += 0.5 * s.leaf_drag[i];
            }
        }
        let skeletal = 1 + segs.len();
        // Which segments start a branch, and each branch's twin, right after the skeletal
        // particles.
        let mut depth = vec![0u32; segs.len()];
        let mut starts = vec![false; segs.len()];
        for i in segs.clone() {
            let parent = s.parent[i];
            starts[i - first_seg] = parent == NO_PARENT
                || continuation[parent as usize] != i as u32
                || depth[parent as usize - first_seg] >= params.branch_segments;
            depth[i - first_seg] = if starts[i - first_seg] {
                1
            } else {
                depth[parent as usize - first_seg] + 1
            };
        }
        // Each branch's length: the sum of its segments', on the segment that starts it.
        let mut head = vec![0usize; segs.len()];
        let mut span = vec![0.0f32; segs.len()];
        for i in segs.clone() {
            let k = i - first_seg;
            head[k] = if starts[k] {
                k
            } else {
                head[s.parent[i] as usize - first_seg]
            };
            span[head[k]] += s.length[i];
        }
        let mut twin_of = vec![NO_BRANCH; segs.len()];
        for i in segs
            .clone()
            .filter(|&i| starts[i - first_seg] && s.parent[i] != NO_PARENT)
        {
            let at = self.rest[p0 + node_of_base(i) as usize];
            twin_of[i - first_seg] = push(
                self,
                at,
                0.25 * s.mass[i],
                (0.5 * s.drag[i], 0.5 * s.leaf_drag[i]),
                s.radius_base[i],
            );
        }
        let twins = self.rest.len() - p0 - skeletal;

        // Each branch's chain of skeletal particles, base first, to find a child's neighbours.
        let mut chain_of: Vec<Vec<u32>> = Vec::new();
        let mut branch_local = vec![0u32; segs.len()];
        let mut constraints: Vec<(u32, u32, f32, u8, u32)> = Vec::new();
        let mut anchors_at: Vec<Vec3> = Vec::with_capacity(4);
        // Each branch's skeletal particle below its plane on its parent (when it has one).
        let mut below_of: Vec<(u32, u32)> = Vec::new();
        let dist = |st: &Structure, a: u32, b: u32| (st.rest[p0 + a as usize] - st.rest[p0 + b as usize]).length();
        for i in segs.clone() {
            let parent = s.parent[i];
            let new_branch = starts[i - first_seg];
            let it = iters(i);
            let bl_new = chain_of.len() as u32;
            if new_branch {
                let q = self.rest_orient[i];
                let d = (params.plane_scale * s.radius_base[i]).max(params.plane_min * span[i - first_seg]);
                let centre = node_of_base(i);
                let c = self.rest[p0 + centre as usize];
                let dirs = [q * Vec3::X, q * Vec3::Z, -(q * Vec3::X), -(q * Vec3::Z)];
                // The plane's particles take half of what the segment's base particle carries
                // (the branch's collar), an eighth each.
                let collar = 0.25 * s.mass[i];
                self.mass[p0 + centre as usize] -= collar;
                let plane = dirs.map(|u| push(self, c + u * d, 0.25 * collar, (0.0, 0.0), 0.0));
                // Plane constraints: centre to each, and the rim.
                let own = b0 as u32 + bl_new;
                for k in 0..4 {
                    constraints.push((centre, plane[k], 0.0, it, own));
                    constraints.push((plane[k], plane[(k + 1) % 4], 0.0, it, own));
                }
                if parent != NO_PARENT {
                    // The parent's skeletal particles beside the centre, or its plane.
                    let pb = branch_local[parent as usize - first_seg] as usize;
                    let chain = &chain_of[pb];
                    let at = chain
                        .iter()
                        .position(|&v| v == centre)
                        .expect("a branch starts on its parent's chain");
                    let mut refs: Vec<u32> = Vec::with_capacity(2);
                    if at > 0 {
                        refs.push(chain[at - 1]);
                        below_of.push((bl_new, chain[at - 1]));
                    }
                    if at + 1 < chain.len() {
                        refs.push(chain[at + 1]);
                    }
                    // The neighbours lie on the parent's axis with the centre, so they alone
                    // would let the plane spin about that axis: the parent's plane (off the
                    // axis) holds it, one particle of it, or two where the centre has one
                    // neighbour.
                    let pp = self.branches[b0 + pb].plane;
                    let extra = if refs.len() < 2 { 2 } else { 1 };
                    refs.extend_from_slice(&pp[..extra]);
                    for &r in &refs {
                        for &k in &plane {
                            constraints.push((r, k, 0.0, it, own));
                        }
                    }
                } else {
                    // The root structure: four anchors, splayed out and down at 45°.
                    let down = -(q * Vec3::Y);
                    let l = params.root_length * s.radius_base[i];
                    let h = l * std::f32::consts::FRAC_1_SQRT_2;
                    for (k, u) in dirs.iter().enumerate() {
                        // Placed after every structural particle (below).
                        anchors_at.push(self.rest[p0 + plane[k] as usize] + *u * h + down * h);
                        self.root_plane.push(plane[k]);
                        self.root_length.push(l);
                        self.root_max.push(l * (1.0 + params.root_stretch));
                    }
                }
                let (parent_branch, cone) = if parent == NO_PARENT {
                    (NO_BRANCH, std::f32::consts::PI)
                } else {
                    let pb = b0 as u32 + branch_local[parent as usize - first_seg];
                    // The turn of the branch's first constraint accrues over the wood its
                    // branching plane's structural constraints span: the longer of the first
                    // segment and the plane's arm d (see `VerletParams::break_strain`).
                    (pb, params.cone_for(s.radius_base[i], s.length[i].max(d)))
                };
                self.branches.push(Branch {
                    first: i as u32,
                    plane,
                    parent: parent_branch,
                    centre,
                    twin: twin_of[i - first_seg],
                    strain_cone: cone,
                    cone,
                });
                chain_of.push(vec![centre]);
                branch_local[i - first_seg] = (chain_of.len() - 1) as u32;
            } else {
                branch_local[i - first_seg] = branch_local[parent as usize - first_seg];
            }
            let bl = branch_local[i - first_seg] as usize;
            let tip = node_of_tip(i);
            chain_of[bl].push(tip);
            self.branch_of[i] = (b0 + bl) as u32;
            let own = (b0 + bl) as u32;
            constraints.push((node_of_base(i), tip, 0.0, it, own));
            // The skeletal particle two back along the chain (across the plane into the
            // parent for a branch's first segment): the plane's particles all lie in one
            // plane, so the tip's constraints to them alone would hold it equally well on
            // either side; this one holds it on its own side, and carries bending.
            let chain = &chain_of[bl];
            let partner = if chain.len() >= 3 {
                Some(chain[chain.len() - 3])
            } else {
                below_of.iter().find(|&&(b, _)| b as usize == bl).map(|&(_, r)| r)
            };
            if let Some(r) = partner {
                constraints.push((r, tip, 0.0, it, own));
            }
            for &k in &self.branches[b0 + bl].plane {
                constraints.push((tip, k, 0.0, it, own));
            }
        }
        // The ground: y = 0, or the lowest particle that meets it (skeletal, twins, the trunk's
        // plane, which tilts with a leaning trunk) if the tree reaches below it. Then the
        // anchors, last (they lie below the ground and are static).
        let trunk_plane = self.branches[b0].plane.map(|k| self.rest[p0 + k as usize].y);
        let lowest = self.rest[p0..p0 + skeletal + twins]
            .iter()
            .map(|p| p.y)
            .chain(trunk_plane)
            .fold(0.0f32, f32::min);
        let roots0 = self.root_anchor.len();
        for at in anchors_at {
            let a = push(self, at, 0.0, (0.0, 0.0), 0.0);
            self.root_anchor.push(a);
        }
        // Weights: what each particle holds up.
        let mut held = vec![0.0f32; segs.len()];
        for i in segs.clone().rev() {
            held[i - first_seg] += s.mass[i];
            let p = s.parent[i];
            if p != NO_PARENT {
                held[p as usize - first_seg] += held[i - first_seg];
            }
        }
        let mut weight = self.mass[p0..].to_vec();
        // The root plate (the trunk's base and its plane) holds the soil around the roots: in
        // the relaxation it weighs the whole tree more, so the tree leans on its roots rather
        // than dragging the roots after the crown. (Its particles' masses stay the wood's.)
        let plate: f32 = s.mass[segs.clone()].iter().sum();
        for k in std::iter::once(0).chain(self.branches[b0].plane) {
            weight[k as usize] += plate;
        }
        for i in segs.clone() {
            let p = s.parent[i];
            if p != NO_PARENT {
                weight[node_of_tip(p as usize) as usize] += held[i - first_seg];
            }
        }
        for b in &self.branches[b0..] {
            let h = held[b.first as usize - first_seg];
            for &k in &b.plane {
                weight[k as usize] = weight[k as usize].max(h);
            }
            if b.twin != NO_BRANCH {
                weight[b.twin as usize] = weight[b.twin as usize].max(h);
            }
        }
        self.weight.extend_from_slice(&weight);
        // Rest lengths from the rest positions, then most passes first (stable).
        for c in &mut constraints {
            c.2 = dist(self, c.0, c.1);
        }
        constraints.sort_by_key(|c| std::cmp::Reverse(c.3));
        interleave(&mut constraints, |c| c.3);
        let most = constraints.first().map_or(0, |c| c.3) as usize;
        let passes = (0..most)
            .map(|k| constraints.iter().take_while(|c| c.3 as usize > k).count() as u32)
            .collect();
        for (a, b, l, it, own) in constraints {
            let (wa, wb) = (weight[a as usize], weight[b as usize]);
            self.links.push(Link {
                a,
                b,
                l2: l * l,
                share: wb / (wa + wb),
            });
            self.owner.push(own);
            self.length.push(l);
            self.iterations.push(it);
        }
        // The branch of every particle: skeletal tips their segment's, twins and planes their
        // branch's, the rest (root, anchors) the trunk's.
        let trunk = b0 as u32;
        let mut of = vec![trunk; self.rest.len() - p0];
        for i in segs.clone() {
            of[node_of_tip(i) as usize] = self.branch_of[i];
        }
        for b in &self.branches[b0..] {
            let own = self.branch_of[b.first as usize];
            for &k in &b.plane {
                of[k as usize] = own;
            }
            if b.twin != NO_BRANCH {
                of[b.twin as usize] = own;
            }
        }
        self.particle_branch.extend(of);
        // Every position relative to the tree's root.
        for p in &mut self.rest[p0..] {
            *p -= tree.root;
        }
        self.trees.push(TreeLayout {
            particles: p0..self.rest.len(),
            skeletal,
            twins,
            contact: skeletal + twins + 4,
            constraints: c0..self.links.len(),
            passes,
            roots: roots0..self.root_anchor.len(),
            branches: b0..self.branches.len(),
            ground: lowest - tree.root.y,
            origin: tree.root,
        });
    }
}

/// How many runs of a class of constraints [`interleave`] deals out.
const LANES: usize = 8;

/// Deals each run of equal `key` out of `LANES` consecutive stretches, one constraint of each
/// in turn (the first of every stretch, then the second, ...). Constraints next to each other
/// then mostly join different particles, so a pass's corrections do not wait on each other
/// (a Gauss–Seidel pass in another fixed order; the order is the same on every run).
fn interleave<T: Copy, K: PartialEq>(items: &mut [T], key: impl Fn(&T) -> K) {
    let mut start = 0;
    while start < items.len() {
        let k = key(&items[start]);
        let end = start + items[start..].iter().take_while(|c| key(c) == k).count();
        let run = &mut items[start..end];
        let stretch = run.len().div_ceil(LANES);
        let dealt: Vec<T> = (0..stretch)
            .flat_map(|i| (0..LANES).map(move |l| l * stretch + i))
            .filter(|&j| j < run.len())
            .map(|j| run[j])
            .collect();
        run.copy_from_slice(&dealt);
        start = end;
    }
}
