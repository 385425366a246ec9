//! Wind fields the trees sample. The solver asks for the wind at each segment's centre (and
//! leaves at their own position), so a 3D field can replace the uniform wind without touching
//! the dynamics.

use glam::Vec3;
use sylva_engine::{FrameTimings, JobSystem};

use crate::error::{check_range, SimError};
use crate::rng::Rng;

/// A wind velocity field [m/s].
pub trait WindField: Send + Sync {
    /// Moves the field to time `time` \[s\] before a step samples it.
    fn advance(&mut self, time: f64);
    /// Moves the field to time `time` before a step, with the step's job system and timings:
    /// a field that simulates (the fluid grid) steps here. By default, [`advance`].
    ///
    /// [`advance`]: WindField::advance
    fn prepare(&mut self, time: f64, _jobs: &JobSystem, _timings: &FrameTimings) {
        self.advance(time);
    }
    /// For a field that steps on the CPU (the fluid grid), stepping beside the trees: when a
    /// step of the field is due before `next` \[s\], takes the field as it is now out of
    /// `self` and returns it as a field of its own, which the trees sample while
    /// [`step_detached`](WindField::step_detached) steps `self` from it; then
    /// [`attach`](WindField::attach) takes it back. The trees sample the same field as without
    /// it; only the field's next step is computed sooner. By default, `None`: nothing steps
    /// beside the trees.
    fn detach(&mut self, _next: f64) -> Option<Box<dyn WindField>> {
        None
    }
    /// Steps the field from what [`detach`](WindField::detach) returned, while the trees
    /// sample that (a job beside the trees' step). Does nothing when nothing is detached.
    fn step_detached(&mut self, _jobs: &JobSystem, _timings: &FrameTimings) {}
    /// Takes back what [`detach`](WindField::detach) returned, with the stepped field in
    /// place.
    fn attach(&mut self, _detached: Box<dyn WindField>) {}
    /// The fluid grid behind this field, if it is one.
    fn fluid(&self) -> Option<&crate::fluid::FluidGrid> {
        None
    }
    /// The fluid grid behind this field, if it is one, to change it.
    fn fluid_mut(&mut self) -> Option<&mut crate::fluid::FluidGrid> {
        None
    }
    /// The fluid wind stepped on the CPU behind this field, if it is one, to change how its
    /// steps are spread over the trees' ([`FluidWind::set_parts`](crate::fluid::FluidWind::set_parts)).
    fn fluid_wind_mut(&mut self) -> Option<&mut crate::fluid::FluidWind> {
        None
    }
    /// Why the field stopped moving, when it failed (a field computed on a device that
    /// reported an error): the simulation goes on with the last field, and the caller shows this.
    fn failure(&self) -> Option<String> {
        None
    }
    /// The field as `Any`, for a field that lives on a device, so that a model stepped on the
    /// same device can read it there (`sylva_render`'s GPU wind). By default, `None`.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// The field as `Any` to change it, for a field that lives on a device (a model stepped
    /// on the same device steps it without copying it back, `sylva_render`'s GPU wind). By
    /// default, `None`.
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
    /// Wind velocity at a world position.
    fn sample(&self, position: Vec3) -> Vec3;
    /// Replaces each point by the wind velocity there: [`sample`] at each, bit for bit, in one
    /// call (a grid does many points at once faster than one through a trait object).
    ///
    /// [`sample`]: WindField::sample
    fn sample_in_place(&self, points: &mut [Vec3]) {
        for p in points {
            *p = self.sample(*p);
        }
    }
    /// The wind velocity at each of `points`, into `out` (as long as `points`): [`sample`] at
    /// each, bit for bit.
    ///
    /// [`sample`]: WindField::sample
    fn sample_into(&self, points: &[Vec3], out: &mut [Vec3]) {
        out.copy_from_slice(points);
        self.sample_in_place(out);
    }
    /// `Some(w)` when the field is the same everywhere at the current time, so the solver can
    /// skip per-segment sampling.
    fn uniform(&self) -> Option<Vec3> {
        None
    }
    /// `Some(s)` when no [`sample`](WindField::sample) at the current time is faster than `s`
    /// \[m/s\] (so a check for a strong wind can skip sampling when even `s` is not strong);
    /// `None` when the field does not know. By default, the uniform wind's speed, if uniform.
    fn speed_bound(&self) -> Option<f32> {
        self.uniform().map(Vec3::length)
    }
}

