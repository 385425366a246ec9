//! The adjustable variables of Manavi's model (Manavi 2007, "Adjustable Variables"), with
//! defaults derived from each branch's radius and the forest's [`Material`].

use crate::error::{check_positive, check_range, SimError};
use crate::material::Material;

/// Most relaxation passes any constraint may ask for in one step.
pub const MAX_ITERATIONS: u32 = 64;

/// Settings of [`VerletModel`](super::VerletModel).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VerletParams {
    /// Time step \[s\]. Manavi used 0.043 s at 60 frames per second; Sylva steps the frame's
    /// own time.
    pub dt: f32,
    /// Verlet steps per time step: each moves the particles by `dt / substeps` and relaxes
    /// the constraints its passes. Smaller steps make the relaxation far stiffer for the same
    /// work (a pass removes a fixed fraction of the error each substep, while gravity and the
    /// wind add an error that falls with the square of the step).
    pub substeps: u32,
    /// Relaxation passes per step of the constraints of the thickest branch of each tree (its
    /// trunk's first segment). The thesis sets iterations per skeletal particle: more passes
    /// make wood stiffer.
    pub iterations: u32,
    /// How the passes fall off with the radius: a segment of radius r in a tree whose trunk
    /// starts at radius R gets `ceil(iterations · (r/R)^iteration_exponent)` passes, at least
    /// `min_iterations`. 0 gives every segment `iterations`.
    pub iteration_exponent: f32,
    /// Fewest passes of any segment's constraints.
    pub min_iterations: u32,
    /// Distance of a branching plane's four structural particles from its centre, in units of
    /// the branch's base radius. The thesis: the closer they are, the less force bends the
    /// branch.
    pub plane_scale: f32,
    /// Smallest distance of the structural particles from the plane's centre, as a fraction
    /// of the branch's length (thin, long branches would otherwise have a plane too small to
    /// hold their direction: its structural constraints would run almost along the branch).
    pub plane_min: f32,
    /// Most segments in one of the thesis's branches: a longer stem of the generator is cut
    /// into branches of at most this many segments, each starting with its own plane tied to
    /// the one before (the thesis's branches are a few particles long).
    pub branch_segments: u32,
    /// Length of the four root constraints, in units of the trunk's base radius. The thesis:
    /// the further the static root particles, the stronger the root system.
    pub root_length: f32,
    /// Relaxation passes of the root constraints per step.
    pub root_iterations: u32,
    /// How far a root constraint may stretch, as a fraction of its rest length, before it is
    /// cut (the thesis's maximum stretch length).
    pub root_stretch: f32,
    /// The thesis's elasticity: the fraction of a constraint's error each pass corrects
    /// (1 corrects it all; the thesis advises leaving it at 1).
    pub elasticity: f32,
    /// Fraction of a particle's velocity lost per second (Verlet's velocity damping; the thesis
    /// has none and relies on the relaxation; Sylva adds the material's structural damping so
    /// a released tree settles).
    pub damping: f32,
    /// Gravity \[m/s²\], along −y.
    pub gravity: f32,
    /// The thesis's breaking cone, set per branch: a branch of base radius r whose first
    /// segment has length l breaks off when that segment turns more than `break_strain`·l/r
    /// \[rad\] from its rest direction in its parent's frame, at most π (0 never breaks).
    /// l is at least the arm of the branch's plane (its structural particles' distance from
    /// the centre): the turn accrues over the wood the plane's constraints span.
    /// The form is a beam's bend over l at a surface strain ε, κ = ε/r, so thin long twigs
    /// bend far before they break and short thick wood little. The relaxation bends joints
    /// more than beam theory would (its flexibility is the passes'), so ε is set on the
    /// model's own response, not green wood's (σ_rupture/E ≈ 0.005).
    /// Every cone is at least the turn its branch grew to carry (`grown`: the steady turn
    /// under `Material::grown_wind` times the gusts' dynamic amplification), so this strain
    /// decides only for wood the grown wind turns little. With the default 0.04: the viewer's
    /// default forest in its fluid wind loses nothing in 3,600 frames at 5 m/s and 120
    /// branches in 600 frames at 36 m/s; the 1,597-segment test tree in bench sim's gusts
    /// loses 0 in 1,200 steps at 5 m/s, 35 at 36 m/s (Manavi's ~80 mph). (With the strain
    /// alone at 0.08, the forest lost 45 branches in 600 frames at 5 m/s.)
    pub break_strain: f32,
    /// The fraction of its velocity along the ground a particle lying on the ground loses each
    /// substep (0: it slides freely, 1: it sticks).
    pub ground_friction: f32,
}

