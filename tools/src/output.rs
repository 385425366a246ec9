//! The files the `sylva` command writes: every command checks its outputs with [`check`] before
//! any work starts and writes them with [`AtomicFile`] (or [`write_file`]).
//!
//! Invariants:
//! - an existing file is replaced only when the user passed `--force`;
//! - a file that is one of the command's inputs (the same path, or the same device and inode:
//!   a hard link) is never replaced, `--force` or not;
//! - a symbolic link, a device node, a FIFO, a socket or a folder is never replaced: only
//!   regular files are, and a link is not followed to one;
//! - a file is written under a temporary name in its destination's folder, flushed to disk and
//!   renamed into place only when complete, so the destination holds the old file or the whole
//!   new one, never part of one; a temporary file never outlives the command (it is removed on
//!   an error, on drop and on Ctrl-C);
//! - every message names the path the user gave, never the temporary file.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, ensure, Context, Result};

use crate::interrupt::{register_temp, unregister_temp};

/// What kind of thing a path names, for messages.
pub fn kind_of(meta: &fs::Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a folder"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Whether two metadata describe the same file.
fn same_file(a: &fs::Metadata, b: &fs::Metadata, pa: &Path, pb: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = (pa, pb);
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        matches!((pa.canonicalize(), pb.canonicalize()), (Ok(x), Ok(y)) if x == y)
    }
}

/// The folder a file goes into: its parent, or the current folder for a bare name.
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Refuses what a destination may not be: a link, a device or anything else but a regular
/// file, or one of `inputs`. Returns whether a (regular) file is there.
fn check_destination(path: &Path, inputs: &[&Path]) -> Result<bool> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => bail!("cannot write {}: {e}", path.display()),
    };
    if meta.file_type().is_symlink() {
        bail!(
            "cannot write {}: it is a symbolic link, and Sylva does not replace links; remove it or choose another name",
            path.display()
        );
    }
    if !meta.is_file() {
        bail!(
            "cannot write {}: it is {}, and Sylva replaces only regular files; choose another name",
            path.display(),
            kind_of(&meta)
        );
    }
    for input in inputs {
        if let Ok(im) = fs::metadata(input) {
            if same_file(&meta, &im, path, input) {
                bail!(
                    "cannot write {}: it is the input file {} of this command; choose another name",
                    path.display(),
                    input.display()
                );
            }
        }
    }
    Ok(true)
}

/// Checks, before any work starts, that the command may write `path`: it names a file in an
/// existing folder Sylva can write to, and is not one of `inputs`, a link or anything but a
/// regular file; an existing file only with `force`. The folder is tried by creating and
/// removing an empty temporary file in it.
pub fn check(path: &Path, force: bool, inputs: &[&Path]) -> Result<()> {
    let name = path
        .file_name()
        .with_context(|| format!("cannot write {}: it does not name a file", path.display()))?;
    let folder = folder_of(path);
    match fs::metadata(folder) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!("cannot write {}: {} is not a folder", path.display(), folder.display()),
        Err(e) if e.kind() == ErrorKind::NotFound => bail!(
            "cannot write {}: the folder {} does not exist",
            path.display(),
            folder.display()
        ),
        Err(e) => bail!("cannot write {}: {}: {e}", path.display(), folder.display()),
    }
    let exists = check_destination(path, inputs)?;
    if exists && !force {
        bail!("{} exists; pass --force to replace it", path.display());
    }
    let probe = temp_name(path, name);
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(f) => {
            drop(f);
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => bail!("cannot write {}: {e}", path.display()),
    }
}

/// Refuses, before any work starts, an image name that does not end in `.png` (any case):
/// Sylva writes its pictures as PNG only, and a file named `x.jpg` holding a PNG would mislead
/// whatever opens it.
pub fn check_png_name(path: &Path) -> Result<()> {
    let png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
    ensure!(
        png,
        "cannot write {}: Sylva writes images as PNG only; allowed: a name ending in .png",
        path.display()
    );
    Ok(())
}

/// Most frames `--record` writes to one folder (numbered with six digits).
pub const MAX_RECORDED_FRAMES: u64 = 999_999;

/// Every frame as a numbered PNG in a folder (`--record DIR`): `frame-000001.png`,
/// `frame-000002.png`, ... in the order drawn, each written as [`write_file`] writes (whole or
/// not at all).
pub struct Recorder {
    dir: PathBuf,
    next: u64,
}

