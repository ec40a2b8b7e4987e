// A Jest reporter that keeps a stalled test file from holding a run until the runner's own deadline. Jest bounds
// each test and hook (testTimeout), but not a file whose worker is stuck outside them; such a run would print
// nothing more. This reporter names every file still running after `warnAfterMs`, and after `failAfterMs` names it
// again, with what else is running, stops the run's worker processes and ends the run with a failure. So that the
// failure says where the file stood, it names the test that was running and the last one that finished, and before
// stopping each worker shows its CPU use, the JavaScript stack it was in and the handles keeping its event loop alive
// (through Node's own `node inspect`, which attaches to a running process).
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { setInterval, clearInterval } = require('node:timers');

/** The processes descended from `pid` (Linux /proc; elsewhere none), deepest last. */
function descendants(pid) {
  let entries;
  try {
    entries = fs.readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return [];
  }
  const children = new Map();
  for (const entry of entries) {
    try {
      // The parent id is the second field after the command, which is in parentheses and may hold spaces.
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(Number(entry));
    } catch {
      // The process ended while being read.
    }
  }
  const found = [];
  const visit = (id) => {
    for (const child of children.get(id) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** Jest's worker processes among the descendants of `pid`. */
function workers(pid) {
  return descendants(pid).filter((id) => {
    try {
      return /jest-worker|processChild/.test(fs.readFileSync(`/proc/${id}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** CPU ticks (user + system) a process has used, or undefined once it is gone. */
function cpuTicks(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return { state: fields[0], ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/** Blocks this (the runner's) thread for `ms`; the run is being ended, so nothing else needs it. */
function pause(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * A worker's state for the failure message: its CPU use over one second (busy in a loop, or idle waiting), then,
 * through `node inspect -p`, the handles its event loop waits on and the JavaScript stack it is in.
 */
function describeWorker(pid) {
  const before = cpuTicks(pid);
  pause(1000);
  const after = cpuTicks(pid);
  let text = `\nstalled-file-reporter: worker ${pid}: `;
  text += before && after ? `state ${after.state}, ${after.ticks - before.ticks} CPU ticks in the last second\n` : 'gone\n';
  if (!after) return text;
  const handles =
    "exec process._getActiveHandles().map((h) => h.constructor.name + (h.remotePort ? ':' + h.remotePort : '') + " +
    "(h._idleTimeout > 0 ? '@' + h._idleTimeout + 'ms' : '')).join(' ')";
  const script = `${handles}\npause\nbt\n.exit\n`;
  const inspected = spawnSync(process.execPath, ['-e', INSPECT_DRIVER, String(pid), script], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  const output = `${inspected.stdout ?? ''}${inspected.stderr ?? ''}`.split('\n').slice(0, 120).join('\n');
  return `${text}${output}\n`;
}

// Runs `node inspect -p <pid>` and types the commands into it one by one, giving each a few seconds to answer.
const INSPECT_DRIVER = `
const { spawn } = require('node:child_process');
const [pid, script] = process.argv.slice(1);
const child = spawn(process.execPath, ['inspect', '-p', pid], { stdio: ['pipe', 'inherit', 'inherit'] });
const commands = script.split('\\n').filter(Boolean);
let delay = 2000;
for (const command of commands) {
  setTimeout(() => child.stdin.write(command + '\\n'), delay);
  delay += 3000;
}
setTimeout(() => child.kill('SIGKILL'), delay + 1000);
`;

class StalledFileReporter {
  constructor(globalConfig, options = {}) {
    this.rootDir = globalConfig.rootDir;
    this.warnAfterMs = options.warnAfterMs ?? 3 * 60_000;
    this.failAfterMs = options.failAfterMs ?? 10 * 60_000;
    this.running = new Map();
    this.timer = undefined;
  }

  onRunStart() {
    this.timer = setInterval(() => this.check(), Math.min(15_000, this.warnAfterMs));
    this.timer.unref();
  }

  onTestFileStart(test) {
    this.running.set(test.path, { startedAt: Date.now(), warned: false, current: undefined, last: undefined, finished: 0 });
  }

  onTestCaseStart(test, info) {
    const state = this.running.get(test.path);
    if (state) state.current = { name: info.fullName, at: Date.now() };
  }

  onTestCaseResult(test, result) {
    const state = this.running.get(test.path);
    if (!state) return;
    state.finished += 1;
    state.last = { name: result.fullName, status: result.status, duration: result.duration, at: Date.now() };
    state.current = undefined;
  }

  onTestFileResult(test) {
    this.running.delete(test.path);
  }

  onRunComplete() {
    clearInterval(this.timer);
  }

  check() {
    const now = Date.now();
    for (const [file, state] of this.running) {
      const elapsed = now - state.startedAt;
      if (elapsed >= this.failAfterMs) {
        const others = [...this.running.keys()].filter((other) => other !== file).map((other) => this.name(other));
        process.stderr.write(
          `\nstalled-file-reporter: ${this.name(file)} has run for ${Math.round(elapsed / 1000)} s, past the ` +
            `${this.failAfterMs / 1000} s any file may take; ending the run as failed.` +
            (others.length > 0 ? ` Also running: ${others.join(', ')}.` : '') +
            '\n' +
            this.progress(state, now) +
            '\n',
        );
        // A stuck worker would never see the runner go, so it and what it started are stopped first, each after
        // saying where it stood.
        for (const pid of workers(process.pid)) {
          process.stderr.write(describeWorker(pid));
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Already gone.
          }
        }
        for (const pid of descendants(process.pid)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Already gone.
          }
        }
        process.exit(1);
      }
      if (elapsed >= this.warnAfterMs && !state.warned) {
        state.warned = true;
        process.stderr.write(
          `\nstalled-file-reporter: ${this.name(file)} is still running after ${Math.round(elapsed / 1000)} s\n${this.progress(state, now)}\n`,
        );
      }
    }
  }

  /** Which test of a file is running and which finished last, with times. */
  progress(state, now) {
    const ago = (at) => `${Math.round((now - at) / 1000)} s ago`;
    const lines = [`  ${state.finished} test(s) of the file finished`];
    if (state.last) {
      lines.push(`  last finished: "${state.last.name}" (${state.last.status}, ${state.last.duration ?? '?'} ms), ${ago(state.last.at)}`);
    }
    lines.push(
      state.current
        ? `  running: "${state.current.name}", started ${ago(state.current.at)}`
        : '  running: no test (a hook, or between tests)',
    );
    return lines.join('\n');
  }

  name(file) {
    return path.relative(this.rootDir, file);
  }
}

module.exports = StalledFileReporter;
