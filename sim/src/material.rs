//! The trees' material: how mass, stiffness, damping and drag follow from a branch's shape.
//! Every dynamics model reads it (through the forest it builds); each model's own settings
//! (time step, solver, ...) live in that model's module.

use crate::error::{check_positive, check_range, SimError};

/// How a joint's angular spring constant k [N·m/rad] follows from the segment's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stiffness {
    /// Euler-Bernoulli beam: a segment of length l and radius r bends like a beam of flexural
    /// rigidity E·I = E·π·r⁴/4, so the joint at its base has k = E·I/l, and a tree's root
    /// joint, which has beam on one side only, 2·E·I/l (see [`Material::stiffness_of`]).
    Beam {
        /// Young's modulus E of green wood [N/m²].
        youngs_modulus: f32,
    },
    /// The empirical power law the papers suggest, k = coefficient · r^exponent (r in metres;
    /// Weber and Oliapuram use exponents near 2.5).
    Power {
        /// The coefficient [N·m/rad at r = 1 m].
        coefficient: f32,
        /// The exponent of the radius.
        exponent: f32,
    },
}

/// How a joint's structural damping c [N·m·s/rad] follows from its stiffness and inertia.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Damping {
    /// c = 2·ζ·sqrt(k·I): the damping ratio ζ of the segment swinging alone on its spring.
    Ratio(f32),
    /// c = coefficient · r^exponent (the papers suggest exponents near 3.5).
    Power {
        /// The coefficient [N·m·s/rad at r = 1 m].
        coefficient: f32,
        /// The exponent of the radius.
        exponent: f32,
    },
}

/// How the wind's drag on bark and leaves grows with the speed of the air past them.
///
/// Both laws share the linear coefficients of [`Material`] (`wood_drag`, `leaf_drag`, and the
/// forest's per-segment `drag`/`leaf_drag` derived from them), which are matched to quadratic
/// drag at [`DRAG_MATCH_SPEED`]; [`Material::drag_scale`] is the factor that multiplies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DragLaw {
    /// Weber's linear drag, f = l·r·(d·w) (Weber 2008, "The planar model"): the force grows
    /// with the wind velocity w alone and ignores the branch's own motion. Right at
    /// [`DRAG_MATCH_SPEED`]; at 36 m/s it is 3.6 times weaker than real drag on bark.
    Linear,
    /// Quadratic drag on the velocity of the air relative to the surface, u = w - v:
    /// f = ½·ρ_air·C_d·A·|u|·u. Bark keeps the law at every speed; leaves follow it up to
    /// [`LEAF_RECONFIGURATION_SPEED`] and above it grow as |u|^(2+β) with the Vogel exponent
    /// β = [`LEAF_VOGEL_EXPONENT`] (broad leaves roll into cones in high wind; see
    /// [`Material::drag_scale`]). Moving with the wind, a branch feels no drag; moving against
    /// it, more: the relative velocity makes the drag damp a swaying branch.
    #[default]
    Quadratic,
}

impl DragLaw {
    /// The law's name on the command line and in reports (`linear`, `quadratic`).
    pub fn name(self) -> &'static str {
        match self {
            DragLaw::Linear => "linear",
            DragLaw::Quadratic => "quadratic",
        }
    }
}

/// The speed [m/s] at which the default linear drag coefficients equal quadratic drag:
/// ½·ρ_air·C_d·U = coefficient with ρ_air = 1.225 kg/m³ and U = 10 m/s (C_d = 1.2 on the bark's
/// frontal area: 7.35, rounded to [`Material::wood_drag`]'s 7.4; C_d = 0.5 on the leaf area:
/// 3.06, rounded to `leaf_drag`'s 3.1). Under [`DragLaw::Quadratic`] a coefficient c gives the
/// force c·A·(|u|/U)·u = ½·ρ_air·(2c/(ρ_air·U))·A·|u|·u.
pub const DRAG_MATCH_SPEED: f32 = 10.0;

/// Density of air at sea level and 15 °C [kg/m³], the ρ_air the drag coefficients assume.
pub const AIR_DENSITY: f32 = 1.225;

/// The relative air speed [m/s] above which leaves reconfigure and their drag grows more slowly
/// than |u|². Vogel (1989, "Drag and reconfiguration of broad leaves in high winds", J. Exp.
/// Bot. 40:941) measured single leaves and clusters at 10 and 20 m/s: lobed, long-stalked
/// leaves rolled into cones ever more acute as the wind rose, and their drag coefficients
/// (per original area) fell from 10 to 20 m/s for all but single white oak leaves. Sylva starts
/// the reconfiguration at the lower of Vogel's two speeds, which is also the speed the linear
/// coefficients are matched at, so both laws agree there.
pub const LEAF_RECONFIGURATION_SPEED: f32 = 10.0;

