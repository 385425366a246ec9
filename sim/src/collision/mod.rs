//! Collisions inside a tree, after Chen 2011 (`../shared/papers/003_c350f2b5aff3b6d6.txt`):
//! the geometry the tests share (k-DOPs, exact triangle tests, centreline distances), the
//! primitives a skeleton is made of for those tests (stems as prisms, leaves as blades on
//! their venations), and the collision-free modelling pass of §3.2–3.3.
//!
//! - `kdop`: discrete orientation polytopes for k = 6, 14, 18 and 26 (Klosowski et al. 1998,
//!   as Chen uses them): built from points, merged, enlarged, tested for overlap.
//! - `tritri`: exact triangle–triangle intersection and segment–segment distance.
//! - `primitives`: stems as prisms, leaves as blades, each in two pieces (root part, rest),
//!   and the exact test between two pieces.
//! - `connect`: which pieces are connected and never tested, and how long each root part is.
//! - `modelling`: the collision-free modelling pass (§3.2) with its voxel grid (§3.3), and the
//!   brute-force search for intersecting pairs it is checked against.
//! - `voxel`: the voxel grid of §3.3, in levels by the primitives' size.
//! - `bvh`: the tree's own k-DOP hierarchy (§5.3, Algorithms 3 and 4), refit and traversal.
//! - `runtime`: self-collision while the tree moves (§5): refit, candidate pairs, the
//!   response spring of Eq. 5.1.
//! - `strip`: pieces as flat strips and their nearest points (the gap a leaf feels).
//! - `gjk`: the nearest points of two convex hulls of a few points (Gilbert et al. 1988).
//! - `clearance`: a turning leaf's blade held off its own twig.

pub mod bvh;
pub mod clearance;
pub mod connect;
pub mod gjk;
pub mod kdop;
pub mod modelling;
pub mod primitives;
pub mod runtime;
pub mod strip;
pub mod tritri;
pub mod voxel;

#[cfg(test)]
mod tests;