impl VerletParams {
    /// Defaults for trees of `material`: the damping follows the material's damping ratio
    /// (a fraction of the velocity per second equal to twice the ratio times a 1 Hz sway's
    /// angular frequency), the rest is the thesis's advice.
    pub fn for_material(material: &Material) -> VerletParams {
        let ratio = match material.damping {
            crate::material::Damping::Ratio(z) => z,
            crate::material::Damping::Power { .. } => 0.15,
        };
        VerletParams {
            dt: 1.0 / 60.0,
            substeps: 2,
            iterations: 2,
            iteration_exponent: 1.0,
            min_iterations: 1,
            plane_scale: 1.0,
            plane_min: 0.5,
            branch_segments: 4,
            root_length: 4.0,
            root_iterations: 4,
            root_stretch: 0.1,
            elasticity: 1.0,
            damping: (2.0 * ratio * std::f32::consts::TAU).min(20.0),
            gravity: 9.81,
            break_strain: 0.04,
            ground_friction: 0.5,
        }
    }

    /// Checks every setting against its allowed range, naming the first one out of it.
    pub fn validate(&self) -> Result<(), SimError> {
        check_positive("time step (dt)", self.dt, 0.1)?;
        check_iterations("iterations", self.iterations)?;
        check_iterations("substeps", self.substeps)?;
        check_iterations("min iterations", self.min_iterations)?;
        check_iterations("root iterations", self.root_iterations)?;
        if self.min_iterations > self.iterations {
            return Err(SimError::param(
                "min iterations",
                self.min_iterations,
                format!("must not exceed iterations ({})", self.iterations),
            ));
        }
        check_range("iteration exponent", self.iteration_exponent, 0.0, 4.0)?;
        check_positive("plane scale", self.plane_scale, 100.0)?;
        check_range("plane min", self.plane_min, 0.0, 10.0)?;
        if !(1..=1000).contains(&self.branch_segments) {
            return Err(SimError::param(
                "branch segments",
                self.branch_segments,
                "must be a whole number of segments from 1 to 1000",
            ));
        }
        check_positive("root length", self.root_length, 100.0)?;
        check_positive("root stretch", self.root_stretch, 10.0)?;
        check_positive("elasticity", self.elasticity, 1.0)?;
        check_range("damping", self.damping, 0.0, 1.0 / self.dt)?;
        check_range("gravity", self.gravity, 0.0, 100.0)?;
        check_range("break strain", self.break_strain, 0.0, 1.0)?;
        check_range("ground friction", self.ground_friction, 0.0, 1.0)?;
        Ok(())
    }

    /// The breaking cone's half-angle \[rad\] of a branch of base radius `r` whose first
    /// segment is `l` long (π: it never breaks).
    pub fn cone_for(&self, r: f32, l: f32) -> f32 {
        if self.break_strain == 0.0 {
            return std::f32::consts::PI;
        }
        (self.break_strain * l / r).min(std::f32::consts::PI)
    }

    /// The time step of one substep \[s\].
    pub fn substep(&self) -> f32 {
        self.dt / self.substeps as f32
    }

    /// Relaxation passes of a segment of base radius `r` in a tree whose trunk starts at
    /// radius `trunk`, per substep.
    pub fn iterations_for(&self, r: f32, trunk: f32) -> u32 {
        let share = (r / trunk).clamp(0.0, 1.0).powf(self.iteration_exponent);
        ((self.iterations as f32 * share).ceil() as u32).clamp(self.min_iterations, self.iterations)
    }
}

impl Default for VerletParams {
    fn default() -> Self {
        VerletParams::for_material(&Material::default())
    }
}

fn check_iterations(name: &'static str, n: u32) -> Result<(), SimError> {
    if (1..=MAX_ITERATIONS).contains(&n) {
        Ok(())
    } else {
        Err(SimError::param(
            name,
            n,
            format!("must be a whole number of relaxation passes from 1 to {MAX_ITERATIONS}"),
        ))
    }
}
