//! Dynamics models: the ways Sylva moves trees, and what they all hand the renderer.
//!
//! Every model reads the same forest (skeletons, materials, leaves: `crate::forest`) and writes
//! the same [`Pose`], the one thing the renderer and the tests read of a model's state.
//! Quantities of one model (Weber's plane angles and correction directions, another model's
//! angular velocities) stay in that model's own module.

pub mod oliapuram;
pub mod pose;

pub use oliapuram::{OliapuramModel, OliapuramParams};
pub use pose::Pose;
