//! The files the `sylva` command reads: only regular files, and only up to a size limit that
//! the error names. A device (`/dev/zero`), a FIFO or a folder is refused before it is opened,
//! so reading never blocks on a pipe nor runs until memory is spent.

use std::fs;
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

/// Reads a regular text file of at most `limit` bytes through the library's bounded reader
/// (`sylva_sim::io`, which every file Sylva reads goes through); `what` names the kind of file
/// in the error ("points file").
pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String> {
    Ok(sylva_sim::io::read_text(path, limit, what)?)
}
