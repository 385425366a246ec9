//! Settings of Oliapuram & Kumar's model: the time step, the power laws that give every
//! segment its restoration constant k and axial damping constant μ (Eqs. 22–23), the wind
//! coupling σ (Eq. 14), the propagation coefficient k_c (Eq. 19), gravity, and the leaves'
//! pseudo-branch settings (§4).
//!
//! Where the defaults come from. The paper fits k ∝ r^2.5 and μ ∝ r^3.5 to deformations
//! observed on real trees (§3.1.3) and gives the exponents, not the coefficients. Sylva's
//! coefficients are fitted the same way, by eye, to what the model does with the built-in
//! species (the viewer's default forest, quaking aspen and Lombardy poplar): in a steady
//! 10 m/s wind twigs bend by 0.02–0.08 rad, leaves turn by 0.05–0.2 rad, branch tips move by
//! 1–14 cm and the trunk barely moves (the model passes moments, not forces, from segment to
//! segment, so the crown's load does not add up at the trunk); at 60 m/s leaves turn by up to
//! 1.5 rad and branch tips move by up to a metre; a tree released from either comes to rest
//! (kinetic energy below a millionth of a joule) within 20 s. σ is the default material's bark
//! and leaf drag, so a segment or leaf feels the wind force it does in Weber's model
//! (`Material::wood_drag`, `Material::leaf_drag`). A leaf's inertia is its blade's own,
//! m·L²/3 with the material's `leaf_mass_per_area`.

use crate::error::{check_positive, check_range, SimError};
use crate::material::Material;

/// Settings of [`OliapuramModel`](super::OliapuramModel).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OliapuramParams {
    /// Time step Δt of Eqs. 20–21 \[s\].
    pub dt: f32,
    /// Restoration constant at r = 1 m: k = coefficient · r^exponent (Eq. 22) [N·m/rad].
    pub stiffness_coefficient: f32,
    /// Exponent of the radius in Eq. 22 (the paper's 2.5).
    pub stiffness_exponent: f32,
    /// Axial damping constant at r = 1 m: μ = coefficient · r^exponent (Eq. 23)
    /// [N·m·s²/rad²].
    pub damping_coefficient: f32,
    /// Exponent of the radius in Eq. 23 (the paper's 3.5).
    pub damping_exponent: f32,
    /// Thinnest radius the power laws of Eqs. 19, 22 and 23 are applied at \[m\]: a segment
    /// thinner than this (generated stems taper to a point) takes this radius's k, μ and
    /// thickness. The paper fitted its laws on real branches, none of them thinner than a
    /// twig.
    pub min_radius: f32,
    /// σ of Eq. 14 for bark [N·s/m³]: wind force = σ · S_f · v with S_f the segment's frontal
    /// area (r_base + r_tip) · l.
    pub sigma: f32,
    /// The fixed propagation coefficient k_c of Eq. 19 (0: children never move their parent).
    pub propagation: f32,
    /// Gravitational acceleration [m/s²] along -y. The generated shape is the rest shape (as the
    /// paper has it); gravity adds only the change of each segment's own weight moment as it
    /// swings, see the module documentation of `oliapuram`.
    pub gravity: f32,
    /// σ of Eq. 14 for leaves [N·s/m³]: force = σ · leaf area · (wind · normal), along the
    /// normal (§4).
    pub leaf_sigma: f32,
    /// Radius of the thinnest branches, twigs, whose k a leaf's k is set slightly above (§4)
    /// \[m\].
    pub thinnest_radius: f32,
    /// A leaf's k over the k (Eq. 22) of a branch of radius
    /// [`thinnest_radius`](Self::thinnest_radius) (§4: "slightly higher than of the thinnest
    /// branches").
    pub leaf_stiffness_ratio: f32,
    /// A leaf's μ over its moment of inertia [1/rad] (§4: "a low value"): the quadratic
    /// damping's equivalent damping ratio at a swing of amplitude A is about 0.42 · this · A.
    pub leaf_damping: f32,
    /// A blade's thickness Th_leaf \[m\]: Eq. 19 gives a leaf's back-propagation to its segment
    /// k_c · Th_leaf / Th_segment, as for a child branch.
    pub leaf_thickness: f32,
}

