//! The camera the frame is filled and drawn for: a perspective view with reversed depth, and
//! its frustum for culling.

use glam::camera::rh::{proj::vulkan, view::look_at_mat4};
use glam::{Mat4, Vec3, Vec4};

/// A perspective camera looking at `target` (y is up).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    pub eye: Vec3,
    pub target: Vec3,
    /// Vertical field of view \[rad\].
    pub fov_y: f32,
    /// Width over height of the image.
    pub aspect: f32,
    /// Image height in pixels (levels of detail depend on it).
    pub height_px: f32,
    /// Near plane distance \[m\].
    pub near: f32,
}

impl Camera {
    /// The vertical field of view [`orbit`](Self::orbit) gives \[rad\].
    pub const FOV_Y: f32 = 45.0 * std::f32::consts::PI / 180.0;

    /// A camera on a sphere around `target`: `yaw` about the vertical from +z, `pitch` up from
    /// the horizon, `distance` from the target.
    pub fn orbit(target: Vec3, yaw: f32, pitch: f32, distance: f32, aspect: f32, height_px: f32) -> Camera {
        let dir = Vec3::new(pitch.cos() * yaw.sin(), pitch.sin(), pitch.cos() * yaw.cos());
        Camera {
            eye: target + dir * distance,
            target,
            fov_y: Self::FOV_Y,
            aspect,
            height_px,
            near: (distance * 0.01).clamp(0.01, 1.0),
        }
    }

    pub fn view(&self) -> Mat4 {
        let forward = (self.target - self.eye).normalize_or(Vec3::NEG_Z);
        // Looking straight down or up: any horizontal up vector will do.
        let up = if forward.y.abs() > 0.999 { Vec3::Z } else { Vec3::Y };
        look_at_mat4(self.eye, self.target, up)
    }

    /// Vulkan projection: reversed depth (1 at the near plane, 0 at infinity), y down in
    /// normalised device coordinates so that +y is up on screen.
    pub fn projection(&self) -> Mat4 {
        vulkan::perspective_infinite_reverse(self.fov_y, self.aspect, self.near)
    }

    pub fn view_proj(&self) -> Mat4 {
        self.projection() * self.view()
    }

    /// Pixels per metre at unit distance.
    pub fn pixels_per_radian(&self) -> f32 {
        self.height_px / (2.0 * (0.5 * self.fov_y).tan())
    }

    /// Projects a world point to pixel coordinates (x right, y down from the top left) and its
    /// distance along the view direction; `None` behind the camera.
    pub fn project(&self, p: Vec3, width_px: f32) -> Option<(f32, f32, f32)> {
        let c = self.view_proj() * p.extend(1.0);
        if c.w <= 1e-6 {
            return None;
        }
        let x = (c.x / c.w * 0.5 + 0.5) * width_px;
        let y = (c.y / c.w * 0.5 + 0.5) * self.height_px;
        Some((x, y, c.w))
    }
}

/// The view frustum's planes (normals pointing in), for culling bounding spheres.
#[derive(Clone, Copy, Debug)]
pub struct Frustum {
    planes: [Vec4; 5],
}

impl Frustum {
    pub fn new(view_proj: Mat4) -> Frustum {
        let r = |i: usize| view_proj.row(i);
        let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
        // Left, right, bottom, top and near (reversed depth: z <= w). Infinite far plane.
        let mut planes = [r3 + r0, r3 - r0, r3 + r1, r3 - r1, r3 - r2];
        for p in &mut planes {
            *p /= p.truncate().length().max(1e-12);
        }
        Frustum { planes }
    }

    /// Whether a sphere reaches into the frustum.
    #[inline]
    pub fn sees(&self, center: Vec3, radius: f32) -> bool {
        self.planes.iter().all(|p| p.truncate().dot(center) + p.w >= -radius)
    }
}
