//! Winds the models' unit tests share.

use glam::Vec3;

use crate::wind::WindField;

/// A wind that varies in space and time, so every segment, leaf and particle samples its own:
/// `speed` times a smooth field of order one.
pub(crate) struct Swirl {
    pub time: f32,
    pub speed: f32,
}

impl WindField for Swirl {
    fn advance(&mut self, time: f64) {
        self.time = time as f32;
    }
    fn sample(&self, p: Vec3) -> Vec3 {
        let t = self.time;
        Vec3::new(
            1.0 + 0.5 * (0.7 * p.y + 1.3 * t).sin(),
            0.2 * (0.9 * p.x - 0.4 * t).sin(),
            0.6 * (0.5 * p.z + 0.8 * p.x + 2.1 * t).cos(),
        ) * self.speed
    }
}
