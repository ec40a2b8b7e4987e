import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import MarkdownIt from 'markdown-it';

type Token = MarkdownIt.Token;

/** One thing in a Markdown file that would not render or lead where it says, with the line it is on (1-based). */
export interface MarkdownProblem {
  file: string;
  line: number;
  message: string;
}

interface ParsedFile {
  tokens: Token[];
  lines: string[];
  anchors: Set<string>;
}

type Slugger = { slug(value: string): string };

// GitHub renders CommonMark with tables, strikethrough and autolinks; markdown-it's default preset parses the same
// block structure (fences, headings, links), which is all these checks read.
const markdown = new MarkdownIt({ html: true });

/**
 * Parses Markdown files as GitHub renders them and reports every code fence that is never closed (or "closed" with
 * text after the backticks, which CommonMark reads as more code), every `#anchor` no heading produces (GitHub's
 * slugs, through `github-slugger`), and every relative link to a file that does not exist or to an anchor the
 * target Markdown file does not have. `files` are relative to `root`.
 *
 * @example
 * expect(await markdownProblems(root, ['README.md', 'docs/sessions.md'])).toEqual([]);
 */
export async function markdownProblems(root: string, files: readonly string[]): Promise<MarkdownProblem[]> {
  const { default: GithubSlugger } = await import('github-slugger');
  const parsed = new Map<string, ParsedFile>();
  const parse = (file: string): ParsedFile => {
    let result = parsed.get(file);
    if (result === undefined) {
      const text = readFileSync(path.join(root, file), 'utf8');
      const tokens = markdown.parse(text, {});
      result = { tokens, lines: text.split('\n'), anchors: anchorsOf(tokens, new GithubSlugger()) };
      parsed.set(file, result);
    }
    return result;
  };

  const problems: MarkdownProblem[] = [];
  for (const file of files) {
    const { tokens, lines } = parse(file);
    problems.push(...fenceProblems(file, tokens, lines));
    for (const link of linksOf(tokens)) {
      const problem = linkProblem(root, file, link.href, parse);
      if (problem !== undefined) problems.push({ file, line: link.line, message: problem });
    }
  }
  return problems;
}

function fenceProblems(file: string, tokens: Token[], lines: string[]): MarkdownProblem[] {
  const problems: MarkdownProblem[] = [];
  for (const token of tokens) {
    if (token.type !== 'fence' || token.map === null) continue;
    const [start, end] = token.map;
    const marker = token.markup;
    const char = marker[0] === '~' ? '~' : '`';
    const closing = new RegExp(`^[\\s>]*\\${char}{${marker.length},}\\s*$`);
    const closedWithText = new RegExp(`^[\\s>]*\\${char}{${marker.length},}\\s*\\S`);
    for (let line = start + 1; line < end; line++) {
      if (closedWithText.test(lines[line] ?? '')) {
        problems.push({ file, line: line + 1, message: `code fence closed with text after it: "${lines[line]}"` });
      }
    }
    if (end - 1 <= start || !closing.test(lines[end - 1] ?? '')) {
      problems.push({ file, line: start + 1, message: `code fence opened with ${marker} is never closed` });
    }
  }
  return problems;
}

function anchorsOf(tokens: Token[], slugger: Slugger): Set<string> {
  const anchors = new Set<string>();
  tokens.forEach((token, index) => {
    if (token.type === 'heading_open') {
      const inline = tokens[index + 1];
      anchors.add(slugger.slug(textOf(inline?.children ?? [])));
    }
    // An explicit `<a id="…">` or `<a name="…">` is an anchor too.
    const html = [token, ...(token.children ?? [])].filter((t) => t.type === 'html_block' || t.type === 'html_inline');
    for (const part of html) {
      for (const match of part.content.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
    }
  });
  return anchors;
}

// The heading's text as GitHub takes it for the slug: what is left once the markup is rendered and tags dropped.
function textOf(children: Token[]): string {
  return children
    .map((child) => {
      if (child.type === 'text' || child.type === 'code_inline') return child.content;
      if (child.type === 'softbreak') return ' ';
      if (child.type === 'image') return textOf(child.children ?? []);
      return '';
    })
    .join('');
}

function linksOf(tokens: Token[]): Array<{ href: string; line: number }> {
  const links: Array<{ href: string; line: number }> = [];
  for (const token of tokens) {
    if (token.type !== 'inline' || token.children === null) continue;
    const line = (token.map?.[0] ?? 0) + 1;
    for (const child of token.children) {
      const href = child.type === 'link_open' ? child.attrGet('href') : child.type === 'image' ? child.attrGet('src') : null;
      if (href !== null) links.push({ href: String(href), line });
    }
  }
  return links;
}

function linkProblem(root: string, file: string, href: string, parse: (file: string) => ParsedFile): string | undefined {
  // Absolute URLs (https:, mailto:) and protocol-relative ones lead outside the repository.
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) return undefined;
  const hashAt = href.indexOf('#');
  const target = decodeURIComponent(hashAt === -1 ? href : href.slice(0, hashAt));
  const anchor = hashAt === -1 ? undefined : decodeURIComponent(href.slice(hashAt + 1));
  const targetFile = target === '' ? file : path.normalize(path.join(target.startsWith('/') ? '' : path.dirname(file), target));
  if (targetFile.startsWith('..') || !existsSync(path.join(root, targetFile))) {
    return `link to ${href}: ${targetFile} does not exist`;
  }
  if (anchor === undefined || anchor === '' || !targetFile.endsWith('.md') || statSync(path.join(root, targetFile)).isDirectory()) {
    return undefined;
  }
  if (!parse(targetFile).anchors.has(anchor)) {
    return target === ''
      ? `link to #${anchor}: no heading has that anchor`
      : `link to ${href}: ${targetFile} has no heading with that anchor`;
  }
  return undefined;
}
