//! The breaking cones branches grow into (Manavi 2007, "Breaking Branches": "a cone around the
//! initial direction of the branch", set per branch).
//!
//! The thesis's rule breaks a branch when its first skeletal constraint leaves its cone, and
//! leaves the cone's size to the model. The turn the rule measures is the model's own
//! deformation: the relaxation's shortfall, which depends on the passes, the step, the
//! structural particles' spread and how the load reaches the branch, not on the wood's
//! strength. A cone from the wood's strain alone (`VerletParams::cone_for`) therefore breaks
//! the short, thick branch starts of real species' skeletons in a breeze (the viewer's default
//! forest in its 5 m/s fluid wind lost 45 branches in 600 frames), where those starts turn
//! further in the model than the test tree's do.
//!
//! A tree grows to carry the wind it meets: its wood adapts to the loads towards uniform
//! stress (Mattheck, "Trees: The Mechanical Design", Springer 1991, the axiom of uniform
//! stress; Jaffe 1973, thigmomorphogenesis), the principle behind Sylva's other models'
//! wind-grown rupture floor (`weber::grown_moments`, `Material::grown_wind`). Here each
//! branch's cone is at least the turn its first constraint shows, in the model itself, under
//! a steady horizontal wind of `Material::grown_wind` (and, where the material does not
//! compensate it, the tree's weight): the branch holds what it grew in, and breaks beyond it.
//! Measured, not estimated, because the model's angular stiffness at a joint is the
//! relaxation's, not a beam's.
//!
//! The measurement: each tree is settled by the model's own substep (forces and Verlet, the
//! relaxation, the roots, the ground) from rest in a steady wind along +x, then along +z (and,
//! with gravity uncompensated, without wind, to separate the weight's part), with a velocity
//! damping that brings the relaxation's slow creep to its steady shape within
//! [`SETTLE_STEPS`] substeps; the roots are not cut and nothing breaks while it settles. A
//! branch's turn is taken as the vector τ = e × a (e its expected rest direction in its
//! parent's frame, a its first constraint's direction; |τ| = sin of the angle between them),
//! averaged over the settle's last quarter. The response is linear in the wind's horizontal
//! direction d for small turns, τ(d) = τ₀ + A·d with A's columns the +x and +z responses less
//! τ₀, so the largest turn over every direction is at most |τ₀| + σ_max(A), σ_max the largest
//! singular value of the 3×2 map (the square root of the largest eigenvalue of AᵀA).
//!
//! A steady wind is not a gusting one: gusts near a branch's sway frequency swing it past its
//! steady turn, by up to the resonant amplification 1/(2ζ) of a damped oscillator (ζ the
//! material's damping ratio, 0.15: 3.3). Measured on the two species of the viewer's default
//! forest, 5 m/s gusts turned the worst branches 0.9 to 2 times their steady 25 m/s turn
//! (the tops of the trees whip, and the relaxation's slow creep follows each gust), so the
//! floor is the steady turn's sine times 1/(2ζ), as an angle. Where the settle itself turns a
//! branch past a right angle (a twig lying along the wind, or a branch swung round its
//! parent's axis, where the plane's ties to its parent hold it weakly) the sine no longer
//! measures it, and a stronger wind turns it little further (the test tree's twigs: 1 to 5 %
//! in 36 m/s gusts): its floor is its measured turn plus a tenth, at most π.
//!
//! Invariants: reads the structure and writes only the branches' cones; every tree settles on
//! its own, from its rest state, so the result does not depend on the other trees or on any
//! worker count; the model's state is untouched.

use glam::{Vec3, Vec3A};

use super::params::VerletParams;
use super::solve::{self, Link, Shared};
use super::structure::{Structure, NO_BRANCH};
use crate::dynamics::pose::segment_axis;
use crate::forest::Forest;
use crate::material::{Damping, Material};
use crate::wind::Calm;

/// Substeps each settle runs (4 s at the default step).
pub(super) const SETTLE_STEPS: usize = 480;

/// Velocity damping of the settle \[1/s\]: the fraction of its velocity a particle loses per
/// second. About critical for a 0.4 Hz sway, so the slow modes of the relaxation (a branch
/// creeping after its parent's bend takes seconds) reach their steady shape within the
/// settle, and the faster ones die without overshooting it. The steady shape does not depend
/// on it (at rest, nothing moves); measured on two species trees, 480 substeps give the same
/// turns as 2,000 (99th percentile 1.22 and 1.26 rad).
const SETTLE_DAMPING: f32 = 5.0;

/// A turn measured past a right angle is floored at this many times itself (see
/// [`grown_turns`]).
const LARGE_TURN_MARGIN: f32 = 1.1;

/// How many times a branch's steady turn a gusting wind of the same mean may turn it: the
/// dynamic amplification of a damped oscillator driven at resonance, 1/(2ζ), with ζ the
/// material's damping ratio (0.15 by default: 3.3), at least 1 and at most 10.
fn dynamic_margin(material: &Material) -> f32 {
    let ratio = match material.damping {
        Damping::Ratio(z) => z,
        Damping::Power { .. } => 0.15,
    };
    (0.5 / ratio.max(0.05)).clamp(1.0, 10.0)
}

