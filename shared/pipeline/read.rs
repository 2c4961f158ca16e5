//! Reading pipeline files, thousands at a time.
//!
//! `jkz-pre-compact` reads every `state/pipeline/<N>.json` on each
//! compaction, so this is the hook's hot loop. Each file costs one open, one
//! read and one close ([`SmallFileReader`]), is checked and viewed in one
//! pass ([`view::normalized`](super::view::normalized)), and is handed to the
//! caller as borrowed bytes ([`FileContent`]): whoever needs the text keeps
//! it, nobody else copies it. The files are spread over the cores in
//! runs, taken in order ([`visit_in_order`]).

use super::{view, IssueNumber, Normalized, ParseError, PipelineDoc, PipelineFile};
use crate::state_dir::SmallFileReader;

/// The most bytes read from one pipeline file; a larger one is reported as
/// invalid rather than read (real pipeline files are a few KiB).
pub const MAX_PIPELINE_FILE: u64 = 16 * 1024 * 1024;

/// The most threads [`visit_in_order`] reads with.
pub const MAX_READ_THREADS: usize = 4;

/// Below this many files one thread reads them all: starting another costs
/// more than it saves.
const PARALLEL_FROM: usize = 256;

/// The most bytes of an invalid file's text kept for the record.
const MAX_INVALID_TEXT: usize = 64 * 1024;

/// One pipeline file as read, borrowing the reader's buffer.
// Made and consumed once per file, never stored: boxing the view would
// cost an allocation per file for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
pub enum FileContent<'a> {
    /// A pipeline document: its view, and its JSON text without the
    /// surrounding whitespace (one JSON object, as strictly checked as a
    /// `serde_json::Value` would be).
    Valid { view: Normalized, json: &'a [u8] },
    /// Not a pipeline document: why, and the start of what was there (at
    /// most 64 KiB), or nothing when the file could not be read at all.
    Invalid {
        error: ParseError,
        text: Option<&'a [u8]>,
    },
}

