// A Jest reporter that keeps a stalled test file from holding a run until the runner's own deadline. Jest bounds
// each test and hook (testTimeout), but not a file whose worker is stuck outside them; such a run would print
// nothing more. This reporter names every file still running after `warnAfterMs`, and after `failAfterMs` names it
// again, with what else is running, stops the run's worker processes and ends the run with a failure.
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
    this.running.set(test.path, { startedAt: Date.now(), warned: false });
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
            '\n',
        );
        // A stuck worker would never see the runner go, so it and what it started are stopped first.
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
        process.stderr.write(`\nstalled-file-reporter: ${this.name(file)} is still running after ${Math.round(elapsed / 1000)} s\n`);
      }
    }
  }

  name(file) {
    return path.relative(this.rootDir, file);
  }
}

module.exports = StalledFileReporter;
