//! Sylva simulation: tree data (SoA forest), generators, wind, colliders, and the dynamics
//! models that move the trees (`dynamics`: Weber's and Oliapuram & Kumar's).
//!
//! `sim` never sees Vulkan or a window: it produces the pose of every segment and leaf, which
//! the renderer reads.

// The kernels walk several parallel arrays with one index; that is the point of the layout.
#![allow(clippy::needless_range_loop)]

pub mod collider;
pub mod collision;
pub mod colonize;
pub mod dynamics;
pub mod error;
pub mod fluid;
pub mod forest;
pub mod hash;
pub mod io;
pub mod lsystem;
pub mod material;
pub mod rng;
pub mod scene;
pub mod skeleton;
pub mod spec;
pub mod species;
pub mod stats;
pub mod testtree;
pub mod weberpenn;
pub mod wind;

pub use collider::{Contact, Motion, SphereCollider};
pub use error::SimError;
pub use forest::{Forest, TreePlacement};
pub use material::{Damping, DragLaw, Material, Stiffness};
pub use skeleton::Skeleton;
pub use testtree::{test_tree, TreeSize};
pub use wind::{Calm, GustingWind, WindField};
