//! The image a frame is read back as: RGBA8, sRGB, rows top to bottom; and its PNG encoding.
//!
//! Invariant: `pixels` holds exactly `4 * width * height` bytes.

/// An RGBA8 image (sRGB), rows top to bottom.
#[derive(Clone, Debug, PartialEq)]
pub struct Rgba {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

impl Rgba {
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        [
            self.pixels[i],
            self.pixels[i + 1],
            self.pixels[i + 2],
            self.pixels[i + 3],
        ]
    }
}

impl Rgba {
    /// Encodes the image as an 8-bit sRGB RGBA PNG.
    pub fn to_png(&self) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
            // Writing into a Vec cannot fail on I/O; the header matches the data by construction.
            let mut writer = encoder.write_header().expect("PNG header for an in-memory image");
            writer
                .write_image_data(&self.pixels)
                .expect("PNG data of the stated size");
        }
        out
    }

    /// Decodes an 8-bit RGB or RGBA PNG (as written by [`to_png`](Self::to_png) or a screenshot).
    pub fn from_png(bytes: &[u8]) -> Result<Rgba, String> {
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().map_err(|e| format!("not a PNG image: {e}"))?;
        let mut buf = vec![0; reader.output_buffer_size().ok_or("PNG image too large")?];
        let info = reader
            .next_frame(&mut buf)
            .map_err(|e| format!("broken PNG image: {e}"))?;
        if info.bit_depth != png::BitDepth::Eight {
            return Err(format!("PNG bit depth {:?}; allowed: 8", info.bit_depth));
        }
        let pixels = match info.color_type {
            png::ColorType::Rgba => buf[..info.buffer_size()].to_vec(),
            png::ColorType::Rgb => buf[..info.buffer_size()]
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            other => return Err(format!("PNG colour type {other:?}; allowed: RGB, RGBA")),
        };
        Ok(Rgba {
            width: info.width,
            height: info.height,
            pixels,
        })
    }
}
