/**
 * Server-rendered HTML: an escaping template tag, the page layout and the form parts every page uses.
 * Accessibility rules kept here: `lang`, one <h1> per page, a <label for> on every input, hints and errors tied to
 * their input with aria-describedby (and aria-invalid), an error summary at the top announced as an alert, titles
 * that start with "Error:" when the page reports one. No JavaScript and no inline styles (CSP: style-src 'self').
 */

/** HTML that is already safe (built by `html` or escaped). */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Part = SafeHtml | string | number | null | undefined | false | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof SafeHtml) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
}

/** Template tag: interpolated values are escaped unless they are SafeHtml (nested `html`); arrays are joined. */
export function html(strings: TemplateStringsArray, ...values: Part[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

export interface PageSession {
  email: string;
  tenantName: string;
}

export interface PageOptions {
  title: string;
  /** Marks the title "Error: …" (screen readers hear it first on a reloaded form). */
  hasError?: boolean;
  session?: PageSession | null;
  body: SafeHtml;
}

export const STYLESHEET_PATH = '/static/identity.css';

export function page(o: PageOptions): string {
  const signedIn = o.session
    ? html`<p class="who">
        Signed in as <strong>${o.session.email}</strong> in <strong>${o.session.tenantName}</strong> ·
        <a href="/signout">Sign out</a>
      </p>`
    : '';
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${o.hasError ? 'Error: ' : ''}${o.title} · agentgraph</title>
        <link rel="stylesheet" href="${STYLESHEET_PATH}" />
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="site">
          <p class="brand">agentgraph</p>
          ${signedIn}
        </header>
        <main id="main">${o.body}</main>
      </body>
    </html> `.value;
}

/** The error summary at the top of a form page; with `fieldId` the message links to the field it is about. */
export function errorSummary(message: string | null | undefined, fieldId?: string | null): SafeHtml | '' {
  if (!message) return '';
  return html`<div class="error-summary" role="alert" aria-labelledby="error-summary-title">
    <h2 id="error-summary-title">There is a problem</h2>
    <p>${fieldId ? html`<a href="#${fieldId}">${message}</a>` : message}</p>
  </div>`;
}

export interface FieldOptions {
  id: string;
  name: string;
  label: string;
  type?: 'text' | 'email' | 'password';
  value?: string;
  autocomplete?: string;
  hint?: string;
  error?: string | null;
  required?: boolean;
  /** Extra attributes (already safe), e.g. inputmode, autocapitalize, spellcheck. */
  attributes?: Record<string, string>;
}

export function field(o: FieldOptions): SafeHtml {
  const hintId = o.hint ? `${o.id}-hint` : null;
  const errorId = o.error ? `${o.id}-error` : null;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ');
  const attrs = Object.entries(o.attributes ?? {}).map(([k, v]) => html` ${k}="${v}"`);
  return html`<div class="field${o.error ? ' field-error' : ''}">
    <label for="${o.id}">${o.label}</label>
    ${hintId ? html`<p class="hint" id="${hintId}">${o.hint!}</p>` : ''}
    ${errorId ? html`<p class="error" id="${errorId}"><span class="visually-hidden">Error: </span>${o.error!}</p>` : ''}
    <input
      id="${o.id}"
      name="${o.name}"
      type="${o.type ?? 'text'}"
      ${o.value !== undefined ? html` value="${o.value}"` : ''}${
        o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ''
      }${o.required ? html` required` : ''}${describedBy ? html` aria-describedby="${describedBy}"` : ''}${
        o.error ? html` aria-invalid="true"` : ''
      }${attrs}
    />
  </div>`;
}

export function hidden(name: string, value: string): SafeHtml {
  return html`<input type="hidden" name="${name}" value="${value}" />`;
}

/** A simple page: heading, paragraphs (or any safe HTML) and optional links. */
export function messagePage(o: {
  title: string;
  paragraphs: (string | SafeHtml)[];
  session?: PageSession | null;
  hasError?: boolean;
  links?: { href: string; text: string }[];
}): string {
  return page({
    title: o.title,
    hasError: o.hasError,
    session: o.session,
    body: html`<h1>${o.title}</h1>
      ${o.paragraphs.map((p) => html`<p>${p}</p>`)}
      ${
        o.links?.length
          ? html`<ul class="links">
              ${o.links.map((l) => html`<li><a href="${l.href}">${l.text}</a></li>`)}
            </ul>`
          : ''
      }`,
  });
}
