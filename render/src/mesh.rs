//! The few meshes everything is drawn with: a unit tapered cylinder per level of detail, a leaf
//! card and a unit sphere. Instances place, turn and scale them.

use sylva_shaders::{CardVertex, MeshVertex};

/// An indexed triangle mesh.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh<V> {
    pub vertices: Vec<V>,
    pub indices: Vec<u16>,
}

/// Sides of the branch cylinders at each level of detail (near to far).
pub const CYLINDER_SIDES: [u32; 3] = [8, 5, 3];

/// Fewest sides a cylinder has domes at its ends; fewer-sided ones (the far level of detail,
/// a pixel or two wide) are open tubes.
pub const MIN_DOME_SIDES: u32 = 5;

/// A cylinder of radius 1 from y = 0 to y = 1 with `sides` sides, counter-clockwise seen from
/// outside; with `MIN_DOME_SIDES` sides or more, a dome closes each end.
///
/// The shader scales each ring by the segment's radius at that end and tilts the side normals
/// for the taper. The domes are hemispheres of the end's radius: their vertices have y below 0
/// (the base dome) or above 1 (the tip dome), the excess in units of that radius (see
/// `segment_local` in `common.glsl`). Segments join end to end, each turned from the one
/// before; the base dome fills the wedge that opens on the outside of the bend between one
/// segment's end and the next one's start (without it, a crack as wide as the radius times the
/// bend angle), and the tip dome rounds a twig's end.
pub fn cylinder(sides: u32) -> Mesh<MeshVertex> {
    assert!((3..=64).contains(&sides), "cylinder sides {sides}: allowed 3..=64");
    let mut m = Mesh::default();
    let row = (sides + 1) as u16;
    // One ring of `sides + 1` vertices at height y and elevation `el` from the ring's plane
    // (0: the side; ±45°: halfway up a dome).
    let ring = |m: &mut Mesh<MeshVertex>, y: f32, el: f32| -> u16 {
        let first = m.vertices.len() as u16;
        let (se, ce) = el.sin_cos();
        for k in 0..=sides {
            let a = std::f32::consts::TAU * k as f32 / sides as f32;
            let (s, c) = a.sin_cos();
            m.vertices.push(MeshVertex {
                pos: [c * ce, y, -s * ce],
                normal: [c * ce, se, -s * ce],
            });
        }
        first
    };
    // Quads between two rings, wound outward when `lower` lies below `upper` along y.
    let band = |m: &mut Mesh<MeshVertex>, lower: u16, upper: u16| {
        for k in 0..sides as u16 {
            let (a, b, c, d) = (lower + k, lower + k + 1, upper + k, upper + k + 1);
            m.indices.extend_from_slice(&[a, b, d, a, d, c]);
        }
    };
    let bottom = ring(&mut m, 0.0, 0.0);
    let top = ring(&mut m, 1.0, 0.0);
    band(&mut m, bottom, top);
    debug_assert_eq!(top, bottom + row);
    if sides >= MIN_DOME_SIDES {
        let half = std::f32::consts::FRAC_PI_4;
        let r45 = half.cos();
        // Base dome: the 45° ring and the pole below the bottom ring.
        let below = ring(&mut m, -r45, -half);
        band(&mut m, below, bottom);
        let pole = m.vertices.len() as u16;
        m.vertices.push(MeshVertex {
            pos: [0.0, -1.0, 0.0],
            normal: [0.0, -1.0, 0.0],
        });
        for k in 0..sides as u16 {
            m.indices.extend_from_slice(&[pole, below + k + 1, below + k]);
        }
        // Tip dome: the 45° ring and the pole above the top ring.
        let above = ring(&mut m, 1.0 + r45, half);
        band(&mut m, top, above);
        let pole = m.vertices.len() as u16;
        m.vertices.push(MeshVertex {
            pos: [0.0, 2.0, 0.0],
            normal: [0.0, 1.0, 0.0],
        });
        for k in 0..sides as u16 {
            m.indices.extend_from_slice(&[above + k, above + k + 1, pole]);
        }
    }
    m
}

/// The leaf card: a unit square in texture space, two triangles.
pub fn card() -> Mesh<CardVertex> {
    Mesh {
        vertices: vec![
            CardVertex { uv: [0.0, 0.0] },
            CardVertex { uv: [1.0, 0.0] },
            CardVertex { uv: [1.0, 1.0] },
            CardVertex { uv: [0.0, 1.0] },
        ],
        indices: vec![0, 1, 2, 0, 2, 3],
    }
}