impl Default for OliapuramParams {
    fn default() -> Self {
        OliapuramParams::for_material(&Material::default())
    }
}

impl OliapuramParams {
    /// The default settings for trees of `material`: σ of bark and leaves from its drag
    /// coefficients, so the wind loads the trees as in Weber's model.
    pub fn for_material(material: &Material) -> OliapuramParams {
        OliapuramParams {
            dt: 1.0 / 60.0,
            stiffness_coefficient: 1.5e7,
            stiffness_exponent: 2.5,
            damping_coefficient: 3.0e6,
            damping_exponent: 3.5,
            min_radius: 2.0e-3,
            sigma: material.wood_drag,
            propagation: 1.0,
            gravity: 9.81,
            leaf_sigma: material.leaf_drag,
            thinnest_radius: 1.0e-3,
            leaf_stiffness_ratio: 1.25,
            leaf_damping: 0.4,
            leaf_thickness: 2.0e-4,
        }
    }

    /// Checks every field against its allowed range, naming the first one out of it and what
    /// is allowed.
    pub fn validate(&self) -> Result<(), SimError> {
        check_positive("time step (dt)", self.dt, 0.1)?;
        check_positive(
            "stiffness coefficient (k at r = 1 m)",
            self.stiffness_coefficient,
            1.0e15,
        )?;
        // At least 1: with the pipe model a child's share of its parent's thickness, raised to
        // 1 + this in Eq. 19's pull, keeps the summed pull of the children at most the parent's.
        check_range("stiffness exponent", self.stiffness_exponent, 1.0, 8.0)?;
        check_range(
            "damping coefficient (μ at r = 1 m)",
            self.damping_coefficient,
            0.0,
            1.0e15,
        )?;
        check_range("damping exponent", self.damping_exponent, 0.0, 8.0)?;
        check_positive("min_radius", self.min_radius, 1.0)?;
        check_range("sigma (σ, bark)", self.sigma, 0.0, 1.0e4)?;
        // At most 1: a larger k_c amplifies a pull at every level on its way to the root.
        check_range("propagation coefficient (k_c)", self.propagation, 0.0, 1.0)?;
        check_range("gravity", self.gravity, 0.0, 1000.0)?;
        check_range("leaf_sigma (σ, leaves)", self.leaf_sigma, 0.0, 1.0e4)?;
        check_positive("thinnest_radius", self.thinnest_radius, 1.0)?;
        check_positive("leaf_stiffness_ratio", self.leaf_stiffness_ratio, 1.0e6)?;
        check_range("leaf_damping (μ / I of a leaf)", self.leaf_damping, 0.0, 1.0e6)?;
        check_range("leaf_thickness", self.leaf_thickness, 0.0, 1.0)?;
        Ok(())
    }

    /// The thickness Eqs. 19, 22 and 23 use for a segment of base and tip radii `r0`, `r1`:
    /// its average radius (§3.1.3), at least [`min_radius`](Self::min_radius).
    pub fn thickness(&self, r0: f32, r1: f32) -> f32 {
        (0.5 * (r0 + r1)).max(self.min_radius)
    }

    /// Restoration constant k of a segment of thickness `r` (Eq. 22) [N·m/rad].
    pub fn stiffness(&self, r: f32) -> f32 {
        self.stiffness_coefficient * r.powf(self.stiffness_exponent)
    }

    /// Axial damping constant μ of a segment of thickness `r` (Eq. 23).
    pub fn damping(&self, r: f32) -> f32 {
        self.damping_coefficient * r.powf(self.damping_exponent)
    }
}
