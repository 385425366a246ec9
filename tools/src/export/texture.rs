//! The leaf texture the exports carry: the blade's outline as an alpha cut-out, coloured, on
//! the card's texture coordinates (u across, v = 0 at the blade's tip, the image's top row).
//!
//! The outline is the renderer's (`leafshape.glsl`, the same functions of the card point), by
//! the species' leaf shape: the default a pointed oval from the stalk to the tip, widest a
//! little below the middle. Alpha is the share of 4 × 4 samples per pixel inside it, so the edge
//! is smooth for a viewer that blends and sharp at the usual 0.5 cut-off; the colour is the
//! leaf colour with the renderer's darker midrib.

use sylva_render::Rgba;
use sylva_sim::spec::LeafShape;

use super::ExportLook;

/// Width and height of the bark texture \[pixels\]: one turn round a stem by one circumference
/// along it (the bark's texture coordinates), tiling both ways.
pub const BARK_TEXTURE_SIZE: (u32, u32) = (128, 128);

/// The renderer's bark furrows (`bark_ridges` in `common.glsl`): `u` the turn round the stem,
/// `v` the distance along it in circumferences; 0 deep in a furrow, 1 on a ridge.
pub fn bark_ridges(u: f32, v: f32) -> f32 {
    use std::f32::consts::{PI, TAU};
    let phase = 8.0 * u + 0.35 * (TAU * v).sin() + 0.15 * (3.0 * TAU * v + 1.0).sin();
    let s = (PI * phase).sin().abs();
    let t = ((s - 0.15) / (0.6 - 0.15)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// The bark texture of `look`: its bark colour darkened in the furrows as the renderer draws
/// them, opaque, tiling.
pub fn bark_texture(look: &ExportLook, (width, height): (u32, u32)) -> Rgba {
    let mut pixels = Vec::with_capacity((4 * width * height) as usize);
    for y in 0..height {
        for x in 0..width {
            let ridge = bark_ridges((x as f32 + 0.5) / width as f32, (y as f32 + 0.5) / height as f32);
            for c in look.bark {
                pixels.push(srgb(c as f32 * (0.62 + 0.45 * ridge)));
            }
            pixels.push(255);
        }
    }
    Rgba { width, height, pixels }
}

/// Width and height of the leaf texture \[pixels\]: a card is about twice as long as wide.
pub const LEAF_TEXTURE_SIZE: (u32, u32) = (64, 128);

/// Whether a point of the card, `x` across from the midrib (−0.5..0.5) and `v` from the stalk
/// (0..1), lies on a blade of `shape`: `leaf_outline` in `leafshape.glsl`, both functions ≤ 0.
pub fn on_blade(shape: LeafShape, x: f32, v: f32) -> bool {
    let ax = x.abs();
    let (a, b) = match shape {
        LeafShape::Needle => (ax - 0.07 * (4.0 * (1.0 - v)).min(1.0), 0.02 - v),
        LeafShape::Heart => (
            ax - (1.25 * v.max(0.0).sqrt() * (1.0 - v)).min(0.49),
            0.15 - 0.8 * ax - v,
        ),
        LeafShape::Lobed => {
            let (px, py) = (x, v - 0.42);
            let theta = px.atan2(py);
            let r = if theta.abs() < 2.4 {
                0.40 * (0.62 + 0.38 * (5.0 * theta).cos())
            } else {
                0.16
            };
            ((px * px + py * py).sqrt() - r, 0.02 - v)
        }
        LeafShape::Rectangle => (ax - 0.42, (v - 0.5).abs() - 0.47),
        LeafShape::Triangle => (ax - 0.45 * (1.0 - v), 0.02 - v),
        LeafShape::Disc => ((x * x + (v - 0.5) * (v - 0.5)).sqrt() - 0.46, -1.0),
        LeafShape::Frond => {
            let hw = 0.5 * (std::f32::consts::PI * v).sin().max(0.0).powf(0.7);
            let leaflet = (v * 12.0 - ax * 2.0).rem_euclid(1.0) - 0.45;
            ((ax - 0.025).min((ax - hw).max(leaflet)), 0.01 - v)
        }
        LeafShape::Oval => {
            let taper = 1.0 - 0.3 * v;
            (x * x - v * (1.0 - v) * taper * taper, 0.02 - v)
        }
    };
    a <= 0.0 && b <= 0.0
}

/// A linear colour channel as 8-bit sRGB.
fn srgb(c: f32) -> u8 {
    let c = c.clamp(0.0, 1.0);
    let s = if c <= 0.003_130_8 {
        12.92 * c
    } else {
        1.055 * c.powf(1.0 / 2.4) - 0.055
    };
    (s * 255.0).round() as u8
}

/// The leaf texture of `look` (its leaf colour, linear RGB, and outline), `width` × `height`
/// pixels.
pub fn leaf_texture(look: &ExportLook, (width, height): (u32, u32)) -> Rgba {
    let colour = look.leaf;
    const SAMPLES: u32 = 4;
    let mut pixels = Vec::with_capacity((4 * width * height) as usize);
    for y in 0..height {
        for x in 0..width {
            let mut inside = 0;
            for sy in 0..SAMPLES {
                for sx in 0..SAMPLES {
                    let u = (x as f32 + (sx as f32 + 0.5) / SAMPLES as f32) / width as f32;
                    let v_image = (y as f32 + (sy as f32 + 0.5) / SAMPLES as f32) / height as f32;
                    inside += on_blade(look.shape, u - 0.5, 1.0 - v_image) as u32;
                }
            }
            let u = (x as f32 + 0.5) / width as f32;
            // The midrib: a quarter darker at the middle, fading out 0.03 of the card away.
            let t = ((0.03 - (u - 0.5).abs()) / 0.03).clamp(0.0, 1.0);
            let shade = 1.0 - 0.25 * t * t * (3.0 - 2.0 * t);
            for c in colour {
                pixels.push(srgb(c as f32 * shade));
            }
            pixels.push((255 * inside / (SAMPLES * SAMPLES)) as u8);
        }
    }
    Rgba { width, height, pixels }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_texture_cuts_out_the_renderers_leaf_outline() {
        let (w, h) = LEAF_TEXTURE_SIZE;
        let t = leaf_texture(&ExportLook::default(), (w, h));
        assert_eq!(t.pixels.len(), (4 * w * h) as usize);
        // Opaque down the middle of the blade, clear at the card's corners and below the cut.
        for v in [0.2f32, 0.5, 0.8] {
            let y = ((1.0 - v) * h as f32) as u32;
            assert_eq!(t.pixel(w / 2, y)[3], 255, "v {v}");
            assert_eq!(t.pixel(0, y)[3], 0, "v {v}");
        }
        assert_eq!(t.pixel(w / 2, h - 1)[3], 0, "the stalk end below v = 0.02 is cut");
        let top = (0..w).filter(|&x| t.pixel(x, 0)[3] > 0).count();
        assert!(
            top <= 8,
            "the blade narrows to its tip: {top} pixels of the top row are covered"
        );
        // The share of the card the blade covers is its outline's area, ∫ 2·√(v(1 − v))·(1 − 0.3v)
        // dv from 0.02 to 1, integrated numerically.
        let steps = 100_000;
        let area: f64 = (0..steps)
            .map(|i| {
                let v = (i as f64 + 0.5) / steps as f64;
                if v < 0.02 {
                    0.0
                } else {
                    2.0 * (v * (1.0 - v)).sqrt() * (1.0 - 0.3 * v)
                }
            })
            .sum::<f64>()
            / steps as f64;
        let covered: f64 = t.pixels.chunks_exact(4).map(|p| p[3] as f64 / 255.0).sum::<f64>() / (w * h) as f64;
        assert!(
            (covered - area).abs() < 0.01,
            "covered {covered:.4} of the card, outline {area:.4}"
        );
        // Green, with the midrib darker than the blade beside it.
        let p = t.pixel(w / 2, h / 2);
        let q = t.pixel(w / 2 + 6, h / 2);
        assert!(p[1] > p[0] && p[1] > p[2] && q[1] > p[1], "{p:?} {q:?}");
    }

    /// Every shape cuts its own outline: needles cover far less of the card than the oval, a
    /// disc about π·0.46², a rectangle 0.84 × 0.94; a frond's leaflets leave gaps along it.
    #[test]
    fn each_leaf_shape_has_its_outline() {
        let cover = |shape| {
            let look = ExportLook {
                shape,
                ..ExportLook::default()
            };
            let t = leaf_texture(&look, LEAF_TEXTURE_SIZE);
            t.pixels.chunks_exact(4).map(|p| p[3] as f64 / 255.0).sum::<f64>() / (t.width * t.height) as f64
        };
        let oval = cover(LeafShape::Oval);
        assert!(cover(LeafShape::Needle) < 0.3 * oval);
        assert!((cover(LeafShape::Disc) - std::f64::consts::PI * 0.46 * 0.46).abs() < 0.01);
        assert!((cover(LeafShape::Rectangle) - 0.84 * 0.94).abs() < 0.01);
        assert!((cover(LeafShape::Triangle) - 0.45 * 0.98 * 0.98).abs() < 0.02);
        for shape in [LeafShape::Heart, LeafShape::Lobed, LeafShape::Frond] {
            let c = cover(shape);
            assert!(
                c > 0.1 && c < 0.9 && (c - oval).abs() > 0.02,
                "{shape:?}: {c} vs oval {oval}"
            );
        }
    }

    /// The bark texture tiles: its first and last columns and rows continue each other as its
    /// neighbours inside do.
    #[test]
    fn the_bark_texture_tiles() {
        let (w, h) = BARK_TEXTURE_SIZE;
        let t = bark_texture(&ExportLook::default(), (w, h));
        let step = |a: [u8; 4], b: [u8; 4]| (0..3).map(|c| a[c].abs_diff(b[c]) as u32).max().unwrap();
        let inner = (1..h)
            .map(|y| step(t.pixel(w / 2, y), t.pixel(w / 2, y - 1)))
            .max()
            .unwrap();
        let wrap_v = (0..w).map(|x| step(t.pixel(x, 0), t.pixel(x, h - 1))).max().unwrap();
        let inner_u = (1..w)
            .map(|x| step(t.pixel(x, h / 2), t.pixel(x - 1, h / 2)))
            .max()
            .unwrap();
        let wrap_u = (0..h).map(|y| step(t.pixel(0, y), t.pixel(w - 1, y))).max().unwrap();
        assert!(
            wrap_v <= inner.max(2) + 2 && wrap_u <= inner_u + 2,
            "{wrap_v} {inner} {wrap_u} {inner_u}"
        );
        // Furrows and ridges: in the furrows the bark is 0.62 / 1.07 as bright as on the ridges
        // (linear), about 0.79 in sRGB.
        let lum: Vec<u32> = t
            .pixels
            .chunks_exact(4)
            .map(|p| p[0] as u32 + p[1] as u32 + p[2] as u32)
            .collect();
        let (lo, hi) = (*lum.iter().min().unwrap() as f64, *lum.iter().max().unwrap() as f64);
        assert!(lo / hi < 0.82, "{lo} / {hi}");
    }
}
