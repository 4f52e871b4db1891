import { html, type Html } from './html.js';

export interface Problem {
  /** Dotted path into the manifest (`commands.0.flow`), or '' for the whole. */
  path: string;
  message: string;
}

/** A line of the manifest as JSON.stringify(value, null, 2) prints it, with the path it starts (if any). */
interface Line {
  text: string;
  path: string | null;
}

/** The manifest's lines as `JSON.stringify(value, null, 2)` prints them, each with the path of the value it holds. */
export function printedLines(value: unknown): Line[] {
  const lines: Line[] = [];
  const walk = (node: unknown, path: string[], indent: string, prefix: string, suffix: string) => {
    const at = path.join('.');
    if (Array.isArray(node) && node.length > 0) {
      lines.push({ text: `${indent}${prefix}[`, path: at });
      node.forEach((item, i) => walk(item, [...path, String(i)], `${indent}  `, '', i < node.length - 1 ? ',' : ''));
      lines.push({ text: `${indent}]${suffix}`, path: null });
    } else if (node !== null && typeof node === 'object' && Object.keys(node).length > 0) {
      const entries = Object.entries(node as Record<string, unknown>).filter(([, v]) => v !== undefined);
      lines.push({ text: `${indent}${prefix}{`, path: at });
      entries.forEach(([key, item], i) => walk(item, [...path, key], `${indent}  `, `${JSON.stringify(key)}: `, i < entries.length - 1 ? ',' : ''));
      lines.push({ text: `${indent}}${suffix}`, path: null });
    } else {
      lines.push({ text: `${indent}${prefix}${JSON.stringify(node) ?? 'null'}${suffix}`, path: at });
    }
  };
  walk(value, [], '', '', '');
  return lines;
}

/** The line (1-based) each problem belongs at: its path's line, or the nearest enclosing value's. */
export function lineOf(lines: Line[], path: string): number {
  const parts = path === '' ? [] : path.split('.');
  for (let n = parts.length; n >= 0; n--) {
    const wanted = parts.slice(0, n).join('.');
    const index = lines.findIndex((line) => line.path === wanted);
    if (index >= 0) return index + 1;
  }
  return 1;
}

/** The manifest with each problem marked on its line, and a list of them linking there. */
export function annotated(value: unknown, problems: Problem[]): Html {
  const lines = printedLines(value);
  const at = Map.groupBy(problems, (problem) => lineOf(lines, problem.path));
  return html`<h2 id="problems">${problems.length === 1 ? '1 problem' : `${problems.length} problems`} to fix</h2>
<ul>${problems.map((p) => html`<li><a href="#line-${lineOf(lines, p.path)}">line ${lineOf(lines, p.path)}</a>: <code>${p.path || '(the manifest)'}</code>: ${p.message}</li>`)}</ul>
<ol class="source" aria-label="The manifest, problems marked">${lines.map((line, i) => {
    const here = at.get(i + 1);
    return html`<li id="line-${i + 1}"${here ? html` class="bad"` : ''}>${line.text}${here ? here.map((p) => html`<span class="why">↑ ${p.path || '(the manifest)'}: ${p.message}</span>`) : ''}</li>`;
  })}</ol>`;
}

/**
 * Where a JSON syntax error is: line and column from V8's message when it names them, else from a
 * scan of the text (V8 names no place for an unexpected token).
 */
export function syntaxErrorPlace(text: string, error: Error): { line: number; column: number } | null {
  const lineColumn = /line (\d+) column (\d+)/.exec(error.message);
  if (lineColumn) return { line: Number(lineColumn[1]), column: Number(lineColumn[2]) };
  const position = firstJsonError(text);
  if (position === null) return null;
  const lines = text.slice(0, position).split('\n');
  return { line: lines.length, column: lines.at(-1)!.length + 1 };
}

/** The offset of the first character where `text` stops being JSON; null when it is JSON. */
export function firstJsonError(text: string): number | null {
  let i = 0;
  const space = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail();
  };
  const string = () => {
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail();
      if (text[i] === '\\') {
        i++;
        if (text[i] === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail();
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? 'x')) fail();
      }
      i++;
    }
    if (i >= text.length) fail();
    i++;
  };
  // An object's or an array's members, comma-separated, up to `close`.
  const members = (close: string, member: () => void) => {
    i++;
    space();
    if (text[i] === close) return void i++;
    for (;;) {
      member();
      space();
      if (text[i] === ',') i++;
      else if (text[i] === close) return void i++;
      else fail();
    }
  };
  const value = (): void => {
    space();
    const c = text[i];
    if (c === '{') {
      return members('}', () => {
        space();
        if (text[i] !== '"') fail();
        string();
        space();
        if (text[i] !== ':') fail();
        i++;
        value();
      });
    }
    if (c === '[') return members(']', value);
    if (c === '"') return string();
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    const number = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!number) fail();
    i += number![0].length;
  };
  try {
    value();
    space();
    return i < text.length ? i : null;
  } catch (at) {
    return at as number;
  }
}