/// The Vogel exponent β of reconfigured leaves: drag ∝ |u|^(2+β) above
/// [`LEAF_RECONFIGURATION_SPEED`]. β = -1 (drag growing linearly with speed) is what a whole
/// 3 m cherry tree showed in a wind tunnel once most of its leaves had reconfigured (Gosselin
/// et al., APS DFD 2015, "Drag reduction by reconfiguration of a full tree in a wind tunnel":
/// "the transition from the quadratic law to a linear increase of the drag of the leaves"),
/// the strong end of the exponents reported for leaves (about -0.7 to -1).
pub const LEAF_VOGEL_EXPONENT: f32 = -1.0;

/// Material of the trees: turns a skeleton's geometry into masses, springs, dampers and drag.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Density of green wood [kg/m³].
    pub wood_density: f32,
    /// How stiff each joint is, from the segment's radius and length.
    pub stiffness: Stiffness,
    /// How strongly each joint is damped.
    pub damping: Damping,
    /// Fresh leaf mass per leaf area [kg/m²].
    pub leaf_mass_per_area: f32,
    /// Linear drag coefficient of bark [N·s/m³]: force = coefficient × frontal area (2·r·l) ×
    /// wind velocity, Weber's f = l·r·(d·w). The default matches quadratic drag (C_d = 1.2,
    /// air 1.225 kg/m³) at 10 m/s.
    pub wood_drag: f32,
    /// Linear drag coefficient of leaves [N·s/m³]: force = coefficient × leaf area × wind
    /// velocity. The default matches C_d = 0.5 at 10 m/s.
    pub leaf_drag: f32,
    /// Pre-stress the springs so that the generated shape is the equilibrium under gravity
    /// (trees grow under their own weight). Without it a tree sags when released.
    pub compensate_gravity: bool,
    /// Modulus of rupture of green wood σ_rupture \[Pa\]: the bending stress at which a section
    /// fails. A joint of base radius r breaks when the bending moment it carries exceeds
    /// σ_rupture·π·r³/4 (the moment that brings the outer fibre of a solid round section to
    /// σ_rupture, σ = M·r/I with I = π·r⁴/4). The default, 57 MPa, is white oak (Quercus alba)
    /// green, USDA Forest Products Laboratory, Wood Handbook (FPL-GTR-190, 2010), Table 5-3a
    /// (its green modulus of elasticity, 8.6 GPa, is the default's Young's modulus, 8 GPa,
    /// within 8 %); most green hardwoods of that table lie between 50 and 65 MPa.
    pub modulus_of_rupture: f32,
    /// Anchorage of the root plate \[N·m/kg\]: the critical turning moment at the stem's base
    /// per kg of the tree's mass (wood and leaves); a tree whose base moment exceeds it is
    /// uprooted. Tree-pulling tests find the critical turning moment proportional to the
    /// stem's mass: Nicoll, Gardiner, Rayner and Peace (2006), "Anchorage of coniferous trees
    /// in relation to species, soil type, and rooting depth", Can. J. For. Res. 36:1871-1883,
    /// regression slopes of about 100 to 200 N·m/kg over species and soils; the default is
    /// the middle of that range.
    pub anchorage: f32,
    /// The wind the trees grew to withstand \[m/s\]: a joint's section is at least as strong
    /// as the moment this steady wind's drag on everything it carries puts on it. Trees adapt
    /// their wood to the loads they meet, towards uniform stress along the stem (Mattheck,
    /// "Trees: The Mechanical Design", Springer 1991, the axiom of uniform stress; Jaffe 1973,
    /// thigmomorphogenesis, Planta 114:143), while generated skeletons taper their twigs by
    /// rule whatever leaves they carry: without this, the built-in species' leafy 2 mm twigs
    /// break in a 5 m/s breeze. The default, 25 m/s, is a storm (Beaufort 10, 24.5 to
    /// 28.4 m/s), about the strongest gust a temperate tree meets in most years; 0 turns the
    /// floor off. (Measured on the viewer's default forest in its fluid wind, 600 frames, with
    /// this default: nothing breaks at 10 m/s, 2,268 branches at 20 m/s, 4,241 at 36 m/s; with
    /// a floor of 20 m/s, 46 already break at 10 m/s.)
    pub grown_wind: f32,
    /// How drag grows with the relative air speed (see [`DragLaw`]).
    pub drag_law: DragLaw,
    /// Petiole strength per unit leaf area \[N/m²\]: a leaf tears off its twig when the
    /// wind's drag on it, `leaf_drag` × area × [`drag_scale`](Material::drag_scale) × wind
    /// speed, exceeds this times its area times the leaf's own factor, spread evenly over 0.5
    /// to 1.5 from leaf to leaf (so a rising wind strips the weakest leaves first). Given per
    /// area so that one value serves small and large leaves alike (a larger blade has a
    /// stouter petiole): the wind speed that strips a leaf does not depend on its size. The
    /// default, 90 N/m², strips the weakest leaves from 14.5 m/s (Beaufort 7) and a third of
    /// them in a steady 25 m/s storm; an ordinary breeze keeps them all. `f32::INFINITY`: the
    /// wind never strips a leaf (the viewer's key still drops them). See
    /// `dynamics::falling`.
    pub petiole_strength: f32,
}