/// A unit sphere of `rings` latitude bands and `2 rings` longitude segments.
pub fn sphere(rings: u32) -> Mesh<MeshVertex> {
    assert!((2..=64).contains(&rings), "sphere rings {rings}: allowed 2..=64");
    let segs = 2 * rings;
    let mut m = Mesh::default();
    for i in 0..=rings {
        let theta = std::f32::consts::PI * i as f32 / rings as f32;
        let (st, ct) = theta.sin_cos();
        for k in 0..=segs {
            let phi = std::f32::consts::TAU * k as f32 / segs as f32;
            let (sp, cp) = phi.sin_cos();
            let p = [st * cp, ct, -st * sp];
            m.vertices.push(MeshVertex { pos: p, normal: p });
        }
    }
    let row = (segs + 1) as u16;
    for i in 0..rings as u16 {
        for k in 0..segs as u16 {
            let a = i * row + k;
            let (b, c, d) = (a + 1, a + row, a + row + 1);
            m.indices.extend_from_slice(&[a, c, d, a, d, b]);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    /// Every triangle's winding gives a normal pointing the way of its vertices' normals
    /// (outward), so back-face culling keeps the outside.
    fn outward<V>(m: &Mesh<V>, pos: impl Fn(&V) -> Vec3, normal: impl Fn(&V) -> Vec3) {
        for t in m.indices.chunks_exact(3) {
            let [a, b, c] = [0, 1, 2].map(|i| &m.vertices[t[i] as usize]);
            let face = (pos(b) - pos(a)).cross(pos(c) - pos(a));
            if face.length() < 1e-5 {
                continue; // degenerate at a sphere's pole
            }
            let n = normal(a) + normal(b) + normal(c);
            assert!(face.dot(n) > 0.0, "triangle {t:?} winds inward");
        }
    }

    /// Where the shader puts a mesh vertex for a segment of radius 1 at both ends and length
    /// `l` (`segment_local` in `common.glsl`).
    fn placed(p: [f32; 3], l: f32) -> Vec3 {
        let t = p[1].clamp(0.0, 1.0);
        Vec3::new(p[0], t * l + p[1].min(0.0) + (p[1] - 1.0).max(0.0), p[2])
    }

    #[test]
    fn cylinders_wind_outward_and_span_the_unit_height() {
        for sides in CYLINDER_SIDES {
            let m = cylinder(sides);
            let domes = sides >= MIN_DOME_SIDES;
            // Side quads, and per dome a band of quads and a fan.
            let triangles = 2 * sides + if domes { 2 * 3 * sides } else { 0 };
            assert_eq!(m.indices.len() as u32, 3 * triangles, "{sides} sides");
            for l in [0.3, 1.0, 4.0] {
                outward(&m, |v| placed(v.pos, l), |v| Vec3::from(v.normal));
            }
            for v in &m.vertices {
                let y = v.pos[1];
                if (0.0..=1.0).contains(&y) {
                    assert!(y == 0.0 || y == 1.0);
                    assert!((Vec3::new(v.pos[0], 0.0, v.pos[2]).length() - 1.0).abs() < 1e-6);
                } else {
                    assert!(domes);
                    // On the unit hemisphere round the end, its normal pointing out from it.
                    let end = if y < 0.0 { Vec3::ZERO } else { Vec3::Y };
                    let p = Vec3::from(v.pos) - end;
                    assert!((p.length() - 1.0).abs() < 1e-6);
                    assert!(p.distance(Vec3::from(v.normal)) < 1e-6);
                }
            }
        }
    }

    #[test]
    fn sphere_is_a_closed_outward_unit_sphere() {
        let m = sphere(8);
        outward(&m, |v| Vec3::from(v.pos), |v| Vec3::from(v.normal));
        for v in &m.vertices {
            assert!((Vec3::from(v.pos).length() - 1.0).abs() < 1e-6);
        }
        assert_eq!(m.indices.len(), 6 * 8 * 16);
    }

    #[test]
    fn card_covers_the_unit_square() {
        let m = card();
        assert_eq!(m.indices, [0, 1, 2, 0, 2, 3]);
        assert_eq!(m.vertices.iter().map(|v| v.uv[0] + v.uv[1]).sum::<f32>(), 4.0);
    }
}
