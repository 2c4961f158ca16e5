// jkz for OpenCode: a thin plugin that hands each OpenCode hook to a jkz
// hook binary and applies what it answers. Every decision (what to refuse,
// what to rewrite, what the summary must keep) is made by the binary; this
// file only carries events out and answers back.
//
// The binary reads one JSON object on stdin:
//   {"client": "opencode", "hook_event_name": <OpenCode hook or event name>,
//    "session_id": <OpenCode session id>, "cwd": <project directory>,
//    "worktree": <project worktree>, "input": <the hook's input>,
//    "output": <the hook's output object, as OpenCode passed it>}
// and prints nothing, or one JSON object whose fields this plugin applies:
//   "deny": text     tool.execute.before: the tool does not run; the model
//                    reads `text` as the tool's result
//   "args": object   tool.execute.before: the tool's arguments from now on
//                    (all of them: keys it leaves out are gone)
//   "output": text   tool.execute.after: what the model reads instead of the
//                    tool's output
//   "context": text  experimental.session.compacting: added to what the
//                    summarizer is asked to keep
//   "system": text   from then on added to every model request's system
//                    prompt for that session (OpenCode rebuilds the system
//                    prompt for each request, so it is given again each
//                    time); "" stops it
//
// Which binary gets which hook:
//   session.created, chat.message, tool.execute.before, tool.execute.after,
//   session.deleted              -> jkz-chat
//   tool.execute.after           -> jkz-post-tool-use
//   experimental.session.compacting -> jkz-pre-compact
//   session.compacted            -> jkz-session-start
//
// A binary that is missing, fails, times out or prints something else is one
// line on stderr and changes nothing: the plugin never blocks OpenCode
// except on a "deny" answer.
//
// Binaries are looked up on PATH, then in ~/.local/bin (./install.sh) and
// ${CARGO_HOME:-~/.cargo}/bin (cargo install), like the Claude Code plugin's
// launcher.

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

// A hook's own budget: jkz hooks answer within 2 s; this only bounds a hung one.
const TIMEOUT_MS = 10_000;
// An answer is a few KB; anything near this is not an answer.
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

function findProgram(program) {
  const dirs = (process.env.PATH || "").split(path.delimiter).filter(Boolean);
  const home = os.homedir();
  dirs.push(path.join(home, ".local", "bin"));
  dirs.push(path.join(process.env.CARGO_HOME || path.join(home, ".cargo"), "bin"));
  for (const dir of dirs) {
    const candidate = path.join(dir, program);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here; try the next directory
    }
  }
  return null;
}

function warn(line) {
  process.stderr.write(`jkz plugin: ${line}\n`);
}

// Runs `program` with `event` on stdin; resolves to its parsed answer, or
// null when there is none to apply.
function ask(program, event, cwd) {
  const file = findProgram(program);
  if (!file) {
    warn(`${program} is not installed (not on PATH, in ~/.local/bin or ~/.cargo/bin): run ./install.sh in a jkz checkout`);
    return Promise.resolve(null);
  }
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(file, [], { cwd, stdio: ["pipe", "pipe", "inherit"] });
    } catch (e) {
      warn(`${program}: ${e.message}`);
      resolve(null);
      return;
    }
    const chunks = [];
    let size = 0;
    let settled = false;
    const finish = (answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const timer = setTimeout(() => {
      warn(`${program} gave no answer within ${TIMEOUT_MS} ms`);
      child.kill("SIGKILL");
      finish(null);
    }, TIMEOUT_MS);
    child.stdout.on("data", (chunk) => {
      size += chunk.length;
      if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
    });
    child.on("error", (e) => {
      warn(`${program}: ${e.message}`);
      finish(null);
    });
    child.on("close", (code, signal) => {
      if (code !== 0) {
        warn(`${program} exited with ${signal ?? code}`);
        finish(null);
        return;
      }
      const text = Buffer.concat(chunks).toString("utf8").trim();
      if (text === "") {
        finish(null);
        return;
      }
      try {
        const answer = JSON.parse(text);
        if (answer && typeof answer === "object" && !Array.isArray(answer)) {
          finish(answer);
          return;
        }
      } catch {
        // reported below
      }
      warn(`${program} printed something that is not a JSON object; ignored`);
      finish(null);
    });
    child.stdin.on("error", () => {
      // a binary that exits without reading stdin closes the pipe early
    });
    child.stdin.end(JSON.stringify(event));
  });
}

export const JkzPlugin = async ({ directory, worktree }) => {
  // The re-injection text per session, kept from the last "system" answer.
  const systemText = new Map();

  const event = (name, sessionID, input, output) => ({
    client: "opencode",
    hook_event_name: name,
    session_id: sessionID,
    cwd: directory,
    worktree,
    input,
    output,
  });

  const remember = (sessionID, answer) => {
    if (answer && typeof answer.system === "string" && sessionID) {
      if (answer.system === "") systemText.delete(sessionID);
      else systemText.set(sessionID, answer.system);
    }
  };

  return {
    event: async ({ event: e }) => {
      const sessionID = e?.properties?.sessionID ?? e?.properties?.info?.id;
      if (e.type === "session.created" || e.type === "session.deleted") {
        remember(sessionID, await ask("jkz-chat", event(e.type, sessionID, e, {}), directory));
      } else if (e.type === "session.compacted") {
        remember(sessionID, await ask("jkz-session-start", event(e.type, sessionID, e, {}), directory));
      }
    },

    "chat.message": async (input, output) => {
      remember(input.sessionID, await ask("jkz-chat", event("chat.message", input.sessionID, input, output), directory));
    },

    "tool.execute.before": async (input, output) => {
      const answer = await ask("jkz-chat", event("tool.execute.before", input.sessionID, input, output), directory);
      if (!answer) return;
      if (typeof answer.deny === "string") throw new Error(answer.deny);
      if (answer.args && typeof answer.args === "object") {
        // OpenCode runs the tool with the object it handed over, so the new
        // arguments go into that object rather than replacing it.
        for (const key of Object.keys(output.args)) delete output.args[key];
        Object.assign(output.args, answer.args);
      }
    },

    "tool.execute.after": async (input, output) => {
      const e = event("tool.execute.after", input.sessionID, input, output);
      const [, answer] = await Promise.all([
        ask("jkz-chat", e, directory),
        ask("jkz-post-tool-use", e, directory),
      ]);
      if (answer && typeof answer.output === "string") output.output = answer.output;
    },

    "experimental.session.compacting": async (input, output) => {
      const answer = await ask("jkz-pre-compact", event("experimental.session.compacting", input.sessionID, input, output), directory);
      if (answer && typeof answer.context === "string" && answer.context !== "") output.context.push(answer.context);
      remember(input.sessionID, answer);
    },

    "experimental.chat.system.transform": async (input, output) => {
      const text = input.sessionID ? systemText.get(input.sessionID) : undefined;
      if (text) output.system.push(text);
    },

    // Commands the model runs know their chat, as under Claude Code.
    "shell.env": async (input, output) => {
      if (input.sessionID) output.env.JKZ_SESSION = input.sessionID;
    },
  };
};
