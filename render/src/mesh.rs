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

/// An open cylinder of radius 1 from y = 0 to y = 1 with `sides` sides, counter-clockwise seen
/// from outside; the shader scales each ring by the segment's radius at that end and tilts the
/// normals for the taper. Segments join end to end, so there are no caps.
pub fn cylinder(sides: u32) -> Mesh<MeshVertex> {
    assert!((3..=64).contains(&sides), "cylinder sides {sides}: allowed 3..=64");
    let mut m = Mesh::default();
    for ring in 0..2 {
        for k in 0..=sides {
            let a = std::f32::consts::TAU * k as f32 / sides as f32;
            let (s, c) = a.sin_cos();
            m.vertices.push(MeshVertex {
                pos: [c, ring as f32, -s],
                normal: [c, 0.0, -s],
            });
        }
    }
    let row = (sides + 1) as u16;
    for k in 0..sides as u16 {
        let (a, b, c, d) = (k, k + 1, row + k, row + k + 1);
        m.indices.extend_from_slice(&[a, b, d, a, d, c]);
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

    #[test]
    fn cylinders_wind_outward_and_span_the_unit_height() {
        for sides in CYLINDER_SIDES {
            let m = cylinder(sides);
            assert_eq!(m.indices.len() as u32, 6 * sides);
            outward(&m, |v| Vec3::from(v.pos), |v| Vec3::from(v.normal));
            for v in &m.vertices {
                assert!((Vec3::new(v.pos[0], 0.0, v.pos[2]).length() - 1.0).abs() < 1e-6);
                assert!(v.pos[1] == 0.0 || v.pos[1] == 1.0);
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
