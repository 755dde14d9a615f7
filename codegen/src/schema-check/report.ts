/** The report: Markdown for people (summary line first) and JSON beside it for tools. */
import type { Finding, SchemaCheckResult } from './check.js';

const code = (s: string | undefined) => (s ? `\`${s.replace(/`/g, "'")}\`` : '—');

function touches(f: Finding): string {
  if (!f.touches.length) return 'no SDK method or curated operation';
  return f.touches
    .map((t) =>
      t.sdkMethod
        ? `\`${t.sdkMethod}()\` (${t.operation}, ${t.origin})`
        : `${t.operation} (${t.kind}, ${t.origin})`,
    )
    .join(', ');
}

function section(title: string, findings: Finding[]): string[] {
  if (!findings.length) return [`## ${title} (0)`, '', 'None.', ''];
  const lines = [`## ${title} (${findings.length})`, ''];
  for (const f of findings) {
    lines.push(`- **${f.coordinate ?? '(schema)'}** [${f.scope}] ${f.message} (${f.type})`);
    lines.push(`  - old: ${code(f.oldShape)} → new: ${code(f.newShape)}`);
    if (f.allowedBecause) lines.push(`  - allowed (schemas/schema-allowlist.yaml): ${f.allowedBecause}`);
    if (f.scope === 'api') lines.push(`  - touches: ${touches(f)}`);
  }
  lines.push('');
  return lines;
}

export function summaryLine(r: SchemaCheckResult): string {
  const verdict = r.ok ? 'PASS' : 'FAIL';
  return (
    `Schema check ${verdict} (${r.head} vs ${r.base}): ${r.breaking.length} breaking, ${r.dangerous.length} dangerous, ` +
    `${r.safe.length} safe, ${r.violations.length} rule violation(s) in ${Math.round(r.ms)} ms`
  );
}

export function renderMarkdown(r: SchemaCheckResult): string {
  const lines = [`# ${summaryLine(r)}`, ''];
  lines.push(
    ...section('Breaking', r.breaking),
    ...section('Dangerous', r.dangerous),
    ...section('Safe', r.safe),
  );
  lines.push(`## Rule violations (${r.violations.length})`, '');
  if (!r.violations.length) lines.push('None.');
  for (const v of r.violations)
    lines.push(
      `- **${v.coordinate}** [${v.rule}${v.subgraph ? `, subgraph ${v.subgraph}` : ''}] ${v.message}`,
    );
  return lines.join('\n') + '\n';
}

export const renderJson = (r: SchemaCheckResult) => JSON.stringify(r, null, 2) + '\n';