impl<'a> FileContent<'a> {
    /// What the bytes read from `file` (or the failure to read them) are.
    fn of(issue: &IssueNumber, read: std::io::Result<&'a [u8]>) -> FileContent<'a> {
        let bytes = match read {
            Err(e) => {
                return FileContent::Invalid {
                    error: ParseError(format!("unreadable: {e}")),
                    text: None,
                }
            }
            Ok(bytes) if bytes.len() as u64 > MAX_PIPELINE_FILE => {
                return FileContent::Invalid {
                    error: ParseError(format!("larger than {MAX_PIPELINE_FILE} bytes: not read")),
                    text: None,
                }
            }
            Ok(bytes) => bytes,
        };
        let view = view::normalized(issue, bytes)
            // Refused: the full parse says precisely why (or, were the
            // scanner ever stricter than serde_json, views it after all).
            // A file it accepts is copied verbatim into snapshots, so it
            // must never accept more than serde_json: its tests and the
            // `pipeline_state` fuzz target hold it to that.
            .map(Ok)
            .unwrap_or_else(|| PipelineDoc::parse(issue.clone(), bytes).map(|d| d.normalized()));
        match view {
            Ok(view) => FileContent::Valid {
                view,
                json: trim_json_whitespace(bytes),
            },
            Err(error) => FileContent::Invalid {
                error,
                text: Some(&bytes[..bytes.len().min(MAX_INVALID_TEXT)]),
            },
        }
    }
}

/// `bytes` without JSON's insignificant whitespace at either end.
fn trim_json_whitespace(bytes: &[u8]) -> &[u8] {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = bytes.iter().position(|b| !ws(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !ws(b)).map_or(start, |e| e + 1);
    &bytes[start..end]
}

/// How many files [`visit_in_order`] hands over at a time.
const RUN_FILES: usize = 512;

/// Reads every file of `files` and hands each one's content to `visit`,
/// with an accumulator: the files are read in runs of up to 512, each with
/// an accumulator of its own (made by `new`), on up to [`MAX_READ_THREADS`]
/// threads when there are enough of them; each run's accumulator is given
/// to `take`, on the calling thread, as soon as it and every run before it
/// are done. So `take` sees the files in order, and the caller can write
/// the first runs out while later ones are still being read.
pub fn visit_in_order<A, N, V, T>(files: &[PipelineFile], new: N, visit: V, mut take: T)
where
    A: Send,
    N: Fn() -> A + Sync,
    V: Fn(&mut A, &PipelineFile, FileContent<'_>) + Sync,
    T: FnMut(A),
{
    // One reader per thread, its buffer reused from run to run.
    let read_run = |reader: &mut SmallFileReader, run: &[PipelineFile]| {
        let mut acc = new();
        for file in run {
            let read = reader.read(&file.path, file.regular, MAX_PIPELINE_FILE);
            visit(&mut acc, file, FileContent::of(&file.issue, read));
        }
        acc
    };
    let threads = match files.len() < PARALLEL_FROM {
        true => 1,
        false => read_threads(),
    };
    let runs: Vec<&[PipelineFile]> = files.chunks(RUN_FILES).collect();
    let mut reader = SmallFileReader::default();
    if threads < 2 {
        runs.into_iter()
            .for_each(|run| take(read_run(&mut reader, run)));
        return;
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (send, done) = std::sync::mpsc::channel::<(usize, A)>();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .filter_map(|_| {
                let (send, next, runs) = (send.clone(), &next, &runs);
                let work = move || {
                    let mut reader = SmallFileReader::default();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(run) = runs.get(i) else { break };
                        if send.send((i, read_run(&mut reader, run))).is_err() {
                            break;
                        }
                    }
                };
                std::thread::Builder::new().spawn_scoped(s, work).ok()
            })
            .collect();
        drop(send);
        let mut arrived: Vec<Option<A>> = runs.iter().map(|_| None).collect();
        let mut taken = 0;
        for (i, acc) in done {
            arrived[i] = Some(acc);
            while let Some(acc) = arrived.get_mut(taken).and_then(Option::take) {
                take(acc);
                taken += 1;
            }
        }
        // Runs that never came (no thread could be started, or one
        // panicked) are read here, in turn, so none is missing.
        for i in taken..runs.len() {
            take(
                arrived[i]
                    .take()
                    .unwrap_or_else(|| read_run(&mut reader, runs[i])),
            );
        }
        for worker in workers {
            let _ = worker.join(); // a panic was made good above
        }
    });
}

/// How many threads read: the cores, up to [`MAX_READ_THREADS`]. (Asked
/// only when there are enough files to share: the answer reads the cgroup's
/// CPU quota files.)
fn read_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_READ_THREADS)
}

/// A pipeline file as read, owning its text: for callers that keep files
/// around (`jkz state list`, the session record).
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedPipeline {
    pub file: PipelineFile,
    pub view: Result<Normalized, ParseError>,
    /// The file's JSON text, surrounding whitespace trimmed, when `view` is
    /// `Ok` (then it is one valid JSON object, as strict as `serde_json`'s
    /// `Value` is); else the text that was there (lossy UTF-8, at most 64 KiB),
    /// or nothing when the file could not be read at all.
    pub text: Option<Vec<u8>>,
}

impl LoadedPipeline {
    fn new(file: &PipelineFile, content: FileContent) -> LoadedPipeline {
        let (view, text) = match content {
            FileContent::Valid { view, json } => (Ok(view), Some(json.to_vec())),
            FileContent::Invalid { error, text } => (Err(error), text.map(<[u8]>::to_vec)),
        };
        LoadedPipeline {
            file: file.clone(),
            view,
            text,
        }
    }

    /// The content as read, borrowed again.
    pub fn content(&self) -> FileContent<'_> {
        match &self.view {
            Ok(view) => FileContent::Valid {
                view: view.clone(),
                json: self.text.as_deref().unwrap_or_default(),
            },
            Err(error) => FileContent::Invalid {
                error: error.clone(),
                text: self.text.as_deref(),
            },
        }
    }

    /// The file's content as JSON, when it is a valid pipeline document.
    pub fn json(&self) -> Option<&[u8]> {
        self.view.as_ref().ok().and(self.text.as_deref())
    }

    /// What was in a file that is not valid JSON (lossy, bounded).
    pub fn invalid_text(&self) -> Option<String> {
        match (&self.view, &self.text) {
            (Err(_), Some(text)) => Some(String::from_utf8_lossy(text).into_owned()),
            _ => None,
        }
    }
}