impl Default for Material {
    fn default() -> Self {
        Material {
            wood_density: 800.0,
            // Green hardwood, parallel to the grain.
            stiffness: Stiffness::Beam { youngs_modulus: 8.0e9 },
            damping: Damping::Ratio(0.15),
            leaf_mass_per_area: 0.25,
            wood_drag: 7.4,
            leaf_drag: 3.1,
            compensate_gravity: true,
            modulus_of_rupture: 57.0e6,
            anchorage: 150.0,
            grown_wind: 25.0,
            drag_law: DragLaw::Quadratic,
            petiole_strength: 90.0,
        }
    }
}

impl Material {
    /// Checks every field against its allowed range, naming the first one out of it.
    pub fn validate(&self) -> Result<(), SimError> {
        check_positive("wood_density", self.wood_density, 1.0e5)?;
        match self.stiffness {
            Stiffness::Beam { youngs_modulus } => check_positive("youngs_modulus", youngs_modulus, 1.0e13)?,
            Stiffness::Power { coefficient, exponent } => {
                check_positive("stiffness coefficient", coefficient, 1.0e15)?;
                check_range("stiffness exponent", exponent, 0.0, 8.0)?;
            }
        }
        match self.damping {
            Damping::Ratio(z) => check_range("damping ratio", z, 0.0, 100.0)?,
            Damping::Power { coefficient, exponent } => {
                check_range("damping coefficient", coefficient, 0.0, 1.0e15)?;
                check_range("damping exponent", exponent, 0.0, 8.0)?;
            }
        }
        check_range("leaf_mass_per_area", self.leaf_mass_per_area, 0.0, 100.0)?;
        check_range("wood_drag", self.wood_drag, 0.0, 1.0e4)?;
        check_range("leaf_drag", self.leaf_drag, 0.0, 1.0e4)?;
        check_positive("modulus_of_rupture", self.modulus_of_rupture, 1.0e10)?;
        check_positive("anchorage", self.anchorage, 1.0e7)?;
        check_range("grown_wind", self.grown_wind, 0.0, 100.0)?;
        // Infinite: never stripped by the wind.
        if !(self.petiole_strength > 0.0
            && (self.petiole_strength.is_finite() || self.petiole_strength == f32::INFINITY))
        {
            return Err(SimError::param(
                "petiole_strength",
                self.petiole_strength,
                "must be a number greater than 0 N/m² (infinity: the wind never strips a leaf)",
            ));
        }
        Ok(())
    }

    /// The factor multiplying a linear drag coefficient (`wood_drag`, `leaf_drag` and the
    /// forest's per-segment `drag`/`leaf_drag`) for air moving past the surface at `speed`
    /// [m/s] (the relative speed |u| under [`DragLaw::Quadratic`]), so that the force is
    /// coefficient·A·drag_scale(|u|)·u; `leaf` for leaves.
    ///
    /// - [`DragLaw::Linear`]: 1 (Weber's f = l·r·(d·w)).
    /// - [`DragLaw::Quadratic`], bark: |u|/U with U = [`DRAG_MATCH_SPEED`], so the force is
    ///   ½·ρ_air·C_d·A·|u|·u with the C_d the coefficient was matched with.
    /// - [`DragLaw::Quadratic`], leaves: |u|/U up to U_r = [`LEAF_RECONFIGURATION_SPEED`], then
    ///   (U_r/U)·(|u|/U_r)^(1+β), β = [`LEAF_VOGEL_EXPONENT`]: the force grows as |u|^(2+β)
    ///   once the leaves reconfigure (Vogel 1989), continuous at U_r.
    #[inline]
    pub fn drag_scale(&self, speed: f32, leaf: bool) -> f32 {
        match self.drag_law {
            DragLaw::Linear => 1.0,
            DragLaw::Quadratic => quadratic_drag_scale(speed, leaf),
        }
    }

