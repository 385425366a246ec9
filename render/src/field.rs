//! The wind field made visible: arrows on a horizontal slice of the fluid grid
//! (`sylva_sim::fluid`), one per block of cells, each along the cell-centred wind there, its
//! length and colour by speed relative to the fastest arrow on the slice.
//!
//! [`slice_arrows`] builds them on the CPU from a [`FluidGrid`]; [`gpu_arrows`] sets up the same
//! arrows to be drawn straight from the GPU solver's buffers (`crate::wind::GpuFluid`), where the
//! red end of the colour scale is given rather than measured.

use glam::Vec3;
use sylva_shaders::{ArrowFieldPush, WindArrow};
use sylva_sim::fluid::FluidGrid;

use crate::error::{RenderError, Result};
use crate::wind::FieldBuffers;

/// At most this many arrows along each horizontal side of the slice.
pub const ARROWS_ACROSS: usize = 40;
/// Arrows are at most this share of the spacing between them long.
const LENGTH_SHARE: f32 = 0.9;
/// Shaft width as a share of the spacing.
const WIDTH_SHARE: f32 = 0.07;
/// Wind below this share of the fastest on the slice draws no arrow.
const CALM_SHARE: f32 = 1e-3;

/// What a slice of arrows shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldSlice {
    /// Cell layer (0 at the ground).
    pub layer: usize,
    /// Layers in the grid.
    pub layers: usize,
    /// Height of the layer's cell centres \[m\].
    pub height: f32,
    /// Fastest wind among the arrows [m/s] (the red end of the colour scale).
    pub max_speed: f32,
    /// Arrows drawn.
    pub arrows: usize,
}

/// The sample cells along x and z: every `stride`-th from `first` (the middle cell of each
/// stride × stride block).
pub fn sampling(cells: [usize; 3]) -> (usize, usize) {
    let stride = cells[0].max(cells[2]).div_ceil(ARROWS_ACROSS).max(1);
    (stride, stride / 2)
}

/// Replaces `out` with arrows for cell layer `layer` of `grid` (solid cells get none).
/// `None` when the grid has no such layer.
pub fn slice_arrows(grid: &FluidGrid, layer: usize, out: &mut Vec<WindArrow>) -> Option<FieldSlice> {
    out.clear();
    let [nx, ny, nz] = grid.cells();
    if layer >= ny {
        return None;
    }
    let h = grid.cell_size();
    let origin = grid.origin();
    let (stride, first) = sampling(grid.cells());
    let spacing = stride as f32 * h.x.min(h.z);
    let solid = grid.solid();
    let height = origin.y + (layer as f32 + 0.5) * h.y;
    // Sample points: the middle cell of each stride × stride block, first held in `out` as
    // (centre, wind, speed), then scaled in place once the fastest is known (the frame's
    // vector keeps its capacity, so a steady view fills without allocating).
    let mut max_speed = 0.0f32;
    for k in (first..nz).step_by(stride) {
        for i in (first..nx).step_by(stride) {
            if solid[i + nx * (layer + ny * k)] {
                continue;
            }
            let centre = origin
                + Vec3::new(
                    (i as f32 + 0.5) * h.x,
                    (layer as f32 + 0.5) * h.y,
                    (k as f32 + 0.5) * h.z,
                );
            let v = grid.cell_velocity(i, layer, k);
            let speed = v.length();
            max_speed = max_speed.max(speed);
            out.push(WindArrow {
                tail_width: [centre.x, centre.y, centre.z, WIDTH_SHARE * spacing],
                vector_speed: [v.x, v.y, v.z, speed],
            });
        }
    }
    let scale = LENGTH_SHARE * spacing / max_speed;
    out.retain_mut(|a| {
        let speed = a.vector_speed[3];
        if max_speed == 0.0 || speed < CALM_SHARE * max_speed {
            return false;
        }
        let vector = Vec3::from_slice(&a.vector_speed[..3]) * scale;
        let tail = Vec3::from_slice(&a.tail_width[..3]) - 0.5 * vector;
        a.tail_width[..3].copy_from_slice(&tail.to_array());
        a.vector_speed = [vector.x, vector.y, vector.z, speed / max_speed];
        true
    });
    Some(FieldSlice {
        layer,
        layers: ny,
        height,
        max_speed,
        arrows: out.len(),
    })
}