/// Reads every pipeline file, in order (see [`visit_in_order`]).
pub fn load_all(files: &[PipelineFile]) -> Vec<LoadedPipeline> {
    let mut all = Vec::with_capacity(files.len());
    let visit = |out: &mut Vec<_>, file: &PipelineFile, content: FileContent| {
        out.push(LoadedPipeline::new(file, content))
    };
    visit_in_order(files, Vec::new, visit, |run| all.extend(run));
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::list_in;

    /// Many files (so several threads read them), of every kind: the result
    /// is the one a plain read of each file, in order, gives.
    #[test]
    fn reading_on_threads_keeps_order_and_content() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        for n in 1..=3 * PARALLEL_FROM {
            let text = match n % 5 {
                0 => format!("{{\"{n}\": {{\"current_phase\": \"qa\"}}, \"x\": [1]}}\n"),
                1 => format!("{{\"{n}\": oops"),
                2 => String::new(),
                3 => format!(" {{\"{n}\": {{\"pending_decisions\": [\"a\\u00e9\"]}}}} "),
                _ => format!(
                    "{{\"{n}\": {{\"failure_context\": \"{}\"}}}}",
                    "y".repeat(n * 40)
                ),
            };
            std::fs::write(dir.join(format!("{n}.json")), text).unwrap();
        }
        std::fs::create_dir(dir.join("9999.json")).unwrap();
        let files = list_in(dir).unwrap();
        assert_eq!(files.len(), 3 * PARALLEL_FROM + 1);
        let oracle: Vec<LoadedPipeline> = files
            .iter()
            .map(|f| {
                let bytes = std::fs::read(&f.path);
                let read = bytes
                    .as_deref()
                    .map_err(|e| std::io::Error::new(e.kind(), ""));
                LoadedPipeline::new(f, FileContent::of(&f.issue, read))
            })
            .collect();
        let loaded = load_all(&files);
        assert_eq!(loaded.len(), oracle.len());
        for (got, want) in loaded.iter().zip(&oracle) {
            assert_eq!(got.file, want.file);
            assert_eq!(got.text, want.text, "{}", got.file.path.display());
            // Error texts differ only in how a read failure is worded.
            assert_eq!(got.view.is_ok(), want.view.is_ok());
            if let (Ok(g), Ok(w)) = (&got.view, &want.view) {
                assert_eq!(g, w);
            }
        }

        // In order, run by run, as they come.
        let mut taken = Vec::new();
        let mut sizes = Vec::new();
        let issue_of =
            |out: &mut Vec<_>, file: &PipelineFile, _: FileContent| out.push(file.issue.clone());
        visit_in_order(&files, Vec::new, issue_of, |run| {
            sizes.push(run.len());
            taken.extend(run);
        });
        assert_eq!(sizes, [RUN_FILES, files.len() - RUN_FILES]);
        let want: Vec<_> = files.iter().map(|f| f.issue.clone()).collect();
        assert_eq!(taken, want);
    }

    /// A reading thread that panics: its run is read again, so nothing is
    /// missing or out of place.
    #[test]
    fn a_panicking_reader_loses_no_file() {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return; // one thread: no worker to lose
        }
        let tmp = tempfile::tempdir().unwrap();
        for n in 1..=2 * RUN_FILES + 3 {
            let text = format!("{{\"{n}\": {{\"current_phase\": \"p{n}\"}}}}");
            std::fs::write(tmp.path().join(format!("{n}.json")), text).unwrap();
        }
        let files = list_in(tmp.path()).unwrap();
        let want: Vec<_> = files.iter().map(|f| f.issue.clone()).collect();
        // Once, on the last file (every run is a thread's, with this many).
        let armed = std::sync::atomic::AtomicBool::new(true);
        let visit = |out: &mut Vec<IssueNumber>, file: &PipelineFile, content: FileContent| {
            let last = file.issue == want[want.len() - 1];
            if last && armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
                panic!("a reader fails (this panic is part of the test)");
            }
            assert!(matches!(content, FileContent::Valid { .. }));
            out.push(file.issue.clone());
        };
        let mut taken = Vec::new();
        visit_in_order(&files, Vec::new, visit, |run| taken.extend(run));
        assert!(
            !armed.load(std::sync::atomic::Ordering::SeqCst),
            "it did panic"
        );
        assert_eq!(taken, want);
    }
}
