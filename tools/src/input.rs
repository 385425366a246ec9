//! The files the `sylva` command reads: only regular files, and only up to a size limit that
//! the error names. A device (`/dev/zero`), a FIFO or a folder is refused before it is opened,
//! so reading never blocks on a pipe nor runs until memory is spent.

use std::fs;
use std::io::Read;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// Refuses anything but a regular file (links are followed).
pub fn check_regular(path: &Path) -> Result<fs::Metadata> {
    let meta = fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!(
            "cannot read {}: it is {}, not a regular file",
            path.display(),
            crate::output::kind_of(&meta)
        );
    }
    Ok(meta)
}

/// Reads a regular text file of at most `limit` bytes.
pub fn read_text(path: &Path, limit: usize) -> Result<String> {
    let meta = check_regular(path)?;
    let too_big = |len: u64| anyhow::anyhow!("{} is {len} bytes; allowed at most {limit}", path.display());
    if meta.len() > limit as u64 {
        return Err(too_big(meta.len()));
    }
    let file = fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte more than allowed tells a file that grew since its size was read.
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() > limit {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", path.display()))
}
