//! Loading a spec file of any supported format: the format is told by the content, not by the
//! file name (Arbaro's `test/test` has no extension; Sapling and tree-gen files are both `.py`).

use super::{arbaro, helios, sapling, text, treegen, SpecError, SpecTool, WeberPennSpec};
use std::path::Path;

/// Largest spec file Sylva reads (the real ones are under 25 KiB).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The species of one file.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecLibrary {
    /// The file name given to the loader.
    pub file: String,
    /// The format of the file (for a Sylva text file, [`SpecTool::Sylva`], whatever the origin
    /// recorded in it).
    pub format: SpecTool,
    /// Every species in the file, in file order (never empty).
    pub species: Vec<WeberPennSpec>,
}

impl SpecLibrary {
    /// The species named `species`, or the only one when `None`.
    pub fn pick(&self, species: Option<&str>) -> Result<&WeberPennSpec, SpecError> {
        let names = || self.names().join(", ");
        match species {
            None if self.species.len() == 1 => Ok(&self.species[0]),
            None => Err(SpecError::new(
                &self.file,
                "species",
                format!(
                    "the file holds {} species, so one must be named; allowed: {}",
                    self.species.len(),
                    names()
                ),
            )),
            Some(name) => self.species.iter().find(|s| s.species == name).ok_or_else(|| {
                SpecError::new(
                    &self.file,
                    "species",
                    format!("no species '{name}' in this file; allowed: {}", names()),
                )
            }),
        }
    }

    /// The species names, in file order.
    pub fn names(&self) -> Vec<&str> {
        self.species.iter().map(|s| s.species.as_str()).collect()
    }
}

/// Reads and loads a spec file (a regular file of at most [`MAX_FILE_BYTES`], UTF-8), through
/// the bounded reader [`crate::io::read_bytes`].
pub fn load_file(path: &Path) -> Result<SpecLibrary, SpecError> {
    let file = path.display().to_string();
    let bytes = crate::io::read_bytes(path, MAX_FILE_BYTES, "spec file").map_err(|e| {
        let parameter = match e.kind {
            crate::io::ReadErrorKind::TooLarge => "file size",
            _ => "file",
        };
        SpecError::new(&file, parameter, e.message)
    })?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        SpecError::new(
            &file,
            "encoding",
            format!(
                "not UTF-8 text (invalid byte at offset {}); allowed: UTF-8 (ASCII) text files",
                e.valid_up_to()
            ),
        )
    })?;
    load_str(text, &file)
}

fn too_large(file: &str, len: u64) -> SpecError {
    SpecError::new(
        file,
        "file size",
        format!("the file has {len} bytes; allowed: at most {MAX_FILE_BYTES} bytes (16 MiB) for a spec file"),
    )
}

/// Loads spec text; `file` names it in errors (and gives the species name of Sapling and
/// tree-gen files, which have none inside).
pub fn load_str(text: &str, file: &str) -> Result<SpecLibrary, SpecError> {
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(file, text.len() as u64));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let format = detect(text, file)?;
    let species = match format {
        SpecTool::Arbaro => vec![arbaro::parse(text, file)?],
        SpecTool::Helios => helios::parse(text, file)?,
        SpecTool::SaplingV02 | SpecTool::SaplingV03 | SpecTool::Sapling4 => vec![sapling::parse(text, file)?],
        SpecTool::TreeGen => vec![treegen::parse(text, file)?],
        SpecTool::Sylva => vec![text::parse(text, file)?],
    };
    // A Sapling file's generation is known once parsed.
    let format = match format {
        SpecTool::SaplingV02 | SpecTool::SaplingV03 | SpecTool::Sapling4 => species[0].origin,
        f => f,
    };
    Ok(SpecLibrary {
        file: file.to_string(),
        format,
        species,
    })
}