impl Recorder {
    /// The name of frame `n` (from 1) in `dir`.
    pub fn frame_path(dir: &Path, n: u64) -> PathBuf {
        dir.join(format!("frame-{n:06}.png"))
    }

    /// Checks, before any work starts, that `dir` is a folder Sylva can write to and holds no
    /// recorded frame already (unless `force`: then they are replaced as the new ones are
    /// written, and any left beyond them stay).
    pub fn new(dir: &Path, force: bool) -> Result<Recorder> {
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => bail!(
                "cannot record into {}: it is {}, not a folder",
                dir.display(),
                kind_of(&m)
            ),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                bail!(
                    "cannot record into {}: the folder does not exist; create it first",
                    dir.display()
                )
            }
            Err(e) => bail!("cannot record into {}: {e}", dir.display()),
        }
        let first = Recorder::frame_path(dir, 1);
        check(&first, force, &[]).with_context(|| format!("cannot record into {}", dir.display()))?;
        Ok(Recorder {
            dir: dir.to_path_buf(),
            next: 1,
        })
    }

    /// Writes the next frame; refuses a frame past [`MAX_RECORDED_FRAMES`] or over a file that
    /// is not a regular one.
    pub fn write(&mut self, png: &[u8]) -> Result<()> {
        ensure!(
            self.next <= MAX_RECORDED_FRAMES,
            "cannot record more than {MAX_RECORDED_FRAMES} frames into {}",
            self.dir.display()
        );
        let path = Recorder::frame_path(&self.dir, self.next);
        check_destination(&path, &[])?;
        write_file(&path, png)?;
        self.next += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.next - 1
    }
}

/// `path`, or `stem-1.ext`, `stem-2.ext`, ... whichever does not exist yet.
pub fn free_name(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    (1..)
        .map(|k| path.with_file_name(format!("{stem}-{k}.{ext}")))
        .find(|p| !p.exists())
        .expect("unbounded")
}

