//! The live pipeline state as a digest: what `jkz-pre-compact` would detail
//! now, read by the re-injection after compaction, the PostCompact check and
//! a compaction prompt written ahead.

use std::path::Path;

use super::digest::{Candidates, Digest};
use super::focus::{self, Focus};
use crate::git::GitState;
use crate::pipeline::{self, FileContent, PipelineFile};
use crate::state_dir::StateDir;

/// The digest of the live pipeline state (read as `jkz-pre-compact` reads
/// it: thousands of files, the newest few kept); an error when the pipeline
/// directory cannot be listed.
pub fn live_digest(state: &StateDir, focus: Option<Focus>) -> Result<Digest, String> {
    let dir = state.join(crate::state_dir::layout::PIPELINE_DIR);
    let files = pipeline::list(state).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut all = Candidates::default();
    pipeline::visit_in_order(
        &files,
        Candidates::default,
        |run: &mut Candidates, _: &PipelineFile, content: FileContent| {
            if let FileContent::Valid { view, .. } = content {
                run.offer(view);
            }
        },
        |run| all.merge(run),
    );
    let focused = focus
        .as_ref()
        .filter(|f| !all.has(&f.issue))
        .and_then(|f| focus::load(state, &f.issue));
    Ok(all.digest(&dir, GitState::default(), focus, focused))
}

/// The decision-critical items of the live pipeline state of `state` and
/// the git state of `project`, as the summarizer reads them (empty when
/// there are none or they cannot be read): what a compaction prompt
/// written before any compaction holds.
pub fn summarizer_items(state: &StateDir, project: &Path) -> String {
    use crate::git::{GitProbe, Started};
    let Ok(mut digest) = live_digest(state, None) else {
        return String::new();
    };
    if digest.pipelines.is_empty() {
        return String::new();
    }
    digest.git = match GitProbe::start(project) {
        Started::Running(probe) => {
            probe.finish(std::time::Instant::now() + crate::git::HOOK_TIMEOUT)
        }
        Started::Failed(state) => state,
    };
    super::digest::summarizer_instructions(&digest, None)
}