/// Tells the format from the content. Sapling files are reported as [`SpecTool::SaplingV03`]
/// here; the parser tells the generation.
pub fn detect(text: &str, file: &str) -> Result<SpecTool, SpecError> {
    let first_line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if first_line.starts_with(text::HEADER) {
        return Ok(SpecTool::Sylva);
    }
    // The first line that is neither blank nor a `#` comment.
    let body = text
        .lines()
        .map(str::trim_start)
        .find(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    if body.starts_with('<') {
        return Ok(match xml_root_name(text) {
            Some("helios") => SpecTool::Helios,
            Some(_) => SpecTool::Arbaro,
            None if text.contains("<WeberPennTree") => SpecTool::Helios,
            None => SpecTool::Arbaro,
        });
    }
    if body.starts_with('{') {
        return Ok(SpecTool::SaplingV03);
    }
    let word_end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    if body.starts_with(['"', '\'']) || &body[..word_end] == "params" {
        return Ok(SpecTool::TreeGen);
    }
    Err(SpecError::new(
        file,
        "format",
        "cannot tell the format from the content; allowed: Arbaro XML (<arbaro>), a Helios library (<helios>), a \
         Sapling preset (one line {...}), a tree-gen module (params = {...}) or a Sylva spec (first line '# Sylva \
         tree spec')",
    ))
}

/// The name of the root element, skipping the XML declaration, comments, processing
/// instructions and a doctype. `None` if the text does not get that far.
fn xml_root_name(text: &str) -> Option<&str> {
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("<?") {
            rest = &r[r.find("?>")? + 2..];
        } else if let Some(r) = rest.strip_prefix("<!--") {
            rest = &r[r.find("-->")? + 3..];
        } else if let Some(r) = rest.strip_prefix("<!") {
            rest = &r[r.find('>')? + 1..];
        } else if let Some(r) = rest.strip_prefix('<') {
            let end = r.find(|c: char| c.is_whitespace() || c == '>' || c == '/')?;
            return Some(&r[..end]);
        } else {
            return None;
        }
    }
}

/// A decimal number: optional sign, digits with at most one '.', optional exponent. No `inf`,
/// `nan`, hex or digit separators (Rust's `f64::from_str` alone would take `inf` and `nan`).
pub(crate) fn decimal(s: &str) -> Option<f64> {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = mantissa.bytes().any(|b| b.is_ascii_digit())
        && mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && mantissa.bytes().filter(|&b| b == b'.').count() <= 1;
    let exponent_ok = exponent.is_none_or(|e| {
        let d = e.strip_prefix(['+', '-']).unwrap_or(e);
        !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
    });
    if mantissa_ok && exponent_ok {
        s.parse().ok()
    } else {
        None
    }
}

/// A SpecError for an XML syntax error, at its line.
pub(crate) fn xml_error(file: &str, e: &roxmltree::Error, expected: &str) -> SpecError {
    let pos = e.pos();
    SpecError::new(
        file,
        format!("line {}", pos.row),
        format!(
            "malformed XML at line {}, column {}: {e}; allowed: {expected}",
            pos.row, pos.col
        ),
    )
}

/// The file name without folder and extension (the species name of Sapling and tree-gen files).
pub(crate) fn file_stem(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| file.to_string())
}

/// Rounds a float that went through float32 (Sapling stores f32 properties and writes them as
/// f64: 0.20000000298023224) to the shortest decimal of that f32 (0.2). Values outside f32's
/// range are kept as they are.
pub(crate) fn denoise_f32(v: f64) -> f64 {
    if !v.is_finite() || v.abs() > f32::MAX as f64 {
        return v;
    }
    let single = v as f32;
    format!("{single}").parse::<f64>().unwrap_or(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals() {
        assert_eq!(decimal("1."), Some(1.0));
        assert_eq!(decimal("-.5"), Some(-0.5));
        assert_eq!(decimal("1.0E-4"), Some(1.0e-4));
        assert_eq!(decimal("+3"), Some(3.0));
        for bad in ["", ".", "inf", "nan", "1e", "1.2.3", "0x10", "1_0", "- 1", "e5"] {
            assert_eq!(decimal(bad), None, "{bad}");
        }
    }

    #[test]
    fn f32_noise() {
        assert_eq!(denoise_f32(0.20000000298023224), 0.2);
        assert_eq!(denoise_f32(0.014999999664723873), 0.015);
        assert_eq!(denoise_f32(137.5), 137.5);
        assert_eq!(denoise_f32(1e300), 1e300);
    }

    #[test]
    fn detection() {
        assert_eq!(detect("<?xml version=1.0?>\n<helios>", "f").unwrap(), SpecTool::Helios);
        assert_eq!(
            detect("<?xml version='1.0' ?>\n<!-- x -->\n<arbaro>", "f").unwrap(),
            SpecTool::Arbaro
        );
        assert_eq!(detect("# SPDX\n#\n\n{'a': 1}", "f").unwrap(), SpecTool::SaplingV03);
        assert_eq!(
            detect("\"\"\" ACER \"\"\"\nparams = {}", "f").unwrap(),
            SpecTool::TreeGen
        );
        assert_eq!(detect("params = {}", "f").unwrap(), SpecTool::TreeGen);
        assert_eq!(detect("# Sylva tree spec\nformat = 1", "f").unwrap(), SpecTool::Sylva);
        let e = detect("hello", "x.txt").unwrap_err();
        assert_eq!((e.file.as_str(), e.parameter.as_str()), ("x.txt", "format"));
    }

    #[test]
    fn stems() {
        assert_eq!(file_stem("/a/b/Small Pine.py"), "Small Pine");
        assert_eq!(file_stem("test"), "test");
        assert_eq!(file_stem("<input>"), "<input>");
    }
}