/// A fresh temporary name beside `dest`.
fn temp_name(dest: &Path, name: &std::ffi::OsStr) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    dest.with_file_name(format!(
        ".{}.{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A file written under a temporary name in its destination's folder and renamed into place by
/// [`persist`](Self::persist); dropped before that, the temporary file is removed.
pub struct AtomicFile {
    dest: PathBuf,
    temp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl AtomicFile {
    pub fn create(dest: &Path) -> Result<AtomicFile> {
        let name = dest
            .file_name()
            .with_context(|| format!("cannot write {}: it does not name a file", dest.display()))?;
        crate::interrupt::check()?;
        let temp = temp_name(dest, name);
        // Registered before it exists, so the Ctrl-C handler (which holds the list while it
        // exits) cannot miss it.
        register_temp(&temp);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| {
                unregister_temp(&temp);
                anyhow::anyhow!("cannot write {}: {e}", dest.display())
            })?;
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            temp,
            out: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.out.as_mut().expect("the file is open until it is finished")
    }

    /// Flushes the contents to disk and returns their size; the file keeps its temporary name.
    pub fn finish(&mut self) -> Result<u64> {
        let failed = |e: std::io::Error| anyhow::anyhow!("writing {} failed: {e}", self.dest.display());
        let out = self.out.take().context("the file was already finished")?;
        let file = out.into_inner().map_err(|e| failed(e.into_error()))?;
        file.sync_all().map_err(failed)?;
        Ok(file.metadata().map_err(failed)?.len())
    }

    /// Refuses a destination that is (now) a link or anything but a regular file; `persist`
    /// checks this too, and a writer of several files checks them all before persisting any.
    pub fn check_destination(&self) -> Result<()> {
        check_destination(&self.dest, &[]).map(|_| ())
    }

    /// Gives the finished file its real name, replacing a regular file there. Refuses, and
    /// removes the temporary file, if the destination has become a link or anything but a
    /// regular file meanwhile, or if the user pressed Ctrl-C. (Whether it is an input, or may
    /// be replaced at all, [`check`] decided before the work began.)
    pub fn persist(mut self) -> Result<()> {
        ensure!(self.out.is_none(), "a file is persisted only once finished");
        crate::interrupt::check()?;
        self.check_destination()?;
        fs::rename(&self.temp, &self.dest).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", self.dest.display()))?;
        unregister_temp(&self.temp);
        self.temp = PathBuf::new();
        // The new name lasts only once the folder is on disk too (best effort: not every
        // system can open a folder for syncing).
        if let Ok(dir) = File::open(folder_of(&self.dest)) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            drop(self.out.take());
            let _ = fs::remove_file(&self.temp);
            unregister_temp(&self.temp);
        }
    }
}

/// Writes `bytes` to `path` completely or not at all (see the module's invariants).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.writer()
        .write_all(bytes)
        .map_err(|e| anyhow::anyhow!("writing {} failed: {e}", path.display()))?;
    file.finish()?;
    file.persist()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TempDir(PathBuf);

    impl TempDir {
        fn new(label: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!("sylva-output-{label}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
        fn names(&self) -> Vec<String> {
            let mut v: Vec<String> = fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn err(r: Result<()>) -> String {
        format!("{:#}", r.unwrap_err())
    }

    #[test]
    fn new_files_are_written_and_existing_ones_only_with_force() {
        let d = TempDir::new("force");
        let out = d.0.join("a.txt");
        check(&out, false, &[]).unwrap();
        assert!(d.names().is_empty(), "the probe is removed");
        write_file(&out, b"one").unwrap();
        let e = err(check(&out, false, &[]));
        assert!(e.contains("a.txt exists; pass --force"), "{e}");
        check(&out, true, &[]).unwrap();
        write_file(&out, b"two").unwrap();
        assert_eq!(fs::read(&out).unwrap(), b"two");
        assert_eq!(d.names(), ["a.txt"]);
    }

    #[test]
    fn inputs_links_devices_and_folders_are_never_replaced() {
        let d = TempDir::new("refuse");
        let input = d.0.join("in.xml");
        fs::write(&input, b"spec").unwrap();
        for force in [false, true] {
            let e = err(check(&input, force, &[&input]));
            assert!(e.contains("is the input file"), "{e}");
            // The same file by another name: a path through `.`, and a hard link.
            let dotted = d.0.join(".").join("in.xml");
            assert!(err(check(&dotted, force, &[&input])).contains("is the input file"));
        }
        let hard = d.0.join("hard.xml");
        fs::hard_link(&input, &hard).unwrap();
        assert!(err(check(&hard, true, &[&input])).contains("is the input file"));
        #[cfg(unix)]
        {
            let link = d.0.join("link.png");
            std::os::unix::fs::symlink(&input, &link).unwrap();
            let e = err(check(&link, true, &[]));
            assert!(e.contains("link.png") && e.contains("symbolic link"), "{e}");
            assert!(err(write_file(&link, b"x")).contains("symbolic link"));
            let dangling = d.0.join("dangling.png");
            std::os::unix::fs::symlink(d.0.join("nowhere"), &dangling).unwrap();
            assert!(err(check(&dangling, true, &[])).contains("symbolic link"));
            let e = err(check(Path::new("/dev/null"), true, &[]));
            assert!(e.contains("/dev/null") && e.contains("a device"), "{e}");
        }
        let e = err(check(&d.0, true, &[]));
        assert!(e.contains("a folder"), "{e}");
        assert_eq!(fs::read(&input).unwrap(), b"spec");
        let mut names = d.names();
        names.retain(|n| n.starts_with('.'));
        assert!(names.is_empty(), "no temporary file is left: {names:?}");
    }

    #[test]
    fn unwritable_places_are_refused_naming_the_given_path() {
        let d = TempDir::new("unwritable");
        let missing = d.0.join("missing").join("x.png");
        let e = err(check(&missing, false, &[]));
        assert!(
            e.contains(&missing.display().to_string()) && e.contains("does not exist"),
            "{e}"
        );
        fs::write(d.0.join("file"), b"").unwrap();
        let under_file = d.0.join("file").join("x.png");
        let e = err(check(&under_file, false, &[]));
        assert!(e.contains("is not a folder"), "{e}");
        let e = err(write_file(&missing, b"x"));
        assert!(e.contains(&missing.display().to_string()) && !e.contains(".tmp"), "{e}");
        assert_eq!(d.names(), ["file"]);
    }

    #[test]
    fn a_dropped_file_leaves_nothing() {
        let d = TempDir::new("drop");
        let out = d.0.join("b.bin");
        let mut f = AtomicFile::create(&out).unwrap();
        f.writer().write_all(b"partial").unwrap();
        assert_eq!(d.names().len(), 1);
        drop(f);
        assert!(d.names().is_empty());
        assert!(!crate::interrupt::temp_files().iter().any(|p| p.starts_with(&d.0)));
    }
}