    /// Stiffness of the joint at the base of a segment of base radius `r` and length `l`;
    /// `root` for a tree's root segment, whose joint holds it to the ground.
    ///
    /// Beam: a chain of rigid segments with springs at their bases lumps the beam's bending
    /// into the joints. A joint's rotation is the beam's curvature M/(E·I) integrated over the
    /// stretch of beam the joint stands for, so its compliance 1/k is that stretch's length
    /// over E·I. Each interior joint stands for the beam from the middle of the segment below
    /// it to the middle of its own segment: half a segment on each side, length l, k = E·I/l.
    /// The root joint has beam on one side only, from the ground to the middle of the root
    /// segment: length l/2, so k = 2·E·I/l. (Giving the root E·I/l as well counts half a
    /// segment of beam below the ground: a uniform n-segment cantilever then sags by
    /// (1 + 1/n)² times the beam's w·L⁴/(8·E·I) under its own weight. With 2·E·I/l the lumped
    /// sum is w·l⁴/(2·E·I)·(Σ_{m=1..n} m³ - n³/2) = w·L⁴/(8·E·I)·(1 + 1/n²), and under a tip
    /// load P·l³/(E·I)·(Σ_{m=1..n} m² - n²/2) = P·L³/(3·E·I)·(1 + 1/(2n²)).)
    ///
    /// Power: the empirical law gives each joint a stiffness from its radius alone, fitted as
    /// a joint constant, not derived from a stretch of beam; it has no length to halve, so the
    /// root keeps the law's value like every other joint.
    pub fn stiffness_of(&self, r: f32, l: f32, root: bool) -> f32 {
        match self.stiffness {
            Stiffness::Beam { youngs_modulus } => {
                let beam = if root { 0.5 * l } else { l };
                youngs_modulus * std::f32::consts::PI * r.powi(4) / (4.0 * beam)
            }
            Stiffness::Power { coefficient, exponent } => coefficient * r.powf(exponent),
        }
    }

    /// The bending moment \[N·m\] that breaks a solid round section of radius `r`:
    /// σ_rupture·π·r³/4 (the section modulus I/r = π·r³/4 times the modulus of rupture).
    pub fn rupture_moment(&self, r: f32) -> f32 {
        self.modulus_of_rupture * std::f32::consts::PI * r * r * r / 4.0
    }

    /// The base moment \[N·m\] that uproots a tree of mass `mass` \[kg\]: `anchorage` × mass.
    pub fn anchorage_moment(&self, mass: f32) -> f32 {
        self.anchorage * mass
    }

    /// Joint damping for a segment of base radius `r`, stiffness `k` and inertia `inertia`.
    pub fn damping_of(&self, r: f32, k: f32, inertia: f32) -> f32 {
        match self.damping {
            Damping::Ratio(z) => 2.0 * z * (k * inertia).sqrt(),
            Damping::Power { coefficient, exponent } => coefficient * r.powf(exponent),
        }
    }
}

