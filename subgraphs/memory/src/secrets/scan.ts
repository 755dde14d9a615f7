/**
 * Runs the detector table over a string: every hit as a span (overlaps merged, the earliest detector named), and
 * redaction of those spans as `[REDACTED:<detector>]`.
 */
import { DETECTORS, type Detector } from './detectors.js';

export interface Finding {
  detector: string;
  start: number;
  end: number;
}

/** Each detector's pattern with match indices (`d`), compiled once. */
const withIndices = new WeakMap<Detector, RegExp>();

function spansOf(detector: Detector, text: string): Finding[] {
  const out: Finding[] = [];
  let re = withIndices.get(detector);
  if (!re) {
    const flags = detector.pattern.flags.includes('d')
      ? detector.pattern.flags
      : `${detector.pattern.flags}d`;
    withIndices.set(detector, (re = new RegExp(detector.pattern.source, flags)));
  }
  for (const m of text.matchAll(re) as IterableIterator<RegExpExecArray>) {
    if (detector.accept && !detector.accept(m)) continue;
    const group = detector.groups?.map((g) => m.indices![g]).find((span) => span !== undefined);
    const [start, end] = group ?? m.indices![0]!;
    if (end > start) out.push({ detector: detector.name, start, end });
  }
  return out;
}

export function scan(text: string, detectors: readonly Detector[] = DETECTORS): Finding[] {
  const all: (Finding & { rank: number })[] = [];
  detectors.forEach((d, rank) => {
    for (const f of spansOf(d, text)) all.push({ ...f, rank });
  });
  all.sort((a, b) => a.start - b.start || a.rank - b.rank);
  const merged: (Finding & { rank: number })[] = [];
  for (const f of all) {
    const last = merged.at(-1);
    if (last && f.start < last.end) {
      // Overlap: one span covering both, named by the earlier detector in the table.
      if (f.rank < last.rank) last.detector = f.detector;
      last.rank = Math.min(last.rank, f.rank);
      last.end = Math.max(last.end, f.end);
    } else {
      merged.push({ ...f });
    }
  }
  return merged.map(({ detector, start, end }) => ({ detector, start, end }));
}

export function redact(text: string, findings: readonly Finding[]): string {
  let out = '';
  let at = 0;
  for (const f of findings) {
    out += text.slice(at, f.start) + `[REDACTED:${f.detector}]`;
    at = f.end;
  }
  return out + text.slice(at);
}
