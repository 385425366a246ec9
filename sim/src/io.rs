//! The one way Sylva reads an input file: bounded, and only from regular files.
//!
//! Invariants:
//! - Only a regular file (or a symbolic link to one) is opened. Devices (`/dev/zero`,
//!   `/dev/urandom`), FIFOs, sockets and directories are refused before anything is read, so
//!   neither an endless stream nor a FIFO without a writer can hang or exhaust memory.
//! - At most `limit` bytes are kept: the file's size is checked before reading, and the read
//!   itself stops one byte past the limit (`Read::take`), so a file that grows while it is read
//!   is refused as well.
//! - Every error names the path as the caller gave it and, for a size refusal, the limit.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadErrorKind {
    /// The system refused (missing file, no permission, a read error).
    Io,
    /// A device, FIFO, socket or directory.
    NotRegular,
    /// Larger than the limit.
    TooLarge,
    /// Not UTF-8 ([`read_text`] only).
    NotText,
}

/// A file that could not be read: which one and why (with what is allowed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadError {
    /// The path as given.
    pub path: String,
    pub kind: ReadErrorKind,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for ReadError {}

/// A byte count for messages: "262144 bytes (256 KiB)".
pub fn describe_bytes(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{n} bytes ({} MiB)", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{n} bytes ({} KiB)", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// What kind of file a non-regular path is, for messages.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "neither a file nor a folder"
}

/// Reads at most `limit` bytes of the regular file at `path`; `what` names the kind of file in
/// messages ("spec file", "points file").
pub fn read_bytes(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, ReadError> {
    let shown = path.display().to_string();
    let err = |kind: ReadErrorKind, message: String| ReadError {
        path: shown.clone(),
        kind,
        message,
    };
    let io_err = |e: std::io::Error| err(ReadErrorKind::Io, format!("cannot read the {what}: {e}"));
    let refuse_kind = |meta: &std::fs::Metadata| {
        err(
            ReadErrorKind::NotRegular,
            format!(
                "is {}, not a regular file; allowed: a regular {what} (devices, pipes and folders are not read)",
                kind(meta)
            ),
        )
    };
    let too_large = |len: u64| {
        err(
            ReadErrorKind::TooLarge,
            format!(
                "the {what} has {}{}; allowed: at most {}",
                if len > limit { "more than " } else { "" },
                describe_bytes(limit.min(len)),
                describe_bytes(limit)
            ),
        )
    };
    // Checked before opening: opening a FIFO blocks until a writer appears.
    let meta = std::fs::metadata(path).map_err(io_err)?;
    if !meta.is_file() {
        return Err(refuse_kind(&meta));
    }
    if meta.len() > limit {
        return Err(err(
            ReadErrorKind::TooLarge,
            format!(
                "the {what} has {}; allowed: at most {}",
                describe_bytes(meta.len()),
                describe_bytes(limit)
            ),
        ));
    }
    let file = std::fs::File::open(path).map_err(io_err)?;
    // The path may have been replaced between the check and the open.
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() {
        return Err(refuse_kind(&meta));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bytes`], then UTF-8 (a leading byte-order mark is kept; parsers skip it). The error
/// gives the offset of the first invalid byte.
pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String, ReadError> {
    let bytes = read_bytes(path, limit, what)?;
    String::from_utf8(bytes).map_err(|e| ReadError {
        path: path.display().to_string(),
        kind: ReadErrorKind::NotText,
        message: format!(
            "the {what} is not UTF-8 text (invalid byte at offset {}); allowed: UTF-8 (ASCII) text",
            e.utf8_error().valid_up_to()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of one test in a folder of its own, removed with the folder when the test ends,
    /// passed or failed.
    struct Temp {
        dir: std::path::PathBuf,
        file: std::path::PathBuf,
    }

    impl std::ops::Deref for Temp {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.file
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// A folder of its own for the test that names it (tests run in parallel in one process).
    fn folder(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sylva-io-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn temp(name: &str, bytes: &[u8]) -> Temp {
        let dir = folder(name);
        let file = dir.join(name);
        std::fs::write(&file, bytes).unwrap();
        Temp { dir, file }
    }

    #[test]
    fn reads_a_file_within_the_limit() {
        let p = temp("ok.txt", b"abc");
        assert_eq!(read_text(&p, 3, "test file").unwrap(), "abc");
    }

    #[test]
    fn refuses_a_file_over_the_limit_naming_path_and_limit() {
        let p = temp("big.txt", &[b'x'; 2048]);
        let e = read_bytes(&p, 1024, "test file").unwrap_err();
        assert_eq!(e.path, p.display().to_string());
        assert_eq!(e.kind, ReadErrorKind::TooLarge);
        assert!(e.message.contains("2048 bytes"), "{e}");
        assert!(e.message.contains("at most 1024 bytes (1 KiB)"), "{e}");
    }

    #[test]
    fn refuses_devices_and_directories_without_reading() {
        let dir = std::env::temp_dir();
        let e = read_bytes(&dir, 10, "spec file").unwrap_err();
        assert!(e.message.contains("a directory"), "{e}");
        #[cfg(unix)]
        for dev in ["/dev/zero", "/dev/urandom", "/dev/null"] {
            if Path::new(dev).exists() {
                let start = std::time::Instant::now();
                let e = read_bytes(Path::new(dev), 1 << 20, "points file").unwrap_err();
                assert!(e.message.contains("character device"), "{e}");
                assert!(e.message.contains("allowed: a regular points file"), "{e}");
                assert!(start.elapsed().as_secs_f64() < 1.0);
            }
        }
    }

    /// A FIFO with no writer would block `open` forever; it is refused from its metadata.
    #[cfg(unix)]
    #[test]
    fn refuses_a_fifo_without_blocking() {
        let dir = folder("fifo");
        let fifo = Temp {
            file: dir.join("pipe"),
            dir,
        };
        let _ = std::fs::remove_file(&*fifo);
        let made = std::process::Command::new("mkfifo").arg(&*fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("mkfifo is not available; FIFO case not run");
            return;
        }
        let e = read_bytes(&fifo, 10, "L-system file").unwrap_err();
        assert!(e.message.contains("FIFO"), "{e}");
    }

    #[test]
    fn names_a_missing_file_and_invalid_utf8() {
        let e = read_bytes(Path::new("/nonexistent/x.xml"), 10, "spec file").unwrap_err();
        assert_eq!(e.path, "/nonexistent/x.xml");
        assert!(e.message.contains("cannot read the spec file"), "{e}");
        let p = temp("bad.txt", b"ab\xffcd");
        let e = read_text(&p, 10, "test file").unwrap_err();
        assert!(e.message.contains("offset 2"), "{e}");
    }
}