/// Arrows drawn from the GPU solver's field: layer `layer` of the grid whose velocities are in
/// `field` (cells of size `h` from `origin`), red at `max_speed` [m/s]. Every sample cell gets an
/// instance (solid and calm cells draw nothing). Returns the push constants of
/// `arrow_field.vert` and the instance count.
pub fn gpu_arrows(
    field: &FieldBuffers,
    origin: Vec3,
    h: Vec3,
    layer: usize,
    max_speed: f32,
) -> Result<(ArrowFieldPush, u32)> {
    let n = field.cells.map(|c| c as usize);
    if layer >= n[1] {
        return Err(RenderError::Invalid {
            what: "wind field layer",
            value: layer.to_string(),
            allowed: format!("0 to {} (the grid's cell layers)", n[1] - 1),
        });
    }
    if !(max_speed.is_finite() && max_speed > 0.0) {
        return Err(RenderError::Invalid {
            what: "wind field colour scale",
            value: format!("{max_speed} m/s"),
            allowed: "a positive speed".to_string(),
        });
    }
    if !(origin.is_finite() && h.is_finite() && h.cmpgt(Vec3::ZERO).all()) {
        return Err(RenderError::Invalid {
            what: "wind grid placement",
            value: format!("origin {origin}, cell {h}"),
            allowed: "finite values and positive cell sizes".to_string(),
        });
    }
    let (stride, first) = sampling(n);
    let along_x = (n[0] - first).div_ceil(stride);
    let along_z = (n[2] - first).div_ceil(stride);
    let spacing = stride as f32 * h.x.min(h.z);
    let float = |bytes: u64| (bytes / 4) as u32;
    let push = ArrowFieldPush {
        n: [field.cells[0], field.cells[1], field.cells[2], layer as u32],
        sampling: [stride as u32, first as u32, along_x as u32, 0],
        offsets: [
            float(field.offsets[0]),
            float(field.offsets[1]),
            float(field.offsets[2]),
            0,
        ],
        origin: [origin.x, origin.y, origin.z, 0.0],
        h: [h.x, h.y, h.z, 0.0],
        scale: [
            LENGTH_SHARE * spacing / max_speed,
            WIDTH_SHARE * spacing,
            1.0 / max_speed,
            0.0,
        ],
    };
    Ok((push, (along_x * along_z) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sylva_sim::fluid::FluidParams;

    fn grid(cells: [usize; 3]) -> FluidGrid {
        let mut p = FluidParams::over(Vec3::new(-20.0, 0.0, -20.0), Vec3::new(20.0, 10.0, 20.0));
        p.cells = cells;
        FluidGrid::new(p).unwrap()
    }

    #[test]
    fn arrows_follow_the_wind_and_scale_with_speed() {
        let mut g = grid([80, 10, 80]);
        // Wind along +x whose speed grows along z; nothing else.
        let [nx, ny, nz] = g.cells();
        let u = g.velocity_mut(0);
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..=nx {
                    u[i + (nx + 1) * (j + ny * k)] = 1.0 + k as f32 * 0.1;
                }
            }
        }
        let mut out = Vec::new();
        let s = slice_arrows(&g, 3, &mut out).unwrap();
        // 80 cells at 40 across: one arrow per 2 × 2 block.
        assert_eq!(out.len(), 40 * 40);
        assert_eq!(s.arrows, out.len());
        assert!((s.height - 3.5).abs() < 1e-5, "{}", s.height);
        let fastest = 1.0 + 79.0 * 0.1;
        assert!((s.max_speed - fastest).abs() < 1e-4, "{}", s.max_speed);
        let spacing = 2.0 * 0.5;
        for a in &out {
            let v = Vec3::from_slice(&a.vector_speed[..3]);
            assert!(v.y == 0.0 && v.z == 0.0 && v.x > 0.0);
            // Centred on a cell centre of layer 3, length in proportion to speed.
            let mid = Vec3::from_slice(&a.tail_width[..3]) + 0.5 * v;
            assert!((mid.y - 3.5).abs() < 1e-5);
            let k = ((mid.z + 20.0) / 0.5 - 0.5).round();
            let speed = 1.0 + k * 0.1;
            assert!((a.vector_speed[3] - speed / fastest).abs() < 1e-5);
            assert!((v.x - LENGTH_SHARE * spacing * speed / fastest).abs() < 1e-5);
        }
        assert!(slice_arrows(&g, 10, &mut out).is_none());
        assert!(out.is_empty());
    }

    #[test]
    fn solids_and_calm_get_no_arrows() {
        let mut g = grid([40, 8, 40]);
        let mut out = Vec::new();
        // A still field: nothing to draw.
        let s = slice_arrows(&g, 2, &mut out).unwrap();
        assert_eq!((s.arrows, s.max_speed), (0, 0.0));
        // Uniform wind, then a box covering the middle of the slice.
        for v in g.velocity_mut(2).iter_mut() {
            *v = -3.0;
        }
        slice_arrows(&g, 2, &mut out).unwrap();
        assert_eq!(out.len(), 40 * 40);
        let solid = g
            .add_solid_box(Vec3::new(-5.0, 0.0, -5.0), Vec3::new(5.0, 4.0, 5.0))
            .unwrap();
        assert!(solid > 0);
        slice_arrows(&g, 2, &mut out).unwrap();
        // Cells 15..25 along x and z are solid: 10 × 10 fewer arrows.
        assert_eq!(out.len(), 40 * 40 - 100);
        for a in &out {
            let mid = Vec3::from_slice(&a.tail_width[..3]) + 0.5 * Vec3::from_slice(&a.vector_speed[..3]);
            assert!(mid.x.abs() > 5.0 || mid.z.abs() > 5.0, "{mid}");
        }
    }
}
