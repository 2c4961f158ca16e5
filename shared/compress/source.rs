//! The document being compressed or restored, readable twice.
//!
//! Both directions make two passes (find the structure, then write), so the
//! input must be readable at any offset. A named file is read in place;
//! standard input is first spooled to an anonymous temp file, so memory never
//! holds the document.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::IO_FAILED;
use crate::exit::Failure;

/// Size of the buffers every copy goes through.
pub const COPY_BUFFER: usize = 256 * 1024;

#[derive(Debug)]
pub struct Source {
    file: File,
    len: u64,
    /// How to name the input in messages.
    name: String,
}

impl Source {
    /// Opens `path`, or spools standard input when it is `None` or `-`.
    /// Failures carry [`IO_FAILED`].
    pub fn open(path: Option<&Path>) -> Result<Source, Failure> {
        let io_code = IO_FAILED;
        match path.filter(|p| *p != Path::new("-")) {
            Some(path) => {
                let file = File::open(path)
                    .map_err(|e| Failure::io(io_code, format!("reading {}", path.display()), e))?;
                let meta = file
                    .metadata()
                    .map_err(|e| Failure::io(io_code, format!("reading {}", path.display()), e))?;
                if !meta.is_file() {
                    return Err(Failure::new(
                        io_code,
                        format!("{} is not a regular file", path.display()),
                    ));
                }
                Ok(Source {
                    file,
                    len: meta.len(),
                    name: path.display().to_string(),
                })
            }
            None => Self::spool(io::stdin().lock())
                .map_err(|e| Failure::io(io_code, "spooling standard input to a temp file", e)),
        }
    }

    /// Copies `input` into an anonymous temp file.
    pub fn spool(mut input: impl Read) -> io::Result<Source> {
        let mut file = tempfile::tempfile()?;
        let len = io::copy(&mut input, &mut file)?;
        Ok(Source {
            file,
            len,
            name: "standard input".into(),
        })
    }

    /// A temp file holding `len` bytes (an intermediate document), named
    /// in messages as `name`.
    pub fn from_temp(file: File, len: u64, name: &str) -> Source {
        Source {
            file,
            len,
            name: name.to_string(),
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// A reader over the whole input from its start (independent of any other).
    pub fn reader(&self) -> impl Read + '_ {
        RangeReader {
            file: &self.file,
            at: 0,
            end: self.len,
        }
    }

    /// Fills `buf` from offset `at`; the range must lie inside the input.
    pub fn read_exact_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, at)
    }

    /// Calls `sink` on `start..end` in chunks of at most `buf.len()` bytes.
    pub fn for_each_chunk(
        &self,
        start: u64,
        end: u64,
        buf: &mut [u8],
        sink: impl FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        for_each_chunk(&self.file, start, end, buf, sink)
    }
}

/// Calls `sink` on `file[start..end]` in chunks of at most `buf.len()` bytes;
/// a file shorter than `end` is an `UnexpectedEof` error.
pub fn for_each_chunk(
    file: &File,
    mut start: u64,
    end: u64,
    buf: &mut [u8],
    mut sink: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    while start < end {
        let n = buf.len().min((end - start) as usize);
        file.read_exact_at(&mut buf[..n], start)?;
        sink(&buf[..n])?;
        start += n as u64;
    }
    Ok(())
}

/// `file[at..end]` as a `Read`.
struct RangeReader<'a> {
    file: &'a File,
    at: u64,
    end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min((self.end - self.at) as usize);
        if n == 0 {
            return Ok(0);
        }
        let got = self.file.read_at(&mut buf[..n], self.at)?;
        self.at += got as u64;
        Ok(got)
    }
}

/// The absolute form of `path` (no file system access), for marker paths.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