/// No wind.
#[derive(Clone, Copy, Debug, Default)]
pub struct Calm;

impl WindField for Calm {
    fn advance(&mut self, _time: f64) {}
    fn sample(&self, _position: Vec3) -> Vec3 {
        Vec3::ZERO
    }
    fn uniform(&self) -> Option<Vec3> {
        Some(Vec3::ZERO)
    }
}

/// Uniform wind with gusts: a mean horizontal speed from a mean direction, its strength and
/// direction varying smoothly in time as a sum of incommensurate sines with seeded phases
/// (a gust every few seconds, no period shorter than a second).
#[derive(Clone, Debug)]
pub struct GustingWind {
    /// Mean speed [m/s].
    pub speed: f32,
    /// Mean direction the wind blows towards, as an angle around +y from +x \[rad\].
    pub heading: f32,
    /// Relative gust strength: the speed varies within ±gust of the mean (0 = steady).
    pub gust: f32,
    phases: [f32; 6],
    current: Vec3,
}

/// Frequencies [Hz] of the gust components: strength (three) and direction (three).
const GUST_FREQUENCIES: [f32; 6] = [0.071, 0.163, 0.37, 0.053, 0.119, 0.29];

impl GustingWind {
    /// Gusting wind of mean `speed` [m/s] towards `heading` \[rad\], varying within ±`gust` of the mean, its phases drawn from `seed`; out-of-range values are refused, naming them.
    pub fn new(speed: f32, heading: f32, gust: f32, seed: u64) -> Result<Self, SimError> {
        check_range("wind speed", speed, 0.0, 200.0)?;
        check_range("wind heading", heading, -1.0e4, 1.0e4)?;
        check_range("gust", gust, 0.0, 1.0)?;
        let mut rng = Rng::new(seed ^ 0x0051_5749_4E44);
        let mut phases = [0.0; 6];
        for p in &mut phases {
            *p = rng.range(0.0, std::f32::consts::TAU);
        }
        let mut w = GustingWind {
            speed,
            heading,
            gust,
            phases,
            current: Vec3::ZERO,
        };
        w.advance(0.0);
        Ok(w)
    }

    /// The wind velocity at a time, everywhere.
    pub fn at(&self, time: f64) -> Vec3 {
        let tau = std::f64::consts::TAU;
        let wave = |k: usize| ((tau * GUST_FREQUENCIES[k] as f64 * time) as f32 + self.phases[k]).sin();
        // Strength: weighted sum normalised to [-1, 1].
        let strength = (0.5 * wave(0) + 0.3 * wave(1) + 0.2 * wave(2)) * self.gust;
        let veer = (0.5 * wave(3) + 0.3 * wave(4) + 0.2 * wave(5)) * self.gust * 0.35;
        let heading = self.heading + veer;
        Vec3::new(heading.cos(), 0.0, heading.sin()) * self.speed * (1.0 + strength)
    }
}

impl WindField for GustingWind {
    fn advance(&mut self, time: f64) {
        self.current = self.at(time);
    }
    fn sample(&self, _position: Vec3) -> Vec3 {
        self.current
    }
    fn uniform(&self) -> Option<Vec3> {
        Some(self.current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gusts_stay_within_bounds_and_vary() {
        let w = GustingWind::new(10.0, 0.0, 0.5, 1).unwrap();
        let (mut lo, mut hi) = (f32::MAX, 0.0f32);
        for k in 0..6000 {
            let v = w.at(k as f64 / 60.0);
            assert_eq!(v.y, 0.0);
            lo = lo.min(v.length());
            hi = hi.max(v.length());
        }
        assert!(lo >= 5.0 - 1e-3 && hi <= 15.0 + 1e-3, "{lo}..{hi}");
        assert!(hi - lo > 3.0, "gusts too weak: {lo}..{hi}");
        let steady = GustingWind::new(10.0, 0.5, 0.0, 1).unwrap();
        assert!((steady.at(3.0) - Vec3::new(0.5f32.cos(), 0.0, 0.5f32.sin()) * 10.0).length() < 1e-5);
    }

    #[test]
    fn refuses_bad_values() {
        assert!(GustingWind::new(f32::NAN, 0.0, 0.5, 1).is_err());
        assert!(GustingWind::new(-1.0, 0.0, 0.5, 1).is_err());
        assert!(GustingWind::new(10.0, 0.0, 2.0, 1).is_err());
    }
}