/// Each branch's grown turn \[rad\] (global branch index; 0 for trunks): the floor of its
/// cone. Its steady turn under a steady horizontal wind of the forest's
/// `Material::grown_wind` from any direction, |τ₀| + σ_max(A) as a sine (see the module's
/// documentation), times the dynamic amplification of gusts (`dynamic_margin`), as an angle;
/// a turn that the settle itself shows past a right angle (the sine no longer measures it: the
/// branch lies along the wind, or swings round its parent, and a stronger wind turns it little
/// further) at [`LARGE_TURN_MARGIN`] times itself; at most π. `keep_wind`: per particle, the
/// linear drag's share kept per substep. Trees settle on up to `threads` threads (the result
/// does not depend on it).
pub(super) fn grown_turns(
    st: &mut Structure,
    forest: &Forest,
    params: &VerletParams,
    keep_wind: &[f32],
    threads: usize,
) -> Vec<f32> {
    let mut out = vec![0.0f32; st.branches.len()];
    let w = forest.material.grown_wind;
    if w <= 0.0 || st.branches.len() == forest.trees.len() {
        return out;
    }
    let settle = VerletParams {
        damping: SETTLE_DAMPING.min(0.5 / params.substep()),
        ..*params
    };
    let margin = dynamic_margin(&forest.material);
    // The roots hold while the tree settles (restored after).
    let root_max = std::mem::take(&mut st.root_max);
    st.root_max = vec![f32::INFINITY; root_max.len()];
    let weighed = !forest.material.compensate_gravity && params.gravity > 0.0;
    let mut winds = vec![Vec3::X * w, Vec3::Z * w];
    if weighed {
        winds.push(Vec3::ZERO);
    }
    let trees = st.trees.len();
    let per = trees.div_ceil(threads.clamp(1, trees));
    let st_ref = &*st;
    let results: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..trees)
            .step_by(per)
            .map(|t0| {
                let winds = &winds;
                let settle = &settle;
                s.spawn(move || {
                    (t0..(t0 + per).min(trees))
                        .flat_map(|t| {
                            let responses: Vec<Vec<(Vec3, f32)>> = winds
                                .iter()
                                .map(|&wind| settle_turns(st_ref, forest, settle, keep_wind, t, wind))
                                .collect();
                            floors(&responses, weighed, margin)
                        })
                        .collect::<Vec<f32>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a settle does not panic"))
            .collect()
    });
    for (o, g) in out.iter_mut().zip(results.into_iter().flatten()) {
        *o = g;
    }
    st.root_max = root_max;
    out
}

/// Per branch of one tree, its floor from its responses to the settles' winds (+x, +z, and
/// no wind where `weighed`).
fn floors(responses: &[Vec<(Vec3, f32)>], weighed: bool, margin: f32) -> Vec<f32> {
    (0..responses[0].len())
        .map(|k| {
            let zero = if weighed { responses[2][k].0 } else { Vec3::ZERO };
            let (a, b) = (responses[0][k].0 - zero, responses[1][k].0 - zero);
            let (p, q, r) = (a.dot(a), b.dot(b), a.dot(b));
            let sigma = (0.5 * (p + q) + (0.25 * (p - q) * (p - q) + r * r).sqrt()).sqrt();
            let steady = (margin * (zero.length() + sigma)).min(1.0).asin();
            let measured = responses
                .iter()
                .map(|r| r[k].0.length().atan2(r[k].1))
                .fold(0.0f32, f32::max);
            let large = if measured > std::f32::consts::FRAC_PI_2 {
                LARGE_TURN_MARGIN * measured
            } else {
                0.0
            };
            steady.max(large).min(std::f32::consts::PI)
        })
        .collect()
}

/// Per branch of tree `t` (tree-local), its turn vector e × a and e·a (see the module's
/// documentation), averaged over the last quarter of a settle in the steady uniform `wind`.
fn settle_turns(
    st: &Structure,
    forest: &Forest,
    params: &VerletParams,
    keep_wind: &[f32],
    t: usize,
    wind: Vec3,
) -> Vec<(Vec3, f32)> {
    let layout = &st.trees[t];
    let sh = Shared {
        st,
        forest,
        params,
        keep_wind,
        wind: &Calm,
        uniform: Some(wind),
        colliders: &[],
        touches: &[],
    };
    let rest = &st.rest[layout.particles.clone()];
    let mut pos: Vec<Vec3A> = rest.iter().map(|&p| Vec3A::from(p)).collect();
    let mut prev = pos.clone();
    let links: Vec<Link> = st.links[layout.constraints.clone()].to_vec();
    let mut root_cut = vec![false; layout.roots.len()];
    let broken = vec![false; layout.branches.len()];
    let free = vec![false; layout.branches.len()];
    let branches = &st.branches[layout.branches.clone()];
    let b0 = layout.branches.start;
    let s0 = forest.trees[t].segments.start as usize;
    let (mut turn, mut xs, mut zs) = (Vec::new(), Vec::new(), Vec::new());
    let mut sum = vec![Vec3::ZERO; branches.len()];
    let mut along = vec![0.0f32; branches.len()];
    let from = SETTLE_STEPS - SETTLE_STEPS / 4;
    for step in 0..SETTLE_STEPS {
        solve::forces_and_verlet(&sh, layout, &mut pos, &mut prev, &[], true, &broken, &free);
        solve::relax(&sh, layout, &mut pos, &links, (true, true), &mut root_cut, &[]);
        solve::roots(&sh, layout, &mut pos, &mut root_cut);
        solve::ground_friction(&sh, layout, &pos, &mut prev, true);
        if step < from {
            continue;
        }
        solve::turns_into(&sh, layout, &pos, (&mut xs, &mut zs), &mut turn);
        for (k, b) in branches.iter().enumerate() {
            if b.parent == NO_BRANCH {
                continue;
            }
            let first = b.first as usize;
            let expected = turn[b.parent as usize - b0] * segment_axis(st.rest_orient[first]);
            let axis = Vec3::from(pos[1 + first - s0] - pos[b.centre as usize]).normalize_or_zero();
            sum[k] += expected.cross(axis);
            along[k] += expected.dot(axis);
        }
    }
    let n = (SETTLE_STEPS - from) as f32;
    sum.iter().zip(&along).map(|(s, &d)| (*s / n, d / n)).collect()
}
