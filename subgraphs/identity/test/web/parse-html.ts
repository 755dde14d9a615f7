/**
 * A small strict HTML parser for the page tests (no HTML parser is a dependency): builds the element tree, and
 * throws on anything our pages must never produce — an unclosed or mismatched tag, an unquoted or duplicate
 * attribute, a raw "<" in text. Enough to query the pages the way a browser's accessibility tree would see them.
 */
export interface Element {
  tag: string;
  attrs: Record<string, string>;
  children: Node[];
  parent: Element | null;
}
export type Node = Element | string;

const VOID = new Set(['meta', 'link', 'input', 'br', 'hr', 'img']);

function decode(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

export function parseHtml(source: string): Element {
  const root: Element = { tag: '#document', attrs: {}, children: [], parent: null };
  let current = root;
  let i = 0;
  const doctype = /^<!doctype html>/i.exec(source);
  if (!doctype) throw new Error('missing <!doctype html>');
  i = doctype[0].length;
  while (i < source.length) {
    const lt = source.indexOf('<', i);
    const text = source.slice(i, lt < 0 ? source.length : lt);
    if (text.includes('>')) throw new Error(`raw ">" in text near ${JSON.stringify(text.slice(0, 40))}`);
    if (text.trim()) current.children.push(decode(text));
    if (lt < 0) break;
    const gt = source.indexOf('>', lt);
    if (gt < 0) throw new Error('unterminated tag');
    const raw = source.slice(lt + 1, gt);
    i = gt + 1;
    if (raw.startsWith('/')) {
      const tag = raw.slice(1).trim().toLowerCase();
      if (current.tag !== tag) throw new Error(`</${tag}> closes <${current.tag}>`);
      current = current.parent!;
      continue;
    }
    const m = /^([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-:]+(?:="[^"]*")?)*)\s*(\/)?$/.exec(raw);
    if (!m) throw new Error(`malformed tag <${raw.slice(0, 60)}>`);
    const tag = m[1]!.toLowerCase();
    if (m[3] && !VOID.has(tag)) throw new Error(`<${tag} /> is not a void element`);
    const attrs: Record<string, string> = {};
    for (const a of m[2]!.matchAll(/\s+([a-zA-Z-:]+)(?:="([^"]*)")?/g)) {
      if (a[1]! in attrs) throw new Error(`duplicate attribute ${a[1]} on <${tag}>`);
      attrs[a[1]!.toLowerCase()] = decode(a[2] ?? '');
    }
    const el: Element = { tag, attrs, children: [], parent: current };
    current.children.push(el);
    if (!VOID.has(tag)) current = el;
  }
  if (current !== root) throw new Error(`<${current.tag}> is never closed`);
  return root;
}

export function all(root: Element, pred: (e: Element) => boolean): Element[] {
  const out: Element[] = [];
  const walk = (e: Element) => {
    for (const c of e.children) {
      if (typeof c === 'string') continue;
      if (pred(c)) out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

export const byTag = (root: Element, tag: string) => all(root, (e) => e.tag === tag);
export const byId = (root: Element, id: string) => all(root, (e) => e.attrs['id'] === id)[0];

export function textOf(e: Node): string {
  return typeof e === 'string' ? e : e.children.map(textOf).join(' ').replace(/\s+/g, ' ').trim();
}

/**
 * The accessibility rules every page keeps: <html lang>, a <title>, exactly one <h1>, every visible form control
 * has a <label for> (or sits in a labelled fieldset for radios), every aria-describedby id exists, ids are unique,
 * no inline style or script. Returns the problems found (empty when fine).
 */
export function accessibilityProblems(root: Element): string[] {
  const problems: string[] = [];
  const html = byTag(root, 'html')[0];
  if (!html?.attrs['lang']) problems.push('<html> has no lang');
  if (!textOf(byTag(root, 'title')[0] ?? '')) problems.push('no <title>');
  const h1 = byTag(root, 'h1');
  if (h1.length !== 1) problems.push(`${h1.length} <h1> elements`);
  const ids = all(root, (e) => 'id' in e.attrs).map((e) => e.attrs['id']!);
  const dup = ids.filter((id, k) => ids.indexOf(id) !== k);
  if (dup.length) problems.push(`duplicate ids ${dup.join(', ')}`);
  const labels = new Set(byTag(root, 'label').map((l) => l.attrs['for']));
  for (const input of all(root, (e) => ['input', 'select', 'textarea'].includes(e.tag))) {
    if (input.attrs['type'] === 'hidden') continue;
    if (!input.attrs['id'] || !labels.has(input.attrs['id'])) {
      problems.push(`<${input.tag} name="${input.attrs['name']}"> has no <label for>`);
    }
  }
  for (const e of all(root, (x) => 'aria-describedby' in x.attrs)) {
    for (const id of e.attrs['aria-describedby']!.split(/\s+/)) {
      if (!byId(root, id)) problems.push(`aria-describedby points at missing #${id}`);
    }
  }
  if (all(root, (e) => 'style' in e.attrs || e.tag === 'script' || e.tag === 'style').length) {
    problems.push('inline style or script');
  }
  return problems;
}