/// [`Material::drag_scale`] under [`DragLaw::Quadratic`].
#[inline]
pub fn quadratic_drag_scale(speed: f32, leaf: bool) -> f32 {
    if !leaf || speed <= LEAF_RECONFIGURATION_SPEED {
        return speed * (1.0 / DRAG_MATCH_SPEED);
    }
    let onset = LEAF_RECONFIGURATION_SPEED * (1.0 / DRAG_MATCH_SPEED);
    let exponent = 1.0 + LEAF_VOGEL_EXPONENT;
    if exponent == 0.0 {
        onset
    } else {
        onset * (speed / LEAF_RECONFIGURATION_SPEED).powf(exponent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ½·ρ_air·C_d·|u|·u per unit area, the force the coefficients stand for.
    fn quadratic(cd: f32, u: f32) -> f32 {
        0.5 * AIR_DENSITY * cd * u * u
    }

    #[test]
    fn quadratic_scale_gives_real_drag_and_matches_linear_at_ten() {
        let m = Material::default();
        assert_eq!(m.drag_law, DragLaw::Quadratic);
        for u in [5.0f32, 10.0, 36.0] {
            // Bark, C_d = 1.2: within the rounding of 7.35 to 7.4 (0.7 %).
            let bark = m.wood_drag * m.drag_scale(u, false) * u;
            let want = quadratic(1.2, u);
            assert!(
                (bark / want - 1.0).abs() < 0.01,
                "bark at {u} m/s: {bark} N/m², want {want}"
            );
        }
        // Leaves, C_d = 0.5 (3.06 rounded to 3.1): quadratic up to 10 m/s.
        for u in [5.0f32, 10.0] {
            let leaf = m.leaf_drag * m.drag_scale(u, true) * u;
            let want = quadratic(0.5, u);
            assert!(
                (leaf / want - 1.0).abs() < 0.015,
                "leaf at {u} m/s: {leaf}, want {want}"
            );
        }
        // Above it, reconfigured: |u|^(2+β) from the value at 10 m/s.
        let u = 36.0f32;
        let leaf = m.leaf_drag * m.drag_scale(u, true) * u;
        let want = quadratic(0.5, 10.0) * (u / 10.0).powf(2.0 + LEAF_VOGEL_EXPONENT);
        assert!((leaf / want - 1.0).abs() < 0.015, "leaf at 36 m/s: {leaf}, want {want}");
        // At the matching speed both laws give the same force, bark and leaves.
        let linear = Material {
            drag_law: DragLaw::Linear,
            ..m
        };
        for leaf in [false, true] {
            assert_eq!(
                m.drag_scale(DRAG_MATCH_SPEED, leaf),
                linear.drag_scale(DRAG_MATCH_SPEED, leaf)
            );
            assert_eq!(linear.drag_scale(36.0, leaf), 1.0);
        }
        // Bark at 36 m/s: 3.6 times the linear law.
        assert!((m.drag_scale(36.0, false) - 3.6).abs() < 1e-6);
        // Continuous at the reconfiguration speed.
        let below = m.drag_scale(LEAF_RECONFIGURATION_SPEED * (1.0 - 1e-6), true);
        let above = m.drag_scale(LEAF_RECONFIGURATION_SPEED * (1.0 + 1e-6), true);
        assert!((below - above).abs() < 1e-5);
    }
}

#[cfg(test)]
mod strength_tests {
    use super::Material;

    /// A modulus of rupture or an anchorage that is not a finite positive number is refused,
    /// naming the field and its range; the defaults pass.
    #[test]
    fn strength_fields_out_of_range_are_refused_naming_the_field() {
        Material::default().validate().unwrap();
        for v in [-57.0e6, 0.0, f32::NAN, f32::INFINITY, 2.0e10] {
            let m = Material {
                modulus_of_rupture: v,
                ..Material::default()
            };
            let e = m.validate().unwrap_err().to_string();
            println!("modulus_of_rupture {v}: {e}");
            assert!(e.contains("modulus_of_rupture") && e.contains("greater than 0"), "{e}");
        }
        for v in [-150.0, 0.0, f32::NAN, 1.0e8] {
            let m = Material {
                anchorage: v,
                ..Material::default()
            };
            let e = m.validate().unwrap_err().to_string();
            println!("anchorage {v}: {e}");
            assert!(e.contains("anchorage") && e.contains("greater than 0"), "{e}");
        }
        for v in [-1.0, f32::NAN, 150.0] {
            let m = Material {
                grown_wind: v,
                ..Material::default()
            };
            let e = m.validate().unwrap_err().to_string();
            println!("grown_wind {v}: {e}");
            assert!(e.contains("grown_wind") && e.contains("100"), "{e}");
        }
    }

    /// σ·π·r³/4 for white oak at r = 5 cm: 57 MPa · π · 1.25e-4 m³ / 4 = 5596 N·m.
    #[test]
    fn rupture_moment_is_the_modulus_times_the_section_modulus() {
        let m = Material::default();
        let expect = 57.0e6 * std::f64::consts::PI * 0.05f64.powi(3) / 4.0;
        let got = m.rupture_moment(0.05) as f64;
        println!("rupture moment at r = 5 cm: {got:.1} N·m (expected {expect:.1})");
        assert!((got / expect - 1.0).abs() < 1e-5);
        assert!((m.anchorage_moment(1000.0) - 150_000.0).abs() < 1e-2);
    }
}
