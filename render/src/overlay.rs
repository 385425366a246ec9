//! The overlay's text and shapes: a glyph atlas rasterised from DejaVu Sans Mono by fontdue,
//! and a builder that lays out text, rectangles and bar graphs as pixel-space triangles
//! ([`OverlayVertex`]) drawn in one pass over the image.

use sylva_shaders::OverlayVertex;

/// The embedded font (DejaVu Sans Mono; licence in `assets/DejaVu-LICENSE.txt`).
const FONT: &[u8] = include_bytes!("../assets/DejaVuSansMono.ttf");

/// The characters the atlas holds beyond printable ASCII; anything else is drawn as '?'.
const EXTRA: &str = "°×µ·–←→↑↓";

#[derive(Clone, Copy, Debug, Default)]
struct Glyph {
    /// Atlas rectangle (normalised).
    uv0: [f32; 2],
    uv1: [f32; 2],
    /// Bitmap offset from the pen position on the baseline (x right, y down) and size [px].
    offset: [f32; 2],
    size: [f32; 2],
}

/// A coverage atlas of the overlay's characters at one pixel size.
pub struct FontAtlas {
    pub width: u32,
    pub height: u32,
    /// One byte of coverage per texel, rows top to bottom.
    pub pixels: Vec<u8>,
    ascii: Vec<Glyph>,
    extra: Vec<(char, Glyph)>,
    /// Horizontal advance of every glyph (the font is monospaced) \[px\].
    pub advance: f32,
    /// Baseline below the top of a line \[px\].
    pub ascent: f32,
    /// Distance between baselines \[px\].
    pub line_height: f32,
    /// A fully covered texel's centre, for solid shapes.
    solid_uv: [f32; 2],
}

impl FontAtlas {
    /// Rasterises the font at `px` pixels per em (6 to 64).
    pub fn new(px: f32) -> Result<FontAtlas, String> {
        if !(6.0..=64.0).contains(&px) {
            return Err(format!("overlay font size {px} px: allowed 6 to 64"));
        }
        let font = fontdue::Font::from_bytes(FONT, fontdue::FontSettings::default())
            .map_err(|e| format!("the embedded overlay font does not parse: {e}"))?;
        let line = font
            .horizontal_line_metrics(px)
            .ok_or("the overlay font has no horizontal metrics")?;
        let chars: Vec<char> = (32u8..127).map(char::from).chain(EXTRA.chars()).collect();
        let bitmaps: Vec<(fontdue::Metrics, Vec<u8>)> = chars.iter().map(|&c| font.rasterize(c, px)).collect();
        // Shelf packing into a 512-wide atlas; a 2-texel solid block first.
        let width = 512u32;
        let pad = 1usize;
        let (mut x, mut y, mut shelf) = (4usize, 0usize, 4usize);
        let mut places = Vec::with_capacity(bitmaps.len());
        for (m, _) in &bitmaps {
            if x + m.width + pad > width as usize {
                x = 0;
                y += shelf + pad;
                shelf = 0;
            }
            places.push((x, y));
            x += m.width + pad;
            shelf = shelf.max(m.height);
        }
        let height = (y + shelf + pad).next_power_of_two().max(8) as u32;
        let mut pixels = vec![0u8; (width * height) as usize];
        for row in 0..2 {
            for col in 0..2 {
                pixels[row * width as usize + col] = 255;
            }
        }
        let (w, h) = (width as f32, height as f32);
        let mut glyphs = Vec::with_capacity(chars.len());
        for ((m, bitmap), &(gx, gy)) in bitmaps.iter().zip(&places) {
            for row in 0..m.height {
                let dst = (gy + row) * width as usize + gx;
                pixels[dst..dst + m.width].copy_from_slice(&bitmap[row * m.width..(row + 1) * m.width]);
            }
            glyphs.push(Glyph {
                uv0: [gx as f32 / w, gy as f32 / h],
                uv1: [(gx + m.width) as f32 / w, (gy + m.height) as f32 / h],
                offset: [m.xmin as f32, -(m.ymin as f32 + m.height as f32)],
                size: [m.width as f32, m.height as f32],
            });
        }
        let advance = font.metrics('M', px).advance_width.ceil();
        let extra = EXTRA.chars().zip(glyphs[95..].iter().copied()).collect();
        glyphs.truncate(95);
        Ok(FontAtlas {
            width,
            height,
            pixels,
            ascii: glyphs,
            extra,
            advance,
            ascent: line.ascent.ceil(),
            line_height: line.new_line_size.ceil(),
            solid_uv: [1.0 / w, 1.0 / h],
        })
    }

    fn glyph(&self, c: char) -> &Glyph {
        if (' '..='~').contains(&c) {
            return &self.ascii[c as usize - 32];
        }
        self.extra
            .iter()
            .find(|(e, _)| *e == c)
            .map(|(_, g)| g)
            .unwrap_or(&self.ascii[b'?' as usize - 32])
    }

    /// Width of `text` in pixels.
    pub fn text_width(&self, text: &str) -> f32 {
        text.chars().count() as f32 * self.advance
    }
}

/// Appends overlay shapes as triangles (6 vertices per quad) to a vertex list.
pub struct OverlayBuilder<'a> {
    pub atlas: &'a FontAtlas,
    pub vertices: &'a mut Vec<OverlayVertex>,
}

impl OverlayBuilder<'_> {
    fn quad(&mut self, p0: [f32; 2], p1: [f32; 2], uv0: [f32; 2], uv1: [f32; 2], color: [u8; 4]) {
        let v = |x: f32, y: f32, u: f32, w: f32| OverlayVertex {
            pos: [x, y],
            uv: [u, w],
            color,
        };
        let (a, b, c, d) = (
            v(p0[0], p0[1], uv0[0], uv0[1]),
            v(p1[0], p0[1], uv1[0], uv0[1]),
            v(p1[0], p1[1], uv1[0], uv1[1]),
            v(p0[0], p1[1], uv0[0], uv1[1]),
        );
        self.vertices.extend_from_slice(&[a, b, c, a, c, d]);
    }

    /// A solid rectangle from (x0, y0) to (x1, y1), pixels from the top left.
    pub fn rect(&mut self, x0: f32, y0: f32, x1: f32, y1: f32, color: [u8; 4]) {
        let uv = self.atlas.solid_uv;
        self.quad([x0, y0], [x1, y1], uv, uv, color);
    }

    /// Text whose line top is at `y`; returns the x after its last character.
    pub fn text(&mut self, x: f32, y: f32, text: &str, color: [u8; 4]) -> f32 {
        let baseline = (y + self.atlas.ascent).round();
        let mut pen = x.round();
        for c in text.chars() {
            let g = *self.atlas.glyph(c);
            if g.size[0] > 0.0 && g.size[1] > 0.0 {
                let p0 = [pen + g.offset[0], baseline + g.offset[1]];
                let p1 = [p0[0] + g.size[0], p0[1] + g.size[1]];
                self.quad(p0, p1, g.uv0, g.uv1, color);
            }
            pen += self.atlas.advance;
        }
        pen
    }

    /// Text on a translucent dark box, for legibility over the scene.
    pub fn label(&mut self, x: f32, y: f32, text: &str, color: [u8; 4]) -> f32 {
        let w = self.atlas.text_width(text);
        self.rect(x - 3.0, y, x + w + 3.0, y + self.atlas.line_height, [0, 0, 0, 230]);
        self.text(x, y, text, color)
    }

    /// A bar graph of `series` (oldest first), each a list of stacked values per frame with
    /// its colour, in a box of `w`×`h` pixels at (x, y) whose top is `max` units; horizontal
    /// guides at each of `guides`.
    #[allow(clippy::too_many_arguments)]
    pub fn bars(
        &mut self,
        x: f32,
        y: f32,
        w: f32,
        h: f32,
        max: f32,
        frames: &[Vec<f32>],
        colors: &[[u8; 4]],
        guides: &[f32],
    ) {
        self.rect(x, y, x + w, y + h, [0, 0, 0, 215]);
        let n = frames.len().max(1) as f32;
        let bar = w / n;
        for (i, stack) in frames.iter().enumerate() {
            let mut top = y + h;
            for (v, color) in stack.iter().zip(colors) {
                let height = (v / max * h).clamp(0.0, top - y);
                if height > 0.0 {
                    let x0 = x + i as f32 * bar;
                    self.rect(x0, top - height, x0 + bar.max(1.0), top, *color);
                }
                top -= height;
            }
        }
        for g in guides {
            if *g < max {
                let gy = (y + h - g / max * h).round();
                self.rect(x, gy, x + w, gy + 1.0, [255, 255, 255, 90]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atlas_holds_real_glyphs() {
        let a = FontAtlas::new(14.0).unwrap();
        assert!(a.advance >= 7.0 && a.advance <= 10.0, "advance {}", a.advance);
        // A rasterised 'M' covers a good part of its box; a space covers nothing.
        let m = a.glyph('M');
        assert!(m.size[0] >= 5.0 && m.size[1] >= 8.0);
        let covered = |g: &Glyph| {
            let (x0, y0) = (
                (g.uv0[0] * a.width as f32) as usize,
                (g.uv0[1] * a.height as f32) as usize,
            );
            let mut sum = 0u32;
            for row in 0..g.size[1] as usize {
                for col in 0..g.size[0] as usize {
                    sum += a.pixels[(y0 + row) * a.width as usize + x0 + col] as u32;
                }
            }
            sum as f32 / 255.0 / (g.size[0] * g.size[1]).max(1.0)
        };
        assert!(covered(m) > 0.3, "'M' coverage {}", covered(m));
        assert_eq!(a.glyph(' ').size, [0.0, 0.0]);
        // 'g' descends below the baseline, 'x' does not.
        assert!(a.glyph('g').offset[1] + a.glyph('g').size[1] > 1.0);
        assert!(a.glyph('x').offset[1] + a.glyph('x').size[1] <= 1.0);
        assert!(a.glyph('°').size[0] > 0.0);
        assert!(FontAtlas::new(0.5).is_err());
    }

    #[test]
    fn text_lays_out_one_quad_per_visible_character() {
        let a = FontAtlas::new(14.0).unwrap();
        let mut v = Vec::new();
        let mut b = OverlayBuilder {
            atlas: &a,
            vertices: &mut v,
        };
        let end = b.text(10.0, 20.0, "ab c", [255; 4]);
        assert_eq!(end, 10.0 + 4.0 * a.advance);
        assert_eq!(v.len(), 3 * 6);
        // Glyphs sit on the line: between its top and top + line height.
        for p in &v {
            assert!(
                p.pos[1] >= 20.0 - 1.0 && p.pos[1] <= 20.0 + a.line_height + 1.0,
                "{:?}",
                p.pos
            );
        }
        let mut v2 = Vec::new();
        OverlayBuilder {
            atlas: &a,
            vertices: &mut v2,
        }
        .bars(0.0, 0.0, 100.0, 50.0, 10.0, &[vec![5.0, 20.0]], &[[1; 4], [2; 4]], &[]);
        // The background, then the two stacked bars; the second is clamped to the box.
        assert_eq!(v2.len(), 3 * 6);
        let top = v2[12..].iter().map(|p| p.pos[1]).fold(f32::INFINITY, f32::min);
        assert_eq!(top, 0.0);
    }
}
